/* SPDX-License-Identifier: Apache-2.0 */
/* Gradients of element-wise arithmetic (Maximum and Minimum too), broadcasting included, of
 * the element-wise math functions and of Cast. */
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

/* Maximum and Minimum: dz goes to x where x is the one kept (x >= y for Maximum, x <= y for
 * Minimum: a tie goes to x whole, as TensorFlow gives it) and to y elsewhere, NaN included;
 * each summed back to its input's shape. */
static tp_status_t *extreme_grads(const tp_gradient_op_t *op, tp_tensor_t *dz,
                                  const bool *needed, bool larger, tp_tensor_t **grads) {
    tp_context_t *c = op->context;
    tp_tensor_t *x = op->inputs[0], *y = op->inputs[1];
    tp_tensor_t *to_x = NULL, *zeros = NULL, *share[2] = {NULL, NULL};
    tp_status_t *error = larger ? tp_greater_equal(c, x, y, &to_x) : tp_less_equal(c, x, y, &to_x);
    if (error == NULL) error = tp_zeros_like(c, dz, &zeros);
    if (error == NULL && needed[0]) error = tp_select(c, to_x, dz, zeros, &share[0]);
    if (error == NULL && needed[0])
        error = tp_gradient_unbroadcast(c, share[0], x, &grads[0]);
    if (error == NULL && needed[1]) error = tp_select(c, to_x, zeros, dz, &share[1]);
    if (error == NULL && needed[1]) {
        error = tp_gradient_unbroadcast(c, share[1], y, &grads[1]);
        if (error != NULL && needed[0]) tp_gradient_release(grads, 1);
    }
    tp_tensor_t *temporaries[] = {to_x, zeros, share[0], share[1]};
    tp_gradient_release(temporaries, 4);
    return error;
}

static TP_GRADIENT_FN(tp_gradient_maximum) {
    return extreme_grads(op, output_grads[0], needed, true, input_grads);
}

