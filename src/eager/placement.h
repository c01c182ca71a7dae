/* Where an op runs, by the rules of DESIGN.md: the thread's device scope if any, else the
 * highest-priority device type with a kernel, lowest ordinal first. */
#ifndef TP_EAGER_PLACEMENT_H
#define TP_EAGER_PLACEMENT_H

#include "context/context.h"
#include "kernel/kernel_context.h"

typedef struct tp_placement {
    tp_device_t *device;
    const tp_kernel_def_t *kernel;
} tp_placement_t;

/* Places a resolved call. A scope naming a device that does not exist, or that has no kernel
 * for the op, is an error, unless soft placement falls back; any fallback is counted, logged
 * once per op and devices, and refused in strict mode. */
tp_status_t *tp_place_op(tp_context_t *context, const tp_kernel_context_t *call,
                         tp_placement_t *out);

#endif
