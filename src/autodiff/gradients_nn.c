/* SPDX-License-Identifier: Apache-2.0 */
/* Gradients of the layers of a dense network: MatMul (batched too), BiasAdd and the
 * activations, and of the activations' gradients (second derivatives). */
#include <string.h>

#include "autodiff/gradients.h"
#include "base/status.h"

/* For z = op(a) @ op(b), with op a transpose when asked for:
 *   no transposes:  da = dz @ b^T     db = a^T @ dz
 *   a transposed:   da = b @ dz^T     db = a @ dz
 *   b transposed:   da = dz @ b       db = dz^T @ a
 *   both:           da = b^T @ dz^T   db = dz^T @ a^T
 * Batches of matrices too (tp_matmul batches them), each gradient then with the output's
 * batch dimensions. */
static tp_status_t *product_grads(const tp_gradient_op_t *op, bool ta, bool tb,
                                  tp_tensor_t *dz, const bool *needed,
                                  tp_tensor_t **input_grads) {
    tp_tensor_t *a = op->inputs[0], *b = op->inputs[1];
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

static TP_GRADIENT_FN(tp_gradient_matmul) {
    return product_grads(op, tp_gradient_attr(op, "transpose_a")->i != 0,
                         tp_gradient_attr(op, "transpose_b")->i != 0, output_grads[0], needed,
                         input_grads);
}

/* As MatMul's, each gradient then summed over the batch dimensions its input broadcast. */
static TP_GRADIENT_FN(tp_gradient_batch_matmul) {
    tp_tensor_t *full[2] = {NULL, NULL};
    TP_RETURN_IF_ERROR(product_grads(op, tp_gradient_attr(op, "adj_x")->i != 0,
                                     tp_gradient_attr(op, "adj_y")->i != 0, output_grads[0],
                                     needed, full));
    tp_status_t *error = NULL;
    for (int i = 0; i < 2 && error == NULL; i++)
        if (needed[i])
            error = tp_gradient_unbroadcast(op->context, full[i], op->inputs[i], &input_grads[i]);
    tp_gradient_release(full, 2);
    if (error != NULL) tp_gradient_release(input_grads, 2);
    return error;
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

/* ReluGrad(g, f) = g where f > 0: linear in g (its gradient is ReluGrad again) and flat in f
 * wherever it is differentiable (zeros, as TensorFlow gives). */
static TP_GRADIENT_FN(tp_gradient_relu_grad) {
    tp_status_t *error = NULL;
    if (needed[0])
        error = run_binary(op->context, "ReluGrad", output_grads[0], op->inputs[1],
                           &input_grads[0]);
    if (error == NULL && needed[1]) {
        error = tp_zeros_like(op->context, op->inputs[1], &input_grads[1]);
        if (error != NULL) tp_gradient_release(input_grads, 1);
    }
    return error;
}

/* Second derivatives of the activations, for z = G(y, dy), y the activation's output:
 *   SigmoidGrad: z = dy y (1 - y)   dz/dy = dy (1 - 2y)   dz/d(dy) = y (1 - y)
 *   TanhGrad:    z = dy (1 - y^2)   dz/dy = -2 dy y       dz/d(dy) = 1 - y^2
 * The second is the op itself applied to the incoming gradient. */
static tp_status_t *activation_grad_grad(const tp_gradient_op_t *op, const char *name,
                                         tp_tensor_t *g, const bool *needed,
                                         tp_tensor_t **input_grads) {
    tp_context_t *c = op->context;
    tp_tensor_t *y = op->inputs[0], *dy = op->inputs[1];
    tp_tensor_t *g_dy = NULL, *g_dy_y = NULL, *twice = NULL;
    tp_status_t *error = NULL;
    if (needed[0]) {
        error = tp_mul(c, g, dy, &g_dy);
        if (error == NULL) error = tp_mul(c, g_dy, y, &g_dy_y);
        if (error == NULL) error = tp_add(c, g_dy_y, g_dy_y, &twice);
        /* Sigmoid: g dy - 2 g dy y. Tanh: -2 g dy y. */
        if (error == NULL)
            error = strcmp(name, "SigmoidGrad") == 0 ? tp_sub(c, g_dy, twice, &input_grads[0])
                                                     : tp_neg(c, twice, &input_grads[0]);
    }
    tp_tensor_release(g_dy);
    tp_tensor_release(g_dy_y);
    tp_tensor_release(twice);
    if (error == NULL && needed[1]) {
        error = run_binary(c, name, y, g, &input_grads[1]);
        if (error != NULL) tp_gradient_release(input_grads, 1);
    }
    return error;
}

static TP_GRADIENT_FN(tp_gradient_sigmoid_grad) {
    return activation_grad_grad(op, "SigmoidGrad", output_grads[0], needed, input_grads);
}

static TP_GRADIENT_FN(tp_gradient_tanh_grad) {
    return activation_grad_grad(op, "TanhGrad", output_grads[0], needed, input_grads);
}

static const tp_gradient_entry_t entries[] = {
    {"BatchMatMulV2", tp_gradient_batch_matmul},
    {"BiasAdd", tp_gradient_bias_add},
    {"MatMul", tp_gradient_matmul},
    {"Relu", tp_gradient_relu},
    {"ReluGrad", tp_gradient_relu_grad},
    {"Sigmoid", tp_gradient_sigmoid},
    {"SigmoidGrad", tp_gradient_sigmoid_grad},
    {"Tanh", tp_gradient_tanh},
    {"TanhGrad", tp_gradient_tanh_grad},
};

const tp_gradient_family_t tp_gradients_nn = {entries, sizeof entries / sizeof entries[0]};
