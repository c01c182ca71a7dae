/* SPDX-License-Identifier: Apache-2.0 */
#include "launch/device_scope.h"

#include <stdio.h>
#include <string.h>

#include "base/status.h"

/* Deep enough for any honest nesting; a deeper stack is a push without its pop. */
enum { MAX_SCOPES = 64 };

static _Thread_local tp_device_scope_t scopes[MAX_SCOPES];
static _Thread_local int depth;

static tp_status_t *push(tp_context_t *context, const char *name, bool preferred) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(name);
    tp_device_spec_t spec;
    TP_RETURN_IF_ERROR(tp_status_annotate(tp_device_spec_parse(name, &spec), "tp_device_push"));
    if (depth == MAX_SCOPES)
        return tp_status_make(TP_RESOURCE_EXHAUSTED,
                              "tp_device_push: more than %d nested device scopes on this thread; "
                              "is a tp_device_pop missing?",
                              MAX_SCOPES);
    tp_device_scope_t *scope = &scopes[depth++];
    scope->context = context;
    scope->spec = spec;
    scope->preferred = preferred;
    snprintf(scope->name, sizeof scope->name, "%s", name);
    return NULL;
}

tp_status_t *tp_device_push(tp_context_t *context, const char *name) {
    return push(context, name, false);
}

tp_status_t *tp_device_push_preferred(tp_context_t *context, const char *name) {
    return push(context, name, true);
}

tp_status_t *tp_device_pop(tp_context_t *context) {
    TP_REQUIRE_ARG(context);
    for (int i = depth - 1; i >= 0; i--) {
        if (scopes[i].context != context) continue;
        memmove(&scopes[i], &scopes[i + 1], (size_t)(depth - 1 - i) * sizeof scopes[0]);
        depth--;
        return NULL;
    }
    return tp_status_make(TP_FAILED_PRECONDITION,
                          "tp_device_pop: this thread has no device scope on this context");
}

const tp_device_scope_t *tp_device_scope_current(const tp_context_t *context) {
    for (int i = depth - 1; i >= 0; i--)
        if (scopes[i].context == context) return &scopes[i];
    return NULL;
}
