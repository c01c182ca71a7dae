/* SPDX-License-Identifier: Apache-2.0 */
/* (f) Registers a device type whose name is not a name, and ignores the refusal: the host
 * must skip the plug-in all the same. */
#include <string.h>

#include "simple_device.h"

static void init(const tp_host_api_t *host, tp_registrar_t *registrar,
                 tp_plugin_status_t *status) {
    tp_device_type_def_t def;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    simple_device_fill(&def, "9 bad/name", 1, host);
    host->register_device_type(registrar, &def, status);
    host->status_set(status, TP_OK, NULL); /* pretend nothing happened */
}

TP_PLUGIN_ENTRY {
    static const tp_plugin_descriptor_t descriptor = {
        sizeof(tp_plugin_descriptor_t), TP_ABI_MAJOR, TP_ABI_MINOR, "bad_type_name", "1.0.0",
        init};
    return &descriptor;
}
