/* SPDX-License-Identifier: Apache-2.0 */
/* What the benchmarks share: the clock, and the context they measure the CPU in. */
#ifndef TP_BENCH_BENCH_SUPPORT_H
#define TP_BENCH_BENCH_SUPPORT_H

#include <time.h>

#include "tensorplug/tensorplug.h"

static inline double now_seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* A context with the built-in CPU alone, so that no plug-in's devices change the figures. */
static inline tp_context_t *bench_cpu_context(void) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.no_plugins = true;
    tp_context_t *context;
    TP_CHECK(tp_context_create(&options, &context));
    return context;
}

#endif
