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

void tp_plugin_status_set(tp_plugin_status_t *status, tp_code_t code, const char *format, ...)
    TP_PRINTF_LIKE(3, 4);

/* NULL if the plug-in reported nothing; otherwise a status "<what>: <message>". A plug-in that
 * reports TP_OK-less garbage (an unknown code) is reported as UNKNOWN. */
tp_status_t *tp_plugin_status_to_status(const tp_plugin_status_t *status, const char *what);

/* The same, with `what` formatted only when there is an error: for the paths every op takes. */
tp_status_t *tp_plugin_status_check(const tp_plugin_status_t *status, const char *format, ...)
    TP_PRINTF_LIKE(2, 3);

#endif
