/* SPDX-License-Identifier: Apache-2.0 */
/* Gradients of reductions and of ops that only move elements: Sum, Mean, Max, Min, Prod,
 * Reshape, Transpose, Fill. */
#include "autodiff/gradients.h"
#include "base/status.h"

/* The input's shape with the reduced axes kept as 1, and whether every axis was reduced. */
static void kept_shape(const tp_gradient_op_t *op, tp_shape_t *out, bool *out_all) {
    const tp_attr_t *axis = tp_gradient_attr(op, "axis");
    tp_shape_t shape = tp_tensor_shape(op->inputs[0]);
    bool reduced[TP_MAX_RANK] = {false};
    for (int32_t i = 0; i < axis->count; i++) {
        int64_t a = axis->list[i] < 0 ? axis->list[i] + shape.rank : axis->list[i];
        reduced[a] = true;
    }
    bool all = true;
    for (int32_t d = 0; d < shape.rank; d++) {
        if (axis->count == 0 || reduced[d])
            shape.dims[d] = 1;
        else
            all = false;
    }
    *out = shape;
    *out_all = all;
}

/* dy, of the reduction's shape, repeated along the reduced axes to the input's shape. */
static tp_status_t *spread(const tp_gradient_op_t *op, tp_tensor_t *dy, tp_tensor_t **out) {
    tp_context_t *c = op->context;
    tp_tensor_t *x = op->inputs[0];
    tp_shape_t kept;
    bool all;
    kept_shape(op, &kept, &all);
    tp_tensor_t *scalar = NULL, *zeros = NULL, *reshaped = NULL;
    tp_status_t *error;
    if (all) {
        /* One pass: Fill from the single value. */
        error = tp_reshape(c, dy, TP_SCALAR_SHAPE, &scalar);
        if (error == NULL) error = tp_fill(c, tp_tensor_shape(x), scalar, out);
        tp_tensor_release(scalar);
        return error;
    }
    error = tp_reshape(c, dy, kept, &reshaped);
    if (error == NULL) error = tp_zeros_like(c, x, &zeros);
    if (error == NULL) error = tp_add(c, zeros, reshaped, out);
    tp_tensor_release(reshaped);
    tp_tensor_release(zeros);
    return error;
}

static TP_GRADIENT_FN(tp_gradient_sum) {
    (void)needed;
    return spread(op, output_grads[0], &input_grads[0]);
}

/* The sum's gradient divided by how many elements each mean averaged. */
static TP_GRADIENT_FN(tp_gradient_mean) {
    (void)needed;
    tp_context_t *c = op->context;
    int64_t in = tp_tensor_num_elements(op->inputs[0]);
    int64_t outs = tp_tensor_num_elements(op->outputs[0]);
    double count = outs > 0 ? (double)in / (double)outs : 1.0;
    tp_dtype_t dtype = tp_tensor_dtype(op->inputs[0]);
    tp_tensor_t *spread_grad, *divisor;
    TP_RETURN_IF_ERROR(spread(op, output_grads[0], &spread_grad));
    float count32 = (float)count;
    tp_status_t *error =
        dtype == TP_FLOAT32
            ? tp_constant(c, dtype, TP_SCALAR_SHAPE, &count32, sizeof count32, &divisor)
            : tp_constant(c, dtype, TP_SCALAR_SHAPE, &count, sizeof count, &divisor);
    if (error == NULL) {
        error = tp_div(c, spread_grad, divisor, &input_grads[0]);
        tp_tensor_release(divisor);
    }
    tp_tensor_release(spread_grad);
    return error;
}

/* Max and Min: each result's gradient goes to the input elements equal to it, split evenly
 * among ties, as TensorFlow does. Equality is found as 1 - |sign(x - y)| (x - y is 0 exactly
 * when x == y), from ops every device has, so that no comparison op is needed. A NaN result
 * gives NaN gradients to its group, and so does an infinite one (inf - inf is NaN). */
static TP_GRADIENT_FN(tp_gradient_extreme) {
    (void)needed;
    tp_context_t *c = op->context;
    tp_tensor_t *x = op->inputs[0];
    const tp_attr_t *axis = tp_gradient_attr(op, "axis");
    tp_shape_t kept;
    bool all; /* Sum below reduces the same axes, all of them included */
    kept_shape(op, &kept, &all);
    tp_tensor_t *y = NULL, *dy = NULL, *difference = NULL, *sign = NULL, *off = NULL,
                *ones = NULL, *chosen = NULL, *ties = NULL, *share = NULL;
    tp_status_t *error = tp_reshape(c, op->outputs[0], kept, &y);
    if (error == NULL) error = tp_reshape(c, output_grads[0], kept, &dy);
    if (error == NULL) error = tp_sub(c, x, y, &difference);
    if (error == NULL) error = tp_sign(c, difference, &sign);
    if (error == NULL) error = tp_abs(c, sign, &off);
    if (error == NULL) error = tp_ones_like(c, off, &ones);
    if (error == NULL) error = tp_sub(c, ones, off, &chosen);
    if (error == NULL)
        error = tp_sum(c, chosen, axis->list, (size_t)axis->count, true, &ties);
    if (error == NULL) error = tp_div(c, chosen, ties, &share);
    if (error == NULL) error = tp_mul(c, share, dy, &input_grads[0]);
    tp_tensor_t *temporaries[] = {y, dy, difference, sign, off, ones, chosen, ties, share};
    tp_gradient_release(temporaries, sizeof temporaries / sizeof temporaries[0]);
    return error;
}

