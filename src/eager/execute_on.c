/* SPDX-License-Identifier: Apache-2.0 */
/* Running an op for library code that wants its result on a given device: there when the
 * device has a kernel, else on the host's CPU with the results copied over; and the optimizer's
 * step, fused where the device can fuse it. */
#include "base/status.h"
#include "eager/execute.h"
#include "launch/placement.h"
#include "tensor/tensor.h"

static tp_status_t *execute_in_scope(tp_context_t *context, const char *device_name,
                                     const char *op, tp_tensor_t *const *inputs,
                                     size_t num_inputs, const tp_attr_t *attrs,
                                     size_t num_attrs, tp_tensor_t **outputs,
                                     size_t num_outputs) {
    TP_RETURN_IF_ERROR(tp_device_push(context, device_name));
    tp_status_t *error =
        tp_execute(context, op, inputs, num_inputs, attrs, num_attrs, outputs, num_outputs);
    tp_status_free(tp_device_pop(context));
    return error;
}

tp_status_t *tp_execute_on(tp_context_t *context, tp_device_t *device, const char *op,
                           tp_tensor_t *const *inputs, size_t num_inputs, const tp_attr_t *attrs,
                           size_t num_attrs, tp_tensor_t **outputs, size_t num_outputs) {
    if (tp_device_can_run(context, device, op, inputs, num_inputs, attrs, num_attrs))
        return execute_in_scope(context, device->full_name, op, inputs, num_inputs, attrs,
                                num_attrs, outputs, num_outputs);
    tp_tensor_t *on_host[TP_MAX_OP_OUTPUTS] = {NULL};
    if (num_outputs > TP_MAX_OP_OUTPUTS)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: more than %d outputs", op,
                              (int)TP_MAX_OP_OUTPUTS);
    TP_RETURN_IF_ERROR(execute_in_scope(context, "/device:CPU:0", op, inputs, num_inputs, attrs,
                                        num_attrs, on_host, num_outputs));
    tp_status_t *error = NULL;
    size_t copied = 0;
    for (; copied < num_outputs && error == NULL; copied++)
        error = tp_tensor_to_device(on_host[copied], device, &outputs[copied]);
    if (error != NULL)
        for (size_t o = 0; o + 1 < copied; o++) tp_tensor_release(outputs[o]);
    for (size_t o = 0; o < num_outputs; o++) tp_tensor_release(on_host[o]);
    return error;
}

tp_status_t *tp_execute_descent_on(tp_context_t *context, tp_device_t *device, tp_tensor_t *var,
                                   tp_tensor_t *alpha, tp_tensor_t *delta, tp_tensor_t **out) {
    tp_tensor_t *update[3] = {var, alpha, delta};
    /* Known to run there: straight into the device's scope, not through tp_execute_on, which
     * would ask the same question again. */
    if (tp_device_can_run(context, device, "GradientDescentUpdate", update, 3, NULL, 0))
        return execute_in_scope(context, device->full_name, "GradientDescentUpdate", update, 3,
                                NULL, 0, out, 1);
    tp_tensor_t *product[2] = {delta, alpha}, *step;
    TP_RETURN_IF_ERROR(tp_execute_on(context, device, "Mul", product, 2, NULL, 0, &step, 1));
    tp_tensor_t *difference[2] = {var, step};
    tp_status_t *error = tp_execute_on(context, device, "Sub", difference, 2, NULL, 0, out, 1);
    tp_tensor_release(step);
    return error;
}
