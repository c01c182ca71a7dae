/* SPDX-License-Identifier: Apache-2.0 */
/* The math ops under TensorFlow's names (tp.add, tp.matmul, tp.reduce_sum, tp.argmax, ...):
 * element-wise ops, comparisons, sums, products and reductions. tensorplug/math.py and
 * __init__.py give them their namespaces. */
#include "ops.h"

TPY_UNARY_OP(abs, "x", tp_abs)
TPY_UNARY_OP(negative, "x", tp_neg)
TPY_UNARY_OP(sign, "x", tp_sign)
TPY_UNARY_OP(square, "x", tp_square)
TPY_UNARY_OP(sqrt, "x", tp_sqrt)
TPY_UNARY_OP(rsqrt, "x", tp_rsqrt)
TPY_UNARY_OP(exp, "x", tp_exp)
TPY_UNARY_OP(log, "x", tp_log)
TPY_UNARY_OP(sigmoid, "x", tp_sigmoid)
TPY_UNARY_OP(tanh, "x", tp_tanh)
TPY_UNARY_OP(identity, "input", tp_identity)

TPY_BINARY_OP(add, tp_add)
TPY_BINARY_OP(subtract, tp_sub)
TPY_BINARY_OP(multiply, tp_mul)
TPY_BINARY_OP(maximum, tp_maximum)
TPY_BINARY_OP(minimum, tp_minimum)
TPY_BINARY_OP(equal, tp_equal)
TPY_BINARY_OP(not_equal, tp_not_equal)
TPY_BINARY_OP(less, tp_less)
TPY_BINARY_OP(less_equal, tp_less_equal)
TPY_BINARY_OP(greater, tp_greater)
TPY_BINARY_OP(greater_equal, tp_greater_equal)

/* zeros_like(input, dtype=None, name=None) and ones_like: dtype given, the result is cast to
 * it, as TensorFlow gives zeros of that dtype. */
static PyObject *like(const char *function, tpy_unary_fn fn, PyObject *const *args,
                      Py_ssize_t nargs, PyObject *kwnames) {
    if (nargs == 1 && kwnames == NULL) return tpy_call_unary(fn, args[0]);
    static const char *const names[] = {"input", "dtype", "name"};
    PyObject *values[3];
    if (tpy_parse(function, names, 3, 1, args, nargs, kwnames, values) < 0) return NULL;
    tp_dtype_t dtype = TP_DTYPE_INVALID;
    if (values[1] != NULL && tpy_dtype_from_object(values[1], &dtype) < 0) return NULL;
    PyObject *result = tpy_call_unary(fn, values[0]);
    if (result == NULL || dtype == TP_DTYPE_INVALID ||
        dtype == tp_tensor_dtype(TPY_TENSOR(result)))
        return result;
    tp_tensor_t *cast = NULL;
    int failed = tpy_cast(TPY_TENSOR(result), dtype, &cast);
    Py_DECREF(result);
    return failed < 0 ? NULL : tpy_tensor_wrap(cast);
}

static TPY_OP_SIGNATURE(zeros_like) {
    (void)self;
    return like("zeros_like", tp_zeros_like, args, nargs, kwnames);
}

static TPY_OP_SIGNATURE(ones_like) {
    (void)self;
    return like("ones_like", tp_ones_like, args, nargs, kwnames);
}

/* The float dtype TensorFlow's true division computes integers in. */
static tp_dtype_t truediv_dtype(tp_dtype_t dtype) {
    switch (dtype) {
    case TP_INT8: case TP_UINT8: case TP_INT16: case TP_UINT16: return TP_FLOAT32;
    case TP_INT32: case TP_UINT32: case TP_INT64: case TP_UINT64: return TP_FLOAT64;
    default: return TP_DTYPE_INVALID;
    }
}

/* divide(x, y, name=None): x / y as Python 3 divides, so integers give floats (float32 for 8
 * and 16 bits, float64 above), as tf.divide does; tp.truediv is the same. */
static PyObject *true_divide(const char *function, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames) {
    static const char *const names[] = {"x", "y", "name"};
    PyObject *values[3];
    if (tpy_parse(function, names, 3, 2, args, nargs, kwnames, values) < 0) return NULL;
    tp_tensor_t *operands[2];
    if (tpy_binary_args(values[0], values[1], &operands[0], &operands[1]) < 0) return NULL;
    tp_context_t *context = tpy_context();
    tp_dtype_t wide = truediv_dtype(tp_tensor_dtype(operands[0]));
    int failed = 0;
    if (wide != TP_DTYPE_INVALID && tp_tensor_dtype(operands[0]) == tp_tensor_dtype(operands[1])) {
        for (int i = 0; i < 2 && failed == 0; i++) {
            tp_tensor_t *cast = NULL;
            failed = tpy_cast(operands[i], wide, &cast);
            tp_tensor_release(operands[i]);
            operands[i] = cast;
        }
    }
    PyObject *result = NULL;
    if (failed == 0) {
        tp_tensor_t *out = NULL;
        tp_status_t *status;
        TPY_RUN(status, tpy_may_wait(operands, 2), tp_div(context, operands[0], operands[1], &out));
        result = tpy_result(status, out);
    }
    tp_tensor_release(operands[0]);
    tp_tensor_release(operands[1]);
    return result;
}

