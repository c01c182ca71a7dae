/* SPDX-License-Identifier: Apache-2.0 */
/* Reductions and Transpose of a 4096x4096 float32 matrix, in GB/s of the input, each beside
 * baselines from the same run: memcpy of the same bytes, and for Transpose a cache-blocked C
 * loop on one thread. Every figure is interleaved with its baselines over several rounds and the
 * median is printed, so that a noisy neighbour moves both sides alike. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_support.h"
#include "tensorplug/tensorplug.h"

enum { N = 4096, ROUNDS = 7, TILE = 32 };

typedef struct {
    const char *name;
    double samples[ROUNDS];
} figure_t;

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(figure_t *f) {
    qsort(f->samples, ROUNDS, sizeof f->samples[0], compare_doubles);
    return f->samples[ROUNDS / 2];
}

/* The transpose a programmer would write by hand: 32x32 tiles, one thread. */
static void blocked_transpose(const float *restrict in, float *restrict out) {
    for (int i0 = 0; i0 < N; i0 += TILE)
        for (int j0 = 0; j0 < N; j0 += TILE)
            for (int i = i0; i < i0 + TILE; i++)
                for (int j = j0; j < j0 + TILE; j++) out[(size_t)j * N + i] = in[(size_t)i * N + j];
}

static void escape(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

int main(void) {
    tp_context_t *c = bench_cpu_context();
    size_t count = (size_t)N * N, bytes = count * sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes);
    if (a == NULL || b == NULL) return 1;
    for (size_t i = 0; i < count; i++) a[i] = (float)(i % 7) * 0.25f - 0.5f;
    memcpy(b, a, bytes);
    tp_tensor_t *x;
    TP_CHECK(tp_tensor_create(c, TP_FLOAT32, TP_SHAPE(N, N), a, bytes, &x));
    typedef tp_status_t *(*reduce_fn)(tp_context_t *, tp_tensor_t *, const int64_t *, size_t,
                                      bool, tp_tensor_t **);
    const struct {
        const char *name;
        reduce_fn fn;
    } ops[] = {{"Sum", tp_sum}, {"Mean", tp_mean}, {"Max", tp_max}, {"Min", tp_min}};
    const int64_t axis0 = 0, axis1 = 1;
    const struct {
        const char *name;
        const int64_t *axes;
        size_t num_axes;
    } axes[] = {{"axis 0", &axis0, 1}, {"axis 1", &axis1, 1}, {"all", NULL, 0}};
    enum { NUM_OPS = 4, NUM_AXES = 3 };
    figure_t copy = {.name = "memcpy"}, blocked = {.name = "blocked C transpose (1 thread)"},
             transpose = {.name = "Transpose"};
    figure_t reductions[NUM_OPS][NUM_AXES];
    for (int round = 0; round < ROUNDS; round++) {
        double start = now_seconds();
        memcpy(b, a, bytes);
        escape(b);
        copy.samples[round] = (double)bytes / (now_seconds() - start) / 1e9;
        for (int o = 0; o < NUM_OPS; o++)
            for (int d = 0; d < NUM_AXES; d++) {
                tp_tensor_t *y;
                start = now_seconds();
                TP_CHECK(ops[o].fn(c, x, axes[d].axes, axes[d].num_axes, false, &y));
                reductions[o][d].samples[round] = (double)bytes / (now_seconds() - start) / 1e9;
                tp_tensor_release(y);
            }
        start = now_seconds();
        blocked_transpose(a, b);
        escape(b);
        blocked.samples[round] = (double)bytes / (now_seconds() - start) / 1e9;
        tp_tensor_t *y;
        start = now_seconds();
        TP_CHECK(tp_transpose(c, x, NULL, 0, &y));
        transpose.samples[round] = (double)bytes / (now_seconds() - start) / 1e9;
        tp_tensor_release(y);
    }
    double copy_rate = median(&copy);
    printf("4096x4096 float32, GB/s of the input, median of %d interleaved rounds\n", ROUNDS);
    printf("%-34s %7.2f GB/s\n", "memcpy (baseline)", copy_rate);
    for (int o = 0; o < NUM_OPS; o++)
        for (int d = 0; d < NUM_AXES; d++) {
            char name[64];
            snprintf(name, sizeof name, "%s over %s", ops[o].name, axes[d].name);
            double rate = median(&reductions[o][d]);
            printf("%-34s %7.2f GB/s  %.2fx memcpy\n", name, rate, rate / copy_rate);
        }
    double blocked_rate = median(&blocked), transpose_rate = median(&transpose);
    printf("%-34s %7.2f GB/s\n", blocked.name, blocked_rate);
    printf("%-34s %7.2f GB/s  %.2fx the blocked loop\n", transpose.name, transpose_rate,
           transpose_rate / blocked_rate);
    tp_tensor_release(x);
    tp_context_destroy(c);
    free(a);
    free(b);
    return 0;
}
