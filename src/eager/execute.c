/* SPDX-License-Identifier: Apache-2.0 */
/* Running one op now: resolve the call, place it, infer shapes, then launch/ brings inputs to
 * the device, allocates outputs and launches the kernel on the device's stream. A tracer that
 * takes the call, and tapes that see it, are reached through launch/execution_hooks.h: this file
 * knows neither. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/profile_hooks.h"
#include "base/status.h"
#include "context/context.h"
#include "eager/execute.h"
#include "kernel/kernel_registry.h"
#include "launch/execution_hooks.h"
#include "launch/placement.h"
#include "launch/placement_cache.h"
#include "tensor/tensor.h"

static void log_placement(tp_context_t *context, const tp_kernel_context_t *call) {
    if (!atomic_load(&context->log_device_placement)) return;
    FILE *out = context->placement_log != NULL ? context->placement_log : stderr;
    fprintf(out, "Executing op %s in device %s\n", call->op->def->name, call->device->full_name);
}

tp_status_t *tp_execute(tp_context_t *context, const char *op_name, tp_tensor_t *const *inputs,
                        size_t num_inputs, const tp_attr_t *attrs, size_t num_attrs,
                        tp_tensor_t **outputs, size_t num_outputs) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(op_name);
    if (num_outputs > 0 && outputs == NULL)
        return tp_status_make(TP_INVALID_ARGUMENT, "tp_execute: argument 'outputs' is NULL");
    tp_op_t op;
    if (!tp_kernel_registry_find_op(&context->registry, op_name, &op))
        return tp_status_make(TP_NOT_FOUND, "unknown op '%s'", op_name);
    tp_kernel_context_t call;
    if (num_attrs != 0 ||
        !tp_resolved_call_find(context, &op, inputs, num_inputs, num_outputs, &call)) {
        TP_RETURN_IF_ERROR(tp_kernel_context_resolve(&call, &op, inputs, num_inputs, attrs,
                                                     num_attrs, num_outputs));
        if (num_attrs == 0) tp_resolved_call_add(context, &call);
    }
    bool symbolic = false;
    for (size_t i = 0; i < num_inputs; i++) {
        if (inputs[i]->context != context)
            return tp_status_make(TP_INVALID_ARGUMENT, "%s: input %zu belongs to another context",
                                  op_name, i);
        symbolic |= inputs[i]->trace != NULL;
    }
    const tp_execution_interceptor_t *interceptor = tp_execution_interceptor_for(context);
    if (interceptor != NULL) {
        TP_RETURN_IF_ERROR(tp_kernel_context_infer_shapes(&call));
        TP_RETURN_IF_ERROR(interceptor->take(context, &call, inputs, num_inputs, outputs));
        return tp_execution_notify(context, &call, inputs, num_inputs, outputs);
    }
    /* Symbolic inputs are rare outside a trace: test inline, and format only a failure (the
     * annotate call cost every op about 40 instructions per input). */
    for (size_t i = 0; symbolic && i < num_inputs; i++)
        if (inputs[i]->trace != NULL)
            return tp_status_annotate(tp_tensor_require_values(inputs[i], op_name), "input %zu",
                                      i);
    const tp_profile_hooks_t *profile = tp_profile_hooks();
    uint64_t begin_ns = tp_profile_begin(profile);
    TP_RETURN_IF_ERROR(tp_context_devices_ready(context));
    tp_placement_t placement;
    TP_RETURN_IF_ERROR(tp_place_op(context, &call, &placement));
    call.device = placement.device;
    TP_RETURN_IF_ERROR(tp_kernel_context_infer_shapes(&call));
    TP_RETURN_IF_ERROR(tp_execute_call(context, &call, placement.kernel, inputs, num_inputs));
    if (profile != NULL) profile->op(&call, NULL, begin_ns);
    log_placement(context, &call);
    for (int32_t o = 0; o < call.num_outputs; o++) outputs[o] = call.outputs[o];
    return tp_execution_notify(context, &call, inputs, num_inputs, outputs);
}
