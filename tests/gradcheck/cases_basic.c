/* SPDX-License-Identifier: Apache-2.0 */
/* Gradient check cases for the ops of ops_basic.c: element-wise arithmetic with broadcasting,
 * the math functions, the activations and their gradients, AddN, BiasAdd, MatMul (batched
 * too), Cast, the reductions and the layout ops. */
#include "gradcheck.h"

#define A GRADCHECK_SIZE_A
#define B GRADCHECK_SIZE_B
#define C GRADCHECK_SIZE_C
#define D GRADCHECK_SIZE_D

/* A float64 input of rank `rank` and the dimensions that follow, drawn as `values`. */
#define IN(values, rank, ...) {TP_FLOAT64, rank, {__VA_ARGS__}, values, 0}
#define ANY(rank, ...) IN(GRADCHECK_ANY, rank, __VA_ARGS__)
#define SCALAR {TP_FLOAT64, 0, {0}, GRADCHECK_ANY, 0}

#define BOOL_ATTR(attr_name, value) {.name = attr_name, .type = TP_ATTR_BOOL, .i = (value)}
#define LIST_ATTR(attr_name, n, ...)                                                           \
    {.name = attr_name, .type = TP_ATTR_INT_LIST, .list = (const int64_t[]){__VA_ARGS__},      \
     .count = (n)}
#define NO_LIST_ATTR(attr_name) {.name = attr_name, .type = TP_ATTR_INT_LIST, .count = 0}
#define SHAPE_ATTR(n, ...)                                                                     \
    {.name = "shape", .type = TP_ATTR_SHAPE, .list = (const int64_t[]){__VA_ARGS__}, .count = (n)}

/* The broadcasting pairs every binary op is checked on; the divisor of Div stays away from 0. */
#define BINARY_CASES(op_name, y_values)                                                        \
    {.op = op_name, .what = "equal shapes", .num_inputs = 2,                                   \
     .inputs = {ANY(2, A, B), IN(y_values, 2, A, B)}},                                         \
    {.op = op_name, .what = "a row vector broadcast over a matrix", .num_inputs = 2,           \
     .inputs = {ANY(2, A, B), IN(y_values, 1, B)}},                                            \
    {.op = op_name, .what = "a column broadcast over a matrix", .num_inputs = 2,               \
     .inputs = {ANY(2, A, B), IN(y_values, 2, A, 1)}},                                         \
    {.op = op_name, .what = "a matrix and a scalar", .num_inputs = 2,                          \
     .inputs = {ANY(2, A, B), IN(y_values, 0, 0)}},                                            \
    {.op = op_name, .what = "a scalar and a matrix", .num_inputs = 2,                          \
     .inputs = {SCALAR, IN(y_values, 2, A, B)}},                                               \
    {.op = op_name, .what = "a row vector and a matrix", .num_inputs = 2,                      \
     .inputs = {ANY(1, B), IN(y_values, 2, A, B)}},                                            \
    {.op = op_name, .what = "a column and a row: both broadcast", .num_inputs = 2,             \
     .inputs = {ANY(2, A, 1), IN(y_values, 2, 1, B)}},                                         \
    {.op = op_name, .what = "rank 3 against rank 2, broadcast both ways", .num_inputs = 2,     \
     .inputs = {ANY(3, A, 1, B), IN(y_values, 2, C, 1)}},                                      \
    {.op = op_name, .what = "one size-0 dimension broadcast against 1", .num_inputs = 2,       \
     .inputs = {ANY(2, 0, B), IN(y_values, 2, 1, B)}}

/* MatMul with the given transposes, its shapes written as op(a) is (A, B) and op(b) (B, C);
 * and the same with every dimension A, where a wrong transpose keeps the shape. */
#define MATMUL_CASES(what_text, ta, tb, a_rank_dims, b_rank_dims)                              \
    {.op = "MatMul", .what = what_text, .num_inputs = 2,                                       \
     .inputs = {ANY a_rank_dims, ANY b_rank_dims},                                             \
     .attrs = {BOOL_ATTR("transpose_a", ta), BOOL_ATTR("transpose_b", tb)}, .num_attrs = 2},   \
    {.op = "MatMul", .what = what_text ", square operands", .num_inputs = 2,                   \
     .inputs = {ANY(2, A, A), ANY(2, A, A)},                                                   \
     .attrs = {BOOL_ATTR("transpose_a", ta), BOOL_ATTR("transpose_b", tb)}, .num_attrs = 2}

