/* SPDX-License-Identifier: Apache-2.0 */
/* tp.float32 and the other element types: DType objects, one per tp_dtype_t, and the reading
 * of a dtype from whatever a TensorFlow user passes as `dtype=`. */
#include <string.h>

#include "tpy.h"

#define MAX_DTYPE TP_UINT64
static PyObject *dtype_objects[MAX_DTYPE + 1];

PyObject *tpy_dtype_object_of(tp_dtype_t dtype) {
    if ((int)dtype <= 0 || (int)dtype > MAX_DTYPE || dtype_objects[dtype] == NULL) {
        PyErr_Format(PyExc_ValueError, "%d is not a tensorplug dtype", (int)dtype);
        return NULL;
    }
    return Py_NewRef(dtype_objects[dtype]);
}

static tp_dtype_t dtype_of(PyObject *self) { return ((tpy_dtype_object *)self)->dtype; }

bool tpy_dtype_is_floating(tp_dtype_t dtype) {
    return dtype == TP_FLOAT32 || dtype == TP_FLOAT64 || dtype == TP_FLOAT16 ||
           dtype == TP_BFLOAT16;
}

static PyObject *dtype_repr(PyObject *self) {
    return PyUnicode_FromFormat("tp.%s", tp_dtype_name(dtype_of(self)));
}

static PyObject *dtype_str(PyObject *self) {
    return PyUnicode_FromFormat("<dtype: '%s'>", tp_dtype_name(dtype_of(self)));
}

static Py_hash_t dtype_hash(PyObject *self) { return (Py_hash_t)dtype_of(self) * 1000003; }

/* Equal to the same DType, and to anything tpy_dtype_from_object reads as it ("float32",
 * numpy.float32), as tf.float32 == np.float32 holds. */
static PyObject *dtype_richcompare(PyObject *self, PyObject *other, int op) {
    if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
    tp_dtype_t other_dtype = TP_DTYPE_INVALID;
    if (other == Py_None || tpy_dtype_from_object(other, &other_dtype) < 0) {
        PyErr_Clear();
        other_dtype = TP_DTYPE_INVALID;
    }
    bool equal = other_dtype == dtype_of(self);
    return PyBool_FromLong(op == Py_EQ ? equal : !equal);
}

static PyObject *dtype_get_name(PyObject *self, void *closure) {
    (void)closure;
    return PyUnicode_FromString(tp_dtype_name(dtype_of(self)));
}

static PyObject *dtype_get_size(PyObject *self, void *closure) {
    (void)closure;
    return PyLong_FromSize_t(tp_dtype_size(dtype_of(self)));
}

static PyObject *dtype_get_is_floating(PyObject *self, void *closure) {
    (void)closure;
    return PyBool_FromLong(tpy_dtype_is_floating(dtype_of(self)));
}

static PyObject *dtype_get_is_integer(PyObject *self, void *closure) {
    (void)closure;
    tp_dtype_t dtype = dtype_of(self);
    return PyBool_FromLong(!tpy_dtype_is_floating(dtype) && dtype != TP_BOOL);
}

static PyObject *dtype_get_is_bool(PyObject *self, void *closure) {
    (void)closure;
    return PyBool_FromLong(dtype_of(self) == TP_BOOL);
}

/* numpy.float32 and so on. NumPy has no bfloat16: its values come to NumPy as float32. */
static PyObject *dtype_get_as_numpy_dtype(PyObject *self, void *closure) {
    (void)closure;
    tp_dtype_t dtype = dtype_of(self);
    const char *name = dtype == TP_BFLOAT16 ? "float32"
                       : dtype == TP_BOOL   ? "bool_"
                                            : tp_dtype_name(dtype);
    PyObject *numpy = PyImport_ImportModule("numpy");
    if (numpy == NULL) return NULL;
    PyObject *type = PyObject_GetAttrString(numpy, name);
    Py_DECREF(numpy);
    return type;
}

static PyObject *dtype_reduce(PyObject *self, PyObject *unused) {
    (void)unused;
    return Py_BuildValue("(O(s))", (PyObject *)Py_TYPE(self), tp_dtype_name(dtype_of(self)));
}

static PyObject *dtype_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    (void)type;
    PyObject *value;
    static char *keywords[] = {"type_value", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:DType", keywords, &value)) return NULL;
    tp_dtype_t dtype = TP_DTYPE_INVALID;
    if (value == Py_None) {
        PyErr_SetString(PyExc_TypeError, "DType(None): no dtype given");
        return NULL;
    }
    if (tpy_dtype_from_object(value, &dtype) < 0) return NULL;
    return tpy_dtype_object_of(dtype);
}

