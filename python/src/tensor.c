/* SPDX-License-Identifier: Apache-2.0 */
/* tp.Tensor: a Python object holding one reference to a tp_tensor_t, with TensorFlow's eager
 * tensor attributes (shape, dtype, device, numpy()) and its two printed forms; its protocols
 * (operators, indexing, buffer, DLPack) live in the files tensor_protocols.h names. */
#include <string.h>

#include "tensor_protocols.h"

/* tensorplug.TensorShape, the tuple subclass the package defines; a plain tuple until the
 * package registers it. */
static PyObject *shape_class;

PyObject *tpy_tensor_wrap(tp_tensor_t *tensor) {
    tpy_tensor_object *object = PyObject_New(tpy_tensor_object, &tpy_tensor_type);
    if (object == NULL) {
        tp_tensor_release(tensor);
        return NULL;
    }
    object->tensor = tensor;
    object->weakrefs = NULL;
    tpy_function_note_made(tensor);
    tpy_live_tensors++;
    return (PyObject *)object;
}

int tpy_tensor_wait(tp_tensor_t *tensor) {
    tp_status_t *status;
    Py_BEGIN_ALLOW_THREADS
    status = tp_tensor_wait(tensor);
    Py_END_ALLOW_THREADS
    return tpy_check(status);
}

static void tensor_dealloc(PyObject *self) {
    tpy_tensor_object *object = (tpy_tensor_object *)self;
    if (object->weakrefs != NULL) PyObject_ClearWeakRefs(self);
    tp_tensor_release(object->tensor);
    PyObject_Free(self);
    /* The release may have let go of memory tp.from_dlpack borrowed: its producer's deleter
     * runs now, not at the interpreter's next pending call. */
    tpy_dlpack_give_back();
    tpy_live_tensors--;
}

/* The dimensions as a tuple of ints. */
static PyObject *dims_tuple(tp_tensor_t *tensor) {
    tp_shape_t shape = tp_tensor_shape(tensor);
    PyObject *dims = PyTuple_New(shape.rank);
    if (dims == NULL) return NULL;
    for (int32_t i = 0; i < shape.rank; i++) {
        PyObject *dim = PyLong_FromLongLong((long long)shape.dims[i]);
        if (dim == NULL) {
            Py_DECREF(dims);
            return NULL;
        }
        PyTuple_SET_ITEM(dims, i, dim);
    }
    return dims;
}

static PyObject *tensor_get_shape(PyObject *self, void *closure) {
    (void)closure;
    PyObject *dims = dims_tuple(TPY_TENSOR(self));
    if (dims == NULL || shape_class == NULL) return dims;
    PyObject *shape = PyObject_CallOneArg(shape_class, dims);
    Py_DECREF(dims);
    return shape;
}

static PyObject *tensor_get_dtype(PyObject *self, void *closure) {
    (void)closure;
    return tpy_dtype_object_of(tp_tensor_dtype(TPY_TENSOR(self)));
}

static PyObject *tensor_get_device(PyObject *self, void *closure) {
    (void)closure;
    return PyUnicode_FromString(tp_tensor_device(TPY_TENSOR(self)));
}

static PyObject *tensor_get_ndim(PyObject *self, void *closure) {
    (void)closure;
    return PyLong_FromLong(tp_tensor_shape(TPY_TENSOR(self)).rank);
}

/* numpy(): a new NumPy array holding a copy of the values, read straight into the array's
 * memory, or for a scalar tensor a NumPy scalar, as TensorFlow gives. bfloat16, which NumPy
 * lacks, comes as float32. */
