/* SPDX-License-Identifier: Apache-2.0 */
/* Gradients of the layers of a dense network: MatMul, BiasAdd and the activations. */
#include "autodiff/gradients.h"
#include "base/status.h"

/* For z = op(a) @ op(b), with op a transpose when asked for:
 *   no transposes:  da = dz @ b^T     db = a^T @ dz
 *   a transposed:   da = b @ dz^T     db = a @ dz
 *   b transposed:   da = dz @ b       db = dz^T @ a
 *   both:           da = b^T @ dz^T   db = dz^T @ a^T                                        */
static TP_GRADIENT_FN(tp_gradient_matmul) {
    bool ta = tp_gradient_attr(op, "transpose_a")->i != 0;
    bool tb = tp_gradient_attr(op, "transpose_b")->i != 0;
    tp_tensor_t *a = op->inputs[0], *b = op->inputs[1], *dz = output_grads[0];
    tp_context_t *c = op->context;
    if (needed[0]) {
        tp_status_t *error = !ta ? tp_matmul(c, dz, b, false, !tb, &input_grads[0])
                             : !tb ? tp_matmul(c, b, dz, false, true, &input_grads[0])
                                   : tp_matmul(c, b, dz, true, true, &input_grads[0]);
        TP_RETURN_IF_ERROR(error);
    }
    if (needed[1]) {
        tp_status_t *error = !tb ? tp_matmul(c, a, dz, !ta, false, &input_grads[1])
                             : !ta ? tp_matmul(c, dz, a, true, false, &input_grads[1])
                                   : tp_matmul(c, dz, a, true, true, &input_grads[1]);
        if (error != NULL) {
            tp_gradient_release(input_grads, 1);
            return error;
        }
    }
    return NULL;
}

/* The value receives dz; the bias, dz summed over every dimension but the last. */
static TP_GRADIENT_FN(tp_gradient_bias_add) {
    tp_tensor_t *dz = output_grads[0];
    if (needed[0]) input_grads[0] = tp_tensor_retain(dz);
    if (!needed[1]) return NULL;
    int64_t axes[TP_MAX_RANK];
    int32_t rank = tp_tensor_shape(dz).rank;
    for (int32_t d = 0; d + 1 < rank; d++) axes[d] = d;
    tp_status_t *error = NULL;
    if (rank > 1)
        error = tp_sum(op->context, dz, axes, (size_t)(rank - 1), false, &input_grads[1]);
    else
        input_grads[1] = tp_tensor_retain(dz);
    if (error != NULL) tp_gradient_release(input_grads, 1);
    return error;
}

static tp_status_t *run_binary(tp_context_t *context, const char *name, tp_tensor_t *a,
                               tp_tensor_t *b, tp_tensor_t **out) {
    tp_tensor_t *inputs[2] = {a, b};
    return tp_execute(context, name, inputs, 2, NULL, 0, out, 1);
}

static TP_GRADIENT_FN(tp_gradient_relu) {
    (void)needed;
    return run_binary(op->context, "ReluGrad", output_grads[0], op->inputs[0], &input_grads[0]);
}

/* From the output: sigmoid' = y (1 - y), tanh' = 1 - y^2. */
static TP_GRADIENT_FN(tp_gradient_sigmoid) {
    (void)needed;
    return run_binary(op->context, "SigmoidGrad", op->outputs[0], output_grads[0],
                      &input_grads[0]);
}

static TP_GRADIENT_FN(tp_gradient_tanh) {
    (void)needed;
    return run_binary(op->context, "TanhGrad", op->outputs[0], output_grads[0], &input_grads[0]);
}

static const tp_gradient_entry_t entries[] = {
    {"BiasAdd", tp_gradient_bias_add},
    {"MatMul", tp_gradient_matmul},
    {"Relu", tp_gradient_relu},
    {"Sigmoid", tp_gradient_sigmoid},
    {"Tanh", tp_gradient_tanh},
};

const tp_gradient_family_t tp_gradients_nn = {entries, sizeof entries / sizeof entries[0]};
