/* SPDX-License-Identifier: Apache-2.0 */
/*
 * _Optimizer: one tp_optimizer_t (SGD with momentum, or Adam), the C half of
 * tp.keras.optimizers. It keeps every variable it has updated alive, since the C optimizer
 * knows them by address; its state variables come back as tp.Variables that keep it alive.
 */
#include <stdlib.h>
#include <string.h>

#include "tpy.h"

typedef struct optimizer_object {
    PyObject_HEAD
    tp_optimizer_t *optimizer;
    PyObject *updated; /* dict: the variables it has updated or built -> None */
} optimizer_object;

/* _Optimizer(kind, learning_rate=None, momentum=0.0, nesterov=False, beta_1=0.9,
 *            beta_2=0.999, epsilon=1e-7), kind "SGD" or "Adam" */
static int optimizer_init(PyObject *self, PyObject *args, PyObject *kwargs) {
    optimizer_object *object = (optimizer_object *)self;
    static char *keywords[] = {"kind",   "learning_rate", "momentum", "nesterov",
                               "beta_1", "beta_2",        "epsilon",  NULL};
    const char *kind;
    tp_sgd_options_t sgd = TP_SGD_OPTIONS_INIT;
    tp_adam_options_t adam = TP_ADAM_OPTIONS_INIT;
    PyObject *rate = Py_None;
    int nesterov = 0;
    double momentum = sgd.momentum, beta1 = adam.beta1, beta2 = adam.beta2;
    double epsilon = adam.epsilon;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|Odpddd:_Optimizer", keywords, &kind,
                                     &rate, &momentum, &nesterov, &beta1, &beta2, &epsilon))
        return -1;
    if (object->optimizer != NULL) {
        PyErr_SetString(PyExc_TypeError, "an optimizer is initialized once");
        return -1;
    }
    tp_context_t *context = tpy_context();
    if (context == NULL) return -1;
    if (object->updated == NULL && (object->updated = PyDict_New()) == NULL) return -1;
    bool is_sgd = strcmp(kind, "SGD") == 0;
    if (!is_sgd && strcmp(kind, "Adam") != 0) {
        PyErr_Format(PyExc_ValueError, "_Optimizer: unknown kind '%s' (SGD or Adam)", kind);
        return -1;
    }
    double learning_rate = is_sgd ? sgd.learning_rate : adam.learning_rate;
    if (rate != Py_None) {
        learning_rate = PyFloat_AsDouble(rate);
        if (learning_rate == -1.0 && PyErr_Occurred()) return -1;
    }
    tp_status_t *status;
    if (is_sgd) {
        sgd.learning_rate = learning_rate;
        sgd.momentum = momentum;
        sgd.nesterov = nesterov != 0;
        status = tp_optimizer_create_sgd(context, &sgd, &object->optimizer);
    } else {
        adam.learning_rate = learning_rate;
        adam.beta1 = beta1;
        adam.beta2 = beta2;
        adam.epsilon = epsilon;
        status = tp_optimizer_create_adam(context, &adam, &object->optimizer);
    }
    return tpy_check(status);
}

static void optimizer_dealloc(PyObject *self) {
    optimizer_object *object = (optimizer_object *)self;
    tp_optimizer_destroy(object->optimizer);
    Py_CLEAR(object->updated);
    Py_TYPE(self)->tp_free(self);
}

static tp_optimizer_t *checked(PyObject *self) {
    tp_optimizer_t *optimizer = ((optimizer_object *)self)->optimizer;
    if (optimizer == NULL) PyErr_SetString(PyExc_ValueError, "the optimizer was not initialized");
    return optimizer;
}

/* The tp_variable_t of each item of `sequence` (a list or tuple of tp.Variables), in a new
 * array. */
static tp_variable_t **variables_of(PyObject *sequence, Py_ssize_t *out_count) {
    PyObject *fast = PySequence_Fast(sequence, "the variables must be a list or tuple");
    if (fast == NULL) return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(fast);
    tp_variable_t **variables = calloc((size_t)count + 1, sizeof *variables);
    if (variables == NULL) PyErr_NoMemory();
    for (Py_ssize_t i = 0; variables != NULL && i < count; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
        variables[i] = tpy_variable_handle(item);
        if (variables[i] == NULL) {
            free(variables);
            variables = NULL;
        }
    }
    Py_DECREF(fast);
    *out_count = count;
    return variables;
}

