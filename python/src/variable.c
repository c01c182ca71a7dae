/* SPDX-License-Identifier: Apache-2.0 */
/* tp.Variable: a tp_variable_t, a value on one device that can be given a new one. Anywhere a
 * tensor is taken, a Variable gives its current value (tpy_variable_value), and tapes watch it
 * when it is read. Its operators and indexing are the Tensor's, applied to that value. */
#include "tpy.h"

typedef struct tpy_variable_object {
    PyObject_HEAD
    tp_variable_t *variable;
    bool trainable;
    PyObject *weakrefs;
    /* Set for a variable another object owns (an optimizer's state): it keeps the owner alive
     * and does not destroy the variable. */
    PyObject *owner;
} tpy_variable_object;

static int variable_init(PyObject *self, PyObject *args, PyObject *kwargs) {
    tpy_variable_object *object = (tpy_variable_object *)self;
    /* TensorFlow's order, so that positional calls mean the same. */
    static char *keywords[] = {"initial_value", "trainable",   "validate_shape", "caching_device",
                               "name",          "variable_def", "dtype",         "import_scope",
                               "constraint",    "synchronization", "aggregation", "shape",
                               NULL};
    PyObject *initial = Py_None, *trainable_object = Py_None, *validate = Py_True;
    PyObject *caching = Py_None, *name_object = Py_None, *definition = Py_None;
    PyObject *dtype_object = Py_None, *scope = Py_None, *constraint = Py_None;
    PyObject *synchronization = Py_None, *aggregation = Py_None, *shape = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOOOOOOOOOOO:Variable", keywords, &initial,
                                     &trainable_object, &validate, &caching, &name_object,
                                     &definition, &dtype_object, &scope, &constraint,
                                     &synchronization, &aggregation, &shape))
        return -1;
    if (object->variable != NULL) {
        PyErr_SetString(PyExc_TypeError, "a Variable is initialized once");
        return -1;
    }
    if (initial == Py_None) {
        PyErr_SetString(PyExc_ValueError, "initial_value must be specified.");
        return -1;
    }
    if (definition != Py_None || constraint != Py_None) {
        PyErr_SetString(PyExc_NotImplementedError,
                        "tp.Variable: variable_def and constraint are not supported");
        return -1;
    }
    int trainable = trainable_object == Py_None ? 1 : PyObject_IsTrue(trainable_object);
    if (trainable < 0) return -1;
    const char *name = "Variable";
    if (name_object != Py_None) {
        if (!PyUnicode_Check(name_object)) {
            PyErr_Format(PyExc_TypeError, "Variable name must be a str, not %.100s",
                         Py_TYPE(name_object)->tp_name);
            return -1;
        }
        name = PyUnicode_AsUTF8(name_object);
        if (name == NULL) return -1;
    }
    tp_context_t *context = tpy_context();
    tp_dtype_t dtype = TP_DTYPE_INVALID;
    if (context == NULL || tpy_dtype_from_object(dtype_object, &dtype) < 0) return -1;
    /* A callable initial value is called, as TensorFlow does (initializers pass these). */
    PyObject *value_object = PyCallable_Check(initial) && !PyType_Check(initial)
                                 ? PyObject_CallNoArgs(initial)
                                 : Py_NewRef(initial);
    if (value_object == NULL) return -1;
    tp_tensor_t *value;
    int converted = tpy_to_tensor(value_object, dtype, &value);
    Py_DECREF(value_object);
    if (converted < 0) return -1;
    if (shape != Py_None) {
        /* A shape given must describe the value: tensorplug variables keep theirs. */
        PyObject *dims = PySequence_Tuple(shape);
        if (dims == NULL) {
            tp_tensor_release(value);
            return -1;
        }
        tp_shape_t value_shape = tp_tensor_shape(value);
        bool same = PyTuple_GET_SIZE(dims) == (Py_ssize_t)value_shape.rank;
        for (Py_ssize_t i = 0; same && i < PyTuple_GET_SIZE(dims); i++) {
            PyObject *dim = PyTuple_GET_ITEM(dims, i);
            if (dim == Py_None) continue;
            long long size = PyLong_AsLongLong(dim);
            if (size == -1 && PyErr_Occurred()) {
                Py_DECREF(dims);
                tp_tensor_release(value);
                return -1;
            }
            same = size == value_shape.dims[i];
        }
        Py_DECREF(dims);
        if (!same) {
            char text[160];
            tp_shape_format(&value_shape, text, sizeof text);
            PyErr_Format(PyExc_ValueError,
                         "tp.Variable: shape= does not match the initial value's shape %s",
                         text);
            tp_tensor_release(value);
            return -1;
        }
    }
    int result = tpy_check(tp_variable_create(context, name, value, NULL, &object->variable));
    tp_tensor_release(value);
    object->trainable = trainable != 0;
    return result;
}

