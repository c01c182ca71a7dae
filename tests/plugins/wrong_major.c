/* SPDX-License-Identifier: Apache-2.0 */
/* (b) Built for a future major version of the ABI; its init must never be called. */
#include <stdlib.h>

#include "tensorplug/plugin.h"

static void init(const tp_host_api_t *host, tp_registrar_t *registrar,
                 tp_plugin_status_t *status) {
    (void)host;
    (void)registrar;
    (void)status;
    abort(); /* the host promised not to call this */
}

TP_PLUGIN_ENTRY {
    static const tp_plugin_descriptor_t descriptor = {
        sizeof(tp_plugin_descriptor_t), TP_ABI_MAJOR + 1, 0, "wrong_major", "1.0.0", init};
    return &descriptor;
}
