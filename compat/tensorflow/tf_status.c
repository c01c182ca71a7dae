/* SPDX-License-Identifier: Apache-2.0 */
/* TF_Status: a code, a message and payloads. A status that cannot get memory for its message
 * keeps its code, so a failure is never lost to an allocation. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfc.h"

typedef struct tfc_payload {
    struct tfc_payload *next;
    char *key, *value;
} tfc_payload_t;

static void clear_payloads(TF_Status *s) {
    while (s->payloads != NULL) {
        tfc_payload_t *next = s->payloads->next;
        free(s->payloads->key);
        free(s->payloads->value);
        free(s->payloads);
        s->payloads = next;
    }
}

TF_Status *TF_NewStatus(void) { return calloc(1, sizeof(TF_Status)); }

void TF_DeleteStatus(TF_Status *status) {
    if (status == NULL) return;
    clear_payloads(status);
    free(status->message);
    free(status);
}

void TF_SetStatus(TF_Status *s, TF_Code code, const char *msg) {
    if (s == NULL) return;
    char *copy = code != TF_OK && msg != NULL ? strdup(msg) : NULL;
    free(s->message);
    s->message = copy;
    s->code = code;
    if (code == TF_OK) clear_payloads(s);
}

void TF_SetPayload(TF_Status *s, const char *key, const char *value) {
    if (s == NULL || s->code == TF_OK || key == NULL || value == NULL) return;
    for (tfc_payload_t *p = s->payloads; p != NULL; p = p->next) {
        if (strcmp(p->key, key) == 0) {
            char *copy = strdup(value);
            if (copy == NULL) return;
            free(p->value);
            p->value = copy;
            return;
        }
    }
    tfc_payload_t *payload = calloc(1, sizeof *payload);
    if (payload == NULL) return;
    payload->key = strdup(key);
    payload->value = strdup(value);
    if (payload->key == NULL || payload->value == NULL) {
        free(payload->key);
        free(payload->value);
        free(payload);
        return;
    }
    payload->next = s->payloads;
    s->payloads = payload;
}

static TF_Code code_of_errno(int error_code) {
    switch (error_code) {
    case 0: return TF_OK;
    case ENOENT: case ENOTDIR: case ENXIO: case ESRCH: return TF_NOT_FOUND;
    case EEXIST: return TF_ALREADY_EXISTS;
    case EACCES: case EPERM: case EROFS: return TF_PERMISSION_DENIED;
    case ENOMEM: case ENOSPC: case EMFILE: case ENFILE: case EFBIG: return TF_RESOURCE_EXHAUSTED;
    case EINVAL: case EISDIR: case ENAMETOOLONG: case EBADF: return TF_INVALID_ARGUMENT;
    case ENOSYS: case ENOTSUP: return TF_UNIMPLEMENTED;
    case EAGAIN: case EBUSY: case ECONNREFUSED: case ECONNRESET: return TF_UNAVAILABLE;
    case ETIMEDOUT: return TF_DEADLINE_EXCEEDED;
    case ECANCELED: return TF_CANCELLED;
    case ERANGE: case EOVERFLOW: return TF_OUT_OF_RANGE;
    default: return TF_UNKNOWN;
    }
}

void TF_SetStatusFromIOError(TF_Status *s, int error_code, const char *context) {
    if (s == NULL) return;
    TF_Code code = code_of_errno(error_code);
    if (code == TF_OK) {
        TF_SetStatus(s, TF_OK, "");
        return;
    }
    tfc_status_printf(s, code, "%s; %s", context != NULL ? context : "", strerror(error_code));
}

TF_Code TF_GetCode(const TF_Status *s) { return s == NULL ? TF_OK : s->code; }

const char *TF_Message(const TF_Status *s) {
    return s == NULL || s->message == NULL ? "" : s->message;
}

void tfc_status_printf(TF_Status *status, TF_Code code, const char *format, ...) {
    char message[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    TF_SetStatus(status, code, message);
}

void tfc_unimplemented(TF_Status *status, const char *function, const char *why) {
    tfc_status_printf(status, TF_UNIMPLEMENTED, "%s is not implemented by tensorplug yet: %s",
                      function, why);
}

void tfc_status_reset(TF_Status *status) { TF_SetStatus(status, TF_OK, ""); }

bool tfc_status_to_host(TF_Status *tf_status, tp_plugin_status_t *status, const char *what) {
    TF_Code code = tf_status->code;
    if (code == TF_OK) return true;
    /* tensorplug's codes are TensorFlow's but for UNAUTHENTICATED, which it has not. */
    tp_code_t tp_code = code == TF_UNAUTHENTICATED ? TP_PERMISSION_DENIED : (tp_code_t)code;
    tfc_host->status_set(status, tp_code, "%s: %s", what, TF_Message(tf_status));
    tfc_status_reset(tf_status);
    return false;
}
