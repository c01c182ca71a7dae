/* SPDX-License-Identifier: Apache-2.0 */
/* Where an op runs, by the rules of DESIGN.md: the thread's device scope if any, else the
 * highest-priority device type with a kernel, lowest ordinal first. */
#ifndef TP_LAUNCH_PLACEMENT_H
#define TP_LAUNCH_PLACEMENT_H

#include "context/context.h"
#include "launch/device_scope.h"
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
/* The same with a given scope (NULL: none) instead of this thread's: a graph node's. */
tp_status_t *tp_place_op_in_scope(tp_context_t *context, const tp_kernel_context_t *call,
                                  const tp_device_scope_t *scope, tp_placement_t *out);
/* Whether `device` has a kernel for op `op_name` called with these inputs and attributes: for
 * library code that runs an op on a given device when it can. */
bool tp_device_can_run(tp_context_t *context, const tp_device_t *device, const char *op_name,
                       tp_tensor_t *const *inputs, size_t num_inputs, const tp_attr_t *attrs,
                       size_t num_attrs);
/* Whether any logical device matches `spec`. */
bool tp_placement_any_device_matches(const tp_device_registry_t *registry,
                                     const tp_device_spec_t *spec);

#endif
