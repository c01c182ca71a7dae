/* SPDX-License-Identifier: Apache-2.0 */
/* Test helpers that reach a context's devices. */
#ifndef TP_TESTS_DEVICE_SUPPORT_H
#define TP_TESTS_DEVICE_SUPPORT_H

#include "context/context.h"
#include "device/device.h"
#include "test_support.h"

/* A logical device made straight over a physical one, for tests that drive a plug-in's device
 * through the core without a context's configuration. */
static inline tp_device_t *device_over(tp_physical_device_t *physical) {
    tp_bfc_options_t options = {UINT64_C(1) << 30, true, UINT64_C(1) << 20, 0};
    tp_device_t *device = NULL;
    assert_ok(tp_device_create(physical, physical->ordinal, &options, &device));
    return device;
}

/* Tensor bytes in use on one logical device, in the allocator's 256-byte units. */
static inline uint64_t device_bytes_in_use(tp_device_t *device) {
    tp_bfc_stats_t stats;
    tp_device_memory_stats(device, &stats);
    return stats.bytes_in_use;
}

/* Tensor bytes in use on every logical device of the context, once their pending frees ran;
 * each device that still holds some is printed. */
static inline uint64_t tensor_bytes_in_use(tp_context_t *context) {
    uint64_t total = 0;
    for (size_t i = 0; i < context->registry.num_devices; i++) {
        tp_device_t *device = context->registry.devices[i];
        tp_status_free(tp_device_synchronize(device));
        tp_bfc_stats_t stats;
        tp_device_memory_stats(device, &stats);
        if (stats.bytes_in_use != 0)
            print_error("%s still has %llu bytes in use\n", device->full_name,
                        (unsigned long long)stats.bytes_in_use);
        total += stats.bytes_in_use;
    }
    return total;
}

/* A cmocka teardown: fails the test if any tensor memory is still in use, so every test proves
 * it released what it made. */
static inline int context_teardown(void **state) {
    tp_context_t *context = *state;
    uint64_t in_use = tensor_bytes_in_use(context);
    tp_context_destroy(context);
    return in_use == 0 ? 0 : -1;
}

#endif
