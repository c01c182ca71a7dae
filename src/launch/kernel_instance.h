/* SPDX-License-Identifier: Apache-2.0 */
/* The instance a launch of a TP_KERNEL_REUSE_INSTANCE kernel computes on: the one its device
 * keeps for the call's attribute values and input dtypes (device/kernel_instances.h), made by
 * the kernel's create the first time. */
#ifndef TP_LAUNCH_KERNEL_INSTANCE_H
#define TP_LAUNCH_KERNEL_INSTANCE_H

#include "device/kernel_instances.h"
#include "kernel/kernel_context.h"
#include "plugin/plugin_status.h"

/* The plug-in's failure in a launch, named by op and device; NULL when it reported none. */
static inline tp_status_t *tp_launch_failure(const tp_plugin_status_t *status,
                                             const tp_kernel_context_t *call) {
    return tp_plugin_status_check(status, "%s on %s", call->op->def->name,
                                  call->device->full_name);
}

/* Whether launches of `kernel` for `call` compute on a kept instance: the kernel asked for it
 * and has a create, and the op is not stateful (a random op's seed changes with every run of
 * a function, and each would keep an instance of its own). */
static inline bool tp_kernel_keeps_instances(const tp_kernel_context_t *call,
                                             const tp_kernel_def_t *kernel) {
    return (kernel->flags & TP_KERNEL_REUSE_INSTANCE) != 0 && kernel->create != NULL &&
           !call->op->def->is_stateful;
}

/* The kept instance for the call on call->device, made now if need be; NULL with no error
 * when the device keeps as many as it may. A create's failure is named by op and device, and
 * nothing is kept. */
tp_status_t *tp_kernel_instance_for(tp_kernel_context_t *call, const tp_kernel_def_t *kernel,
                                    tp_kept_instance_t **out);

#endif