PyObject *tpy_tensor_numpy(PyObject *self, PyObject *unused) {
    (void)unused;
    tp_tensor_t *tensor = TPY_TENSOR(self);
    tp_tensor_t *readable = tp_tensor_retain(tensor);
    if (tp_tensor_dtype(tensor) == TP_BFLOAT16) {
        tp_tensor_release(readable);
        readable = NULL;
        tp_context_t *context = tpy_context();
        if (context == NULL || tpy_check(tp_cast(context, tensor, TP_FLOAT32, &readable)) < 0)
            return NULL;
    }
    PyObject *dims = dims_tuple(readable);
    PyObject *dtype = dims == NULL ? NULL : tpy_dtype_object_of(tp_tensor_dtype(readable));
    PyObject *numpy_type = dtype == NULL ? NULL : PyObject_GetAttrString(dtype, "as_numpy_dtype");
    PyObject *numpy = numpy_type == NULL ? NULL : PyImport_ImportModule("numpy");
    PyObject *array =
        numpy == NULL ? NULL : PyObject_CallMethod(numpy, "empty", "OO", dims, numpy_type);
    Py_XDECREF(numpy);
    Py_XDECREF(numpy_type);
    Py_XDECREF(dtype);
    Py_XDECREF(dims);
    if (array != NULL) {
        Py_buffer view;
        if (PyObject_GetBuffer(array, &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
            Py_CLEAR(array);
        } else {
            tp_status_t *status;
            Py_BEGIN_ALLOW_THREADS
            status = tp_tensor_read(readable, view.buf, (size_t)view.len);
            Py_END_ALLOW_THREADS
            PyBuffer_Release(&view);
            if (tpy_check(status) < 0) Py_CLEAR(array);
        }
    }
    bool scalar = tp_tensor_shape(readable).rank == 0;
    tp_tensor_release(readable);
    if (array != NULL && scalar) {
        /* array[()] is the NumPy scalar. */
        PyObject *no_index = PyTuple_New(0);
        Py_SETREF(array, no_index == NULL ? NULL : PyObject_GetItem(array, no_index));
        Py_XDECREF(no_index);
    }
    return array;
}

/* The runtime's text, "tp.Tensor(\n[[22. 28.]\n [49. 64.]], shape=(2, 2), dtype=float32)": what
 * print(t) shows, as print shows a tf.Tensor. */
static PyObject *tensor_str(PyObject *self) {
    char *text = NULL;
    tp_status_t *status;
    Py_BEGIN_ALLOW_THREADS
    status = tp_tensor_format(TPY_TENSOR(self), &text);
    Py_END_ALLOW_THREADS
    if (status != NULL) return tpy_raise(status);
    PyObject *result = PyUnicode_FromString(text);
    free(text);
    return result;
}

/* TensorFlow's repr of an eager tensor, <tp.Tensor: shape=(2,), dtype=float32,
 * numpy=array([1., 2.], dtype=float32)>: the repr of numpy(), on a line of its own when it
 * spans lines, as TensorFlow's numpy_text puts it. */
static PyObject *tensor_repr(PyObject *self) {
    char shape_text[160];
    tp_shape_t shape = tp_tensor_shape(TPY_TENSOR(self));
    tp_shape_format(&shape, shape_text, sizeof shape_text);
    PyObject *array = tpy_tensor_numpy(self, NULL);
    if (array == NULL) return NULL;
    PyObject *text = PyObject_Repr(array);
    Py_DECREF(array);
    if (text == NULL) return NULL;
    int spans_lines = PyUnicode_FindChar(text, '\n', 0, PyUnicode_GET_LENGTH(text), 1) >= 0;
    PyObject *result = PyUnicode_FromFormat("<tp.Tensor: shape=%s, dtype=%s, numpy=%s%U>",
                                            shape_text,
                                            tp_dtype_name(tp_tensor_dtype(TPY_TENSOR(self))),
                                            spans_lines ? "\n" : "", text);
    Py_DECREF(text);
    return result;
}

/* _set_tensor_shape_class(cls): the class .shape returns, called once by the package. */
static PyObject *set_tensor_shape_class(PyObject *self, PyObject *cls) {
    (void)self;
    Py_XSETREF(shape_class, Py_NewRef(cls));
    Py_RETURN_NONE;
}

static PyGetSetDef tensor_getset[] = {
    {"shape", tensor_get_shape, NULL, "the dimensions, a TensorShape", NULL},
    {"dtype", tensor_get_dtype, NULL, "the element type, a DType", NULL},
    {"device", tensor_get_device, NULL, "the canonical name of the device holding it", NULL},
    {"ndim", tensor_get_ndim, NULL, "the rank", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef tensor_methods[] = {
    {"numpy", tpy_tensor_numpy, METH_NOARGS,
     "A NumPy array holding a copy of the values (a NumPy scalar for a scalar tensor)."},
    {"ref", tpy_tensor_ref, METH_NOARGS,
     "A hashable reference to this tensor, for sets and dict keys; deref() gives it back."},
    {"__array__", (PyCFunction)(void (*)(void))tpy_tensor_array, METH_VARARGS | METH_KEYWORDS,
     "__array__(dtype=None, copy=None): the values as a NumPy array, a read-only view of a "
     "CPU tensor's memory unless copy is true or the tensor is elsewhere."},
    {"__dlpack__", (PyCFunction)(void (*)(void))tpy_tensor_dlpack,
     METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(stream=None): a DLPack capsule sharing a CPU tensor's memory."},
    {"__dlpack_device__", tpy_tensor_dlpack_device, METH_NOARGS,
     "(device type, device id) as DLPack numbers them: (1, 0) for the CPU."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject tpy_tensor_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tensorplug.Tensor",
    .tp_basicsize = sizeof(tpy_tensor_object),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An immutable tensor on one device; made by ops, tp.constant and friends.",
    .tp_dealloc = tensor_dealloc,
    .tp_str = tensor_str,
    .tp_repr = tensor_repr,
    .tp_getset = tensor_getset,
    .tp_methods = tensor_methods,
    .tp_as_number = &tpy_tensor_as_number,
    .tp_as_mapping = &tpy_tensor_as_mapping,
    .tp_as_buffer = &tpy_tensor_as_buffer,
    .tp_richcompare = tpy_tensor_richcompare,
    .tp_hash = tpy_tensor_hash,
    .tp_iter = tpy_tensor_iter,
    .tp_weaklistoffset = offsetof(tpy_tensor_object, weakrefs),
};

static PyMethodDef module_functions[] = {
    {"_set_tensor_shape_class", set_tensor_shape_class, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

int tpy_init_tensor(PyObject *module) {
    if (PyType_Ready(&tpy_tensor_type) < 0) return -1;
    /* Above NumPy's arrays (0) and scalars, so that `ndarray + tensor` leaves the operator to
     * the tensor and gives a Tensor, as TensorFlow's value of 100 does. */
    PyObject *priority = PyLong_FromLong(100);
    int failed = priority == NULL ||
                 PyDict_SetItemString(tpy_tensor_type.tp_dict, "__array_priority__", priority) < 0;
    Py_XDECREF(priority);
    if (failed) return -1;
    PyType_Modified(&tpy_tensor_type);
    if (PyModule_AddObjectRef(module, "Tensor", (PyObject *)&tpy_tensor_type) < 0) return -1;
    if (tpy_init_tensor_operators(module) < 0 || tpy_init_tensor_indexing(module) < 0 ||
        tpy_init_dlpack(module) < 0)
        return -1;
    return PyModule_AddFunctions(module, module_functions);
}
