/* SPDX-License-Identifier: Apache-2.0 */
/* The typed functions for the built-in ops: each is tp_execute with its inputs and
 * attributes. */
#include "base/status.h"
#include "eager/op_api.h"

UNARY(tp_identity, "Identity")
UNARY(tp_relu, "Relu")
UNARY(tp_sigmoid, "Sigmoid")
UNARY(tp_tanh, "Tanh")
UNARY(tp_exp, "Exp")
UNARY(tp_log, "Log")
UNARY(tp_sqrt, "Sqrt")
UNARY(tp_rsqrt, "Rsqrt")
UNARY(tp_sign, "Sign")
UNARY(tp_neg, "Neg")
UNARY(tp_abs, "Abs")
UNARY(tp_square, "Square")
UNARY(tp_zeros_like, "ZerosLike")
UNARY(tp_ones_like, "OnesLike")
UNARY(tp_softmax, "Softmax")
BINARY(tp_add, "Add")
BINARY(tp_sub, "Sub")
BINARY(tp_mul, "Mul")
BINARY(tp_div, "Div")
BINARY(tp_pow, "Pow")
BINARY(tp_maximum, "Maximum")
BINARY(tp_minimum, "Minimum")
BINARY(tp_bias_add, "BiasAdd")

tp_status_t *tp_add_n(tp_context_t *c, tp_tensor_t *const *inputs, size_t count,
                      tp_tensor_t **out) {
    return tp_execute(c, "AddN", inputs, count, NULL, 0, out, 1);
}

/* Two matrices: MatMul. A stack of them on either side: BatchMatMulV2, as tf.linalg.matmul
 * chooses, one op for the whole batch rather than one per product. */
tp_status_t *tp_matmul(tp_context_t *c, tp_tensor_t *a, tp_tensor_t *b, bool transpose_a,
                       bool transpose_b, tp_tensor_t **out) {
    tp_tensor_t *inputs[2] = {a, b};
    bool batched = a != NULL && b != NULL &&
                   (tp_tensor_shape(a).rank > 2 || tp_tensor_shape(b).rank > 2);
    tp_attr_t attrs[2] = {
        TP_ATTR_BOOL_VALUE(batched ? "adj_x" : "transpose_a", transpose_a),
        TP_ATTR_BOOL_VALUE(batched ? "adj_y" : "transpose_b", transpose_b)};
    return tp_execute(c, batched ? "BatchMatMulV2" : "MatMul", inputs, 2, attrs, 2, out, 1);
}

static tp_status_t *reduce(tp_context_t *c, const char *op, tp_tensor_t *x, const int64_t *axes,
                           size_t num_axes, bool keep_dims, tp_tensor_t **out) {
    if (num_axes > TP_MAX_RANK)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: %zu axes for at most rank %d", op,
                              num_axes, TP_MAX_RANK);
    tp_attr_t attrs[2] = {TP_ATTR_LIST_VALUE("axis", axes, (int32_t)num_axes),
                          TP_ATTR_BOOL_VALUE("keep_dims", keep_dims)};
    return tp_execute(c, op, &x, 1, attrs, 2, out, 1);
}

tp_status_t *tp_sum(tp_context_t *c, tp_tensor_t *x, const int64_t *axes, size_t num_axes,
                    bool keep_dims, tp_tensor_t **out) {
    return reduce(c, "Sum", x, axes, num_axes, keep_dims, out);
}

tp_status_t *tp_mean(tp_context_t *c, tp_tensor_t *x, const int64_t *axes, size_t num_axes,
                     bool keep_dims, tp_tensor_t **out) {
    return reduce(c, "Mean", x, axes, num_axes, keep_dims, out);
}

tp_status_t *tp_max(tp_context_t *c, tp_tensor_t *x, const int64_t *axes, size_t num_axes,
                    bool keep_dims, tp_tensor_t **out) {
    return reduce(c, "Max", x, axes, num_axes, keep_dims, out);
}

tp_status_t *tp_min(tp_context_t *c, tp_tensor_t *x, const int64_t *axes, size_t num_axes,
                    bool keep_dims, tp_tensor_t **out) {
    return reduce(c, "Min", x, axes, num_axes, keep_dims, out);
}

