/* SPDX-License-Identifier: Apache-2.0 */
/* Puts control bytes everywhere a plug-in's own text reaches the log: a line through the host's
 * log function, and the message of an init that fails. A terminal shown them raw would start a
 * forged log line, set its title and clear its screen. */
#include "tensorplug/plugin.h"

static void init(const tp_host_api_t *host, tp_registrar_t *registrar,
                 tp_plugin_status_t *status) {
    host->log(registrar, TP_LOG_WARNING, "%s", "ready\ntensorplug error: forged\x1b]0;title\x07");
    host->status_set(status, TP_UNAVAILABLE, "%s", "no driver\r\x1b[2J\x1b[31mcleared");
}

TP_PLUGIN_ENTRY {
    static const tp_plugin_descriptor_t descriptor = {
        sizeof(tp_plugin_descriptor_t), TP_ABI_MAJOR, TP_ABI_MINOR, "hostile_text", "1.0.0", init};
    return &descriptor;
}