/* Prod: each element receives dy times the product of the others in its group, as
 * TensorFlow's gradient gives it (through exclusive cumulative products): with no zero in the
 * group that is the product over the element; with one zero, the zero receives the product of
 * the rest and the others 0; with more, every element 0. The product of the group's nonzero
 * elements is taken once, and no division by zero is made. */
static TP_GRADIENT_FN(tp_gradient_prod) {
    (void)needed;
    tp_context_t *c = op->context;
    tp_tensor_t *x = op->inputs[0];
    const tp_attr_t *axis = tp_gradient_attr(op, "axis");
    const int64_t *axes = axis->list;
    size_t num_axes = (size_t)axis->count;
    tp_shape_t kept;
    bool all; /* tp_prod and tp_sum reduce every axis when none is named */
    kept_shape(op, &kept, &all);
    (void)all;
    enum { ZERO, ONE, IS_ZERO, NONZERO, PRODUCT, ZERO_FLAGS, ZEROS_IN_GROUP, GROUP_ZERO,
           GROUP_ONE, NONE, SINGLE, QUOTIENT, LONE, FOR_ZEROS, OTHERS, DY, COUNT };
    tp_tensor_t *t[COUNT] = {NULL};
    tp_status_t *error = tp_zeros_like(c, x, &t[ZERO]);
    if (error == NULL) error = tp_ones_like(c, x, &t[ONE]);
    if (error == NULL) error = tp_equal(c, x, t[ZERO], &t[IS_ZERO]);
    if (error == NULL) error = tp_select(c, t[IS_ZERO], t[ONE], x, &t[NONZERO]);
    if (error == NULL) error = tp_prod(c, t[NONZERO], axes, num_axes, true, &t[PRODUCT]);
    if (error == NULL) error = tp_cast(c, t[IS_ZERO], tp_tensor_dtype(x), &t[ZERO_FLAGS]);
    if (error == NULL)
        error = tp_sum(c, t[ZERO_FLAGS], axes, num_axes, true, &t[ZEROS_IN_GROUP]);
    if (error == NULL) error = tp_zeros_like(c, t[ZEROS_IN_GROUP], &t[GROUP_ZERO]);
    if (error == NULL) error = tp_ones_like(c, t[ZEROS_IN_GROUP], &t[GROUP_ONE]);
    if (error == NULL) error = tp_equal(c, t[ZEROS_IN_GROUP], t[GROUP_ZERO], &t[NONE]);
    if (error == NULL) error = tp_equal(c, t[ZEROS_IN_GROUP], t[GROUP_ONE], &t[SINGLE]);
    if (error == NULL) error = tp_div(c, t[PRODUCT], t[NONZERO], &t[QUOTIENT]);
    if (error == NULL) error = tp_select(c, t[SINGLE], t[PRODUCT], t[GROUP_ZERO], &t[LONE]);
    if (error == NULL) error = tp_select(c, t[IS_ZERO], t[LONE], t[ZERO], &t[FOR_ZEROS]);
    if (error == NULL) error = tp_select(c, t[NONE], t[QUOTIENT], t[FOR_ZEROS], &t[OTHERS]);
    if (error == NULL) error = tp_reshape(c, output_grads[0], kept, &t[DY]);
    if (error == NULL) error = tp_mul(c, t[OTHERS], t[DY], &input_grads[0]);
    tp_gradient_release(t, COUNT);
    return error;
}

static TP_GRADIENT_FN(tp_gradient_reshape) {
    (void)needed;
    return tp_reshape(op->context, output_grads[0], tp_tensor_shape(op->inputs[0]),
                      &input_grads[0]);
}

/* Transposing back: the inverse permutation. */
static TP_GRADIENT_FN(tp_gradient_transpose) {
    (void)needed;
    const tp_attr_t *perm = tp_gradient_attr(op, "perm");
    int32_t rank = tp_tensor_shape(op->inputs[0]).rank;
    int64_t inverse[TP_MAX_RANK];
    for (int32_t d = 0; d < rank; d++)
        inverse[perm->count == 0 ? rank - 1 - d : perm->list[d]] = d;
    return tp_transpose(op->context, output_grads[0], inverse, (size_t)rank, &input_grads[0]);
}

/* Every element is the one value: it receives the sum of their gradients. */
static TP_GRADIENT_FN(tp_gradient_fill) {
    (void)needed;
    tp_tensor_t *sum;
    TP_RETURN_IF_ERROR(tp_sum(op->context, output_grads[0], NULL, 0, false, &sum));
    tp_status_t *error =
        tp_reshape(op->context, sum, tp_tensor_shape(op->inputs[0]), &input_grads[0]);
    tp_tensor_release(sum);
    return error;
}

static const tp_gradient_entry_t entries[] = {
    {"Fill", tp_gradient_fill},
    {"Max", tp_gradient_extreme},
    {"Mean", tp_gradient_mean},
    {"Min", tp_gradient_extreme},
    {"Prod", tp_gradient_prod},
    {"Reshape", tp_gradient_reshape},
    {"Sum", tp_gradient_sum},
    {"Transpose", tp_gradient_transpose},
};

const tp_gradient_family_t tp_gradients_shape = {entries, sizeof entries / sizeof entries[0]};
