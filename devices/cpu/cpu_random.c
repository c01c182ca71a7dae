/* SPDX-License-Identifier: Apache-2.0 */
/* Seeded random tensors from Philox-4x32-10 (cpu_philox.h says how values are read from its
 * stream). Element i's value depends only on the seed and i, so results are reproducible and
 * the same however the work is split between threads; the work is split by Philox block, each
 * block giving up to four float32 or two float64 elements. */
#include <math.h>

#include "cpu_kernels.h"
#include "cpu_philox.h"

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

/* Elements [4 block, 4 block + 4) of a float32 tensor. */
static void float32_block(const random_job_t *job, int64_t block) {
    uint32_t words[4];
    cpu_philox_block(job->seed, (uint64_t)block, words);
    float values[4];
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
    float *y = job->data;
    for (int64_t k = 0, i = 4 * block; k < 4 && i < job->count; k++, i++) y[i] = values[k];
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
        if (job->dtype == TP_FLOAT32)
            float32_block(job, block);
        else
            float64_block(job, block);
    }
}

static void run_random(bool normal, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    cpu_tensor_t y;
    if (!cpu_output(context, 0, &y, status)) return;
    int64_t seed = 0;
    tp_cpu_host->kernel_attr_int(context, "seed", &seed, status);
    if (cpu_failed(status)) return;
    int64_t per_block = y.view.dtype == TP_FLOAT32 ? 4 : 2;
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
    static const tp_dtype_t floats[] = {TP_FLOAT32, TP_FLOAT64};
    cpu_register(registrar, "RandomStandardNormal", "dtype", floats, 2, normal, status);
    cpu_register(registrar, "RandomUniform", "dtype", floats, 2, uniform_kernel, status);
}
