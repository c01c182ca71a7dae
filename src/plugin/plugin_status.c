/* SPDX-License-Identifier: Apache-2.0 */
#include "plugin/plugin_status.h"

#include <stdarg.h>
#include <stdio.h>

#include "base/printable.h"
#include "base/status.h"

void tp_plugin_status_set(tp_plugin_status_t *status, tp_code_t code, const char *format, ...) {
    if (status == NULL) return;
    status->code = code;
    status->message[0] = '\0';
    if (code == TP_OK || format == NULL) return;
    va_list args;
    va_start(args, format);
    vsnprintf(status->message, sizeof status->message, format, args);
    va_end(args);
}

static tp_status_t *to_status(const tp_plugin_status_t *status, const char *what) {
    if (status->code == TP_OK) return NULL;
    tp_code_t code = status->code;
    if ((int)code < 0 || code > TP_DATA_LOSS) code = TP_UNKNOWN;
    /* A plug-in's words reach terminals and log files through every status: escaped here,
     * once, rather than by each printer. */
    char shown[sizeof status->message * TP_PRINTABLE_EXPANSION];
    tp_printable_copy(shown, sizeof shown, status->message);
    return tp_status_make(code, "%s: %s", what, shown[0] != '\0' ? shown : "(no message)");
}

tp_status_t *tp_plugin_status_failure(const tp_plugin_status_t *status, const char *format,
                                      ...) {
    if (status->code == TP_OK) return NULL;
    char what[256];
    va_list args;
    va_start(args, format);
    vsnprintf(what, sizeof what, format, args);
    va_end(args);
    return to_status(status, what);
}
