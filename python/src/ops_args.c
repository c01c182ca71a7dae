/* SPDX-License-Identifier: Apache-2.0 */
/* The arguments of op calls, read as TensorFlow reads them (see ops.h). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "ops.h"

int tpy_parse(const char *function, const char *const *names, int num_names, int required,
              PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **out) {
    if (nargs > num_names) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d arguments (%zd given)", function,
                     num_names, nargs);
        return -1;
    }
    for (int i = 0; i < num_names; i++) out[i] = i < nargs ? args[i] : NULL;
    Py_ssize_t num_keywords = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < num_keywords; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int found = -1;
        for (int i = 0; i < num_names && found < 0; i++)
            if (PyUnicode_CompareWithASCIIString(key, names[i]) == 0) found = i;
        if (found < 0) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'",
                         function, key);
            return -1;
        }
        if (out[found] != NULL) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'",
                         function, names[found]);
            return -1;
        }
        out[found] = args[nargs + k];
    }
    for (int i = 0; i < required; i++) {
        if (out[i] == NULL) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s' (pos %d)",
                         function, names[i], i + 1);
            return -1;
        }
    }
    return 0;
}

PyObject *tpy_unary_call(const char *function, const char *arg, tpy_unary_fn fn,
                         PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    const char *names[] = {arg, "name"};
    PyObject *values[2];
    if (tpy_parse(function, names, 2, 1, args, nargs, kwnames, values) < 0) return NULL;
    return tpy_call_unary(fn, values[0]);
}

PyObject *tpy_binary_call(const char *function, tpy_binary_fn fn, PyObject *const *args,
                          Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"x", "y", "name"};
    PyObject *values[3];
    if (tpy_parse(function, names, 3, 2, args, nargs, kwnames, values) < 0) return NULL;
    tp_tensor_t *operands[2], *out = NULL;
    if (tpy_binary_args(values[0], values[1], &operands[0], &operands[1]) < 0) return NULL;
    tp_status_t *status;
    TPY_RUN(status, tpy_big(operands, 2), fn(tpy_context(), operands[0], operands[1], &out));
    tp_tensor_release(operands[0]);
    tp_tensor_release(operands[1]);
    return tpy_result(status, out);
}

bool tpy_big(tp_tensor_t *const *tensors, size_t count) {
    int64_t elements = 0;
    for (size_t i = 0; i < count; i++)
        if (tensors[i] != NULL) elements += tp_tensor_num_elements(tensors[i]);
    return elements >= TPY_GIL_RELEASE_ELEMENTS;
}

PyObject *tpy_result(tp_status_t *status, tp_tensor_t *out) {
    if (status != NULL) return tpy_raise(status);
    return tpy_tensor_wrap(out);
}

static bool python_scalar(PyObject *object) {
    return PyFloat_CheckExact(object) || PyLong_CheckExact(object) || PyBool_Check(object);
}

int tpy_binary_args(PyObject *x, PyObject *y, tp_tensor_t **out_x, tp_tensor_t **out_y) {
    /* The operand that sets the dtype goes first: a Tensor, else one that is not a Python
     * scalar. */
    bool x_first = TPY_TENSOR_CHECK(x) ||
                   (!TPY_TENSOR_CHECK(y) && (!python_scalar(x) || python_scalar(y)));
    if (x_first) {
        if (tpy_to_tensor(x, TP_DTYPE_INVALID, out_x) < 0) return -1;
        if (tpy_to_tensor_like(y, *out_x, out_y) < 0) {
            tp_tensor_release(*out_x);
            return -1;
        }
        return 0;
    }
    if (tpy_to_tensor(y, TP_DTYPE_INVALID, out_y) < 0) return -1;
    if (tpy_to_tensor_like(x, *out_y, out_x) < 0) {
        tp_tensor_release(*out_y);
        return -1;
    }
    return 0;
}

void tpy_release_tensors(tp_tensor_t **tensors, size_t count) {
    if (tensors == NULL) return;
    for (size_t i = 0; i < count; i++) tp_tensor_release(tensors[i]);
    PyMem_Free(tensors);
}