static PyGetSetDef dtype_getset[] = {
    {"name", dtype_get_name, NULL, "\"float32\" and so on", NULL},
    {"size", dtype_get_size, NULL, "bytes per element", NULL},
    {"is_floating", dtype_get_is_floating, NULL, NULL, NULL},
    {"is_integer", dtype_get_is_integer, NULL, NULL, NULL},
    {"is_bool", dtype_get_is_bool, NULL, NULL, NULL},
    {"as_numpy_dtype", dtype_get_as_numpy_dtype, NULL, "the NumPy scalar type", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef dtype_methods[] = {
    {"__reduce__", dtype_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

PyTypeObject tpy_dtype_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tensorplug.DType",
    .tp_basicsize = sizeof(tpy_dtype_object),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An element type: tp.float32, tp.int64, ...",
    .tp_repr = dtype_repr,
    .tp_str = dtype_str,
    .tp_hash = dtype_hash,
    .tp_richcompare = dtype_richcompare,
    .tp_getset = dtype_getset,
    .tp_methods = dtype_methods,
    .tp_new = dtype_new,
};

/* A name as tp_dtype_from_name reads it, with NumPy's spellings of bool beside it. */
static int dtype_from_name(const char *name, tp_dtype_t *out) {
    if (strcmp(name, "bool_") == 0 || strcmp(name, "bool8") == 0) name = "bool";
    if (strcmp(name, "half") == 0) name = "float16";
    if (strcmp(name, "double") == 0) name = "float64";
    tp_status_t *status = tp_dtype_from_name(name, out);
    if (status == NULL) return 0;
    tp_status_free(status);
    PyErr_Format(PyExc_TypeError, "'%s' is not a tensorplug dtype (float32, float64, float16, "
                 "bfloat16, int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool)",
                 name);
    return -1;
}

int tpy_dtype_from_object(PyObject *object, tp_dtype_t *out) {
    if (object == Py_None) return 0;
    if (PyObject_TypeCheck(object, &tpy_dtype_type)) {
        *out = dtype_of(object);
        return 0;
    }
    if (object == (PyObject *)&PyFloat_Type) return *out = TP_FLOAT32, 0;
    if (object == (PyObject *)&PyBool_Type) return *out = TP_BOOL, 0;
    if (object == (PyObject *)&PyLong_Type) return *out = TP_INT32, 0;
    if (PyUnicode_Check(object)) {
        const char *name = PyUnicode_AsUTF8(object);
        return name == NULL ? -1 : dtype_from_name(name, out);
    }
    /* NumPy's dtypes and scalar types: numpy.dtype(x).name. */
    PyObject *numpy = PyImport_ImportModule("numpy");
    if (numpy == NULL) return -1;
    PyObject *numpy_dtype = PyObject_CallMethod(numpy, "dtype", "O", object);
    Py_DECREF(numpy);
    if (numpy_dtype == NULL) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%R is not a dtype", object);
        return -1;
    }
    PyObject *name = PyObject_GetAttrString(numpy_dtype, "name");
    Py_DECREF(numpy_dtype);
    if (name == NULL) return -1;
    const char *text = PyUnicode_AsUTF8(name);
    int result = text == NULL ? -1 : dtype_from_name(text, out);
    Py_DECREF(name);
    return result;
}

int tpy_init_dtypes(PyObject *module) {
    if (PyType_Ready(&tpy_dtype_type) < 0) return -1;
    if (PyModule_AddObjectRef(module, "DType", (PyObject *)&tpy_dtype_type) < 0) return -1;
    for (int d = 1; d <= MAX_DTYPE; d++) {
        tpy_dtype_object *object = PyObject_New(tpy_dtype_object, &tpy_dtype_type);
        if (object == NULL) return -1;
        object->dtype = (tp_dtype_t)d;
        dtype_objects[d] = (PyObject *)object;
        if (PyModule_AddObjectRef(module, tp_dtype_name((tp_dtype_t)d), (PyObject *)object) < 0)
            return -1;
    }
    /* TensorFlow's other spellings. */
    if (PyModule_AddObjectRef(module, "half", dtype_objects[TP_FLOAT16]) < 0 ||
        PyModule_AddObjectRef(module, "double", dtype_objects[TP_FLOAT64]) < 0)
        return -1;
    return 0;
}
