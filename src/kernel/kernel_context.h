/* SPDX-License-Identifier: Apache-2.0 */
/* One execution of an op: the resolved call that shape inference, placement and the kernel
 * read. It is the tp_kernel_context_t that plug-ins see through the host's kernel_* functions. */
#ifndef TP_KERNEL_KERNEL_CONTEXT_H
#define TP_KERNEL_KERNEL_CONTEXT_H

#include <stdbool.h>

#include "device/device.h"
#include "op/op.h"

struct tp_resolved_slot;

struct tp_kernel_context {
    const tp_op_t *op;
    tp_attr_t attrs[TP_MAX_OP_ATTRS]; /* in the order of op->def->attrs, all set */
    tp_tensor_t *const *inputs;
    int32_t num_inputs;
    int32_t num_outputs;
    tp_dtype_t output_dtypes[TP_MAX_OP_OUTPUTS];
    tp_shape_t output_shapes[TP_MAX_OP_OUTPUTS];
    bool output_shape_set[TP_MAX_OP_OUTPUTS];
    tp_tensor_t *outputs[TP_MAX_OP_OUTPUTS];
    tp_device_t *device;
    void *stream;
    bool inferring; /* in shape inference: no memory, output shapes may be set */
    /* In the create of a kept instance (TP_KERNEL_REUSE_INSTANCE): views without memory, as
     * what create reads must hold for every launch of its key. */
    bool making_instance;
    /* Set by plugin-check to prove that a kernel passes host errors on: kernel_input and
     * kernel_output then fail with this message. NULL otherwise. */
    const char *refused_views;
    /* The kept resolution this call was filled from (launch/placement_cache.h), which also
     * keeps the call's placement when no scope names a device type; NULL: none. */
    const struct tp_resolved_slot *resolved;
};

/* Starts a call of `op` on `inputs`: every field but the attributes, input count and output
 * dtypes, which resolving (or a kept resolution) writes. Field by field: the attribute array is
 * large. */
static inline void tp_kernel_context_begin(tp_kernel_context_t *call, const tp_op_t *op,
                                           tp_tensor_t *const *inputs) {
    call->op = op;
    call->inputs = inputs;
    call->num_outputs = 0;
    call->device = NULL;
    call->stream = NULL;
    call->inferring = false;
    call->making_instance = false;
    call->refused_views = NULL;
    call->resolved = NULL;
    for (int32_t o = 0; o < TP_MAX_OP_OUTPUTS; o++) {
        call->output_shape_set[o] = false;
        call->outputs[o] = NULL;
    }
}

/* Checks and completes a call of `op`: attribute names and types, type attributes taken from
 * the inputs, list lengths, defaults, allowed dtypes and output dtypes. */
tp_status_t *tp_kernel_context_resolve(tp_kernel_context_t *call, const tp_op_t *op,
                                       tp_tensor_t *const *inputs, size_t num_inputs,
                                       const tp_attr_t *attrs, size_t num_attrs,
                                       size_t num_outputs);

/* Runs the op's shape inference: the built-in function, the plug-in's infer_shape, or "every
 * output has input 0's shape". */
tp_status_t *tp_kernel_context_infer_shapes(tp_kernel_context_t *call);

/* The resolved value of attribute `name`; NULL if the op has none. */
const tp_attr_t *tp_kernel_context_attr(const tp_kernel_context_t *call, const char *name);

/* Fills the host function table's kernel_* entries. */
void tp_kernel_context_fill_host_api(tp_host_api_t *api);

#endif
