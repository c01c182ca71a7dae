/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the op files (ops_math.c, ops_array.c, ops_nn.c, ops_random.c) share: reading the
 * arguments of a TensorFlow-style call (positional or keyword, as Python binds them) and the
 * values TensorFlow accepts for them (axes, shapes, numbers), and running a C API op with the
 * GIL released when its inputs are big. Every op function is METH_FASTCALL | METH_KEYWORDS
 * and takes the plain positional call without parsing anything.
 */
#ifndef TENSORPLUG_PYTHON_OPS_H
#define TENSORPLUG_PYTHON_OPS_H

#include "tpy.h"

#define TPY_MAX_ARGS 12

/* Binds args (nargs positional, then the values of kwnames) to the `num_names` parameters
 * `names` of `function`, the first `required` of them required: out[i] is a borrowed
 * reference, or NULL for an optional one not given. Raises TypeError as Python would. */
int tpy_parse(const char *function, const char *const *names, int num_names, int required,
              PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **out);

/* Inputs of at least this many elements run with the GIL released. */
#define TPY_GIL_RELEASE_ELEMENTS 16384
/* status = call, with the GIL released when `big`. */
#define TPY_RUN(status, big, call)                                                             \
    do {                                                                                       \
        if (big) {                                                                             \
            Py_BEGIN_ALLOW_THREADS status = (call);                                            \
            Py_END_ALLOW_THREADS                                                               \
        } else {                                                                               \
            status = (call);                                                                   \
        }                                                                                      \
    } while (0)
bool tpy_big(tp_tensor_t *const *tensors, size_t count);

/* The result of a C API call that made `out`: the exception for a status, else a Tensor. */
PyObject *tpy_result(tp_status_t *status, tp_tensor_t *out);

/* Two operands as TensorFlow's binary ops convert them: a Python scalar takes the other
 * operand's dtype (a Tensor's, else that of the array or list it meets). Both are new
 * references. */
int tpy_binary_args(PyObject *x, PyObject *y, tp_tensor_t **out_x, tp_tensor_t **out_y);
/* A list of tensors (inputs of add_n, concat): a sequence of tensor-likes, or one Tensor.
 * Values that are not Tensors take the dtype of the first Tensor among them. *out is
 * allocated with PyMem_Malloc; tpy_release_tensors frees it. */
int tpy_tensor_list(const char *function, PyObject *values, tp_tensor_t ***out, size_t *count);
void tpy_release_tensors(tp_tensor_t **tensors, size_t count);

/* Integers TensorFlow reads from a Python int, a sequence of them (list, tuple, TensorShape,
 * NumPy array) or an integer Tensor of rank 0 or 1. At most `max` values; *count gets their
 * number. A lone int gives one value. */
int tpy_int_list(const char *function, const char *what, PyObject *object, int64_t *out,
                 int max, int *count);
/* A shape: a list of dimensions as tpy_int_list reads it, or a lone int for a shape of rank
 * 1. */
int tpy_shape_arg(const char *function, const char *what, PyObject *object, tp_shape_t *out);
/* One integer (an int, a NumPy integer, an integer Tensor of one element). */
int tpy_int_arg(const char *function, const char *what, PyObject *object, int64_t *out);
/* One number (a Python or NumPy number, a Tensor of one element). */
int tpy_double_arg(const char *function, const char *what, PyObject *object, double *out);
/* A truth value; NULL (not given) is `fallback`. */
int tpy_bool_arg(PyObject *object, bool fallback, bool *out);
/* A string argument compared with `choices` (NULL-terminated), without regard to case: its
 * index, or -1 with ValueError naming the choices. NULL (not given) is index 0. */
int tpy_choice_arg(const char *function, const char *what, PyObject *object,
                   const char *const *choices);
/* An axis in [-rank, rank), made non-negative; InvalidArgumentError otherwise. */
int tpy_axis(const char *function, int64_t axis, int32_t rank, int64_t *out);
/* x with its dimensions permuted by `perm` (a new reference). */
int tpy_transpose(tp_tensor_t *x, const int64_t *perm, int32_t rank, tp_tensor_t **out);

/* ---- Op functions: one C function per Python name ---- */
#define TPY_OP_SIGNATURE(pyname)                                                               \
    PyObject *op_##pyname(PyObject *self, PyObject *const *args, Py_ssize_t nargs,              \
                          PyObject *kwnames)
#define TPY_OP_ENTRY(pyname, doc)                                                              \
    {#pyname, (PyCFunction)(void (*)(void))op_##pyname, METH_FASTCALL | METH_KEYWORDS, doc}

/* The slow paths of the ops below: keywords (the tensor's and name=), or a wrong count. */
PyObject *tpy_unary_call(const char *function, const char *arg, tpy_unary_fn fn,
                         PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *tpy_binary_call(const char *function, tpy_binary_fn fn, PyObject *const *args,
                          Py_ssize_t nargs, PyObject *kwnames);

/* An element-wise op of one tensor, `fn(arg, name=None)`: the positional call goes straight to
 * the C API. */
#define TPY_UNARY_OP(pyname, arg, fn)                                                          \
    static TPY_OP_SIGNATURE(pyname) {                                                          \
        (void)self;                                                                            \
        if (nargs == 1 && kwnames == NULL) return tpy_call_unary(fn, args[0]);                 \
        return tpy_unary_call(#pyname, arg, fn, args, nargs, kwnames);                         \
    }
/* The same for `fn(x, y, name=None)`; with no Tensor among them, the operands are converted by
 * tpy_binary_args (a Python scalar beside an array takes the array's dtype). */
#define TPY_BINARY_OP(pyname, fn)                                                              \
    static TPY_OP_SIGNATURE(pyname) {                                                          \
        (void)self;                                                                            \
        if (nargs == 2 && kwnames == NULL &&                                                   \
            (TPY_TENSOR_CHECK(args[0]) || TPY_TENSOR_CHECK(args[1])))                          \
            return tpy_call_binary(fn, args[0], args[1]);                                      \
        return tpy_binary_call(#pyname, fn, args, nargs, kwnames);                             \
    }

/* ---- Random seeds (ops_random.c) ---- */
/* The seed of one random op's draw, from the op's `seed` argument (NULL or None: none) and the
 * global seed, by the rule tp.random documents. */
int tpy_next_seed(PyObject *op_seed, int64_t *out);

#endif /* TENSORPLUG_PYTHON_OPS_H */