static void variable_dealloc(PyObject *self) {
    tpy_variable_object *object = (tpy_variable_object *)self;
    if (object->weakrefs != NULL) PyObject_ClearWeakRefs(self);
    if (object->owner == NULL) tp_variable_destroy(object->variable);
    Py_CLEAR(object->owner);
    Py_TYPE(self)->tp_free(self);
}

static tp_variable_t *checked(PyObject *self) {
    tp_variable_t *variable = ((tpy_variable_object *)self)->variable;
    if (variable == NULL) PyErr_SetString(PyExc_ValueError, "the Variable was not initialized");
    return variable;
}

int tpy_variable_value(PyObject *object, tp_tensor_t **out) {
    if (!PyObject_TypeCheck(object, &tpy_variable_type)) return 0;
    tp_variable_t *variable = checked(object);
    if (variable == NULL) return -1;
    int traced = tpy_function_variable_value(object, out);
    if (traced < 0) return -1;
    if (traced == 0 && tpy_check(tp_variable_read(variable, out)) < 0) return -1;
    if (tpy_tape_note_read(object, *out, traced == 1) < 0) {
        tp_tensor_release(*out);
        return -1;
    }
    return 1;
}

PyObject *tpy_variable_wrap_borrowed(tp_variable_t *variable, PyObject *owner, bool trainable) {
    tpy_variable_object *object =
        (tpy_variable_object *)tpy_variable_type.tp_alloc(&tpy_variable_type, 0);
    if (object == NULL) return NULL;
    object->variable = variable;
    object->trainable = trainable;
    object->owner = Py_NewRef(owner);
    return (PyObject *)object;
}

tp_variable_t *tpy_variable_handle(PyObject *object) {
    if (!PyObject_TypeCheck(object, &tpy_variable_type)) {
        PyErr_Format(PyExc_TypeError, "a tp.Variable is needed, not %.100s",
                     Py_TYPE(object)->tp_name);
        return NULL;
    }
    return checked(object);
}

static PyObject *read_value(PyObject *self, PyObject *unused) {
    (void)unused;
    tp_tensor_t *value;
    if (tpy_variable_value(self, &value) < 0) return NULL;
    return tpy_tensor_wrap(value);
}

/* The value as a Tensor for operators: a Variable read, anything else as it is. */
static PyObject *operand(PyObject *object) {
    if (!PyObject_TypeCheck(object, &tpy_variable_type)) return Py_NewRef(object);
    return read_value(object, NULL);
}

static PyObject *numpy_method(PyObject *self, PyObject *unused) {
    (void)unused;
    PyObject *tensor = read_value(self, NULL);
    if (tensor == NULL) return NULL;
    PyObject *array = PyObject_CallMethod(tensor, "numpy", NULL);
    Py_DECREF(tensor);
    return array;
}

/* The assign family's keywords, as TensorFlow's: use_locking and name are accepted and not
 * needed (updates are atomic); read_value=False returns None. */
