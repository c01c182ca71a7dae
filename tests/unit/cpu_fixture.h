/* A cmocka fixture: a context with the CPU alone, whose teardown fails the test if any device
 * memory is still in use, so every test proves it released what it made. */
#ifndef TP_TESTS_CPU_FIXTURE_H
#define TP_TESTS_CPU_FIXTURE_H

#include "context/context.h"
#include "device/physical_device.h"
#include "test_support.h"

static inline int cpu_context_setup(void **state) {
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.no_plugins = true;
    return create_context_state(state, &options);
}

static inline int cpu_context_teardown(void **state) {
    tp_context_t *context = *state;
    uint64_t in_use = tp_physical_device_tensor_bytes(context->registry.host_device);
    if (in_use != 0) print_error("%lld bytes are still in use\n", (long long)in_use);
    tp_context_destroy(context);
    return in_use == 0 ? 0 : -1;
}

#endif
