/* SPDX-License-Identifier: Apache-2.0 */
/* Looking up ops and kernels among the built-ins and a context's plug-ins. */
#ifndef TP_KERNEL_KERNEL_REGISTRY_H
#define TP_KERNEL_KERNEL_REGISTRY_H

#include "base/strbuf.h"
#include "device/device_registry.h"
#include "kernel/kernel_context.h"

/* The op `name`, built-in or from a plug-in the context uses; false if there is none. */
bool tp_kernel_registry_find_op(const tp_device_registry_t *registry, const char *name,
                                tp_op_t *out_op);

/* Whether the kernels of `op` are chosen by its dtype attributes alone: every constraint of
 * every kernel of the op names one of them. Then a call's kernel on each device type follows
 * from the op and those attributes' values, and may be remembered by them. */
bool tp_kernel_registry_selects_by_dtypes(const tp_device_registry_t *registry,
                                          const tp_op_def_t *op);

/* The highest-priority kernel for the resolved call on devices of `device_type`, the first
 * registered of equal priorities (tp_kernel_entry_t.sequence), or NULL. */
const tp_kernel_def_t *tp_kernel_registry_find(const tp_device_registry_t *registry,
                                               const tp_kernel_context_t *call,
                                               const tp_device_type_def_t *device_type);

/* Appends "CPU, APU": the device types present with a kernel for the call, or "none". */
void tp_kernel_registry_describe_types(const tp_device_registry_t *registry,
                                       const tp_kernel_context_t *call, tp_strbuf_t *out);

#endif
