/* SPDX-License-Identifier: Apache-2.0 */
/* Tensor operators as TensorFlow 2 has them: arithmetic through the runtime's ops, an operand
 * that is not a Tensor converted to the Tensor's dtype (so `x * 2` and `2 * x` keep x's),
 * comparisons element-wise with broadcasting, giving bool tensors, and therefore no hash: a
 * Tensor used as a key goes through ref(). */
#include <stdint.h>

#include "tensor_protocols.h"

/* The two operands of a binary operator as tensors: a Tensor is borrowed, anything else is
 * converted to the dtype of the Tensor beside it (a new reference, marked in `owned`). */
static int operands(PyObject *x, PyObject *y, tp_tensor_t *out[2], bool owned[2]) {
    PyObject *objects[2] = {x, y};
    owned[0] = owned[1] = false;
    int tensor_side = TPY_TENSOR_CHECK(x) ? 0 : 1;
    tp_tensor_t *known = TPY_TENSOR(objects[tensor_side]);
    for (int i = 0; i < 2; i++) {
        if (TPY_TENSOR_CHECK(objects[i])) {
            out[i] = TPY_TENSOR(objects[i]);
        } else if (tpy_to_tensor(objects[i], tp_tensor_dtype(known), &out[i]) < 0) {
            if (owned[0]) tp_tensor_release(out[0]);
            return -1;
        } else {
            owned[i] = true;
        }
    }
    return 0;
}

/* Inputs of fewer elements run with the GIL held, as execute.c's: releasing and taking it
 * back costs about as much as a small op. */
#define GIL_RELEASE_ELEMENTS 16384

static bool worth_releasing(tp_tensor_t *const *tensors) {
    return tp_tensor_num_elements(tensors[0]) + tp_tensor_num_elements(tensors[1]) >=
           GIL_RELEASE_ELEMENTS;
}

static PyObject *run_binary(tpy_binary_fn fn, tp_tensor_t *x, tp_tensor_t *y) {
    tp_context_t *context = tpy_context();
    if (context == NULL) return NULL;
    tp_tensor_t *pair[2] = {x, y}, *out = NULL;
    tp_status_t *status;
    if (worth_releasing(pair)) {
        Py_BEGIN_ALLOW_THREADS
        status = fn(context, x, y, &out);
        Py_END_ALLOW_THREADS
    } else {
        status = fn(context, x, y, &out);
    }
    if (status != NULL) return tpy_raise(status);
    return tpy_tensor_wrap(out);
}

static PyObject *binary(tpy_binary_fn fn, PyObject *x, PyObject *y) {
    tp_tensor_t *pair[2];
    bool owned[2];
    if (operands(x, y, pair, owned) < 0) return NULL;
    PyObject *result = run_binary(fn, pair[0], pair[1]);
    for (int i = 0; i < 2; i++)
        if (owned[i]) tp_tensor_release(pair[i]);
    return result;
}

static tp_status_t *matmul(tp_context_t *c, tp_tensor_t *a, tp_tensor_t *b, tp_tensor_t **out) {
    return tp_matmul(c, a, b, false, false, out);
}

/* The floating dtype true division of integers gives, as TensorFlow's truediv: float32 for
 * 8- and 16-bit integers, float64 for wider ones; TP_DTYPE_INVALID for floats, divided as
 * they are. */
static tp_dtype_t true_division_dtype(tp_dtype_t dtype) {
    switch (dtype) {
    case TP_INT8: case TP_INT16: case TP_UINT8: case TP_UINT16: return TP_FLOAT32;
    case TP_INT32: case TP_INT64: case TP_UINT32: case TP_UINT64: return TP_FLOAT64;
    default: return TP_DTYPE_INVALID;
    }
}

static PyObject *true_divide(PyObject *x, PyObject *y) {
    tp_tensor_t *pair[2];
    bool owned[2];
    if (operands(x, y, pair, owned) < 0) return NULL;
    tp_dtype_t wide = true_division_dtype(tp_tensor_dtype(pair[0]));
    PyObject *result = NULL;
    if (wide == TP_DTYPE_INVALID || tp_tensor_dtype(pair[1]) != tp_tensor_dtype(pair[0])) {
        result = run_binary(tp_div, pair[0], pair[1]);
    } else {
        tp_context_t *context = tpy_context();
        tp_tensor_t *cast[2] = {NULL, NULL};
        if (context != NULL && tpy_check(tp_cast(context, pair[0], wide, &cast[0])) == 0 &&
            tpy_check(tp_cast(context, pair[1], wide, &cast[1])) == 0)
            result = run_binary(tp_div, cast[0], cast[1]);
        tp_tensor_release(cast[0]);
        tp_tensor_release(cast[1]);
    }
    for (int i = 0; i < 2; i++)
        if (owned[i]) tp_tensor_release(pair[i]);
    return result;
}

