/* SPDX-License-Identifier: Apache-2.0 */
/* (d) Its init registers a device type and then reports failure: the host must drop the
 * registration with the plug-in. */
#include <string.h>

#include "simple_device.h"

static void init(const tp_host_api_t *host, tp_registrar_t *registrar,
                 tp_plugin_status_t *status) {
    tp_device_type_def_t def;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    simple_device_fill(&def, "FAILDEV", 1, host);
    host->register_device_type(registrar, &def, status);
    host->status_set(status, TP_UNAVAILABLE, "the test device's driver is not installed");
}

TP_PLUGIN_ENTRY {
    static const tp_plugin_descriptor_t descriptor = {
        sizeof(tp_plugin_descriptor_t), TP_ABI_MAJOR, TP_ABI_MINOR, "init_fails", "1.0.0", init};
    return &descriptor;
}
