/* SPDX-License-Identifier: Apache-2.0 */
/* NumPy without copies: a tensor on a device whose memory the host addresses (the CPU) lends
 * its own bytes, read-only, through the buffer protocol, so that numpy.asarray(t) is a view of
 * the tensor; any other device, and bfloat16 (which NumPy lacks), refuse, and NumPy falls back
 * to __array__, which copies. */
#include <stdlib.h>

#include "tensor_protocols.h"

/* The struct format of an element, as NumPy reads it; NULL for bfloat16. */
static const char *element_format(tp_dtype_t dtype) {
    switch (dtype) {
    case TP_FLOAT32: return "f";
    case TP_FLOAT64: return "d";
    case TP_FLOAT16: return "e";
    case TP_INT8: return "b";
    case TP_INT16: return "h";
    case TP_INT32: return "i";
    case TP_INT64: return "q";
    case TP_UINT8: return "B";
    case TP_UINT16: return "H";
    case TP_UINT32: return "I";
    case TP_UINT64: return "Q";
    case TP_BOOL: return "?";
    default: return NULL;
    }
}

/* The view keeps the Tensor object (view->obj), and with it the tensor's memory, alive until
 * it is released; its shape and strides live in one block at view->internal. */
static int get_buffer(PyObject *self, Py_buffer *view, int flags) {
    tp_tensor_t *tensor = TPY_TENSOR(self);
    tp_dtype_t dtype = tp_tensor_dtype(tensor);
    view->obj = NULL;
    if (flags & PyBUF_WRITABLE) {
        PyErr_SetString(PyExc_BufferError, "a tensor is immutable: its buffer is read-only");
        return -1;
    }
    const char *format = element_format(dtype);
    if (format == NULL) {
        PyErr_Format(PyExc_BufferError, "NumPy has no %s: numpy() gives the values as float32",
                     tp_dtype_name(dtype));
        return -1;
    }
    const void *data = NULL;
    tp_status_t *status;
    Py_BEGIN_ALLOW_THREADS
    status = tp_tensor_host_data(tensor, &data);
    Py_END_ALLOW_THREADS
    if (status != NULL) {
        if (tp_status_code(status) == TP_FAILED_PRECONDITION) {
            /* Another device's tensor: BufferError tells NumPy to try __array__, a copy. */
            PyErr_Format(PyExc_BufferError, "%s", tp_status_message(status));
            tp_status_free(status);
            return -1;
        }
        tpy_raise(status);
        return -1;
    }
    tp_shape_t shape = tp_tensor_shape(tensor);
    Py_ssize_t itemsize = (Py_ssize_t)tp_dtype_size(dtype);
    Py_ssize_t *dims = PyMem_Malloc(sizeof(Py_ssize_t) * 2 * (size_t)(shape.rank + 1));
    if (dims == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t *strides = dims + shape.rank;
    Py_ssize_t stride = itemsize;
    for (int32_t d = shape.rank - 1; d >= 0; d--) {
        dims[d] = (Py_ssize_t)shape.dims[d];
        strides[d] = stride;
        stride *= dims[d];
    }
    view->buf = (void *)data;
    view->obj = Py_NewRef(self);
    view->len = (Py_ssize_t)tp_tensor_byte_size(tensor);
    view->readonly = 1;
    view->itemsize = itemsize;
    view->format = (flags & PyBUF_FORMAT) ? (char *)format : NULL;
    view->ndim = shape.rank;
    view->shape = (flags & PyBUF_ND) == PyBUF_ND ? dims : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? strides : NULL;
    view->suboffsets = NULL;
    view->internal = dims;
    return 0;
}

static void release_buffer(PyObject *self, Py_buffer *view) {
    (void)self;
    PyMem_Free(view->internal);
    view->internal = NULL;
}

PyBufferProcs tpy_tensor_as_buffer = {
    .bf_getbuffer = get_buffer,
    .bf_releasebuffer = release_buffer,
};

/* __array__(dtype=None, copy=None): a read-only view of a CPU tensor's memory, otherwise (or
 * with copy=True, NumPy 2's keyword) a copy, numpy(); with a dtype, the values converted to
 * it, as TensorFlow gives numpy.asarray(t.numpy(), dtype). */
PyObject *tpy_tensor_array(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"dtype", "copy", NULL};
    PyObject *dtype = Py_None, *copy_object = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:__array__", keywords, &dtype,
                                     &copy_object))
        return NULL;
    int copy = copy_object == Py_None ? 0 : PyObject_IsTrue(copy_object);
    if (copy < 0) return NULL;
    PyObject *numpy = PyImport_ImportModule("numpy");
    if (numpy == NULL) return NULL;
    PyObject *array = NULL;
    PyObject *view = copy ? NULL : PyMemoryView_FromObject(self);
    if (view != NULL) {
        array = PyObject_CallMethod(numpy, "asarray", "O", view);
        Py_DECREF(view);
    } else if (copy || PyErr_ExceptionMatches(PyExc_BufferError)) {
        PyErr_Clear();
        PyObject *values = tpy_tensor_numpy(self, NULL);
        if (values != NULL) array = PyObject_CallMethod(numpy, "asarray", "O", values);
        Py_XDECREF(values);
    }
    if (array != NULL && dtype != Py_None)
        Py_SETREF(array, PyObject_CallMethod(numpy, "asarray", "OO", array, dtype));
    Py_DECREF(numpy);
    return array;
}