static TPY_OP_SIGNATURE(divide) {
    (void)self;
    if (nargs == 2 && kwnames == NULL && TPY_TENSOR_CHECK(args[0]) &&
        TPY_TENSOR_CHECK(args[1]) &&
        truediv_dtype(tp_tensor_dtype(TPY_TENSOR(args[0]))) == TP_DTYPE_INVALID)
        return tpy_call_binary(tp_div, args[0], args[1]);
    return true_divide("divide", args, nargs, kwnames);
}

static TPY_OP_SIGNATURE(truediv) {
    (void)self;
    return true_divide("truediv", args, nargs, kwnames);
}

/* add_n(inputs, name=None). */
static TPY_OP_SIGNATURE(add_n) {
    (void)self;
    static const char *const names[] = {"inputs", "name"};
    PyObject *values[2];
    if (tpy_parse("add_n", names, 2, 1, args, nargs, kwnames, values) < 0) return NULL;
    tp_tensor_t **inputs = NULL;
    size_t count = 0;
    if (tpy_tensor_list("add_n", values[0], &inputs, &count) < 0) return NULL;
    tp_tensor_t *out = NULL;
    tp_status_t *status;
    TPY_RUN(status, tpy_may_wait(inputs, count), tp_add_n(tpy_context(), inputs, count, &out));
    tpy_release_tensors(inputs, count);
    return tpy_result(status, out);
}

/* matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
 * a_is_sparse=False, b_is_sparse=False, output_type=None, name=None): the adjoint of a real
 * matrix is its transpose; the sparsity hints change nothing. */
static TPY_OP_SIGNATURE(matmul) {
    (void)self;
    PyObject *values[10] = {NULL};
    if (nargs == 2 && kwnames == NULL) {
        values[0] = args[0];
        values[1] = args[1];
    } else {
        static const char *const names[] = {"a",           "b",           "transpose_a",
                                            "transpose_b", "adjoint_a",   "adjoint_b",
                                            "a_is_sparse", "b_is_sparse", "output_type",
                                            "name"};
        if (tpy_parse("matmul", names, 10, 2, args, nargs, kwnames, values) < 0) return NULL;
    }
    bool flags[4];
    for (int i = 0; i < 4; i++)
        if (tpy_bool_arg(values[2 + i], false, &flags[i]) < 0) return NULL;
    bool transpose_a = flags[0] || flags[2], transpose_b = flags[1] || flags[3];
    if ((flags[0] && flags[2]) || (flags[1] && flags[3])) {
        PyErr_SetString(PyExc_ValueError,
                        "matmul(): only one of transpose_a and adjoint_a (transpose_b and "
                        "adjoint_b) can be True");
        return NULL;
    }
    tp_tensor_t *a, *b;
    if (tpy_binary_args(values[0], values[1], &a, &b) < 0) return NULL;
    if (values[8] != NULL && values[8] != Py_None) {
        tp_dtype_t output_type = TP_DTYPE_INVALID;
        if (tpy_dtype_from_object(values[8], &output_type) < 0 ||
            output_type != tp_tensor_dtype(a)) {
            if (!PyErr_Occurred())
                PyErr_Format(tpy_error_class(TP_UNIMPLEMENTED),
                             "matmul(): output_type %s differs from the inputs' dtype %s; "
                             "tensorplug's MatMul gives the inputs' dtype",
                             tp_dtype_name(output_type), tp_dtype_name(tp_tensor_dtype(a)));
            tp_tensor_release(a);
            tp_tensor_release(b);
            return NULL;
        }
    }
    tp_tensor_t *inputs[2] = {a, b}, *out = NULL;
    tp_status_t *status;
    TPY_RUN(status, tpy_may_wait(inputs, 2),
            tp_matmul(tpy_context(), a, b, transpose_a, transpose_b, &out));
    tp_tensor_release(a);
    tp_tensor_release(b);
    return tpy_result(status, out);
}

typedef tp_status_t *(*reduce_fn)(tp_context_t *, tp_tensor_t *, const int64_t *, size_t, bool,
                                  tp_tensor_t **);

