/* SPDX-License-Identifier: Apache-2.0 */
/* Per-thread device scopes: the device a thread asked for with tp_device_push. */
#ifndef TP_LAUNCH_DEVICE_SCOPE_H
#define TP_LAUNCH_DEVICE_SCOPE_H

#include <stdbool.h>

#include "tensorplug/tensorplug.h"

typedef struct tp_device_scope {
    const tp_context_t *context;
    tp_device_spec_t spec;
    char name[128]; /* as the application wrote it, cut to fit */
    /* Where the device has no kernel for an op, fall back as soft placement does (counted and
     * logged) instead of failing: a request the runtime makes itself (tp_device_push_preferred),
     * which must not fail for an op the device lacks. */
    bool preferred;
} tp_device_scope_t;

/* Pushes a preferred scope (see above) for `name`; popped with tp_device_pop. The gradient tape
 * runs each gradient op in one, on the device of its forward op. */
tp_status_t *tp_device_push_preferred(tp_context_t *context, const char *name);

/* The innermost scope this thread pushed on `context`, or NULL. */
const tp_device_scope_t *tp_device_scope_current(const tp_context_t *context);

#endif