static int parse_assign(PyObject *args, PyObject *kwargs, const char *format,
                        PyObject **value, int *read) {
    static char *keywords[] = {"value", "use_locking", "name", "read_value", NULL};
    PyObject *locking = Py_None, *name = Py_None;
    *read = 1;
    return PyArg_ParseTupleAndKeywords(args, kwargs, format, keywords, value, &locking, &name,
                                       read)
               ? 0
               : -1;
}

/* A traced graph holds no variable updates: an assignment in a tp.function's body would
 * happen once, at trace time, not at each call. */
static int refuse_in_trace(const char *what) {
    if (tpy_function_tracing() == NULL) return 0;
    PyErr_Format(PyExc_NotImplementedError,
                 "Variable.%s inside a tp.function: traced graphs hold no variable updates; "
                 "return the new value and assign it outside",
                 what);
    return -1;
}

static PyObject *assign_result(PyObject *self, tp_status_t *status, int read) {
    if (status != NULL) return tpy_raise(status);
    if (!read) Py_RETURN_NONE;
    return Py_NewRef(self);
}

/* assign(value): the new value, converted to the variable's dtype; returns the variable. */
static PyObject *assign(PyObject *self, PyObject *args, PyObject *kwargs) {
    PyObject *value_object;
    int read;
    if (parse_assign(args, kwargs, "O|OOp:assign", &value_object, &read) < 0) return NULL;
    if (refuse_in_trace("assign") < 0) return NULL;
    tp_variable_t *variable = checked(self);
    if (variable == NULL) return NULL;
    tp_tensor_t *value;
    if (tpy_to_tensor(value_object, tp_variable_dtype(variable), &value) < 0) return NULL;
    tp_status_t *status = tp_variable_assign(variable, value);
    tp_tensor_release(value);
    return assign_result(self, status, read);
}

static PyObject *assign_sub(PyObject *self, PyObject *args, PyObject *kwargs) {
    PyObject *delta_object;
    int read;
    if (parse_assign(args, kwargs, "O|OOp:assign_sub", &delta_object, &read) < 0) return NULL;
    if (refuse_in_trace("assign_sub") < 0) return NULL;
    tp_variable_t *variable = checked(self);
    if (variable == NULL) return NULL;
    tp_tensor_t *delta;
    if (tpy_to_tensor(delta_object, tp_variable_dtype(variable), &delta) < 0) return NULL;
    tp_status_t *status = tp_variable_assign_sub(variable, delta);
    tp_tensor_release(delta);
    return assign_result(self, status, read);
}

/* value + delta computed by Add where the value lives, then assigned: the C API has no
 * assign_add, and the read is not one a tape should see, so it goes around tpy_variable_value. */
static PyObject *assign_add(PyObject *self, PyObject *args, PyObject *kwargs) {
    PyObject *delta_object;
    int read;
    if (parse_assign(args, kwargs, "O|OOp:assign_add", &delta_object, &read) < 0) return NULL;
    if (refuse_in_trace("assign_add") < 0) return NULL;
    tp_variable_t *variable = checked(self);
    tp_context_t *context = tpy_context();
    if (variable == NULL || context == NULL) return NULL;
    tp_tensor_t *delta, *value = NULL, *sum = NULL;
    if (tpy_to_tensor(delta_object, tp_variable_dtype(variable), &delta) < 0) return NULL;
    tp_status_t *status = tp_variable_read(variable, &value);
    if (status == NULL) status = tp_add(context, value, delta, &sum);
    if (status == NULL) status = tp_variable_assign(variable, sum);
    tp_tensor_release(sum);
    tp_tensor_release(value);
    tp_tensor_release(delta);
    return assign_result(self, status, read);
}