int tpy_tensor_list(const char *function, PyObject *values, tp_tensor_t ***out, size_t *count) {
    if (TPY_TENSOR_CHECK(values)) {
        tp_tensor_t **one = PyMem_Malloc(sizeof *one);
        if (one == NULL) return PyErr_NoMemory(), -1;
        one[0] = tp_tensor_retain(TPY_TENSOR(values));
        *out = one;
        *count = 1;
        return 0;
    }
    PyObject *items = PySequence_Fast(values, "");
    if (items == NULL) {
        PyErr_Format(PyExc_TypeError, "%s(): expected a list of tensors, not %.100s", function,
                     Py_TYPE(values)->tp_name);
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
    PyObject **objects = PySequence_Fast_ITEMS(items);
    if (n == 0) {
        Py_DECREF(items);
        PyErr_Format(PyExc_ValueError, "%s(): the list of tensors is empty", function);
        return -1;
    }
    tp_tensor_t **tensors = PyMem_Calloc((size_t)n, sizeof *tensors);
    if (tensors == NULL) {
        Py_DECREF(items);
        return PyErr_NoMemory(), -1;
    }
    tp_dtype_t dtype = TP_DTYPE_INVALID;
    for (Py_ssize_t i = 0; i < n && dtype == TP_DTYPE_INVALID; i++)
        if (TPY_TENSOR_CHECK(objects[i])) dtype = tp_tensor_dtype(TPY_TENSOR(objects[i]));
    for (Py_ssize_t i = 0; i < n; i++) {
        if (tpy_to_tensor(objects[i], TPY_TENSOR_CHECK(objects[i]) ? TP_DTYPE_INVALID : dtype,
                          &tensors[i]) < 0) {
            tpy_release_tensors(tensors, (size_t)i);
            Py_DECREF(items);
            return -1;
        }
    }
    Py_DECREF(items);
    *out = tensors;
    *count = (size_t)n;
    return 0;
}

/* The values of an integer tensor of rank 0 or 1. */
static int tensor_ints(const char *function, const char *what, tp_tensor_t *tensor,
                       int64_t *out, int max, int *count) {
    tp_dtype_t dtype = tp_tensor_dtype(tensor);
    tp_shape_t shape = tp_tensor_shape(tensor);
    if (dtype != TP_INT32 && dtype != TP_INT64) {
        PyErr_Format(PyExc_TypeError, "%s(): %s must be integers, not a tensor of dtype %s",
                     function, what, tp_dtype_name(dtype));
        return -1;
    }
    if (shape.rank > 1) {
        PyErr_Format(PyExc_ValueError, "%s(): %s must be a list of integers, not a tensor of "
                     "rank %d", function, what, (int)shape.rank);
        return -1;
    }
    int64_t n = tp_tensor_num_elements(tensor);
    if (n > max) {
        PyErr_Format(PyExc_ValueError, "%s(): %s has %lld values, more than %d", function,
                     what, (long long)n, max);
        return -1;
    }
    int32_t narrow[TPY_MAX_ARGS > TP_MAX_RANK * 2 ? TPY_MAX_ARGS : TP_MAX_RANK * 2];
    void *buffer = dtype == TP_INT64 ? (void *)out : (void *)narrow;
    tp_status_t *status;
    Py_BEGIN_ALLOW_THREADS
    status = tp_tensor_read(tensor, buffer, tp_tensor_byte_size(tensor));
    Py_END_ALLOW_THREADS
    if (tpy_check(status) < 0) return -1;
    if (dtype == TP_INT32)
        for (int64_t i = 0; i < n; i++) out[i] = narrow[i];
    *count = (int)n;
    return 0;
}

static int one_int(const char *function, const char *what, PyObject *object, int64_t *out) {
    if (PyFloat_Check(object) || PyBool_Check(object) || !PyIndex_Check(object)) {
        PyErr_Format(PyExc_TypeError, "%s(): %s must be integers, not %.100s", function, what,
                     Py_TYPE(object)->tp_name);
        return -1;
    }
    PyObject *index = PyNumber_Index(object);
    if (index == NULL) return -1;
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(index, &overflow);
    Py_DECREF(index);
    if (value == -1 && PyErr_Occurred()) return -1;
    if (overflow != 0) {
        PyErr_Format(PyExc_ValueError, "%s(): %s: %R does not fit in 64 bits", function, what,
                     object);
        return -1;
    }
    *out = value;
    return 0;
}

int tpy_int_list(const char *function, const char *what, PyObject *object, int64_t *out,
                 int max, int *count) {
    if (PyLong_Check(object) && !PyBool_Check(object)) {
        if (max < 1) {
            PyErr_Format(PyExc_ValueError, "%s(): %s takes no values", function, what);
            return -1;
        }
        *count = 1;
        return one_int(function, what, object, out);
    }
    if (TPY_TENSOR_CHECK(object))
        return tensor_ints(function, what, TPY_TENSOR(object), out, max, count);
    if (PyIndex_Check(object) && !PySequence_Check(object)) { /* NumPy integer scalars */
        *count = 1;
        return one_int(function, what, object, out);
    }
    PyObject *items = PySequence_Fast(object, "");
    if (items == NULL && PyIndex_Check(object)) { /* a NumPy array of rank 0 */
        PyErr_Clear();
        *count = 1;
        return one_int(function, what, object, out);
    }
    if (items == NULL) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s(): %s must be an integer or a list of integers, "
                     "not %.100s", function, what, Py_TYPE(object)->tp_name);
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
    if (n > max) {
        PyErr_Format(PyExc_ValueError, "%s(): %s has %zd values, more than %d", function, what,
                     n, max);
        Py_DECREF(items);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(items, i);
        if (item == Py_None) {
            PyErr_Format(PyExc_ValueError, "%s(): %s has an unknown (None) value at %zd",
                         function, what, i);
            Py_DECREF(items);
            return -1;
        }
        if (one_int(function, what, item, &out[i]) < 0) {
            Py_DECREF(items);
            return -1;
        }
    }
    Py_DECREF(items);
    *count = (int)n;
    return 0;
}

