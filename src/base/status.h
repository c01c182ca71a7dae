/* SPDX-License-Identifier: Apache-2.0 */
/* Making and passing statuses inside the core. */
#ifndef TP_BASE_STATUS_H
#define TP_BASE_STATUS_H

#include "tensorplug/tensorplug.h"

/* A new status with a printf-style message. Never returns NULL for a code other than TP_OK:
 * when memory for the message runs out, a static RESOURCE_EXHAUSTED status stands in. */
tp_status_t *tp_status_make(tp_code_t code, const char *format, ...) TP_PRINTF_LIKE(2, 3);

/* The status code for a system error (errno) of a file or of memory: NOT_FOUND,
 * PERMISSION_DENIED, RESOURCE_EXHAUSTED (no space, no memory, too large), INVALID_ARGUMENT (a
 * folder where a file was wanted, a name too long), otherwise UNKNOWN. */
tp_code_t tp_code_from_errno(int error);

/* A new status with the code and message of `status`; NULL stays NULL. */
tp_status_t *tp_status_copy(const tp_status_t *status);

/* Prefixes the message of `status` with "<prefix>: " and returns it; NULL stays NULL. */
tp_status_t *tp_status_annotate(tp_status_t *status, const char *format, ...)
    TP_PRINTF_LIKE(2, 3);

#define TP_RETURN_IF_ERROR(expr)                                                               \
    do {                                                                                       \
        tp_status_t *tp_return_status_ = (expr);                                               \
        if (tp_return_status_ != NULL) return tp_return_status_;                               \
    } while (0)

/* For public entry points: a NULL argument is INVALID_ARGUMENT naming the function and it. */
#define TP_REQUIRE_ARG(arg)                                                                    \
    do {                                                                                       \
        if ((arg) == NULL)                                                                     \
            return tp_status_make(TP_INVALID_ARGUMENT, "%s: argument '%s' is NULL", __func__,  \
                                  #arg);                                                       \
    } while (0)

#endif
