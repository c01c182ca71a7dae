/* SPDX-License-Identifier: Apache-2.0 */
/* The ops of round 1: element-wise arithmetic and activations, reductions, MatMul, the layout
 * ops, constants and random numbers. */
#include "op/op_defs.h"
#include "op/shape_functions.h"

static const tp_dtype_t floats[] = {TP_OP_FLOAT_DTYPES};
static const tp_dtype_t numbers[] = {TP_OP_NUMBER_DTYPES};

#define COUNT TP_OP_COUNT
#define ARG TP_OP_ARG
#define TYPE_ATTR TP_OP_TYPE_ATTR

static const tp_op_arg_def_t arg_x[] = {ARG("x")};
static const tp_op_arg_def_t arg_y[] = {ARG("y")};
static const tp_op_arg_def_t args_x_y[] = {ARG("x"), ARG("y")};
static const tp_op_arg_def_t args_a_b[] = {ARG("a"), ARG("b")};
static const tp_op_arg_def_t args_value_bias[] = {ARG("value"), ARG("bias")};
static const tp_op_arg_def_t arg_value[] = {ARG("value")};
static const tp_op_arg_def_t args_gradients_features[] = {ARG("gradients"), ARG("features")};
static const tp_op_arg_def_t args_y_dy[] = {ARG("y"), ARG("dy")};
static const tp_op_arg_def_t arg_backprops[] = {ARG("backprops")};
static const tp_op_arg_def_t arg_z[] = {ARG("z")};
static const tp_op_arg_def_t arg_output[] = {ARG("output")};
static const tp_op_arg_def_t arg_n_inputs[] = {
    {sizeof(tp_op_arg_def_t), "inputs", TP_DTYPE_INVALID, "T", "N"}};
static const tp_op_arg_def_t arg_cast_x[] = {
    {sizeof(tp_op_arg_def_t), "x", TP_DTYPE_INVALID, "SrcT", NULL}};
static const tp_op_arg_def_t arg_cast_y[] = {
    {sizeof(tp_op_arg_def_t), "y", TP_DTYPE_INVALID, "DstT", NULL}};
static const tp_op_arg_def_t arg_random_output[] = {
    {sizeof(tp_op_arg_def_t), "output", TP_DTYPE_INVALID, "dtype", NULL}};

static const tp_op_attr_def_t any_type[] = {TYPE_ATTR(NULL, 0)};
static const tp_op_attr_def_t float_type[] = {TYPE_ATTR(floats, COUNT(floats))};
static const tp_op_attr_def_t number_type[] = {TYPE_ATTR(numbers, COUNT(numbers))};
static const tp_op_attr_def_t add_n_attrs[] = {
    TYPE_ATTR(numbers, COUNT(numbers)),
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "N", .type = TP_ATTR_INT}};
static const tp_op_attr_def_t matmul_attrs[] = {
    TYPE_ATTR(floats, COUNT(floats)),
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "transpose_a", .type = TP_ATTR_BOOL,
     .has_default = 1},
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "transpose_b", .type = TP_ATTR_BOOL,
     .has_default = 1}};
static const tp_op_attr_def_t batch_matmul_attrs[] = {
    TYPE_ATTR(floats, COUNT(floats)),
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "adj_x", .type = TP_ATTR_BOOL,
     .has_default = 1},
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "adj_y", .type = TP_ATTR_BOOL,
     .has_default = 1}};
static const tp_op_attr_def_t reduce_attrs[] = {
    TYPE_ATTR(numbers, COUNT(numbers)),
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "axis", .type = TP_ATTR_INT_LIST,
     .has_default = 1},
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "keep_dims", .type = TP_ATTR_BOOL,
     .has_default = 1}};
static const tp_op_attr_def_t shape_attrs[] = {
    TYPE_ATTR(NULL, 0),
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "shape", .type = TP_ATTR_SHAPE}};
static const tp_op_attr_def_t transpose_attrs[] = {
    TYPE_ATTR(NULL, 0),
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "perm", .type = TP_ATTR_INT_LIST,
     .has_default = 1}};
static const tp_op_attr_def_t cast_attrs[] = {
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "SrcT", .type = TP_ATTR_DTYPE},
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "DstT", .type = TP_ATTR_DTYPE}};
static const tp_op_attr_def_t const_attrs[] = {
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "dtype", .type = TP_ATTR_DTYPE},
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "shape", .type = TP_ATTR_SHAPE},
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "value", .type = TP_ATTR_BYTES}};
static const tp_op_attr_def_t random_attrs[] = {
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "dtype", .type = TP_ATTR_DTYPE,
     .allowed_dtypes = floats, .num_allowed_dtypes = COUNT(floats)},
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "shape", .type = TP_ATTR_SHAPE},
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "seed", .type = TP_ATTR_INT,
     .has_default = 1}};

#define RANDOM_OP(op_name, shape_fn)                                                           \
    {{.struct_size = sizeof(tp_op_def_t), .name = op_name, .outputs = arg_random_output,      \
      .num_outputs = 1, .attrs = random_attrs, .num_attrs = COUNT(random_attrs),              \
      .is_stateful = 1},                                                                      \
     shape_fn}