int tpy_shape_arg(const char *function, const char *what, PyObject *object, tp_shape_t *out) {
    int rank = 0;
    if (PyLong_Check(object) || (TPY_TENSOR_CHECK(object) &&
                                 tp_tensor_shape(TPY_TENSOR(object)).rank == 0)) {
        /* TensorFlow takes tp.zeros(3) as tp.zeros([3]). */
        if (tpy_int_arg(function, what, object, &out->dims[0]) < 0) return -1;
        out->rank = 1;
        return 0;
    }
    if (tpy_int_list(function, what, object, out->dims, TP_MAX_RANK, &rank) < 0) return -1;
    out->rank = rank;
    return 0;
}

int tpy_int_arg(const char *function, const char *what, PyObject *object, int64_t *out) {
    if (TPY_TENSOR_CHECK(object)) {
        int count = 0;
        if (tp_tensor_num_elements(TPY_TENSOR(object)) != 1) {
            PyErr_Format(PyExc_ValueError, "%s(): %s must be one integer, not a tensor of %lld "
                         "values", function, what,
                         (long long)tp_tensor_num_elements(TPY_TENSOR(object)));
            return -1;
        }
        tp_tensor_t *flat = NULL;
        if (tpy_check(tp_reshape(tpy_context(), TPY_TENSOR(object), TP_SCALAR_SHAPE, &flat)) < 0)
            return -1;
        int result = tensor_ints(function, what, flat, out, 1, &count);
        tp_tensor_release(flat);
        return result;
    }
    return one_int(function, what, object, out);
}

int tpy_double_arg(const char *function, const char *what, PyObject *object, double *out) {
    if (TPY_TENSOR_CHECK(object)) {
        tp_tensor_t *tensor = TPY_TENSOR(object);
        if (tp_tensor_num_elements(tensor) != 1) {
            PyErr_Format(PyExc_ValueError, "%s(): %s must be one number, not a tensor of %lld "
                         "values", function, what, (long long)tp_tensor_num_elements(tensor));
            return -1;
        }
        tp_tensor_t *wide = NULL;
        if (tpy_check(tp_cast(tpy_context(), tensor, TP_FLOAT64, &wide)) < 0) return -1;
        tp_status_t *status;
        Py_BEGIN_ALLOW_THREADS
        status = tp_tensor_read(wide, out, sizeof *out);
        Py_END_ALLOW_THREADS
        tp_tensor_release(wide);
        return tpy_check(status);
    }
    double value = PyFloat_AsDouble(object);
    if (value == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s(): %s must be a number, not %.100s", function, what,
                     Py_TYPE(object)->tp_name);
        return -1;
    }
    *out = value;
    return 0;
}

int tpy_bool_arg(PyObject *object, bool fallback, bool *out) {
    if (object == NULL) {
        *out = fallback;
        return 0;
    }
    int truth = PyObject_IsTrue(object);
    if (truth < 0) return -1;
    *out = truth != 0;
    return 0;
}

int tpy_choice_arg(const char *function, const char *what, PyObject *object,
                   const char *const *choices) {
    if (object == NULL) return 0;
    const char *text = PyUnicode_Check(object) ? PyUnicode_AsUTF8(object) : NULL;
    if (text == NULL && PyErr_Occurred()) return -1;
    for (int i = 0; text != NULL && choices[i] != NULL; i++)
        if (strcasecmp(text, choices[i]) == 0) return i;
    char list[160] = "";
    for (int i = 0; choices[i] != NULL; i++) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s'%s'", i == 0 ? "" : ", ", choices[i]);
    }
    PyErr_Format(PyExc_ValueError, "%s(): %s must be one of %s, not %R", function, what, list,
                 object);
    return -1;
}

int tpy_axis(const char *function, int64_t axis, int32_t rank, int64_t *out) {
    if (axis < -(int64_t)rank || axis >= rank) {
        PyErr_Format(tpy_error_class(TP_INVALID_ARGUMENT),
                     "%s: axis %lld is not in [-%d, %d) for a tensor of rank %d", function,
                     (long long)axis, (int)rank, (int)rank, (int)rank);
        return -1;
    }
    *out = axis < 0 ? axis + rank : axis;
    return 0;
}

int tpy_transpose(tp_tensor_t *x, const int64_t *perm, int32_t rank, tp_tensor_t **out) {
    tp_status_t *status;
    TPY_RUN(status, tpy_big(&x, 1), tp_transpose(tpy_context(), x, perm, (size_t)rank, out));
    return tpy_check(status);
}
