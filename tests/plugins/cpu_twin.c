/* SPDX-License-Identifier: Apache-2.0 */
/* (e) Registers "cpu", a device type the built-in CPU plug-in already registered (type names
 * compare without regard to case). */
#include <string.h>

#include "simple_device.h"

static void init(const tp_host_api_t *host, tp_registrar_t *registrar,
                 tp_plugin_status_t *status) {
    tp_device_type_def_t def;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    simple_device_fill(&def, "cpu", 1, host);
    host->register_device_type(registrar, &def, status);
}

TP_PLUGIN_ENTRY {
    static const tp_plugin_descriptor_t descriptor = {
        sizeof(tp_plugin_descriptor_t), TP_ABI_MAJOR, TP_ABI_MINOR, "cpu_twin", "1.0.0", init};
    return &descriptor;
}
