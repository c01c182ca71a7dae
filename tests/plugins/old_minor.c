/* SPDX-License-Identifier: Apache-2.0 */
/* (c) Built against ABI 1.0, whose tp_device_type_def_t ended before device_synchronize: it
 * hands the host the shorter struct, which must be accepted and read no further than it goes.
 * The struct lives in a heap block of exactly that size, so that a host reading past it is
 * caught by AddressSanitizer. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "simple_device.h"

static void init(const tp_host_api_t *host, tp_registrar_t *registrar,
                 tp_plugin_status_t *status) {
    const size_t v1_0_size = offsetof(tp_device_type_def_t, device_synchronize);
    tp_device_type_def_t full;
    memset(&full, 0, sizeof full);
    simple_device_fill(&full, "OLDDEV", 1, host);
    full.struct_size = v1_0_size;
    void *short_def = malloc(v1_0_size);
    if (short_def == NULL) {
        host->status_set(status, TP_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    memcpy(short_def, &full, v1_0_size);
    host->register_device_type(registrar, short_def, status);
    free(short_def);
}

TP_PLUGIN_ENTRY {
    static const tp_plugin_descriptor_t descriptor = {
        sizeof(tp_plugin_descriptor_t), TP_ABI_MAJOR, 0, "old_minor", "1.0.0", init};
    return &descriptor;
}