/* __array__(dtype=None): NumPy's way in, so that np.asarray(v) is the value. */
static PyObject *array_method(PyObject *self, PyObject *args) {
    PyObject *dtype = Py_None;
    if (!PyArg_ParseTuple(args, "|O:__array__", &dtype)) return NULL;
    PyObject *array = numpy_method(self, NULL);
    if (array == NULL || dtype == Py_None) return array;
    PyObject *cast = PyObject_CallMethod(array, "astype", "O", dtype);
    Py_DECREF(array);
    return cast;
}

static PyObject *get_name(PyObject *self, void *closure) {
    (void)closure;
    tp_variable_t *variable = checked(self);
    return variable == NULL ? NULL : PyUnicode_FromFormat("%s:0", tp_variable_name(variable));
}

static PyObject *get_dtype(PyObject *self, void *closure) {
    (void)closure;
    tp_variable_t *variable = checked(self);
    return variable == NULL ? NULL : tpy_dtype_object_of(tp_variable_dtype(variable));
}

static PyObject *get_device(PyObject *self, void *closure) {
    (void)closure;
    tp_variable_t *variable = checked(self);
    return variable == NULL ? NULL : PyUnicode_FromString(tp_variable_device(variable));
}

static PyObject *get_trainable(PyObject *self, void *closure) {
    (void)closure;
    return PyBool_FromLong(((tpy_variable_object *)self)->trainable);
}

static PyObject *dims_of(tp_variable_t *variable) {
    tp_shape_t shape = tp_variable_shape(variable);
    PyObject *dims = PyTuple_New(shape.rank);
    for (int i = 0; dims != NULL && i < shape.rank; i++) {
        PyObject *dim = PyLong_FromLongLong(shape.dims[i]);
        if (dim == NULL) Py_CLEAR(dims);
        else PyTuple_SET_ITEM(dims, i, dim);
    }
    return dims;
}

/* shape: the TensorShape a Tensor's .shape gives, without reading the value (no tape sees it). */
static PyObject *get_shape(PyObject *self, void *closure) {
    (void)closure;
    tp_variable_t *variable = checked(self);
    if (variable == NULL) return NULL;
    PyObject *dims = dims_of(variable);
    if (dims == NULL) return NULL;
    PyObject *module = PyImport_ImportModule("tensorplug._shape");
    PyObject *cls = module == NULL ? NULL : PyObject_GetAttrString(module, "TensorShape");
    PyObject *shape = cls == NULL ? NULL : PyObject_CallOneArg(cls, dims);
    Py_XDECREF(cls);
    Py_XDECREF(module);
    Py_DECREF(dims);
    return shape;
}

static PyObject *get_ndim(PyObject *self, void *closure) {
    (void)closure;
    tp_variable_t *variable = checked(self);
    return variable == NULL ? NULL : PyLong_FromLong(tp_variable_shape(variable).rank);
}

/* <tp.Variable 'Variable:0' shape=(2,) dtype=float32, numpy=array([1., 2.], dtype=float32)> */
static PyObject *variable_repr(PyObject *self) {
    tp_variable_t *variable = checked(self);
    if (variable == NULL) return NULL;
    PyObject *dims = dims_of(variable);
    PyObject *array = dims == NULL ? NULL : numpy_method(self, NULL);
    if (array != NULL && PyTuple_GET_SIZE(dims) == 0) {
        /* A scalar shows as NumPy's scalar, numpy=3, as TensorFlow's numpy() gives one. */
        PyObject *empty = PyTuple_New(0);
        Py_SETREF(array, empty == NULL ? NULL : PyObject_GetItem(array, empty));
        Py_XDECREF(empty);
    }
    PyObject *result =
        array == NULL ? NULL
                      : PyUnicode_FromFormat("<tp.Variable '%s:0' shape=%R dtype=%s, numpy=%R>",
                                             tp_variable_name(variable), dims,
                                             tp_dtype_name(tp_variable_dtype(variable)), array);
    Py_XDECREF(array);
    Py_XDECREF(dims);
    return result;
}