tp_status_t *tp_prod(tp_context_t *c, tp_tensor_t *x, const int64_t *axes, size_t num_axes,
                     bool keep_dims, tp_tensor_t **out) {
    return reduce(c, "Prod", x, axes, num_axes, keep_dims, out);
}

/* A shape as a TP_ATTR_SHAPE attribute; the shape must outlive the call. */
static tp_attr_t shape_attr(const tp_shape_t *shape) {
    return (tp_attr_t){.name = "shape", .type = TP_ATTR_SHAPE, .list = shape->dims,
                       .count = shape->rank};
}

static tp_status_t *check_rank(const char *op, const tp_shape_t *shape) {
    if (shape->rank < 0 || shape->rank > TP_MAX_RANK)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: shape rank %d is outside 0..%d", op,
                              (int)shape->rank, TP_MAX_RANK);
    return NULL;
}

tp_status_t *tp_reshape(tp_context_t *c, tp_tensor_t *x, tp_shape_t shape, tp_tensor_t **out) {
    TP_RETURN_IF_ERROR(check_rank("Reshape", &shape));
    tp_attr_t attr = shape_attr(&shape);
    return tp_execute(c, "Reshape", &x, 1, &attr, 1, out, 1);
}

tp_status_t *tp_transpose(tp_context_t *c, tp_tensor_t *x, const int64_t *perm, size_t rank,
                          tp_tensor_t **out) {
    if (rank > TP_MAX_RANK)
        return tp_status_make(TP_INVALID_ARGUMENT, "Transpose: perm of %zu entries", rank);
    tp_attr_t attr = TP_ATTR_LIST_VALUE("perm", perm, (int32_t)rank);
    return tp_execute(c, "Transpose", &x, 1, &attr, 1, out, 1);
}

tp_status_t *tp_cast(tp_context_t *c, tp_tensor_t *x, tp_dtype_t dtype, tp_tensor_t **out) {
    tp_attr_t attr = TP_ATTR_DTYPE_VALUE("DstT", dtype);
    return tp_execute(c, "Cast", &x, 1, &attr, 1, out, 1);
}

tp_status_t *tp_fill(tp_context_t *c, tp_shape_t shape, tp_tensor_t *value, tp_tensor_t **out) {
    TP_RETURN_IF_ERROR(check_rank("Fill", &shape));
    tp_attr_t attr = shape_attr(&shape);
    return tp_execute(c, "Fill", &value, 1, &attr, 1, out, 1);
}

static tp_status_t *random_op(tp_context_t *c, const char *op, tp_dtype_t dtype,
                              tp_shape_t shape, int64_t seed, tp_tensor_t **out) {
    TP_RETURN_IF_ERROR(check_rank(op, &shape));
    tp_attr_t attrs[3] = {TP_ATTR_DTYPE_VALUE("dtype", dtype), shape_attr(&shape),
                          TP_ATTR_INT_VALUE("seed", seed)};
    return tp_execute(c, op, NULL, 0, attrs, 3, out, 1);
}

tp_status_t *tp_random_normal(tp_context_t *c, tp_dtype_t dtype, tp_shape_t shape, int64_t seed,
                              tp_tensor_t **out) {
    return random_op(c, "RandomStandardNormal", dtype, shape, seed, out);
}

tp_status_t *tp_random_uniform(tp_context_t *c, tp_dtype_t dtype, tp_shape_t shape,
                               int64_t seed, tp_tensor_t **out) {
    return random_op(c, "RandomUniform", dtype, shape, seed, out);
}

tp_status_t *tp_constant(tp_context_t *c, tp_dtype_t dtype, tp_shape_t shape, const void *data,
                         size_t size, tp_tensor_t **out) {
    TP_RETURN_IF_ERROR(check_rank("Const", &shape));
    if (size > INT32_MAX)
        return tp_status_make(TP_INVALID_ARGUMENT, "Const: %zu bytes is more than a constant "
                              "attribute holds (2 GiB)", size);
    tp_attr_t attrs[3] = {TP_ATTR_DTYPE_VALUE("dtype", dtype), shape_attr(&shape),
                          {.name = "value", .type = TP_ATTR_BYTES, .s = data,
                           .count = (int32_t)size}};
    return tp_execute(c, "Const", NULL, 0, attrs, 3, out, 1);
}