static PyObject *add(PyObject *x, PyObject *y) { return binary(tp_add, x, y); }
static PyObject *subtract(PyObject *x, PyObject *y) { return binary(tp_sub, x, y); }
static PyObject *multiply(PyObject *x, PyObject *y) { return binary(tp_mul, x, y); }
static PyObject *matrix_multiply(PyObject *x, PyObject *y) { return binary(matmul, x, y); }

static PyObject *power(PyObject *x, PyObject *y, PyObject *modulo) {
    if (modulo != Py_None) {
        PyErr_SetString(PyExc_TypeError, "pow() with a modulus is not supported for tensors");
        return NULL;
    }
    return binary(tp_pow, x, y);
}

static PyObject *unary(tpy_unary_fn fn, PyObject *x) {
    tp_context_t *context = tpy_context();
    if (context == NULL) return NULL;
    tp_tensor_t *input = TPY_TENSOR(x), *out = NULL;
    tp_status_t *status;
    if (tp_tensor_num_elements(input) >= GIL_RELEASE_ELEMENTS) {
        Py_BEGIN_ALLOW_THREADS
        status = fn(context, input, &out);
        Py_END_ALLOW_THREADS
    } else {
        status = fn(context, input, &out);
    }
    if (status != NULL) return tpy_raise(status);
    return tpy_tensor_wrap(out);
}

static PyObject *negative(PyObject *x) { return unary(tp_neg, x); }
static PyObject *absolute(PyObject *x) { return unary(tp_abs, x); }
/* +x is x: a tensor is immutable, so the same object serves. */
static PyObject *positive(PyObject *x) { return Py_NewRef(x); }

/* bool(t), int(t), float(t) and operator.index(t) are NumPy's of t.numpy(), as TensorFlow's
 * are: one element only (ValueError or TypeError otherwise, in NumPy's words). */
static PyObject *through_numpy(PyObject *self, PyObject *(*convert)(PyObject *)) {
    PyObject *value = tpy_tensor_numpy(self, NULL);
    if (value == NULL) return NULL;
    PyObject *result = convert(value);
    Py_DECREF(value);
    return result;
}

static int to_bool(PyObject *self) {
    PyObject *value = tpy_tensor_numpy(self, NULL);
    if (value == NULL) return -1;
    int result = PyObject_IsTrue(value);
    Py_DECREF(value);
    return result;
}

static PyObject *to_int(PyObject *self) { return through_numpy(self, PyNumber_Long); }
static PyObject *to_float(PyObject *self) { return through_numpy(self, PyNumber_Float); }
static PyObject *to_index(PyObject *self) { return through_numpy(self, PyNumber_Index); }

PyNumberMethods tpy_tensor_as_number = {
    .nb_add = add,
    .nb_subtract = subtract,
    .nb_multiply = multiply,
    .nb_true_divide = true_divide,
    .nb_matrix_multiply = matrix_multiply,
    .nb_power = power,
    .nb_negative = negative,
    .nb_positive = positive,
    .nb_absolute = absolute,
    .nb_bool = to_bool,
    .nb_int = to_int,
    .nb_float = to_float,
    .nb_index = to_index,
};

/* ---- Comparisons ----------------------------------------------------------------------------- */

/* Whether NumPy's rules broadcast the two shapes together. */
static bool broadcastable(tp_shape_t a, tp_shape_t b) {
    for (int32_t i = 1; i <= a.rank && i <= b.rank; i++) {
        int64_t p = a.dims[a.rank - i], q = b.dims[b.rank - i];
        if (p != q && p != 1 && q != 1) return false;
    }
    return true;
}

/* A scalar bool tensor, what == gives for operands that cannot be compared element by
 * element. */
static PyObject *bool_scalar(bool value) {
    tp_context_t *context = tpy_context();
    tp_tensor_t *out = NULL;
    if (context == NULL ||
        tpy_check(tp_tensor_create(context, TP_BOOL, TP_SCALAR_SHAPE, &value, sizeof value,
                                   &out)) < 0)
        return NULL;
    return tpy_tensor_wrap(out);
}

/* == and != are TensorFlow 2's: element-wise Equal and NotEqual with broadcasting; None, a
 * value that is no tensor, and shapes that do not broadcast compare unequal as a whole (a
 * scalar False for ==, True for !=). The order comparisons are Less and friends; the other
 * operand converts to this one's dtype. */
PyObject *tpy_tensor_richcompare(PyObject *self, PyObject *other, int op) {
    static const tpy_binary_fn fns[] = {
        [Py_LT] = tp_less,  [Py_LE] = tp_less_equal, [Py_EQ] = tp_equal,
        [Py_NE] = tp_not_equal, [Py_GT] = tp_greater, [Py_GE] = tp_greater_equal,
    };
    bool equality = op == Py_EQ || op == Py_NE;
    if (equality && other == Py_None) return PyBool_FromLong(op == Py_NE);
    tp_tensor_t *pair[2];
    bool owned[2];
    if (operands(self, other, pair, owned) < 0) {
        if (!equality || !(PyErr_ExceptionMatches(PyExc_TypeError) ||
                           PyErr_ExceptionMatches(PyExc_ValueError) ||
                           PyErr_ExceptionMatches(tpy_error_class(TP_INVALID_ARGUMENT))))
            return NULL;
        PyErr_Clear();
        return bool_scalar(op == Py_NE);
    }
    PyObject *result;
    if (equality && !broadcastable(tp_tensor_shape(pair[0]), tp_tensor_shape(pair[1])))
        result = bool_scalar(op == Py_NE);
    else
        result = run_binary(fns[op], pair[0], pair[1]);
    for (int i = 0; i < 2; i++)
        if (owned[i]) tp_tensor_release(pair[i]);
    return result;
}

