/* SPDX-License-Identifier: Apache-2.0 */
/* Structures of values, as tf.nest sees them: lists, tuples (named ones too) and dicts nest;
 * anything else is a leaf. GradientTape.gradient and tp.function take and give back such
 * structures; flattening both ways in one order lets their C code work on flat arrays. */
#include "tpy.h"

static bool is_named_tuple(PyObject *object) {
    return PyTuple_Check(object) && !PyTuple_CheckExact(object) &&
           PyObject_HasAttrString(object, "_fields");
}

int tpy_nest_flatten(PyObject *structure, PyObject *leaves) {
    if (Py_EnterRecursiveCall(" while flattening a structure")) return -1;
    int result = 0;
    if (PyList_Check(structure) || PyTuple_Check(structure)) {
        Py_ssize_t size = PySequence_Fast_GET_SIZE(structure);
        for (Py_ssize_t i = 0; i < size && result == 0; i++)
            result = tpy_nest_flatten(PySequence_Fast_GET_ITEM(structure, i), leaves);
    } else if (PyDict_Check(structure)) {
        Py_ssize_t position = 0;
        PyObject *key, *value;
        while (result == 0 && PyDict_Next(structure, &position, &key, &value))
            result = tpy_nest_flatten(value, leaves);
    } else {
        result = PyList_Append(leaves, structure);
    }
    Py_LeaveRecursiveCall();
    return result;
}

static PyObject *pack(PyObject *structure, PyObject *leaves, Py_ssize_t *index) {
    if (PyList_Check(structure) || PyTuple_Check(structure)) {
        Py_ssize_t size = PySequence_Fast_GET_SIZE(structure);
        PyObject *items = PyList_New(size);
        if (items == NULL) return NULL;
        for (Py_ssize_t i = 0; i < size; i++) {
            PyObject *item = pack(PySequence_Fast_GET_ITEM(structure, i), leaves, index);
            if (item == NULL) {
                Py_DECREF(items);
                return NULL;
            }
            PyList_SET_ITEM(items, i, item);
        }
        if (PyList_Check(structure)) return items;
        PyObject *tuple = PyList_AsTuple(items);
        Py_DECREF(items);
        if (tuple == NULL || !is_named_tuple(structure)) return tuple;
        PyObject *named = PyObject_Call((PyObject *)Py_TYPE(structure), tuple, NULL);
        Py_DECREF(tuple);
        return named;
    }
    if (PyDict_Check(structure)) {
        PyObject *dict = PyDict_New();
        Py_ssize_t position = 0;
        PyObject *key, *value;
        while (dict != NULL && PyDict_Next(structure, &position, &key, &value)) {
            PyObject *item = pack(value, leaves, index);
            if (item == NULL || PyDict_SetItem(dict, key, item) < 0) Py_CLEAR(dict);
            Py_XDECREF(item);
        }
        return dict;
    }
    if (*index >= PyList_GET_SIZE(leaves)) {
        PyErr_SetString(PyExc_ValueError, "the structure has more leaves than values given");
        return NULL;
    }
    return Py_NewRef(PyList_GET_ITEM(leaves, (*index)++));
}

PyObject *tpy_nest_pack(PyObject *structure, PyObject *leaves) {
    if (Py_EnterRecursiveCall(" while packing a structure")) return NULL;
    Py_ssize_t index = 0;
    PyObject *result = pack(structure, leaves, &index);
    Py_LeaveRecursiveCall();
    return result;
}
