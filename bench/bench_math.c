/* SPDX-License-Identifier: Apache-2.0 */
/* Transcendental ops and Softmax on the CPU, float32, in GB/s (bytes read + written over the
 * time), each beside baselines from the same run and interleaved with them: memcpy of the same
 * bytes (the memory limit), and SLEEF's vector function called directly over the array on one
 * thread (what a kernel that only called SLEEF would reach). The median of the repeats is
 * printed, so that a noisy neighbour on a shared machine moves one sample, not the figure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_support.h"
#include "tensorplug/tensorplug.h"

#include "bench_math.h"

enum { REPEATS = 9, ELEMENTS = 16 * 1024 * 1024, SOFTMAX_ROWS = 4096, SOFTMAX_COLUMNS = 1000 };

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *samples, int n) {
    qsort(samples, (size_t)n, sizeof *samples, by_value);
    return samples[n / 2];
}

static tp_tensor_t *filled(tp_context_t *context, int64_t rows, int64_t columns, float *values) {
    size_t count = (size_t)(rows * columns);
    /* Values from -8 to 8, where tanh and sigmoid are not yet saturated. */
    for (size_t i = 0; i < count; i++) values[i] = (float)(i % 1601) * 0.01f - 8.0f;
    tp_tensor_t *t;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(rows, columns), values,
                              count * sizeof *values, &t));
    return t;
}

static double op_seconds(tp_context_t *context, const char *op, tp_tensor_t *x) {
    double start = now_seconds();
    tp_tensor_t *y;
    TP_CHECK(tp_execute(context, op, &x, 1, NULL, 0, &y, 1));
    double seconds = now_seconds() - start;
    tp_tensor_release(y);
    return seconds;
}

static double memcpy_seconds(float *to, const float *from, size_t count) {
    double start = now_seconds();
    memcpy(to, from, count * sizeof *from);
    __asm__ volatile("" : : "r"(to) : "memory");
    return now_seconds() - start;
}

static double direct_seconds(const char *op, float *y, const float *x, size_t count) {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return bench_sleef_seconds(op, y, x, count);
#endif
    (void)op, (void)y, (void)x, (void)count;
    return 0;
}

static void report(const char *what, double bytes, double *op, double *copy, double *direct) {
    double t = median(op, REPEATS), c = median(copy, REPEATS);
    double d = direct != NULL ? median(direct, REPEATS) : 0;
    printf("%-28s %7.2f GB/s   memcpy %6.2f GB/s (%.2fx)", what, bytes / t * 1e-9,
           bytes / c * 1e-9, c / t);
    if (d > 0) printf("   SLEEF AVX2 1 thread %6.2f GB/s (%.2fx)", bytes / d * 1e-9, d / t);
    printf("\n");
}

int main(void) {
    tp_context_t *context = bench_cpu_context();
    float *values = malloc((size_t)ELEMENTS * sizeof *values);
    float *scratch = malloc((size_t)ELEMENTS * sizeof *scratch);
    if (values == NULL || scratch == NULL) return 1;
    memset(scratch, 0, (size_t)ELEMENTS * sizeof *scratch);
    tp_tensor_t *x = filled(context, ELEMENTS / 1024, 1024, values);
    double bytes = 2.0 * ELEMENTS * sizeof(float);
    const char *ops[] = {"Exp", "Tanh", "Sigmoid"};
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        double op[REPEATS], copy[REPEATS], direct[REPEATS];
        op_seconds(context, ops[k], x); /* first touch of the pages, outside the figures */
        for (int r = 0; r < REPEATS; r++) {
            op[r] = op_seconds(context, ops[k], x);
            copy[r] = memcpy_seconds(scratch, values, ELEMENTS);
            direct[r] = direct_seconds(ops[k], scratch, values, ELEMENTS);
        }
        char what[64];
        snprintf(what, sizeof what, "%s 16M float32", ops[k]);
        report(what, bytes, op, copy, direct);
    }
    tp_tensor_release(x);

    size_t count = (size_t)SOFTMAX_ROWS * SOFTMAX_COLUMNS;
    tp_tensor_t *logits = filled(context, SOFTMAX_ROWS, SOFTMAX_COLUMNS, values);
    const char *softmaxes[] = {"Softmax", "LogSoftmax"};
    for (size_t k = 0; k < 2; k++) {
        double op[REPEATS], copy[REPEATS];
        op_seconds(context, softmaxes[k], logits);
        for (int r = 0; r < REPEATS; r++) {
            op[r] = op_seconds(context, softmaxes[k], logits);
            copy[r] = memcpy_seconds(scratch, values, count);
        }
        char what[64];
        snprintf(what, sizeof what, "%s %dx%d", softmaxes[k], SOFTMAX_ROWS, SOFTMAX_COLUMNS);
        report(what, 2.0 * (double)count * sizeof(float), op, copy, NULL);
    }
    tp_tensor_release(logits);
    free(values);
    free(scratch);
    tp_context_destroy(context);
    return 0;
}
