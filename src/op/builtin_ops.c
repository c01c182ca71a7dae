/* SPDX-License-Identifier: Apache-2.0 */
/* The built-in ops: their inputs, outputs, attributes and shape functions, in the same
 * tp_op_def_t form a plug-in registers its ops with. The kernels are the devices' business. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "op/op.h"
#include "op/shape_functions.h"

static const tp_dtype_t floats[] = {TP_FLOAT32, TP_FLOAT64};
static const tp_dtype_t numbers[] = {TP_FLOAT32, TP_FLOAT64, TP_INT32, TP_INT64};

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))
#define ARG(arg_name) {sizeof(tp_op_arg_def_t), arg_name, TP_DTYPE_INVALID, "T", NULL}
#define TYPE_ATTR(allowed, n)                                                                  \
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "T", .type = TP_ATTR_DTYPE,             \
     .allowed_dtypes = (allowed), .num_allowed_dtypes = (n)}

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

#define OP(op_name, in, out, attr_list)                                                         \
    {.struct_size = sizeof(tp_op_def_t), .name = op_name, .inputs = in,                       \
     .num_inputs = COUNT(in), .outputs = out, .num_outputs = COUNT(out), .attrs = attr_list,  \
     .num_attrs = COUNT(attr_list)}
#define RANDOM_OP(op_name)                                                                     \
    {.struct_size = sizeof(tp_op_def_t), .name = op_name, .outputs = arg_random_output,       \
     .num_outputs = 1, .attrs = random_attrs, .num_attrs = COUNT(random_attrs),               \
     .is_stateful = 1}

/* Sorted by name, for the binary search in tp_builtin_op_find. */
static const tp_op_def_t definitions[] = {
    OP("Abs", arg_x, arg_y, number_type),
    OP("Add", args_x_y, arg_y, number_type),
    OP("AddN", arg_n_inputs, arg_y, add_n_attrs),
    OP("BiasAdd", args_value_bias, arg_y, number_type),
    OP("Cast", arg_cast_x, arg_cast_y, cast_attrs),
    {.struct_size = sizeof(tp_op_def_t), .name = "Const", .outputs = arg_random_output,
     .num_outputs = 1, .attrs = const_attrs, .num_attrs = COUNT(const_attrs)},
    OP("Div", args_x_y, arg_y, number_type),
    OP("Exp", arg_x, arg_y, float_type),
    OP("Fill", arg_value, arg_y, shape_attrs),
    OP("Identity", arg_x, arg_y, any_type),
    OP("Log", arg_x, arg_y, float_type),
    OP("MatMul", args_a_b, arg_y, matmul_attrs),
    OP("Max", arg_x, arg_y, reduce_attrs),
    OP("Mean", arg_x, arg_y, reduce_attrs),
    OP("Mul", args_x_y, arg_y, number_type),
    OP("Neg", arg_x, arg_y, number_type),
    OP("OnesLike", arg_x, arg_y, any_type),
    RANDOM_OP("RandomStandardNormal"),
    RANDOM_OP("RandomUniform"),
    OP("Relu", arg_x, arg_y, number_type),
    OP("ReluGrad", args_gradients_features, arg_backprops, number_type),
    OP("Reshape", arg_x, arg_y, shape_attrs),
    OP("Sigmoid", arg_x, arg_y, float_type),
    OP("SigmoidGrad", args_y_dy, arg_z, float_type),
    OP("Softmax", arg_x, arg_y, float_type),
    OP("Sqrt", arg_x, arg_y, float_type),
    OP("Square", arg_x, arg_y, number_type),
    OP("Sub", args_x_y, arg_y, number_type),
    OP("Sum", arg_x, arg_y, reduce_attrs),
    OP("Tanh", arg_x, arg_y, float_type),
    OP("TanhGrad", args_y_dy, arg_z, float_type),
    OP("Transpose", arg_x, arg_y, transpose_attrs),
    OP("ZerosLike", arg_x, arg_y, any_type),
};

/* Index-aligned with definitions. */
static const tp_shape_fn_t shape_functions[] = {
    tp_shape_same_as_input,    /* Abs */
    tp_shape_broadcast,        /* Add */
    tp_shape_all_inputs_equal, /* AddN */
    tp_shape_bias_add,         /* BiasAdd */
    tp_shape_same_as_input,    /* Cast */
    tp_shape_const,            /* Const */
    tp_shape_broadcast,        /* Div */
    tp_shape_same_as_input,    /* Exp */
    tp_shape_fill,             /* Fill */
    tp_shape_same_as_input,    /* Identity */
    tp_shape_same_as_input,    /* Log */
    tp_shape_matmul,           /* MatMul */
    tp_shape_reduce,           /* Max */
    tp_shape_reduce,           /* Mean */
    tp_shape_broadcast,        /* Mul */
    tp_shape_same_as_input,    /* Neg */
    tp_shape_same_as_input,    /* OnesLike */
    tp_shape_from_attr,        /* RandomStandardNormal */
    tp_shape_from_attr,        /* RandomUniform */
    tp_shape_same_as_input,    /* Relu */
    tp_shape_all_inputs_equal, /* ReluGrad */
    tp_shape_reshape,          /* Reshape */
    tp_shape_same_as_input,    /* Sigmoid */
    tp_shape_all_inputs_equal, /* SigmoidGrad */
    tp_shape_softmax,          /* Softmax */
    tp_shape_same_as_input,    /* Sqrt */
    tp_shape_same_as_input,    /* Square */
    tp_shape_broadcast,        /* Sub */
    tp_shape_reduce,           /* Sum */
    tp_shape_same_as_input,    /* Tanh */
    tp_shape_all_inputs_equal, /* TanhGrad */
    tp_shape_transpose,        /* Transpose */
    tp_shape_same_as_input,    /* ZerosLike */
};

_Static_assert(COUNT(definitions) == COUNT(shape_functions),
               "every built-in op needs its shape function");

static tp_op_t ops[COUNT(definitions)];

static void build_ops(void) {
    for (size_t i = 0; i < COUNT(definitions); i++)
        ops[i] = (tp_op_t){&definitions[i], shape_functions[i], NULL};
}

static pthread_once_t ops_once = PTHREAD_ONCE_INIT;

const tp_op_t *tp_builtin_ops(size_t *out_count) {
    pthread_once(&ops_once, build_ops);
    *out_count = COUNT(definitions);
    return ops;
}

static int compare_name(const void *key, const void *element) {
    return strcmp((const char *)key, ((const tp_op_t *)element)->def->name);
}

const tp_op_t *tp_builtin_op_find(const char *name) {
    size_t count;
    const tp_op_t *all = tp_builtin_ops(&count);
    return bsearch(name, all, count, sizeof *all, compare_name);
}
