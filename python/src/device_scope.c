/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tp.device(name): `with tp.device("/APU:0"):` places the ops this thread runs in the block, as
 * tf.device does, through tp_device_push and tp_device_pop; scopes nest, and each thread has
 * its own. The name is checked when the object is made, so a malformed one fails at
 * tp.device(...), naming it; a well-formed name of a device that does not exist fails (or,
 * with soft placement, falls back) when an op runs, as in TensorFlow. None changes nothing.
 */
#include <string.h>

#include "tpy.h"

typedef struct {
    PyObject_HEAD
    PyObject *name; /* a str, or None for no change */
    /* Scopes this object pushed and has not popped, so that an object entered several times
     * (nested `with` of the same object) pops as often as it pushed and never more. */
    Py_ssize_t depth;
} device_scope_object;

static PyObject *device_scope_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"device_name", NULL};
    PyObject *name;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:device", keywords, &name)) return NULL;
    if (name != Py_None) {
        if (!PyUnicode_Check(name)) {
            PyErr_Format(PyExc_TypeError,
                         "tp.device: the device name must be a str or None, not %.100s",
                         Py_TYPE(name)->tp_name);
            return NULL;
        }
        const char *text = PyUnicode_AsUTF8(name);
        if (text == NULL) return NULL;
        tp_device_spec_t spec;
        tp_status_t *status = tp_device_spec_parse(text, &spec);
        if (status != NULL) {
            PyErr_Format(PyExc_ValueError, "tp.device(%R): %s", name, tp_status_message(status));
            tp_status_free(status);
            return NULL;
        }
    }
    device_scope_object *self = (device_scope_object *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->name = Py_NewRef(name);
    self->depth = 0;
    return (PyObject *)self;
}

static void device_scope_dealloc(PyObject *object) {
    device_scope_object *self = (device_scope_object *)object;
    Py_XDECREF(self->name);
    Py_TYPE(object)->tp_free(object);
}

static PyObject *device_scope_enter(PyObject *object, PyObject *unused) {
    (void)unused;
    device_scope_object *self = (device_scope_object *)object;
    if (self->name != Py_None) {
        tp_context_t *context = tpy_context();
        if (context == NULL) return NULL;
        const char *text = PyUnicode_AsUTF8(self->name);
        if (text == NULL) return NULL;
        tp_status_t *status = tp_device_push(context, text);
        if (status != NULL) return tpy_raise(status);
        self->depth++;
    }
    return Py_NewRef(object);
}

static PyObject *device_scope_exit(PyObject *object, PyObject *const *args, Py_ssize_t nargs) {
    (void)args;
    (void)nargs;
    device_scope_object *self = (device_scope_object *)object;
    if (self->name == Py_None) Py_RETURN_FALSE;
    if (self->depth == 0) {
        PyErr_SetString(PyExc_RuntimeError, "tp.device: exit without a matching enter");
        return NULL;
    }
    tp_context_t *context = tpy_context();
    if (context == NULL) return NULL;
    tp_status_t *status = tp_device_pop(context);
    if (status != NULL) return tpy_raise(status);
    self->depth--;
    Py_RETURN_FALSE; /* an exception raised in the block goes on */
}

static PyObject *device_scope_repr(PyObject *object) {
    return PyUnicode_FromFormat("tp.device(%R)", ((device_scope_object *)object)->name);
}

static PyObject *device_scope_get_name(PyObject *object, void *closure) {
    (void)closure;
    return Py_NewRef(((device_scope_object *)object)->name);
}

static PyMethodDef device_scope_methods[] = {
    {"__enter__", device_scope_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))device_scope_exit, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef device_scope_getset[] = {
    {"name", device_scope_get_name, NULL, "the device name given, or None", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject device_scope_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tensorplug.device",
    .tp_basicsize = sizeof(device_scope_object),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "device(device_name): a context manager placing the ops of its block on the "
              "named device (any accepted form: '/APU:0', '/device:GPU:1', 'cpu:0'); None "
              "changes nothing. Scopes nest, per thread.",
    .tp_new = device_scope_new,
    .tp_dealloc = device_scope_dealloc,
    .tp_repr = device_scope_repr,
    .tp_methods = device_scope_methods,
    .tp_getset = device_scope_getset,
};

int tpy_init_device_scope(PyObject *module) {
    if (PyType_Ready(&device_scope_type) < 0) return -1;
    return PyModule_AddObjectRef(module, "device", (PyObject *)&device_scope_type);
}