/* Keeps the variables alive as long as the optimizer, which knows them by address. */
static int remember(optimizer_object *object, PyObject *sequence) {
    PyObject *fast = PySequence_Fast(sequence, "the variables must be a list or tuple");
    if (fast == NULL) return -1;
    int result = 0;
    for (Py_ssize_t i = 0; result == 0 && i < PySequence_Fast_GET_SIZE(fast); i++)
        result = PyDict_SetItem(object->updated, PySequence_Fast_GET_ITEM(fast, i), Py_None);
    Py_DECREF(fast);
    return result;
}

/* apply(variables, grads): one step, all or nothing (tp_optimizer_apply). Gradients may be
 * anything convertible to a tensor of the variable's dtype. */
static PyObject *optimizer_apply(PyObject *self, PyObject *args) {
    optimizer_object *object = (optimizer_object *)self;
    PyObject *variable_list, *grad_list;
    if (!PyArg_ParseTuple(args, "OO:apply", &variable_list, &grad_list)) return NULL;
    tp_optimizer_t *optimizer = checked(self);
    if (optimizer == NULL) return NULL;
    Py_ssize_t count;
    tp_variable_t **variables = variables_of(variable_list, &count);
    if (variables == NULL) return NULL;
    PyObject *fast = PySequence_Fast(grad_list, "the gradients must be a list or tuple");
    tp_tensor_t **grads = fast == NULL ? NULL : calloc((size_t)count + 1, sizeof *grads);
    int result = grads == NULL ? -1 : 0;
    if (fast != NULL && grads == NULL) PyErr_NoMemory();
    if (result == 0 && PySequence_Fast_GET_SIZE(fast) != count) {
        PyErr_Format(PyExc_ValueError, "apply: %zd gradients for %zd variables",
                     PySequence_Fast_GET_SIZE(fast), count);
        result = -1;
    }
    for (Py_ssize_t i = 0; result == 0 && i < count; i++)
        result = tpy_to_tensor(PySequence_Fast_GET_ITEM(fast, i),
                               tp_variable_dtype(variables[i]), &grads[i]);
    if (result == 0) result = remember(object, variable_list);
    if (result == 0) {
        tp_status_t *status;
        Py_BEGIN_ALLOW_THREADS
        status = tp_optimizer_apply(optimizer, variables, grads, (size_t)count);
        Py_END_ALLOW_THREADS
        result = tpy_check(status);
    }
    for (Py_ssize_t i = 0; grads != NULL && i < count; i++) tp_tensor_release(grads[i]);
    free(grads);
    free(variables);
    Py_XDECREF(fast);
    if (result < 0) return NULL;
    Py_RETURN_NONE;
}

/* build(variables): their slots, made now (zeros), as Keras's build does. */
static PyObject *optimizer_build(PyObject *self, PyObject *variable_list) {
    optimizer_object *object = (optimizer_object *)self;
    tp_optimizer_t *optimizer = checked(self);
    if (optimizer == NULL) return NULL;
    Py_ssize_t count;
    tp_variable_t **variables = variables_of(variable_list, &count);
    if (variables == NULL) return NULL;
    int result = remember(object, variable_list);
    if (result == 0) result = tpy_check(tp_optimizer_build(optimizer, variables, (size_t)count));
    free(variables);
    if (result < 0) return NULL;
    Py_RETURN_NONE;
}

