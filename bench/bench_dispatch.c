/* SPDX-License-Identifier: Apache-2.0 */
/* The per-op dispatch path alone: `rounds` tp_add calls on 1-element float32 tensors, nothing
 * else in the loop. With TP_BENCH_COUNT set it runs that loop once, for callgrind's instruction
 * counts, free of the noise of a shared machine:
 *   TP_BENCH_COUNT=1 valgrind --tool=callgrind --toggle-collect=run_adds bench_dispatch 100000
 * Otherwise it prints the best wall-clock ns per op beside two malloc/free pairs timed in the
 * same rounds. A second argument, a plug-in path, loads that plug-in, so that its cost on ops
 * that stay on the CPU shows. */
#include <stdio.h>
#include <stdlib.h>

#include "bench_support.h"
#include "tensorplug/tensorplug.h"

/* Not static and not inlined, so that callgrind can count this function alone. */
void run_adds(tp_context_t *context, tp_tensor_t *x, long rounds);
__attribute__((noinline)) void run_adds(tp_context_t *context, tp_tensor_t *x, long rounds) {
    for (long i = 0; i < rounds; i++) {
        tp_tensor_t *y;
        TP_CHECK(tp_add(context, x, x, &y));
        tp_tensor_release(y);
    }
}

static inline void escape(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

__attribute__((noinline)) static void run_mallocs(long rounds) {
    for (long i = 0; i < rounds; i++) {
        void *a = malloc(64), *b = malloc(160);
        if (a == NULL || b == NULL) exit(1);
        escape(a);
        escape(b);
        free(b);
        free(a);
    }
}

int main(int argc, char **argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 100000;
    tp_log_set_level(TP_LOG_ERROR);
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    if (argc > 2) {
        options.plugin_path = argv[2];
        options.skip_installed_plugins = true;
    } else {
        options.no_plugins = true;
    }
    tp_context_t *context;
    TP_CHECK(tp_context_create(&options, &context));
    float one = 1.0f;
    tp_tensor_t *x;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SCALAR_SHAPE, &one, sizeof one, &x));
    run_adds(context, x, 1000); /* warm the caches and pools */
    if (getenv("TP_BENCH_COUNT") != NULL) { /* under callgrind: the counted loop once */
        run_adds(context, x, rounds);
        tp_tensor_release(x);
        tp_context_destroy(context);
        return 0;
    }
    double best_op = 1e30, best_malloc = 1e30;
    for (int repeat = 0; repeat < 5; repeat++) {
        double start = now_seconds();
        run_adds(context, x, rounds);
        double middle = now_seconds();
        run_mallocs(rounds);
        double end = now_seconds();
        if ((middle - start) < best_op) best_op = middle - start;
        if ((end - middle) < best_malloc) best_malloc = end - middle;
    }
    printf("1-element Add: %.0f ns/op; two malloc/free pairs: %.0f ns (ratio %.2f)\n",
           best_op * 1e9 / rounds, best_malloc * 1e9 / rounds, best_op / best_malloc);
    tp_tensor_release(x);
    tp_context_destroy(context);
    return 0;
}
