/* SPDX-License-Identifier: Apache-2.0 */
/* Gradient descent. An update is not part of what a tape differentiates. */
#include "autodiff/tape.h"
#include "autodiff/variable.h"
#include "base/status.h"
#include "eager/execute.h"
#include "model/optimizers.h"
#include "tensor/tensor.h"

static tp_status_t *apply_one(tp_variable_t *variable, tp_tensor_t *grad, double rate) {
    tp_tensor_t *scale;
    TP_RETURN_IF_ERROR(tp_status_annotate(
        tp_tensor_float_scalar(grad->context, grad->dtype, rate, &scale), "the learning rate"));
    tp_status_t *error = tp_variable_descend(variable, scale, grad);
    tp_tensor_release(scale);
    return error;
}

tp_status_t *tp_sgd_apply(tp_variable_t *const *variables, tp_tensor_t *const *grads,
                          size_t count, double learning_rate) {
    if (count > 0) {
        TP_REQUIRE_ARG(variables);
        TP_REQUIRE_ARG(grads);
    }
    /* Checked first, so that a bad pair does not leave the variables before it updated. */
    for (size_t i = 0; i < count; i++) {
        if (variables[i] == NULL || grads[i] == NULL)
            return tp_status_make(TP_INVALID_ARGUMENT, "tp_sgd_apply: %s %zu is NULL",
                                  variables[i] == NULL ? "variable" : "gradient", i);
        TP_RETURN_IF_ERROR(tp_status_annotate(
            tp_optimizer_check_gradient_like(variables[i], grads[i]), "tp_sgd_apply"));
    }
    tp_status_t *error = NULL;
    tp_tape_suspend();
    for (size_t i = 0; i < count && error == NULL; i++)
        error = tp_status_annotate(apply_one(variables[i], grads[i], learning_rate),
                                   "tp_sgd_apply: variable '%s'", tp_variable_name(variables[i]));
    tp_tape_resume();
    return error;
}
