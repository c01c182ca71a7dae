/* SPDX-License-Identifier: Apache-2.0 */
#include "base/status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tp_status {
    tp_code_t code;
    char *message;
};

/* Stands in when there is no memory to describe an error; tp_status_free ignores it. */
static tp_status_t out_of_memory_status = {TP_RESOURCE_EXHAUSTED,
                                           "out of host memory while reporting an error"};

static char *format_message(const char *format, va_list args) TP_PRINTF_LIKE(1, 0);

static char *format_message(const char *format, va_list args) {
    va_list copy;
    va_copy(copy, args);
    int length = vsnprintf(NULL, 0, format, copy);
    va_end(copy);
    if (length < 0) return NULL;
    char *message = malloc((size_t)length + 1);
    if (message != NULL) vsnprintf(message, (size_t)length + 1, format, args);
    return message;
}

tp_status_t *tp_status_make(tp_code_t code, const char *format, ...) {
    if (code == TP_OK) return NULL;
    tp_status_t *status = malloc(sizeof *status);
    if (status == NULL) return &out_of_memory_status;
    va_list args;
    va_start(args, format);
    status->message = format_message(format, args);
    va_end(args);
    if (status->message == NULL) {
        free(status);
        return &out_of_memory_status;
    }
    status->code = code;
    return status;
}

tp_status_t *tp_status_create(tp_code_t code, const char *message) {
    return tp_status_make(code, "%s", message == NULL ? "" : message);
}

tp_status_t *tp_status_copy(const tp_status_t *status) {
    if (status == NULL) return NULL;
    return tp_status_make(status->code, "%s", status->message);
}

tp_status_t *tp_status_annotate(tp_status_t *status, const char *format, ...) {
    if (status == NULL || status == &out_of_memory_status) return status;
    va_list args;
    va_start(args, format);
    char *prefix = format_message(format, args);
    va_end(args);
    if (prefix == NULL) return status;
    size_t prefix_length = strlen(prefix), message_length = strlen(status->message);
    char *joined = malloc(prefix_length + 2 + message_length + 1);
    if (joined != NULL) {
        memcpy(joined, prefix, prefix_length);
        memcpy(joined + prefix_length, ": ", 2);
        memcpy(joined + prefix_length + 2, status->message, message_length + 1);
        free(status->message);
        status->message = joined;
    }
    free(prefix);
    return status;
}

tp_code_t tp_status_code(const tp_status_t *status) {
    return status == NULL ? TP_OK : status->code;
}

const char *tp_status_message(const tp_status_t *status) {
    return status == NULL ? "" : status->message;
}

void tp_status_free(tp_status_t *status) {
    if (status == NULL || status == &out_of_memory_status) return;
    free(status->message);
    free(status);
}

const char *tp_code_name(tp_code_t code) {
    static const char *const names[] = {
        "OK",          "CANCELLED",        "UNKNOWN",           "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED", "NOT_FOUND",  "ALREADY_EXISTS",    "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
        "UNIMPLEMENTED", "INTERNAL",       "UNAVAILABLE",       "DATA_LOSS"};
    if ((int)code < 0 || (size_t)code >= sizeof names / sizeof names[0]) return "UNKNOWN_CODE";
    return names[code];
}

tp_code_t tp_code_from_errno(int error) {
    switch (error) {
    case ENOENT:
    case ENOTDIR:
        return TP_NOT_FOUND;
    case EACCES:
    case EPERM:
    case EROFS:
        return TP_PERMISSION_DENIED;
    case ENOSPC:
    case EDQUOT:
    case ENOMEM:
    case EFBIG:
        return TP_RESOURCE_EXHAUSTED;
    case EISDIR:
    case ENAMETOOLONG:
        return TP_INVALID_ARGUMENT;
    default:
        return TP_UNKNOWN;
    }
}
