/* SPDX-License-Identifier: Apache-2.0 */
/* A cmocka fixture: a context with the CPU alone, whose teardown fails the test if any device
 * memory is still in use, so every test proves it released what it made. */
#ifndef TP_TESTS_CPU_FIXTURE_H
#define TP_TESTS_CPU_FIXTURE_H

#include "device_support.h"

static inline int cpu_context_setup(void **state) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.no_plugins = true;
    return create_context_state(state, &options);
}

/* cpu_context_setup, then CPU:0 split into `count` logical devices of `limit` bytes each, so
 * that tensors and variables can live on a device other than CPU:0. */
static inline int split_cpu_context_setup(void **state, size_t count, uint64_t limit) {
    uint64_t limits[8];
    if (count > sizeof limits / sizeof limits[0] || cpu_context_setup(state) != 0) return -1;
    for (size_t i = 0; i < count; i++) limits[i] = limit;
    tp_status_t *error = tp_context_set_logical_devices(*state, "CPU:0", limits, count);
    if (error == NULL) return 0;
    print_error("%s\n", tp_status_message(error));
    tp_status_free(error);
    return -1;
}

static inline int cpu_context_teardown(void **state) { return context_teardown(state); }

#endif