/* BatchMatMulV2 with the given adjoints, its batch dimensions broadcast where they differ. */
#define BATCH_MATMUL_CASE(what_text, ax, ay, x_rank_dims, y_rank_dims)                         \
    {.op = "BatchMatMulV2", .what = what_text, .num_inputs = 2,                                \
     .inputs = {ANY x_rank_dims, ANY y_rank_dims},                                             \
     .attrs = {BOOL_ATTR("adj_x", ax), BOOL_ATTR("adj_y", ay)}, .num_attrs = 2}

/* A reduction of an (A, B, C) input over the given axis attribute. */
#define REDUCTION_CASE(op_name, values, what_text, axis_attr, keep)                            \
    {.op = op_name, .what = what_text, .num_inputs = 1, .inputs = {IN(values, 3, A, B, C)},    \
     .attrs = {axis_attr, BOOL_ATTR("keep_dims", keep)}, .num_attrs = 2}

/* Max and Min draw distinct values: a tie has no derivative (unit tests check how ties share). */
#define REDUCTION_CASES(op_name, v)                                                            \
    REDUCTION_CASE(op_name, v, "every axis", NO_LIST_ATTR("axis"), 0),                         \
    REDUCTION_CASE(op_name, v, "every axis, kept", NO_LIST_ATTR("axis"), 1),                   \
    REDUCTION_CASE(op_name, v, "the middle axis", LIST_ATTR("axis", 1, 1), 0),                 \
    REDUCTION_CASE(op_name, v, "the middle axis, kept", LIST_ATTR("axis", 1, 1), 1),           \
    REDUCTION_CASE(op_name, v, "the last axis, counted from the end",                          \
                   LIST_ATTR("axis", 1, -1), 0),                                               \
    REDUCTION_CASE(op_name, v, "the outer axes", LIST_ATTR("axis", 2, 0, 2), 0),               \
    REDUCTION_CASE(op_name, v, "every axis named", LIST_ATTR("axis", 3, 0, 1, 2), 0),          \
    REDUCTION_CASE(op_name, v, "axes -3 and 1, kept", LIST_ATTR("axis", 2, -3, 1), 1),         \
    {.op = op_name, .what = "a scalar", .num_inputs = 1, .inputs = {SCALAR}}