/* reduce_sum(input_tensor, axis=None, keepdims=False, name=None) and its kind: axis None
 * reduces every axis; an empty list reduces none, as in TensorFlow. */
static PyObject *reduce(const char *function, reduce_fn fn, PyObject *const *args,
                        Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *values[4] = {NULL};
    if (nargs == 1 && kwnames == NULL) {
        values[0] = args[0];
    } else {
        static const char *const names[] = {"input_tensor", "axis", "keepdims", "name"};
        if (tpy_parse(function, names, 4, 1, args, nargs, kwnames, values) < 0) return NULL;
    }
    int64_t axes[TP_MAX_RANK];
    int num_axes = 0;
    bool all = values[1] == NULL || values[1] == Py_None;
    if (!all && tpy_int_list(function, "axis", values[1], axes, TP_MAX_RANK, &num_axes) < 0)
        return NULL;
    bool keepdims;
    if (tpy_bool_arg(values[2], false, &keepdims) < 0) return NULL;
    tp_tensor_t *x;
    if (tpy_to_tensor(values[0], TP_DTYPE_INVALID, &x) < 0) return NULL;
    tp_tensor_t *out = NULL;
    tp_status_t *status;
    if (!all && num_axes == 0)
        status = tp_identity(tpy_context(), x, &out);
    else
        TPY_RUN(status, tpy_may_wait(&x, 1),
                fn(tpy_context(), x, axes, (size_t)num_axes, keepdims, &out));
    tp_tensor_release(x);
    return tpy_result(status, out);
}

#define REDUCE_OP(pyname, fn)                                                                  \
    static TPY_OP_SIGNATURE(pyname) {                                                          \
        (void)self;                                                                            \
        return reduce(#pyname, fn, args, nargs, kwnames);                                      \
    }
REDUCE_OP(reduce_sum, tp_sum)
REDUCE_OP(reduce_mean, tp_mean)
REDUCE_OP(reduce_max, tp_max)
REDUCE_OP(reduce_min, tp_min)
REDUCE_OP(reduce_prod, tp_prod)

typedef tp_status_t *(*arg_fn)(tp_context_t *, tp_tensor_t *, int64_t, tp_dtype_t,
                               tp_tensor_t **);

/* argmax(input, axis=None, output_type=tp.int64, name=None): axis None is 0, as in
 * TensorFlow 2. */
static PyObject *arg_extreme(const char *function, arg_fn fn, PyObject *const *args,
                             Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"input", "axis", "output_type", "name"};
    PyObject *values[4];
    if (tpy_parse(function, names, 4, 1, args, nargs, kwnames, values) < 0) return NULL;
    int64_t axis = 0;
    if (values[1] != NULL && values[1] != Py_None &&
        tpy_int_arg(function, "axis", values[1], &axis) < 0)
        return NULL;
    tp_dtype_t output_type = TP_INT64;
    if (values[2] != NULL && tpy_dtype_from_object(values[2], &output_type) < 0) return NULL;
    if (output_type != TP_INT32 && output_type != TP_INT64) {
        PyErr_Format(PyExc_TypeError, "%s(): output_type must be int32 or int64, not %s",
                     function, tp_dtype_name(output_type));
        return NULL;
    }
    tp_tensor_t *x;
    if (tpy_to_tensor(values[0], TP_DTYPE_INVALID, &x) < 0) return NULL;
    tp_tensor_t *out = NULL;
    tp_status_t *status;
    TPY_RUN(status, tpy_may_wait(&x, 1), fn(tpy_context(), x, axis, output_type, &out));
    tp_tensor_release(x);
    return tpy_result(status, out);
}

static TPY_OP_SIGNATURE(argmax) {
    (void)self;
    return arg_extreme("argmax", tp_argmax, args, nargs, kwnames);
}

static TPY_OP_SIGNATURE(argmin) {
    (void)self;
    return arg_extreme("argmin", tp_argmin, args, nargs, kwnames);
}

/* cast(x, dtype, name=None). */
static TPY_OP_SIGNATURE(cast) {
    (void)self;
    static const char *const names[] = {"x", "dtype", "name"};
    PyObject *values[3];
    if (tpy_parse("cast", names, 3, 2, args, nargs, kwnames, values) < 0) return NULL;
    tp_dtype_t dtype = TP_DTYPE_INVALID;
    if (tpy_dtype_from_object(values[1], &dtype) < 0) return NULL;
    if (dtype == TP_DTYPE_INVALID) {
        PyErr_SetString(PyExc_TypeError, "cast(): dtype must be a dtype, not None");
        return NULL;
    }
    tp_tensor_t *x;
    if (tpy_to_tensor(values[0], TP_DTYPE_INVALID, &x) < 0) return NULL;
    tp_tensor_t *out = NULL;
    tp_status_t *status;
    TPY_RUN(status, tpy_may_wait(&x, 1), tp_cast(tpy_context(), x, dtype, &out));
    tp_tensor_release(x);
    return tpy_result(status, out);
}

