/* SPDX-License-Identifier: Apache-2.0 */
/* Per-thread device scopes: the device a thread asked for with tp_device_push. */
#ifndef TP_EAGER_DEVICE_SCOPE_H
#define TP_EAGER_DEVICE_SCOPE_H

#include "tensorplug/tensorplug.h"

typedef struct tp_device_scope {
    const tp_context_t *context;
    tp_device_spec_t spec;
    char name[128]; /* as the application wrote it, cut to fit */
} tp_device_scope_t;

/* The innermost scope this thread pushed on `context`, or NULL. */
const tp_device_scope_t *tp_device_scope_current(const tp_context_t *context);

#endif
