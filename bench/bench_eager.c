/* SPDX-License-Identifier: Apache-2.0 */
/* Eager dispatch cost and MatMul throughput, each beside a baseline from the same run: two
 * malloc/free pairs for dispatch (what an op that allocated from the heap would pay), a direct
 * cblas_sgemm call for MatMul. Dispatch is measured again with a profile recording
 * (tp_profiler_start), beside the figure without. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_support.h"
#include "tensorplug/tensorplug.h"

static tp_tensor_t *filled(tp_context_t *context, int64_t rows, int64_t columns) {
    size_t count = (size_t)(rows * columns);
    float *values = malloc(count * sizeof *values);
    if (values == NULL) exit(1);
    for (size_t i = 0; i < count; i++) values[i] = (float)(i % 7) * 0.25f - 0.5f;
    tp_tensor_t *t;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32,
                              rows == 1 && columns == 1 ? TP_SCALAR_SHAPE : TP_SHAPE(rows, columns),
                              values, count * sizeof *values, &t));
    free(values);
    return t;
}

/* Best of three runs of `rounds` ops, in ns per op. */
static double dispatch_ns(tp_context_t *context, const char *op, tp_tensor_t *x, int rounds) {
    double best = 1e30;
    tp_tensor_t *inputs[2] = {x, x};
    size_t num_inputs = strcmp(op, "Add") == 0 ? 2 : 1;
    for (int repeat = 0; repeat < 3; repeat++) {
        double start = now_seconds();
        for (int i = 0; i < rounds; i++) {
            tp_tensor_t *y;
            TP_CHECK(tp_execute(context, op, inputs, num_inputs, NULL, 0, &y, 1));
            tp_tensor_release(y);
        }
        double ns = (now_seconds() - start) * 1e9 / rounds;
        if (ns < best) best = ns;
    }
    return best;
}

/* Tells the compiler that `p`, and what it points to, is used here. Without it clang pairs
 * each malloc with its free and removes both, and the baseline measures an empty loop. */
static inline void escape(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

/* The heap work an op whose output and tensor header came from malloc would do: allocate
 * both, write the output's first byte, free both. */
static double malloc_ns(int rounds) {
    double best = 1e30;
    for (int repeat = 0; repeat < 3; repeat++) {
        double start = now_seconds();
        for (int i = 0; i < rounds; i++) {
            unsigned char *p = aligned_alloc(64, 64);
            if (p == NULL) exit(1);
            p[0] = (unsigned char)i;
            escape(p);
            void *header = malloc(160);
            if (header == NULL) exit(1);
            escape(header);
            free(header);
            free(p);
        }
        double ns = (now_seconds() - start) * 1e9 / rounds;
        if (ns < best) best = ns;
    }
    return best;
}

/* GFLOP/s of the best of `repeats` n x n x n products. */
static double gflops(double seconds, int n) { return 2.0 * n * (double)n * n / seconds * 1e-9; }

int main(void) {
    tp_log_set_level(TP_LOG_ERROR);
    tp_context_t *context = bench_cpu_context();

    /* Fewer ops with a profile on: a thread keeps at most 2^20 events. */
    enum { ROUNDS = 200000, PROFILED_ROUNDS = 40000 };
    tp_tensor_t *one = filled(context, 1, 1);
    printf("eager dispatch, 1 element, CPU (best of 3 x %d ops; with a profile 3 x %d)\n",
           ROUNDS, PROFILED_ROUNDS);
    double baseline = malloc_ns(ROUNDS);
    printf("  %-44s %8.0f ns/op\n", "baseline: two malloc/free pairs (64 B, 160 B)", baseline);
    char profile[] = "/tmp/bench_eager_profile.XXXXXX";
    int fd = mkstemp(profile);
    if (fd < 0) return 1;
    close(fd);
    for (int i = 0; i < 2; i++) {
        const char *op = i == 0 ? "Add" : "Relu";
        double ns = dispatch_ns(context, op, one, ROUNDS);
        printf("  %-44s %8.0f ns/op   (less the baseline: %.0f ns/op)\n", op, ns,
               ns - baseline);
        TP_CHECK(tp_profiler_start(context, profile));
        double profiled = dispatch_ns(context, op, one, PROFILED_ROUNDS);
        double start = now_seconds();
        TP_CHECK(tp_profiler_stop(context));
        double written = now_seconds() - start;
        struct stat file;
        if (stat(profile, &file) != 0) return 1;
        char label[64];
        snprintf(label, sizeof label, "%s, a profile recording", op);
        printf("  %-44s %8.0f ns/op   (%+.0f ns/op; %d ops written in %.0f ms, %.1f MB)\n",
               label, profiled, profiled - ns, 3 * PROFILED_ROUNDS, written * 1e3,
               (double)file.st_size / 1e6);
    }
    unlink(profile);
    tp_tensor_release(one);

    printf("MatMul float32, n x n times n x n (best of 5)\n");
    const int sizes[] = {256, 1024, 2048};
    for (size_t s = 0; s < 3; s++) {
        int n = sizes[s];
        tp_tensor_t *a = filled(context, n, n), *b = filled(context, n, n);
        float *ha = malloc((size_t)n * n * sizeof *ha), *hb = malloc((size_t)n * n * sizeof *hb),
              *hc = malloc((size_t)n * n * sizeof *hc);
        if (ha == NULL || hb == NULL || hc == NULL) return 1;
        TP_CHECK(tp_tensor_read(a, ha, (size_t)n * n * sizeof *ha));
        TP_CHECK(tp_tensor_read(b, hb, (size_t)n * n * sizeof *hb));
        int repeats = n >= 2048 ? 3 : 5;
        double direct = 1e30, eager = 1e30;
        for (int r = 0; r < repeats; r++) {
            double start = now_seconds();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, ha, n, hb, n,
                        0.0f, hc, n);
            double t = now_seconds() - start;
            if (t < direct) direct = t;
            start = now_seconds();
            tp_tensor_t *c;
            TP_CHECK(tp_matmul(context, a, b, false, false, &c));
            TP_CHECK(tp_tensor_wait(c));
            t = now_seconds() - start;
            if (t < eager) eager = t;
            tp_tensor_release(c);
        }
        printf("  n=%-5d tp_matmul %8.1f GFLOP/s   direct cblas_sgemm %8.1f GFLOP/s   (%.0f%%)\n",
               n, gflops(eager, n), gflops(direct, n), 100.0 * direct / eager);
        free(ha);
        free(hb);
        free(hc);
        tp_tensor_release(a);
        tp_tensor_release(b);
    }
    tp_context_destroy(context);
    return 0;
}
