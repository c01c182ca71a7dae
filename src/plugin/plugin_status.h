/* SPDX-License-Identifier: Apache-2.0 */
/* The host's side of tp_plugin_status_t: a code and a message a plug-in fills through
 * tp_host_api_t.status_set, living on the host's stack for the length of one call. */
#ifndef TP_PLUGIN_PLUGIN_STATUS_H
#define TP_PLUGIN_PLUGIN_STATUS_H

#include "tensorplug/tensorplug.h"

struct tp_plugin_status {
    tp_code_t code;
    char message[512];
};

#define TP_PLUGIN_STATUS_INIT {TP_OK, ""}

/* The same as TP_PLUGIN_STATUS_INIT without clearing the whole message: for the launch of
 * every op, where the initializer's 512 zero bytes cost more than the rest of the status. */
static inline void tp_plugin_status_clear(tp_plugin_status_t *status) {
    status->code = TP_OK;
    status->message[0] = '\0';
}

void tp_plugin_status_set(tp_plugin_status_t *status, tp_code_t code, const char *format, ...)
    TP_PRINTF_LIKE(3, 4);

/* NULL if the plug-in reported nothing; otherwise a status "<what>: <message>", `what`
 * formatted like printf only then, since every op passes here. An unknown code from the
 * plug-in is reported as UNKNOWN. */
tp_status_t *tp_plugin_status_failure(const tp_plugin_status_t *status, const char *format, ...)
    TP_PRINTF_LIKE(2, 3);
/* The same, with TP_OK tested inline: a variadic call costs tens of instructions before it can
 * return NULL. `status` is evaluated twice. */
#define tp_plugin_status_check(status, ...)                                                       \
    ((status)->code == TP_OK ? NULL : tp_plugin_status_failure((status), __VA_ARGS__))

#endif
