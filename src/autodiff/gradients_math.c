/* SPDX-License-Identifier: Apache-2.0 */
/* Gradients of element-wise arithmetic, broadcasting included. */
#include "autodiff/gradients.h"
#include "base/status.h"

/* d(x + y) = (dz, dz) and d(x - y) = (dz, -dz), each summed back to its input's shape. */
static tp_status_t *add_or_sub(const tp_gradient_op_t *op, tp_tensor_t *dz, const bool *needed,
                               bool subtract, tp_tensor_t **grads) {
    if (needed[0])
        TP_RETURN_IF_ERROR(tp_gradient_unbroadcast(op->context, dz, op->inputs[0], &grads[0]));
    if (!needed[1]) return NULL;
    tp_tensor_t *dy = dz;
    tp_status_t *error = subtract ? tp_neg(op->context, dz, &dy) : NULL;
    if (error == NULL) error = tp_gradient_unbroadcast(op->context, dy, op->inputs[1], &grads[1]);
    if (dy != dz) tp_tensor_release(dy);
    if (error != NULL) tp_gradient_release(grads, 1);
    return error;
}

static TP_GRADIENT_FN(tp_gradient_add) {
    return add_or_sub(op, output_grads[0], needed, false, input_grads);
}

static TP_GRADIENT_FN(tp_gradient_sub) {
    return add_or_sub(op, output_grads[0], needed, true, input_grads);
}

/* d(x * y) = (dz * y, dz * x), each summed back to its input's shape. */
static TP_GRADIENT_FN(tp_gradient_mul) {
    for (int32_t i = 0; i < 2; i++) {
        if (!needed[i]) continue;
        tp_tensor_t *product;
        tp_status_t *error = tp_mul(op->context, output_grads[0], op->inputs[1 - i], &product);
        if (error == NULL) {
            error = tp_gradient_unbroadcast(op->context, product, op->inputs[i], &input_grads[i]);
            tp_tensor_release(product);
        }
        if (error != NULL) {
            tp_gradient_release(input_grads, i);
            return error;
        }
    }
    return NULL;
}

static TP_GRADIENT_FN(tp_gradient_neg) {
    (void)needed;
    return tp_neg(op->context, output_grads[0], &input_grads[0]);
}

/* d(x^2) = dz * 2x. */
static TP_GRADIENT_FN(tp_gradient_square) {
    (void)needed;
    tp_tensor_t *twice;
    TP_RETURN_IF_ERROR(tp_add(op->context, op->inputs[0], op->inputs[0], &twice));
    tp_status_t *error = tp_mul(op->context, output_grads[0], twice, &input_grads[0]);
    tp_tensor_release(twice);
    return error;
}

/* Every input of a sum receives the sum's gradient. */
static TP_GRADIENT_FN(tp_gradient_add_n) {
    for (int32_t i = 0; i < op->num_inputs; i++)
        if (needed[i]) input_grads[i] = tp_tensor_retain(output_grads[0]);
    return NULL;
}

static TP_GRADIENT_FN(tp_gradient_identity) {
    (void)op;
    (void)needed;
    input_grads[0] = tp_tensor_retain(output_grads[0]);
    return NULL;
}

/* d(x / y) = (dz / y, -dz * x / y^2), each summed back to its input's shape. */
static TP_GRADIENT_FN(tp_gradient_div) {
    tp_context_t *c = op->context;
    tp_tensor_t *x = op->inputs[0], *y = op->inputs[1], *dz = output_grads[0];
    tp_tensor_t *quotient = NULL, *scaled = NULL, *negated = NULL;
    tp_status_t *error = tp_div(c, dz, y, &quotient);
    if (error == NULL && needed[0])
        error = tp_gradient_unbroadcast(c, quotient, x, &input_grads[0]);
    /* dz * x / y^2 = (dz / y) * (x / y), kept in range where y^2 would overflow. */
    if (error == NULL && needed[1]) {
        tp_tensor_t *ratio = NULL;
        error = tp_div(c, x, y, &ratio);
        if (error == NULL) error = tp_mul(c, quotient, ratio, &scaled);
        if (error == NULL) error = tp_neg(c, scaled, &negated);
        if (error == NULL) error = tp_gradient_unbroadcast(c, negated, y, &input_grads[1]);
        tp_tensor_release(ratio);
        if (error != NULL && needed[0]) tp_gradient_release(input_grads, 1);
    }
    tp_tensor_release(quotient);
    tp_tensor_release(scaled);
    tp_tensor_release(negated);
    return error;
}

/* Their values do not depend on their input's: nothing flows back (TensorFlow's
 * non-differentiable ops). */
static TP_GRADIENT_FN(tp_gradient_none) {
    (void)op;
    (void)output_grads;
    (void)needed;
    (void)input_grads;
    return NULL;
}

static const tp_gradient_entry_t entries[] = {
    {"Add", tp_gradient_add},
    {"AddN", tp_gradient_add_n},
    {"Div", tp_gradient_div},
    {"Identity", tp_gradient_identity},
    {"Mul", tp_gradient_mul},
    {"Neg", tp_gradient_neg},
    {"OnesLike", tp_gradient_none},
    {"Square", tp_gradient_square},
    {"Sub", tp_gradient_sub},
    {"ZerosLike", tp_gradient_none},
};

const tp_gradient_family_t tp_gradients_math = {entries, sizeof entries / sizeof entries[0]};
