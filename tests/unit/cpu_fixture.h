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

static inline int cpu_context_teardown(void **state) { return context_teardown(state); }

#endif