/* ---- Operators: the Tensor's, on the value ---------------------------------------------------- */

typedef PyObject *(*binary_fn)(PyObject *, PyObject *);

static PyObject *binary(binary_fn fn, PyObject *x, PyObject *y) {
    PyObject *a = operand(x);
    PyObject *b = a == NULL ? NULL : operand(y);
    PyObject *result = b == NULL ? NULL : fn(a, b);
    Py_XDECREF(a);
    Py_XDECREF(b);
    return result;
}

static PyObject *unary(PyObject *(*fn)(PyObject *), PyObject *x) {
    PyObject *a = operand(x);
    PyObject *result = a == NULL ? NULL : fn(a);
    Py_XDECREF(a);
    return result;
}

#define BINARY(NAME, FN)                                                                       \
    static PyObject *NAME(PyObject *x, PyObject *y) { return binary(FN, x, y); }
BINARY(op_add, PyNumber_Add)
BINARY(op_subtract, PyNumber_Subtract)
BINARY(op_multiply, PyNumber_Multiply)
BINARY(op_true_divide, PyNumber_TrueDivide)
BINARY(op_floor_divide, PyNumber_FloorDivide)
BINARY(op_remainder, PyNumber_Remainder)
BINARY(op_matmul, PyNumber_MatrixMultiply)
BINARY(op_and, PyNumber_And)
BINARY(op_or, PyNumber_Or)
BINARY(op_xor, PyNumber_Xor)
#undef BINARY

static PyObject *op_power(PyObject *x, PyObject *y, PyObject *modulo) {
    PyObject *a = operand(x);
    PyObject *b = a == NULL ? NULL : operand(y);
    PyObject *result = b == NULL ? NULL : PyNumber_Power(a, b, modulo);
    Py_XDECREF(a);
    Py_XDECREF(b);
    return result;
}

static PyObject *op_negative(PyObject *x) { return unary(PyNumber_Negative, x); }
static PyObject *op_positive(PyObject *x) { return unary(PyNumber_Positive, x); }
static PyObject *op_absolute(PyObject *x) { return unary(PyNumber_Absolute, x); }
static PyObject *op_invert(PyObject *x) { return unary(PyNumber_Invert, x); }
/* float(v), int(v), bool(v): NumPy's conversions of the value, which refuse arrays of more than
 * one element as TensorFlow does. */
static PyObject *op_float(PyObject *x) {
    PyObject *array = numpy_method(x, NULL);
    PyObject *result = array == NULL ? NULL : PyNumber_Float(array);
    Py_XDECREF(array);
    return result;
}

static PyObject *op_int(PyObject *x) {
    PyObject *array = numpy_method(x, NULL);
    PyObject *result = array == NULL ? NULL : PyNumber_Long(array);
    Py_XDECREF(array);
    return result;
}

static int op_bool(PyObject *x) {
    PyObject *array = numpy_method(x, NULL);
    int result = array == NULL ? -1 : PyObject_IsTrue(array);
    Py_XDECREF(array);
    return result;
}

/* Ordering compares values element-wise, as the Tensor's operators do; == and != stay identity,
 * so that variables remain usable as dict keys and in lists (optimizers, layers). */
static PyObject *variable_richcompare(PyObject *x, PyObject *y, int op) {
    if (op == Py_EQ || op == Py_NE) Py_RETURN_NOTIMPLEMENTED;
    PyObject *a = operand(x);
    PyObject *b = a == NULL ? NULL : operand(y);
    PyObject *result = b == NULL ? NULL : PyObject_RichCompare(a, b, op);
    Py_XDECREF(a);
    Py_XDECREF(b);
    return result;
}

static PyObject *variable_subscript(PyObject *self, PyObject *key) {
    PyObject *value = read_value(self, NULL);
    if (value == NULL) return NULL;
    PyObject *result = PyObject_GetItem(value, key);
    Py_DECREF(value);
    return result;
}