Py_hash_t tpy_tensor_hash(PyObject *self) {
    (void)self;
    PyErr_SetString(PyExc_TypeError, "Tensor is unhashable. Instead, use tensor.ref() as the key.");
    return -1;
}

/* ---- ref(): a hashable stand-in for one tensor object ---------------------------------------- */

typedef struct reference_object {
    PyObject_HEAD
    PyObject *wrapped;
} reference_object;

static PyTypeObject reference_type;

PyObject *tpy_tensor_ref(PyObject *self, PyObject *unused) {
    (void)unused;
    reference_object *reference = PyObject_GC_New(reference_object, &reference_type);
    if (reference == NULL) return NULL;
    reference->wrapped = Py_NewRef(self);
    PyObject_GC_Track(reference);
    return (PyObject *)reference;
}

static void reference_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    Py_CLEAR(((reference_object *)self)->wrapped);
    PyObject_GC_Del(self);
}

static int reference_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((reference_object *)self)->wrapped);
    return 0;
}

static int reference_clear(PyObject *self) {
    Py_CLEAR(((reference_object *)self)->wrapped);
    return 0;
}

/* Two references are equal when they wrap the same object, as TensorFlow's: identity, never
 * the values. */
static PyObject *reference_richcompare(PyObject *self, PyObject *other, int op) {
    if ((op != Py_EQ && op != Py_NE) || !PyObject_TypeCheck(other, &reference_type))
        Py_RETURN_NOTIMPLEMENTED;
    bool same = ((reference_object *)self)->wrapped == ((reference_object *)other)->wrapped;
    return PyBool_FromLong(op == Py_EQ ? same : !same);
}

/* The wrapped object's address, as id() gives it; -1 is Python's mark of an error. */
static Py_hash_t reference_hash(PyObject *self) {
    Py_hash_t hash = (Py_hash_t)((uintptr_t)((reference_object *)self)->wrapped >> 4);
    return hash == -1 ? -2 : hash;
}

static PyObject *reference_repr(PyObject *self) {
    return PyUnicode_FromFormat("<Reference wrapping %R>", ((reference_object *)self)->wrapped);
}

static PyObject *reference_deref(PyObject *self, PyObject *unused) {
    (void)unused;
    return Py_NewRef(((reference_object *)self)->wrapped);
}

static PyMethodDef reference_methods[] = {
    {"deref", reference_deref, METH_NOARGS, "The tensor this reference stands for."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject reference_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tensorplug.Reference",
    .tp_basicsize = sizeof(reference_object),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A hashable reference to a tensor, from Tensor.ref(): equal to another when both "
              "wrap the same object.",
    .tp_dealloc = reference_dealloc,
    .tp_traverse = reference_traverse,
    .tp_clear = reference_clear,
    .tp_richcompare = reference_richcompare,
    .tp_hash = reference_hash,
    .tp_repr = reference_repr,
    .tp_methods = reference_methods,
};

/* pow(x, y, name=None): TensorFlow's tf.pow, x ** y with broadcasting. */
static PyObject *pow_function(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    static char *keywords[] = {"x", "y", "name", NULL};
    PyObject *x, *y, *name = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O:pow", keywords, &x, &y, &name))
        return NULL;
    if (TPY_TENSOR_CHECK(x) || TPY_TENSOR_CHECK(y)) return binary(tp_pow, x, y);
    tp_tensor_t *base = NULL, *exponent = NULL;
    if (tpy_to_tensor(x, TP_DTYPE_INVALID, &base) < 0) return NULL;
    PyObject *result = NULL;
    if (tpy_to_tensor_like(y, base, &exponent) == 0) result = run_binary(tp_pow, base, exponent);
    tp_tensor_release(base);
    tp_tensor_release(exponent);
    return result;
}

static PyMethodDef module_functions[] = {
    {"pow", (PyCFunction)(void (*)(void))pow_function, METH_VARARGS | METH_KEYWORDS,
     "pow(x, y, name=None): x to the power y, element-wise with broadcasting."},
    {NULL, NULL, 0, NULL},
};

int tpy_init_tensor_operators(PyObject *module) {
    if (PyType_Ready(&reference_type) < 0) return -1;
    if (PyModule_AddObjectRef(module, "Reference", (PyObject *)&reference_type) < 0) return -1;
    return PyModule_AddFunctions(module, module_functions);
}