static TP_GRADIENT_FN(tp_gradient_minimum) {
    return extreme_grads(op, output_grads[0], needed, false, input_grads);
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

/* d(x^y) = (dz * y * x^(y - 1), dz * x^y * log x), each summed back to its input's shape. The
 * log is taken as 0 where x <= 0, as TensorFlow does: there x^y is real only for whole y, and
 * its slope in y is then not defined. */
static TP_GRADIENT_FN(tp_gradient_pow) {
    tp_context_t *c = op->context;
    tp_tensor_t *x = op->inputs[0], *y = op->inputs[1], *z = op->outputs[0];
    tp_tensor_t *dz = output_grads[0];
    tp_status_t *error = NULL;
    if (needed[0]) {
        tp_tensor_t *one = NULL, *lower = NULL, *power = NULL, *slope = NULL, *dx = NULL;
        error = tp_ones_like(c, y, &one);
        if (error == NULL) error = tp_sub(c, y, one, &lower);
        if (error == NULL) error = tp_pow(c, x, lower, &power);
        if (error == NULL) error = tp_mul(c, y, power, &slope);
        if (error == NULL) error = tp_mul(c, dz, slope, &dx);
        if (error == NULL) error = tp_gradient_unbroadcast(c, dx, x, &input_grads[0]);
        tp_tensor_release(one);
        tp_tensor_release(lower);
        tp_tensor_release(power);
        tp_tensor_release(slope);
        tp_tensor_release(dx);
        if (error != NULL) return error;
    }
    if (needed[1]) {
        tp_tensor_t *zero = NULL, *positive = NULL, *ones = NULL, *safe_x = NULL, *log_x = NULL;
        tp_tensor_t *log_or_zero = NULL, *slope = NULL, *dy = NULL;
        error = tp_zeros_like(c, x, &zero);
        if (error == NULL) error = tp_greater(c, x, zero, &positive);
        /* log is taken of 1 where x <= 0, so that no NaN or -inf is made to be thrown away. */
        if (error == NULL) error = tp_ones_like(c, x, &ones);
        if (error == NULL) error = tp_select(c, positive, x, ones, &safe_x);
        if (error == NULL) error = tp_log(c, safe_x, &log_x);
        if (error == NULL) error = tp_select(c, positive, log_x, zero, &log_or_zero);
        if (error == NULL) error = tp_mul(c, z, log_or_zero, &slope);
        if (error == NULL) error = tp_mul(c, dz, slope, &dy);
        if (error == NULL) error = tp_gradient_unbroadcast(c, dy, y, &input_grads[1]);
        tp_tensor_release(zero);
        tp_tensor_release(positive);
        tp_tensor_release(ones);
        tp_tensor_release(safe_x);
        tp_tensor_release(log_x);
        tp_tensor_release(log_or_zero);
        tp_tensor_release(slope);
        tp_tensor_release(dy);
        if (error != NULL && needed[0]) tp_gradient_release(input_grads, 1);
    }
    return error;
}

/* d(exp x) = dz * exp(x), the op's own output. */
static TP_GRADIENT_FN(tp_gradient_exp) {
    (void)needed;
    return tp_mul(op->context, output_grads[0], op->outputs[0], &input_grads[0]);
}

/* d(log x) = dz / x. */
static TP_GRADIENT_FN(tp_gradient_log) {
    (void)needed;
    return tp_div(op->context, output_grads[0], op->inputs[0], &input_grads[0]);
}

/* d(sqrt x) = dz / (2 sqrt(x)), from the output: no constant needed. */
static TP_GRADIENT_FN(tp_gradient_sqrt) {
    (void)needed;
    tp_tensor_t *y = op->outputs[0], *twice = NULL;
    TP_RETURN_IF_ERROR(tp_add(op->context, y, y, &twice));
    tp_status_t *error = tp_div(op->context, output_grads[0], twice, &input_grads[0]);
    tp_tensor_release(twice);
    return error;
}

/* d(x^-1/2) = -1/2 x^-3/2 dz = -1/2 y^3 dz, from the output y. */
static TP_GRADIENT_FN(tp_gradient_rsqrt) {
    (void)needed;
    tp_context_t *c = op->context;
    tp_tensor_t *y = op->outputs[0], *square = NULL, *cube = NULL, *scaled = NULL, *half = NULL;
    tp_status_t *error = tp_mul(c, y, y, &square);
    if (error == NULL) error = tp_mul(c, square, y, &cube);
    if (error == NULL) error = tp_mul(c, output_grads[0], cube, &scaled);
    if (error == NULL) error = tp_gradient_scalar(c, tp_tensor_dtype(y), -0.5, &half);
    if (error == NULL) error = tp_mul(c, scaled, half, &input_grads[0]);
    tp_tensor_release(square);
    tp_tensor_release(cube);
    tp_tensor_release(scaled);
    tp_tensor_release(half);
    return error;
}

/* d|x| = dz * sign(x); at 0 the sign is 0, TensorFlow's choice of subgradient. */
static TP_GRADIENT_FN(tp_gradient_abs) {
    (void)needed;
    tp_tensor_t *sign = NULL;
    TP_RETURN_IF_ERROR(tp_sign(op->context, op->inputs[0], &sign));
    tp_status_t *error = tp_mul(op->context, output_grads[0], sign, &input_grads[0]);
    tp_tensor_release(sign);
    return error;
}

/* Sign is flat wherever it is differentiable: its gradient is zero (not "none", as in
 * TensorFlow: the output does depend on the input, only not smoothly). */
static TP_GRADIENT_FN(tp_gradient_sign) {
    (void)needed;
    (void)output_grads;
    return tp_zeros_like(op->context, op->inputs[0], &input_grads[0]);
}

static bool is_floating(tp_dtype_t dtype) {
    return dtype == TP_FLOAT32 || dtype == TP_FLOAT64;
}

/* Between floating-point dtypes the gradient is cast back to the source's dtype; to or from an
 * integer or bool nothing flows back (the values are rounded to steps, as TensorFlow has it). */
static TP_GRADIENT_FN(tp_gradient_cast) {
    (void)needed;
    tp_dtype_t from = tp_tensor_dtype(op->inputs[0]), to = tp_tensor_dtype(op->outputs[0]);
    if (!is_floating(from) || !is_floating(to)) return NULL;
    return tp_cast(op->context, output_grads[0], from, &input_grads[0]);
}

static const tp_gradient_entry_t entries[] = {
    {"Abs", tp_gradient_abs},
    {"Add", tp_gradient_add},
    {"AddN", tp_gradient_add_n},
    {"Cast", tp_gradient_cast},
    {"Div", tp_gradient_div},
    {"Exp", tp_gradient_exp},
    {"Identity", tp_gradient_identity},
    {"Log", tp_gradient_log},
    {"Maximum", tp_gradient_maximum},
    {"Minimum", tp_gradient_minimum},
    {"Mul", tp_gradient_mul},
    {"Neg", tp_gradient_neg},
    {"Pow", tp_gradient_pow},
    {"OnesLike", tp_gradient_none},
    {"Rsqrt", tp_gradient_rsqrt},
    {"Sign", tp_gradient_sign},
    {"Sqrt", tp_gradient_sqrt},
    {"Square", tp_gradient_square},
    {"Sub", tp_gradient_sub},
    {"ZerosLike", tp_gradient_none},
};

const tp_gradient_family_t tp_gradients_math = {entries, sizeof entries / sizeof entries[0]};
