/* The context: the devices one application uses, and what keeps them alive. */
#ifndef TP_CONTEXT_CONTEXT_H
#define TP_CONTEXT_CONTEXT_H

#include <stdatomic.h>

#include "device/device_registry.h"
#include "tensorplug/tensorplug.h"

struct tp_context {
    /* One reference for the application, one per live tensor: destroying a context whose
     * tensors are still alive defers the release of its devices to the last tensor. */
    atomic_int references;
    tp_device_registry_t registry;
};

void tp_context_retain(tp_context_t *context);
void tp_context_release(tp_context_t *context);

#endif