static PyMethodDef functions[] = {
    TPY_OP_ENTRY(abs, "abs(x, name=None): |x|, element-wise."),
    TPY_OP_ENTRY(negative, "negative(x, name=None): -x, element-wise."),
    TPY_OP_ENTRY(sign, "sign(x, name=None): -1, 0 or 1, element-wise."),
    TPY_OP_ENTRY(square, "square(x, name=None): x * x, element-wise."),
    TPY_OP_ENTRY(sqrt, "sqrt(x, name=None): the square root, element-wise."),
    TPY_OP_ENTRY(rsqrt, "rsqrt(x, name=None): 1 / sqrt(x), element-wise."),
    TPY_OP_ENTRY(exp, "exp(x, name=None): e ** x, element-wise."),
    TPY_OP_ENTRY(log, "log(x, name=None): the natural logarithm, element-wise."),
    TPY_OP_ENTRY(sigmoid, "sigmoid(x, name=None): 1 / (1 + exp(-x)), element-wise."),
    TPY_OP_ENTRY(tanh, "tanh(x, name=None): the hyperbolic tangent, element-wise."),
    TPY_OP_ENTRY(identity, "identity(input, name=None): a tensor with input's values."),
    TPY_OP_ENTRY(zeros_like, "zeros_like(input, dtype=None, name=None)."),
    TPY_OP_ENTRY(ones_like, "ones_like(input, dtype=None, name=None)."),
    TPY_OP_ENTRY(add, "add(x, y, name=None): x + y with broadcasting."),
    TPY_OP_ENTRY(subtract, "subtract(x, y, name=None): x - y with broadcasting."),
    TPY_OP_ENTRY(multiply, "multiply(x, y, name=None): x * y with broadcasting."),
    TPY_OP_ENTRY(maximum, "maximum(x, y, name=None): the larger, element-wise; NaN wins."),
    TPY_OP_ENTRY(minimum, "minimum(x, y, name=None): the smaller, element-wise; NaN wins."),
    TPY_OP_ENTRY(divide, "divide(x, y, name=None): x / y; integers give floats."),
    TPY_OP_ENTRY(truediv, "truediv(x, y, name=None): x / y; integers give floats."),
    TPY_OP_ENTRY(equal, "equal(x, y, name=None): x == y, element-wise, as bool."),
    TPY_OP_ENTRY(not_equal, "not_equal(x, y, name=None): x != y, element-wise, as bool."),
    TPY_OP_ENTRY(less, "less(x, y, name=None): x < y, element-wise, as bool."),
    TPY_OP_ENTRY(less_equal, "less_equal(x, y, name=None): x <= y, element-wise, as bool."),
    TPY_OP_ENTRY(greater, "greater(x, y, name=None): x > y, element-wise, as bool."),
    TPY_OP_ENTRY(greater_equal, "greater_equal(x, y, name=None): x >= y, as bool."),
    TPY_OP_ENTRY(add_n, "add_n(inputs, name=None): the sum of tensors of one shape."),
    TPY_OP_ENTRY(matmul, "matmul(a, b, transpose_a=False, transpose_b=False, ...)."),
    TPY_OP_ENTRY(reduce_sum, "reduce_sum(input_tensor, axis=None, keepdims=False, name=None)."),
    TPY_OP_ENTRY(reduce_mean, "reduce_mean(input_tensor, axis=None, keepdims=False, name=None)."),
    TPY_OP_ENTRY(reduce_max, "reduce_max(input_tensor, axis=None, keepdims=False, name=None)."),
    TPY_OP_ENTRY(reduce_min, "reduce_min(input_tensor, axis=None, keepdims=False, name=None)."),
    TPY_OP_ENTRY(reduce_prod, "reduce_prod(input_tensor, axis=None, keepdims=False, name=None)"),
    TPY_OP_ENTRY(argmax, "argmax(input, axis=None, output_type=tp.int64, name=None)."),
    TPY_OP_ENTRY(argmin, "argmin(input, axis=None, output_type=tp.int64, name=None)."),
    TPY_OP_ENTRY(cast, "cast(x, dtype, name=None): x's values as dtype."),
    {NULL, NULL, 0, NULL},
};

int tpy_init_ops_math(PyObject *module) { return PyModule_AddFunctions(module, functions); }
