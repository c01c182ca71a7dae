/* SPDX-License-Identifier: Apache-2.0 */
/* Seeded random tensors. Element i's value depends only on the seed and i (a counter-based
 * generator: SplitMix64 of seed and index), so results are reproducible and the same however
 * the work is split between threads. */
#include <math.h>

#include "cpu_kernels.h"
#include "tensorplug/float16.h"

static uint64_t mix(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A double in [0, 1) from 53 random bits of stream position `counter`. */
static double uniform(uint64_t seed, uint64_t counter) {
    return (double)(mix(seed ^ mix(counter)) >> 11) * (1.0 / 9007199254740992.0);
}

typedef struct {
    bool normal;
    tp_dtype_t dtype;
    uint64_t seed;
    void *data;
} random_job_t;

static void random_range(void *arg, int64_t begin, int64_t end) {
    const random_job_t *job = arg;
    for (int64_t i = begin; i < end; i++) {
        double value;
        if (job->normal) {
            /* Box-Muller on two independent uniforms; 1 - u keeps log() away from 0. */
            double u1 = 1.0 - uniform(job->seed, 2 * (uint64_t)i);
            double u2 = uniform(job->seed, 2 * (uint64_t)i + 1);
            value = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
        } else {
            value = uniform(job->seed, (uint64_t)i);
        }
        /* Rounding once from the double; it may reach 1.0, and uniform values stay below 1,
         * at the largest number below 1 of the dtype. */
        switch (job->dtype) {
        case TP_FLOAT32: {
            float f = (float)value;
            if (!job->normal && f >= 1.0f) f = 0x1.fffffep-1f;
            ((float *)job->data)[i] = f;
            break;
        }
        case TP_FLOAT16: {
            uint16_t h = tp_float16_from_double(value);
            if (!job->normal && h >= 0x3c00) h = 0x3bff; /* positive: bits order as values */
            ((uint16_t *)job->data)[i] = h;
            break;
        }
        case TP_BFLOAT16: {
            uint16_t h = tp_bfloat16_from_double(value);
            if (!job->normal && h >= 0x3f80) h = 0x3f7f;
            ((uint16_t *)job->data)[i] = h;
            break;
        }
        default: ((double *)job->data)[i] = value; break;
        }
    }
}

static void run_random(bool normal, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    cpu_tensor_t y;
    if (!cpu_output(context, 0, &y, status)) return;
    int64_t seed = 0;
    tp_cpu_host->kernel_attr_int(context, "seed", &seed, status);
    if (cpu_failed(status)) return;
    random_job_t job = {normal, y.view.dtype, mix((uint64_t)seed), y.data};
    cpu_parallel_for(y.view.num_elements, 32, random_range, &job);
}

static void normal(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    run_random(true, context, status);
}

static void uniform_kernel(void *kernel, tp_kernel_context_t *context,
                           tp_plugin_status_t *status) {
    (void)kernel;
    run_random(false, context, status);
}

void cpu_register_random_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    static const tp_dtype_t floats[] = {CPU_FLOAT_DTYPES};
    const size_t count = sizeof floats / sizeof *floats;
    cpu_register_native(registrar, "RandomStandardNormal", "dtype", floats, count, normal,
                        status);
    cpu_register_native(registrar, "RandomUniform", "dtype", floats, count, uniform_kernel,
                        status);
}