static Py_ssize_t variable_length(PyObject *self) {
    tp_variable_t *variable = checked(self);
    if (variable == NULL) return -1;
    tp_shape_t shape = tp_variable_shape(variable);
    if (shape.rank == 0) {
        PyErr_SetString(PyExc_TypeError, "len is not well defined for a rank-0 Variable");
        return -1;
    }
    return (Py_ssize_t)shape.dims[0];
}

static PyNumberMethods variable_number = {
    .nb_add = op_add,
    .nb_subtract = op_subtract,
    .nb_multiply = op_multiply,
    .nb_remainder = op_remainder,
    .nb_power = op_power,
    .nb_negative = op_negative,
    .nb_positive = op_positive,
    .nb_absolute = op_absolute,
    .nb_bool = op_bool,
    .nb_invert = op_invert,
    .nb_and = op_and,
    .nb_xor = op_xor,
    .nb_or = op_or,
    .nb_int = op_int,
    .nb_float = op_float,
    .nb_floor_divide = op_floor_divide,
    .nb_true_divide = op_true_divide,
    .nb_matrix_multiply = op_matmul,
};

static PyMappingMethods variable_mapping = {
    .mp_length = variable_length,
    .mp_subscript = variable_subscript,
};

static PyGetSetDef variable_getset[] = {
    {"name", get_name, NULL, "'NAME:0', as TensorFlow names a variable's value", NULL},
    {"dtype", get_dtype, NULL, "the element type, a DType", NULL},
    {"shape", get_shape, NULL, "the dimensions, a TensorShape", NULL},
    {"device", get_device, NULL, "the canonical name of the device holding it", NULL},
    {"trainable", get_trainable, NULL, "whether optimizers and Keras train it", NULL},
    {"ndim", get_ndim, NULL, "the rank", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef variable_methods[] = {
    {"read_value", read_value, METH_NOARGS, "The current value, a Tensor."},
    {"value", read_value, METH_NOARGS, "The current value, a Tensor."},
    {"numpy", numpy_method, METH_NOARGS, "A NumPy array holding a copy of the value."},
    {"__array__", array_method, METH_VARARGS, "The value as a NumPy array."},
    {"assign", (PyCFunction)(void (*)(void))assign, METH_VARARGS | METH_KEYWORDS,
     "assign(value, use_locking=None, name=None, read_value=True): a new value of its dtype "
     "and shape; returns the variable."},
    {"assign_add", (PyCFunction)(void (*)(void))assign_add, METH_VARARGS | METH_KEYWORDS,
     "assign_add(delta, ...): value += delta; returns the variable."},
    {"assign_sub", (PyCFunction)(void (*)(void))assign_sub, METH_VARARGS | METH_KEYWORDS,
     "assign_sub(delta, ...): value -= delta; returns the variable."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject tpy_variable_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tensorplug.Variable",
    .tp_basicsize = sizeof(tpy_variable_object),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Variable(initial_value, trainable=True, name=None, dtype=None, shape=None)",
    .tp_dealloc = variable_dealloc,
    .tp_init = variable_init,
    .tp_new = PyType_GenericNew,
    .tp_repr = variable_repr,
    .tp_as_number = &variable_number,
    .tp_as_mapping = &variable_mapping,
    .tp_richcompare = variable_richcompare,
    .tp_getset = variable_getset,
    .tp_methods = variable_methods,
    .tp_weaklistoffset = offsetof(tpy_variable_object, weakrefs),
};

int tpy_init_variable(PyObject *module) {
    /* Hashable by identity although it compares element-wise: Python drops the inherited hash
     * of a type that defines its own comparison. */
    tpy_variable_type.tp_hash = PyBaseObject_Type.tp_hash;
    if (PyType_Ready(&tpy_variable_type) < 0) return -1;
    return PyModule_AddObjectRef(module, "Variable", (PyObject *)&tpy_variable_type);
}