static const tp_builtin_op_entry_t entries[] = {
    TP_OP_ENTRY("Abs", arg_x, arg_y, number_type, tp_shape_same_as_input),
    TP_OP_ENTRY("Add", args_x_y, arg_y, number_type, tp_shape_broadcast),
    TP_OP_ENTRY("AddN", arg_n_inputs, arg_y, add_n_attrs, tp_shape_all_inputs_equal),
    TP_OP_ENTRY("BatchMatMulV2", args_x_y, arg_output, batch_matmul_attrs,
                tp_shape_batch_matmul),
    TP_OP_ENTRY("BiasAdd", args_value_bias, arg_y, number_type, tp_shape_bias_add),
    TP_OP_ENTRY("Cast", arg_cast_x, arg_cast_y, cast_attrs, tp_shape_same_as_input),
    {{.struct_size = sizeof(tp_op_def_t), .name = "Const", .outputs = arg_random_output,
      .num_outputs = 1, .attrs = const_attrs, .num_attrs = TP_OP_COUNT(const_attrs)},
     tp_shape_const},
    TP_OP_ENTRY("Div", args_x_y, arg_y, number_type, tp_shape_broadcast),
    TP_OP_ENTRY("Exp", arg_x, arg_y, float_type, tp_shape_same_as_input),
    TP_OP_ENTRY("Fill", arg_value, arg_y, shape_attrs, tp_shape_fill),
    TP_OP_ENTRY("Identity", arg_x, arg_y, any_type, tp_shape_same_as_input),
    TP_OP_ENTRY("Log", arg_x, arg_y, float_type, tp_shape_same_as_input),
    TP_OP_ENTRY("MatMul", args_a_b, arg_y, matmul_attrs, tp_shape_matmul),
    TP_OP_ENTRY("Max", arg_x, arg_y, reduce_attrs, tp_shape_reduce),
    TP_OP_ENTRY("Maximum", args_x_y, arg_y, number_type, tp_shape_broadcast),
    TP_OP_ENTRY("Mean", arg_x, arg_y, reduce_attrs, tp_shape_reduce),
    TP_OP_ENTRY("Min", arg_x, arg_y, reduce_attrs, tp_shape_reduce),
    TP_OP_ENTRY("Minimum", args_x_y, arg_y, number_type, tp_shape_broadcast),
    TP_OP_ENTRY("Mul", args_x_y, arg_y, number_type, tp_shape_broadcast),
    TP_OP_ENTRY("Neg", arg_x, arg_y, number_type, tp_shape_same_as_input),
    TP_OP_ENTRY("OnesLike", arg_x, arg_y, any_type, tp_shape_same_as_input),
    RANDOM_OP("RandomStandardNormal", tp_shape_from_attr),
    RANDOM_OP("RandomUniform", tp_shape_from_attr),
    TP_OP_ENTRY("Pow", args_x_y, arg_y, number_type, tp_shape_broadcast),
    TP_OP_ENTRY("Prod", arg_x, arg_y, reduce_attrs, tp_shape_reduce),
    TP_OP_ENTRY("Relu", arg_x, arg_y, number_type, tp_shape_same_as_input),
    TP_OP_ENTRY("ReluGrad", args_gradients_features, arg_backprops, number_type,
                tp_shape_all_inputs_equal),
    TP_OP_ENTRY("Reshape", arg_x, arg_y, shape_attrs, tp_shape_reshape),
    TP_OP_ENTRY("Rsqrt", arg_x, arg_y, float_type, tp_shape_same_as_input),
    TP_OP_ENTRY("Sigmoid", arg_x, arg_y, float_type, tp_shape_same_as_input),
    TP_OP_ENTRY("SigmoidGrad", args_y_dy, arg_z, float_type, tp_shape_all_inputs_equal),
    TP_OP_ENTRY("Sign", arg_x, arg_y, number_type, tp_shape_same_as_input),
    TP_OP_ENTRY("Softmax", arg_x, arg_y, float_type, tp_shape_softmax),
    TP_OP_ENTRY("Sqrt", arg_x, arg_y, float_type, tp_shape_same_as_input),
    TP_OP_ENTRY("Square", arg_x, arg_y, number_type, tp_shape_same_as_input),
    TP_OP_ENTRY("Sub", args_x_y, arg_y, number_type, tp_shape_broadcast),
    TP_OP_ENTRY("Sum", arg_x, arg_y, reduce_attrs, tp_shape_reduce),
    TP_OP_ENTRY("Tanh", arg_x, arg_y, float_type, tp_shape_same_as_input),
    TP_OP_ENTRY("TanhGrad", args_y_dy, arg_z, float_type, tp_shape_all_inputs_equal),
    TP_OP_ENTRY("Transpose", arg_x, arg_y, transpose_attrs, tp_shape_transpose),
    TP_OP_ENTRY("ZerosLike", arg_x, arg_y, any_type, tp_shape_same_as_input),
};

const tp_op_family_t tp_ops_basic = {"basic", entries, COUNT(entries)};
