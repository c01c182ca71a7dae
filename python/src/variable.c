/* SPDX-License-Identifier: Apache-2.0 */
/* tp.Variable: a tp_variable_t, a value on one device that can be given a new one. Anywhere a
 * tensor is taken, a Variable gives its current value (tpy_variable_value), and tapes watch it
 * when it is read. */
#include "tpy.h"

typedef struct tpy_variable_object {
    PyObject_HEAD
    tp_variable_t *variable;
    bool trainable;
    PyObject *weakrefs;
} tpy_variable_object;

static int variable_init(PyObject *self, PyObject *args, PyObject *kwargs) {
    tpy_variable_object *object = (tpy_variable_object *)self;
    static char *keywords[] = {"initial_value", "trainable", "name", "dtype", NULL};
    PyObject *initial, *dtype_object = Py_None;
    int trainable = 1;
    const char *name = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|pzO:Variable", keywords, &initial,
                                     &trainable, &name, &dtype_object))
        return -1;
    if (object->variable != NULL) {
        PyErr_SetString(PyExc_TypeError, "a Variable is initialized once");
        return -1;
    }
    tp_context_t *context = tpy_context();
    tp_dtype_t dtype = TP_DTYPE_INVALID;
    if (context == NULL || tpy_dtype_from_object(dtype_object, &dtype) < 0) return -1;
    tp_tensor_t *value;
    if (tpy_to_tensor(initial, dtype, &value) < 0) return -1;
    int result = tpy_check(
        tp_variable_create(context, name == NULL ? "Variable" : name, value, NULL,
                           &object->variable));
    tp_tensor_release(value);
    object->trainable = trainable != 0;
    return result;
}

static void variable_dealloc(PyObject *self) {
    tpy_variable_object *object = (tpy_variable_object *)self;
    if (object->weakrefs != NULL) PyObject_ClearWeakRefs(self);
    tp_variable_destroy(object->variable);
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
    if (variable == NULL || tpy_check(tp_variable_read(variable, out)) < 0) return -1;
    return 1;
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

/* assign(value): the new value, converted to the variable's dtype; returns the variable. */
static PyObject *assign(PyObject *self, PyObject *value_object) {
    tp_variable_t *variable = checked(self);
    if (variable == NULL) return NULL;
    tp_tensor_t *value;
    if (tpy_to_tensor(value_object, tp_variable_dtype(variable), &value) < 0) return NULL;
    tp_status_t *status = tp_variable_assign(variable, value);
    tp_tensor_release(value);
    if (status != NULL) return tpy_raise(status);
    return Py_NewRef(self);
}

static PyMethodDef variable_methods[] = {
    {"read_value", read_value, METH_NOARGS, "The current value, a Tensor."},
    {"value", read_value, METH_NOARGS, "The current value, a Tensor."},
    {"assign", assign, METH_O, "Gives the variable a new value of its dtype and shape."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject tpy_variable_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tensorplug.Variable",
    .tp_basicsize = sizeof(tpy_variable_object),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Variable(initial_value, trainable=True, name=None, dtype=None)",
    .tp_dealloc = variable_dealloc,
    .tp_init = variable_init,
    .tp_new = PyType_GenericNew,
    .tp_methods = variable_methods,
    .tp_weaklistoffset = offsetof(tpy_variable_object, weakrefs),
};

int tpy_init_variable(PyObject *module) {
    if (PyType_Ready(&tpy_variable_type) < 0) return -1;
    return PyModule_AddObjectRef(module, "Variable", (PyObject *)&tpy_variable_type);
}