/* variables(): the state, the step count first, as tp.Variables. */
static PyObject *optimizer_variables(PyObject *self, PyObject *unused) {
    (void)unused;
    tp_optimizer_t *optimizer = checked(self);
    if (optimizer == NULL) return NULL;
    size_t count = tp_optimizer_variables(optimizer, NULL, 0);
    tp_variable_t **state = calloc(count + 1, sizeof *state);
    if (state == NULL) return PyErr_NoMemory();
    count = tp_optimizer_variables(optimizer, state, count);
    PyObject *list = PyList_New((Py_ssize_t)count);
    for (size_t i = 0; list != NULL && i < count; i++) {
        PyObject *item = tpy_variable_wrap_borrowed(state[i], self, false);
        if (item == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    free(state);
    return list;
}

/* slot(variable, name): the slot "momentum", "m" or "v" of a variable, a tp.Variable. */
static PyObject *optimizer_slot(PyObject *self, PyObject *args) {
    PyObject *variable_object;
    const char *name;
    if (!PyArg_ParseTuple(args, "Os:slot", &variable_object, &name)) return NULL;
    tp_optimizer_t *optimizer = checked(self);
    tp_variable_t *variable = optimizer == NULL ? NULL : tpy_variable_handle(variable_object);
    if (variable == NULL) return NULL;
    tp_variable_t *slot;
    if (tpy_check(tp_optimizer_slot(optimizer, variable, name, &slot)) < 0) return NULL;
    return tpy_variable_wrap_borrowed(slot, self, false);
}

static PyObject *get_learning_rate(PyObject *self, void *closure) {
    (void)closure;
    tp_optimizer_t *optimizer = checked(self);
    return optimizer == NULL ? NULL : PyFloat_FromDouble(tp_optimizer_learning_rate(optimizer));
}

static int set_learning_rate(PyObject *self, PyObject *value, void *closure) {
    (void)closure;
    tp_optimizer_t *optimizer = checked(self);
    if (optimizer == NULL) return -1;
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "the learning rate cannot be deleted");
        return -1;
    }
    double rate = PyFloat_AsDouble(value);
    if (rate == -1.0 && PyErr_Occurred()) return -1;
    return tpy_check(tp_optimizer_set_learning_rate(optimizer, rate));
}

static PyObject *get_iterations(PyObject *self, void *closure) {
    (void)closure;
    tp_optimizer_t *optimizer = checked(self);
    int64_t iterations;
    if (optimizer == NULL || tpy_check(tp_optimizer_iterations(optimizer, &iterations)) < 0)
        return NULL;
    return PyLong_FromLongLong(iterations);
}

static PyObject *get_kind(PyObject *self, void *closure) {
    (void)closure;
    tp_optimizer_t *optimizer = checked(self);
    return optimizer == NULL ? NULL : PyUnicode_FromString(tp_optimizer_name(optimizer));
}

static PyGetSetDef optimizer_getset[] = {
    {"learning_rate", get_learning_rate, set_learning_rate, "the step size of later updates",
     NULL},
    {"iterations", get_iterations, NULL, "the number of steps made", NULL},
    {"kind", get_kind, NULL, "'SGD' or 'Adam'", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef optimizer_methods[] = {
    {"apply", optimizer_apply, METH_VARARGS, "apply(variables, grads): one step."},
    {"build", optimizer_build, METH_O, "build(variables): makes their slots."},
    {"variables", optimizer_variables, METH_NOARGS, "The state variables, step count first."},
    {"slot", optimizer_slot, METH_VARARGS, "slot(variable, name): one slot variable."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject optimizer_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tensorplug._Optimizer",
    .tp_basicsize = sizeof(optimizer_object),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The C half of tp.keras.optimizers: one tp_optimizer_t.",
    .tp_dealloc = optimizer_dealloc,
    .tp_init = optimizer_init,
    .tp_new = PyType_GenericNew,
    .tp_getset = optimizer_getset,
    .tp_methods = optimizer_methods,
};

tp_optimizer_t *tpy_optimizer_handle(PyObject *object) {
    PyObject *inner = PyObject_TypeCheck(object, &optimizer_type)
                          ? Py_NewRef(object)
                          : PyObject_GetAttrString(object, "_optimizer");
    if (inner == NULL || !PyObject_TypeCheck(inner, &optimizer_type)) {
        Py_XDECREF(inner);
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "a tp.keras.optimizers optimizer is needed, not %.100s",
                     Py_TYPE(object)->tp_name);
        return NULL;
    }
    tp_optimizer_t *optimizer = checked(inner);
    Py_DECREF(inner); /* the caller holds `object`, which holds it */
    return optimizer;
}

int tpy_optimizer_remember(PyObject *object, PyObject *variables) {
    PyObject *inner = PyObject_TypeCheck(object, &optimizer_type)
                          ? Py_NewRef(object)
                          : PyObject_GetAttrString(object, "_optimizer");
    if (inner == NULL) return -1;
    int result = PyObject_TypeCheck(inner, &optimizer_type)
                     ? remember((optimizer_object *)inner, variables)
                     : (PyErr_SetString(PyExc_TypeError, "not a tp.keras optimizer"), -1);
    Py_DECREF(inner);
    return result;
}

int tpy_init_optimizer(PyObject *module) {
    if (PyType_Ready(&optimizer_type) < 0) return -1;
    return PyModule_AddObjectRef(module, "_Optimizer", (PyObject *)&optimizer_type);
}