static const gradcheck_case_t cases[] = {
    BINARY_CASES("Add", GRADCHECK_ANY),
    BINARY_CASES("Sub", GRADCHECK_ANY),
    BINARY_CASES("Mul", GRADCHECK_ANY),
    BINARY_CASES("Div", GRADCHECK_AWAY_FROM_ZERO),
    /* Values drawn independently are never tied (unit tests check where ties go). */
    BINARY_CASES("Maximum", GRADCHECK_ANY),
    BINARY_CASES("Minimum", GRADCHECK_ANY),
    /* Pow's base stays positive, where both slopes are defined; a negative base to whole
     * powers is the unit test's (its slope in the exponent is taken as 0 there). */
    {.op = "Pow", .what = "equal shapes", .num_inputs = 2,
     .inputs = {IN(GRADCHECK_POSITIVE, 2, A, B), ANY(2, A, B)}},
    {.op = "Pow", .what = "a matrix to a scalar power", .num_inputs = 2,
     .inputs = {IN(GRADCHECK_POSITIVE, 2, A, B), SCALAR}},
    {.op = "Pow", .what = "a scalar to a matrix of powers", .num_inputs = 2,
     .inputs = {{TP_FLOAT64, 0, {0}, GRADCHECK_POSITIVE, 0}, ANY(2, A, B)}},
    {.op = "Pow", .what = "a column and a row: both broadcast", .num_inputs = 2,
     .inputs = {IN(GRADCHECK_POSITIVE, 2, A, 1), ANY(2, 1, B)}},
    {.op = "Pow", .what = "rank 3 against rank 2, broadcast both ways", .num_inputs = 2,
     .inputs = {IN(GRADCHECK_POSITIVE, 3, A, 1, B), ANY(2, C, 1)}},

    {.op = "Neg", .what = "a matrix", .num_inputs = 1, .inputs = {ANY(2, A, B)}},
    {.op = "Square", .what = "a matrix", .num_inputs = 1, .inputs = {ANY(2, A, B)}},
    {.op = "Square", .what = "a scalar", .num_inputs = 1, .inputs = {SCALAR}},
    {.op = "Identity", .what = "a rank-3 tensor", .num_inputs = 1, .inputs = {ANY(3, A, B, C)}},
    {.op = "ZerosLike", .what = "no gradient: its value is not its input's",
     .num_inputs = 1, .inputs = {ANY(2, A, B)}},
    {.op = "OnesLike", .what = "no gradient: its value is not its input's",
     .num_inputs = 1, .inputs = {ANY(2, A, B)}},
    {.op = "Relu", .what = "values away from the kink at 0", .num_inputs = 1,
     .inputs = {IN(GRADCHECK_AWAY_FROM_ZERO, 2, A, B)}},
    {.op = "Sigmoid", .what = "a matrix", .num_inputs = 1, .inputs = {ANY(2, A, B)}},
    {.op = "Tanh", .what = "a matrix", .num_inputs = 1, .inputs = {ANY(2, A, B)}},
    {.op = "Exp", .what = "a matrix", .num_inputs = 1, .inputs = {ANY(2, A, B)}},
    {.op = "Log", .what = "positive values", .num_inputs = 1,
     .inputs = {IN(GRADCHECK_POSITIVE, 2, A, B)}},
    {.op = "Sqrt", .what = "positive values", .num_inputs = 1,
     .inputs = {IN(GRADCHECK_POSITIVE, 2, A, B)}},
    {.op = "Rsqrt", .what = "positive values", .num_inputs = 1,
     .inputs = {IN(GRADCHECK_POSITIVE, 2, A, B)}},
    {.op = "Abs", .what = "values away from the kink at 0", .num_inputs = 1,
     .inputs = {IN(GRADCHECK_AWAY_FROM_ZERO, 2, A, B)}},
    {.op = "Sign", .what = "values away from the step at 0: zero", .num_inputs = 1,
     .inputs = {IN(GRADCHECK_AWAY_FROM_ZERO, 2, A, B)}},

    {.op = "Cast", .what = "float64 to float64", .num_inputs = 1, .inputs = {ANY(2, A, B)},
     .attrs = {{.name = "DstT", .type = TP_ATTR_DTYPE, .i = TP_FLOAT64}}, .num_attrs = 1},
    /* float32's rounding (6e-8) over a step of 1e-6 would be a 3% error: Cast is linear, so a
     * step of 1e-2 costs nothing. */
    {.op = "Cast", .what = "float64 to float32", .num_inputs = 1,
     .inputs = {ANY(2, A, B)},
     .attrs = {{.name = "DstT", .type = TP_ATTR_DTYPE, .i = TP_FLOAT32}}, .num_attrs = 1,
     .step = 1e-2, .tolerance = 1e-4},
    {.op = "Cast", .what = "int32 to float64: nothing to differentiate, no failure",
     .num_inputs = 1, .inputs = {{TP_INT32, 2, {A, B}, GRADCHECK_INDEX, 10}},
     .attrs = {{.name = "DstT", .type = TP_ATTR_DTYPE, .i = TP_FLOAT64}}, .num_attrs = 1},

    {.op = "ReluGrad", .what = "features away from the kink at 0", .num_inputs = 2,
     .inputs = {ANY(2, A, B), IN(GRADCHECK_AWAY_FROM_ZERO, 2, A, B)}},
    {.op = "SigmoidGrad", .what = "second derivative of Sigmoid", .num_inputs = 2,
     .inputs = {ANY(2, A, B), ANY(2, A, B)}},
    {.op = "TanhGrad", .what = "second derivative of Tanh", .num_inputs = 2,
     .inputs = {ANY(2, A, B), ANY(2, A, B)}},

    {.op = "AddN", .what = "three terms", .num_inputs = 3,
     .inputs = {ANY(2, A, B), ANY(2, A, B), ANY(2, A, B)}},
    {.op = "AddN", .what = "one term", .num_inputs = 1, .inputs = {ANY(3, A, B, C)}},

    {.op = "BiasAdd", .what = "a matrix", .num_inputs = 2, .inputs = {ANY(2, A, B), ANY(1, B)}},
    {.op = "BiasAdd", .what = "rank 4, channels last", .num_inputs = 2,
     .inputs = {ANY(4, A, B, C, D), ANY(1, D)}},
    {.op = "BiasAdd", .what = "a vector: the bias is added element by element", .num_inputs = 2,
     .inputs = {ANY(1, A), ANY(1, A)}},

    MATMUL_CASES("no transposes", 0, 0, (2, A, B), (2, B, C)),
    MATMUL_CASES("a transposed", 1, 0, (2, B, A), (2, B, C)),
    MATMUL_CASES("b transposed", 0, 1, (2, A, B), (2, C, B)),
    MATMUL_CASES("both transposed", 1, 1, (2, B, A), (2, C, B)),
    BATCH_MATMUL_CASE("a batch, no adjoints", 0, 0, (3, D, A, B), (3, D, B, C)),
    BATCH_MATMUL_CASE("a batch, x adjoint", 1, 0, (3, D, B, A), (3, D, B, C)),
    BATCH_MATMUL_CASE("a batch, y adjoint", 0, 1, (3, D, A, B), (3, D, C, B)),
    BATCH_MATMUL_CASE("a batch, both adjoint", 1, 1, (3, D, B, A), (3, D, C, B)),
    BATCH_MATMUL_CASE("a batch of one broadcast", 0, 0, (3, 1, A, B), (3, D, B, C)),
    BATCH_MATMUL_CASE("a matrix against a batch", 0, 0, (2, A, B), (3, D, B, C)),
    BATCH_MATMUL_CASE("batch dimensions broadcast both ways", 0, 1, (4, D, 1, A, B),
                      (3, C, C, B)),

    {.op = "Fill", .what = "a matrix of the drawn sizes", .num_inputs = 1, .inputs = {SCALAR},
     .attrs = {SHAPE_ATTR(2, A, B)}, .num_attrs = 1, .sized_attrs = true},
    {.op = "Fill", .what = "a scalar", .num_inputs = 1, .inputs = {SCALAR},
     .attrs = {{.name = "shape", .type = TP_ATTR_SHAPE, .count = 0}}, .num_attrs = 1},

    REDUCTION_CASES("Sum", GRADCHECK_ANY),
    REDUCTION_CASES("Mean", GRADCHECK_ANY),
    REDUCTION_CASES("Max", GRADCHECK_DISTINCT),
    REDUCTION_CASES("Min", GRADCHECK_DISTINCT),
    REDUCTION_CASES("Prod", GRADCHECK_ANY),
    /* The values 0, 1 and 2: groups with no zero, one and several, whose elements receive the
     * product of the others (a product is linear in each element: the differences are exact). */
    {.op = "Prod", .what = "groups holding zeros", .num_inputs = 1,
     .inputs = {{TP_FLOAT64, 3, {A, B, 3}, GRADCHECK_INDEX, 3}},
     .attrs = {LIST_ATTR("axis", 1, -1), BOOL_ATTR("keep_dims", 0)}, .num_attrs = 2},

    {.op = "Reshape", .what = "dimensions reordered", .num_inputs = 1,
     .inputs = {ANY(3, A, B, C)}, .attrs = {SHAPE_ATTR(3, C, A, B)}, .num_attrs = 1,
     .sized_attrs = true},
    {.op = "Reshape", .what = "to a vector", .num_inputs = 1, .inputs = {ANY(2, 1, A)},
     .attrs = {SHAPE_ATTR(1, A)}, .num_attrs = 1, .sized_attrs = true},
    {.op = "Reshape", .what = "one dimension inferred", .num_inputs = 1,
     .inputs = {ANY(3, 2, 3, 4)}, .attrs = {SHAPE_ATTR(2, 4, -1)}, .num_attrs = 1},
    {.op = "Reshape", .what = "to a scalar", .num_inputs = 1, .inputs = {ANY(2, 1, 1)},
     .attrs = {SHAPE_ATTR(0, 0)}, .num_attrs = 1},

    /* (2, 0, 1) is not its own inverse: a gradient transposing by perm again fails. */
    {.op = "Transpose", .what = "perm (2, 0, 1)", .num_inputs = 1, .inputs = {ANY(3, A, B, C)},
     .attrs = {LIST_ATTR("perm", 3, 2, 0, 1)}, .num_attrs = 1},
    {.op = "Transpose", .what = "perm (0, 2, 1)", .num_inputs = 1, .inputs = {ANY(3, A, B, C)},
     .attrs = {LIST_ATTR("perm", 3, 0, 2, 1)}, .num_attrs = 1},
    {.op = "Transpose", .what = "perm (3, 1, 0, 2)", .num_inputs = 1,
     .inputs = {ANY(4, A, B, C, D)}, .attrs = {LIST_ATTR("perm", 4, 3, 1, 0, 2)},
     .num_attrs = 1},
    {.op = "Transpose", .what = "the default perm, reversing rank 3", .num_inputs = 1,
     .inputs = {ANY(3, A, B, C)}},
    {.op = "Transpose", .what = "the default perm of a matrix", .num_inputs = 1,
     .inputs = {ANY(2, A, B)}},
};

const gradcheck_family_t gradcheck_cases_basic = {"basic", cases,
                                                  sizeof cases / sizeof cases[0]};
