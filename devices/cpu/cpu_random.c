/* SPDX-License-Identifier: Apache-2.0 */
/* Seeded random tensors from Philox-4x32-10 (cpu_philox.h says how values are read from its
 * stream). Element i's value depends only on the seed and i, so results are reproducible and
 * the same however the work is split between threads; the work is split by Philox block, each
 * block giving up to four float32 or two float64 elements. float16 and bfloat16 take float32's
 * draws, each rounded once to nearest even. */
#include <math.h>

#include "cpu_kernels.h"
#include "cpu_philox.h"
#include "tensorplug/float16.h"

typedef struct {
    bool normal;
    tp_dtype_t dtype;
    uint64_t seed;
    int64_t count; /* elements */
    void *data;
} random_job_t;

static const double two_pi = 6.283185307179586;

/* Box-Muller: the (cos, sin) pair of normals from uniforms u1, u2 in [0, 1). */
static void box_muller(double u1, double u2, double *first, double *second) {
    double radius = sqrt(-2.0 * log(1.0 - u1)), angle = two_pi * u2;
    *first = radius * cos(angle);
    *second = radius * sin(angle);
}

/* The float32 draws of elements [4 block, 4 block + 4). */
static void float32_draws(const random_job_t *job, int64_t block, float values[4]) {
    uint32_t words[4];
    cpu_philox_block(job->seed, (uint64_t)block, words);
    if (job->normal) {
        for (int pair = 0; pair < 2; pair++) {
            double a, b;
            box_muller(cpu_philox_uniform24(words[2 * pair]),
                       cpu_philox_uniform24(words[2 * pair + 1]), &a, &b);
            values[2 * pair] = (float)a;
            values[2 * pair + 1] = (float)b;
        }
    } else {
        for (int k = 0; k < 4; k++) values[k] = cpu_philox_uniform24(words[k]);
    }
}

/* Stores a float32 draw into element i of a float32, float16 or bfloat16 tensor. A uniform
 * draw just below 1 may round up to 1 in 16 bits: it becomes the largest value below 1, since
 * uniform values stay below 1 (positive, so their bits order as their values). */
static void store_draw(const random_job_t *job, int64_t i, float value) {
    uint16_t bits, below_one;
    switch (job->dtype) {
    case TP_FLOAT16:
        bits = tp_float16_from_float(value);
        below_one = 0x3bff;
        break;
    case TP_BFLOAT16:
        bits = tp_bfloat16_from_float(value);
        below_one = 0x3f7f;
        break;
    default: ((float *)job->data)[i] = value; return;
    }
    ((uint16_t *)job->data)[i] = !job->normal && bits > below_one ? below_one : bits;
}

/* Elements [2 block, 2 block + 2) of a float64 tensor. */
static void float64_block(const random_job_t *job, int64_t block) {
    uint32_t words[4];
    cpu_philox_block(job->seed, (uint64_t)block, words);
    double values[2];
    double u = cpu_philox_uniform53(words[0], words[1]);
    double v = cpu_philox_uniform53(words[2], words[3]);
    if (job->normal) {
        box_muller(u, v, &values[0], &values[1]);
    } else {
        values[0] = u;
        values[1] = v;
    }
    double *y = job->data;
    for (int64_t k = 0, i = 2 * block; k < 2 && i < job->count; k++, i++) y[i] = values[k];
}

static void random_range(void *arg, int64_t begin, int64_t end) {
    const random_job_t *job = arg;
    for (int64_t block = begin; block < end; block++) {
        if (job->dtype == TP_FLOAT64) {
            float64_block(job, block);
            continue;
        }
        float values[4];
        float32_draws(job, block, values);
        for (int64_t k = 0, i = 4 * block; k < 4 && i < job->count; k++, i++)
            store_draw(job, i, values[k]);
    }
}

static void run_random(bool normal, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    cpu_tensor_t y;
    if (!cpu_output(context, 0, &y, status)) return;
    int64_t seed = 0;
    tp_cpu_host->kernel_attr_int(context, "seed", &seed, status);
    if (cpu_failed(status)) return;
    int64_t per_block = y.view.dtype == TP_FLOAT64 ? 2 : 4;
    random_job_t job = {normal, y.view.dtype, (uint64_t)seed, y.view.num_elements, y.data};
    cpu_parallel_for((y.view.num_elements + per_block - 1) / per_block, 64, random_range, &job);
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
    cpu_register_native(registrar, "RandomStandardNormal", "dtype", CPU_FLOATS, normal, status);
    cpu_register_native(registrar, "RandomUniform", "dtype", CPU_FLOATS, uniform_kernel, status);
}
