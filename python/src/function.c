/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tp.function: a Python function traced into a graph by tp_function_create, as tf.function.
 *
 * The call's arguments are flattened (lists, tuples, dicts nest): tensors and NumPy arrays
 * become the graph's inputs, variables are passed as they are (by identity), and every other
 * value is part of the signature by value.
 * Each signature (those values, and each input's dtype and shape) has a tp_function_t of its
 * own whose body is the Python function, run once under the trace with the GIL taken back
 * (PyGILState_Ensure: the caller released it around tp_function_call). Whatever structure the
 * Python function returns is rebuilt around the graph's results at each call.
 *
 * Graph outputs are fixed when a tp_function_t is made (1 to 16), before the body has run, so
 * every one has 16: the tensors returned, then tensors the body made and did not return (the
 * runtime prunes what no output depends on, and TensorFlow runs those ops: a body returning
 * None must still run them), the rest repeating the first. Made tensors are noted by
 * tpy_function_note_made, which tpy_tensor_wrap calls; the most recent are kept when there are
 * more than the outputs left, since they are the ones the earlier feed.
 *
 * The C API refuses to read a variable inside a trace (the graph would keep the value of
 * trace time). A variable the body reads becomes an input instead: the read raises, the
 * variable is captured, and the function traces again with its value passed at each call, so
 * that later assignments are seen. Assigning inside a body is refused (variable.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpy.h"

#define OUTPUTS 16

/* ---- Tensors the body makes ------------------------------------------------------------------ */

typedef struct made_list {
    tp_tensor_t **items;
    size_t count, capacity;
    bool out_of_memory;
} made_list_t;

static _Thread_local made_list_t *recording;

void tpy_function_note_made(tp_tensor_t *tensor) {
    made_list_t *made = recording;
    if (made == NULL) return;
    if (made->count == made->capacity) {
        size_t capacity = made->capacity == 0 ? 32 : 2 * made->capacity;
        tp_tensor_t **grown = realloc(made->items, capacity * sizeof *grown);
        if (grown == NULL) {
            made->out_of_memory = true;
            return;
        }
        made->items = grown;
        made->capacity = capacity;
    }
    made->items[made->count++] = tp_tensor_retain(tensor);
}

static void free_made(made_list_t *made) {
    for (size_t i = 0; i < made->count; i++) tp_tensor_release(made->items[i]);
    free(made->items);
}

/* ---- One signature: a tp_function_t and how to rebuild arguments and results ----------------- */

typedef struct concrete {
    tp_function_t *function;
    PyObject *callable;       /* the Python function */
    PyObject *arguments;      /* (args, kwargs) of the first call, the structure to rebuild */
    PyObject *leaves;         /* its leaves; tensor positions are replaced in the body */
    Py_ssize_t *tensor_at;    /* leaf index of each graph input */
    size_t num_inputs;
    /* Set by the trace: the result's structure (its leaves None), its Python leaves, and for
     * each leaf the graph output holding it (-1: the Python value in result_values). */
    PyObject *result_structure, *result_values;
    Py_ssize_t *result_output;
    Py_ssize_t num_result_leaves;
    PyObject *error_type, *error_value, *error_traceback; /* what the body raised */
    /* Variables the body reads, passed as inputs after the arguments (their values at each
     * call), and those a trace found it reads that are not inputs yet. */
    PyObject *captured, *pending;
} concrete_t;

/* The trace running on this thread: its concrete function and inputs. */
typedef struct tracing_state {
    concrete_t *concrete;
    tp_tensor_t *const *inputs;
    size_t num_inputs;
} tracing_state_t;

static _Thread_local tracing_state_t *tracing;
/* Raised inside a body that reads a variable the trace has no input for; a BaseException, so
 * that the body's own `except Exception` does not swallow it. */
static PyObject *retrace_error;

static void concrete_free(concrete_t *concrete) {
    tp_function_destroy(concrete->function);
    Py_XDECREF(concrete->callable);
    Py_XDECREF(concrete->arguments);
    Py_XDECREF(concrete->leaves);
    Py_XDECREF(concrete->result_structure);
    Py_XDECREF(concrete->result_values);
    Py_XDECREF(concrete->error_type);
    Py_XDECREF(concrete->error_value);
    Py_XDECREF(concrete->error_traceback);
    Py_XDECREF(concrete->captured);
    Py_XDECREF(concrete->pending);
    free(concrete->tensor_at);
    free(concrete->result_output);
    free(concrete);
}

static void capsule_destructor(PyObject *capsule) {
    concrete_free(PyCapsule_GetPointer(capsule, "tensorplug.concrete"));
}

/* The Python exception becomes the status the body returns; the caller raises it again. */
static tp_status_t *body_failed(concrete_t *concrete) {
    Py_CLEAR(concrete->error_type);
    Py_CLEAR(concrete->error_value);
    Py_CLEAR(concrete->error_traceback);
    PyErr_Fetch(&concrete->error_type, &concrete->error_value, &concrete->error_traceback);
    return tp_status_create(TP_ABORTED, "the Python function raised an exception");
}

/* Reads the body's result: its tensors (borrowed, in `tensors`, at most OUTPUTS) and how to
 * rebuild it. */
static int take_result(concrete_t *concrete, PyObject *result, tp_tensor_t **tensors,
                       size_t *num_tensors) {
    PyObject *leaves = PyList_New(0);
    if (leaves == NULL || tpy_nest_flatten(result, leaves) < 0) {
        Py_XDECREF(leaves);
        return -1;
    }
    Py_ssize_t count = PyList_GET_SIZE(leaves);
    Py_ssize_t *output = calloc((size_t)count + 1, sizeof *output);
    PyObject *values = PyList_New(count), *nones = PyList_New(count);
    int status = output == NULL || values == NULL || nones == NULL ? -1 : 0;
    if (output == NULL) PyErr_NoMemory();
    size_t found = 0;
    for (Py_ssize_t i = 0; status == 0 && i < count; i++) {
        PyObject *leaf = PyList_GET_ITEM(leaves, i);
        PyList_SET_ITEM(nones, i, Py_NewRef(Py_None));
        if (PyObject_TypeCheck(leaf, &tpy_variable_type)) {
            PyErr_SetString(PyExc_TypeError,
                            "tp.function: the function returns a tp.Variable; return its value "
                            "(v.read_value()) instead");
            status = -1;
        } else if (TPY_TENSOR_CHECK(leaf)) {
            if (found == OUTPUTS) {
                PyErr_Format(PyExc_ValueError,
                             "tp.function: the function returns more than %d tensors",
                             OUTPUTS);
                status = -1;
                break;
            }
            output[i] = (Py_ssize_t)found;
            tensors[found++] = TPY_TENSOR(leaf);
            PyList_SET_ITEM(values, i, Py_NewRef(Py_None));
        } else {
            output[i] = -1;
            PyList_SET_ITEM(values, i, Py_NewRef(leaf));
        }
    }
    PyObject *structure = status == 0 ? tpy_nest_pack(result, nones) : NULL;
    Py_DECREF(leaves);
    Py_XDECREF(nones);
    if (structure == NULL) {
        Py_XDECREF(values);
        free(output);
        return -1;
    }
    Py_XSETREF(concrete->result_structure, structure);
    Py_XSETREF(concrete->result_values, values);
    free(concrete->result_output);
    concrete->result_output = output;
    concrete->num_result_leaves = count;
    *num_tensors = found;
    return 0;
}

static bool among(tp_tensor_t *tensor, tp_tensor_t *const *tensors, size_t count) {
    for (size_t i = 0; i < count; i++)
        if (tensors[i] == tensor) return true;
    return false;
}

/* Fills the graph's outputs: the result's tensors, then made tensors not returned (newest
 * first), then repeats of the first. */
static tp_status_t *fill_outputs(tp_context_t *context, tp_tensor_t **results, size_t count,
                                 const made_list_t *made, tp_tensor_t **outputs) {
    size_t filled = 0;
    for (; filled < count; filled++) outputs[filled] = tp_tensor_retain(results[filled]);
    for (size_t i = made->count; i-- > 0 && filled < OUTPUTS;)
        if (!among(made->items[i], outputs, filled))
            outputs[filled++] = tp_tensor_retain(made->items[i]);
    if (filled == 0) {
        /* Nothing made and nothing returned: a scalar stands in, as a graph has an output. */
        tp_tensor_t *zero = NULL;
        float value = 0.0f;
        tp_status_t *status = tp_tensor_create(context, TP_FLOAT32, (tp_shape_t){0}, &value,
                                               sizeof value, &zero);
        if (status != NULL) return status;
        outputs[filled++] = zero;
    }
    for (size_t i = filled; i < OUTPUTS; i++) outputs[i] = tp_tensor_retain(outputs[0]);
    return NULL;
}

static tp_status_t *body(tp_context_t *context, tp_tensor_t *const *inputs, size_t num_inputs,
                         tp_tensor_t **outputs, size_t num_outputs, void *user_data) {
    (void)num_outputs;
    concrete_t *concrete = user_data;
    PyGILState_STATE gil = PyGILState_Ensure();
    tp_status_t *status = NULL;
    PyObject *leaves = PyList_GetSlice(concrete->leaves, 0, PY_SSIZE_T_MAX);
    for (size_t i = 0; leaves != NULL && i < concrete->num_inputs; i++) {
        PyObject *argument = tpy_tensor_wrap(tp_tensor_retain(inputs[i]));
        if (argument == NULL || PyList_SetItem(leaves, concrete->tensor_at[i], argument) < 0)
            Py_CLEAR(leaves);
    }
    PyObject *arguments = leaves == NULL ? NULL : tpy_nest_pack(concrete->arguments, leaves);
    Py_XDECREF(leaves);
    PyObject *result = NULL;
    made_list_t made = {0};
    if (arguments != NULL) {
        made_list_t *outer = recording;
        tracing_state_t state = {concrete, inputs, num_inputs}, *outer_state = tracing;
        recording = &made;
        tracing = &state;
        result = PyObject_Call(concrete->callable, PyTuple_GET_ITEM(arguments, 0),
                               PyTuple_GET_ITEM(arguments, 1));
        tracing = outer_state;
        recording = outer;
        Py_DECREF(arguments);
    }
    tp_tensor_t *tensors[OUTPUTS];
    size_t count = 0;
    if (result != NULL && made.out_of_memory) {
        PyErr_NoMemory();
        Py_CLEAR(result);
    }
    if (result == NULL || take_result(concrete, result, tensors, &count) < 0) {
        status = body_failed(concrete);
    } else {
        status = fill_outputs(context, tensors, count, &made, outputs);
        if (status != NULL)
            for (size_t i = 0; i < OUTPUTS; i++) tp_tensor_release(outputs[i]);
    }
    /* The result holds the body's tensors until the outputs have references of their own. */
    Py_XDECREF(result);
    free_made(&made);
    PyGILState_Release(gil);
    return status;
}

/* ---- The tp.function object ------------------------------------------------------------------ */

typedef struct function_object {
    PyObject_HEAD
    PyObject *callable;
    PyObject *name;      /* str */
    PyObject *concretes; /* dict: signature key -> capsule of a concrete_t */
    PyObject *dict;      /* __name__, __doc__, __wrapped__ ... */
    PyObject *weakrefs;
} function_object;

static PyTypeObject function_type;
static PyObject *tensor_marker;  /* stands for a graph input in signature keys */
static PyObject *ndarray_type;   /* numpy.ndarray */

/* Appends to `key` what identifies `object` for tracing and to `leaves` its leaves (in
 * tpy_nest_flatten's order); each tensor-like leaf is converted to a Tensor. */
static int signature(PyObject *object, PyObject *key, PyObject *leaves) {
    if (Py_EnterRecursiveCall(" while reading a tp.function's arguments")) return -1;
    int result = 0;
    PyObject *part = NULL;
    if (PyList_Check(object) || PyTuple_Check(object)) {
        Py_ssize_t size = PySequence_Fast_GET_SIZE(object);
        part = Py_BuildValue("(On)", (PyObject *)Py_TYPE(object), size);
        result = part == NULL || PyList_Append(key, part) < 0 ? -1 : 0;
        for (Py_ssize_t i = 0; i < size && result == 0; i++)
            result = signature(PySequence_Fast_GET_ITEM(object, i), key, leaves);
    } else if (PyDict_Check(object)) {
        PyObject *keys = PyDict_Keys(object);
        PyObject *names = keys == NULL ? NULL : PyList_AsTuple(keys);
        Py_XDECREF(keys);
        part = names == NULL ? NULL : Py_BuildValue("(ON)", (PyObject *)&PyDict_Type, names);
        result = part == NULL || PyList_Append(key, part) < 0 ? -1 : 0;
        Py_ssize_t position = 0;
        PyObject *name, *value;
        while (result == 0 && PyDict_Next(object, &position, &name, &value))
            result = signature(value, key, leaves);
    } else if (PyObject_TypeCheck(object, &tpy_variable_type)) {
        /* The body gets the variable itself, as in TensorFlow; reading it captures it. */
        part = Py_BuildValue("(sN)", "variable", PyLong_FromVoidPtr(object));
        result = part == NULL || PyList_Append(key, part) < 0 || PyList_Append(leaves, object) < 0
                     ? -1
                     : 0;
    } else if (TPY_TENSOR_CHECK(object) ||
               PyObject_TypeCheck(object, (PyTypeObject *)ndarray_type)) {
        PyObject *tensor = Py_NewRef(object);
        if (!TPY_TENSOR_CHECK(object)) {
            tp_tensor_t *value;
            Py_SETREF(tensor, tpy_to_tensor(object, TP_DTYPE_INVALID, &value) < 0
                                  ? NULL
                                  : tpy_tensor_wrap(value));
        }
        if (tensor != NULL) {
            tp_shape_t shape = tp_tensor_shape(TPY_TENSOR(tensor));
            PyObject *dims = PyTuple_New(shape.rank);
            for (int i = 0; dims != NULL && i < shape.rank; i++) {
                PyObject *dim = PyLong_FromLongLong(shape.dims[i]);
                if (dim == NULL) Py_CLEAR(dims);
                else PyTuple_SET_ITEM(dims, i, dim);
            }
            part = dims == NULL ? NULL
                                : Py_BuildValue("(OiN)", tensor_marker,
                                                (int)tp_tensor_dtype(TPY_TENSOR(tensor)), dims);
        }
        result = part == NULL || PyList_Append(key, part) < 0 || PyList_Append(leaves, tensor) < 0
                     ? -1
                     : 0;
        Py_XDECREF(tensor);
    } else {
        /* A Python value traces by value, its type included (1 and 1.0 differ); one that
         * cannot be hashed, by identity. */
        if (PyObject_Hash(object) == -1) {
            PyErr_Clear();
            part = Py_BuildValue("(sN)", "id", PyLong_FromVoidPtr(object));
        } else {
            part = Py_BuildValue("(OO)", (PyObject *)Py_TYPE(object), object);
        }
        result = part == NULL || PyList_Append(key, part) < 0 || PyList_Append(leaves, object) < 0
                     ? -1
                     : 0;
    }
    Py_XDECREF(part);
    Py_LeaveRecursiveCall();
    return result;
}

static concrete_t *make_concrete(function_object *self, PyObject *arguments, PyObject *leaves) {
    tp_context_t *context = tpy_context();
    if (context == NULL) return NULL;
    concrete_t *concrete = calloc(1, sizeof *concrete);
    if (concrete == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(leaves);
    concrete->tensor_at = calloc((size_t)count + 1, sizeof *concrete->tensor_at);
    if (concrete->tensor_at == NULL) {
        free(concrete);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++)
        if (TPY_TENSOR_CHECK(PyList_GET_ITEM(leaves, i)))
            concrete->tensor_at[concrete->num_inputs++] = i;
    concrete->callable = Py_NewRef(self->callable);
    concrete->captured = PyList_New(0);
    concrete->pending = PyList_New(0);
    concrete->arguments = Py_NewRef(arguments);
    /* The template keeps Python values only: tensors are replaced in each trace. */
    concrete->leaves = PyList_GetSlice(leaves, 0, PY_SSIZE_T_MAX);
    for (size_t i = 0; concrete->leaves != NULL && i < concrete->num_inputs; i++)
        PyList_SetItem(concrete->leaves, concrete->tensor_at[i], Py_NewRef(Py_None));
    const char *name = PyUnicode_AsUTF8(self->name);
    if (concrete->leaves == NULL || concrete->captured == NULL || concrete->pending == NULL ||
        name == NULL ||
        tpy_check(tp_function_create(context, name, body, OUTPUTS, concrete,
                                     &concrete->function)) < 0) {
        concrete_free(concrete);
        return NULL;
    }
    return concrete;
}

/* The concrete function for this call's signature (borrowed from the dict), made if new. */
static concrete_t *concrete_for(function_object *self, PyObject *arguments, PyObject *leaves) {
    PyObject *parts = PyList_New(0);
    if (parts == NULL) return NULL;
    if (signature(arguments, parts, leaves) < 0) {
        Py_DECREF(parts);
        return NULL;
    }
    PyObject *key = PyList_AsTuple(parts);
    Py_DECREF(parts);
    if (key == NULL) return NULL;
    PyObject *capsule = PyDict_GetItemWithError(self->concretes, key);
    concrete_t *concrete = NULL;
    if (capsule != NULL) {
        concrete = PyCapsule_GetPointer(capsule, "tensorplug.concrete");
    } else if (!PyErr_Occurred()) {
        concrete = make_concrete(self, arguments, leaves);
        PyObject *made = concrete == NULL
                             ? NULL
                             : PyCapsule_New(concrete, "tensorplug.concrete", capsule_destructor);
        if (concrete != NULL && made == NULL) concrete_free(concrete);
        if (made == NULL || PyDict_SetItem(self->concretes, key, made) < 0) concrete = NULL;
        Py_XDECREF(made);
    }
    Py_DECREF(key);
    return concrete;
}


static bool holds(PyObject *list, PyObject *item, Py_ssize_t limit) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list) && i < limit; i++)
        if (PyList_GET_ITEM(list, i) == item) return true;
    return false;
}

const void *tpy_function_tracing(void) { return tracing; }

int tpy_function_variable_value(PyObject *variable, tp_tensor_t **out) {
    tracing_state_t *state = tracing;
    if (state == NULL) return 0;
    concrete_t *concrete = state->concrete;
    Py_ssize_t available = (Py_ssize_t)(state->num_inputs - concrete->num_inputs);
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(concrete->captured) && j < available; j++) {
        if (PyList_GET_ITEM(concrete->captured, j) == variable) {
            *out = tp_tensor_retain(state->inputs[concrete->num_inputs + (size_t)j]);
            return 1;
        }
    }
    if (!holds(concrete->captured, variable, PY_SSIZE_T_MAX) &&
        !holds(concrete->pending, variable, PY_SSIZE_T_MAX) &&
        PyList_Append(concrete->pending, variable) < 0)
        return -1;
    PyErr_SetString(retrace_error,
                    "tp.function: a variable was first read while tracing; the function is "
                    "traced again with its value as an input");
    return -1;
}

static PyObject *rebuild_result(concrete_t *concrete, tp_tensor_t **outputs) {
    PyObject *leaves = PyList_New(concrete->num_result_leaves);
    for (Py_ssize_t i = 0; leaves != NULL && i < concrete->num_result_leaves; i++) {
        Py_ssize_t output = concrete->result_output[i];
        PyObject *leaf = output < 0 ? Py_NewRef(PyList_GET_ITEM(concrete->result_values, i))
                                    : tpy_tensor_wrap(tp_tensor_retain(outputs[output]));
        if (leaf == NULL) Py_CLEAR(leaves);
        else PyList_SET_ITEM(leaves, i, leaf);
    }
    if (leaves == NULL) return NULL;
    PyObject *result = tpy_nest_pack(concrete->result_structure, leaves);
    Py_DECREF(leaves);
    return result;
}

/* (args, kwargs) bound as the Python function binds them, so that f(x), f(x, 1) and
 * f(x, scale=1) with scale=1 the default are one signature, as tf.function canonicalizes its
 * calls: the parameters before any *args all positional, defaults filled in, keyword-only
 * ones and **kwargs by name in name order. A callable that is not a plain Python function,
 * or a call that does not bind (the body will raise Python's TypeError), stays as given. */
static PyObject *bind(PyObject *callable, PyObject *args, PyObject *kwargs) {
    PyObject *as_given = Py_BuildValue("(OO)", args, kwargs);
    if (as_given == NULL || !PyFunction_Check(callable)) return as_given;
    PyCodeObject *code = (PyCodeObject *)PyFunction_GET_CODE(callable);
    PyObject *defaults = PyFunction_GET_DEFAULTS(callable);
    PyObject *names = PyObject_GetAttrString((PyObject *)code, "co_varnames");
    Py_ssize_t count = code->co_argcount, given = PyTuple_GET_SIZE(args);
    Py_ssize_t num_defaults = defaults == NULL ? 0 : PyTuple_GET_SIZE(defaults);
    bool varargs = (code->co_flags & CO_VARARGS) != 0;
    if (names == NULL || code->co_posonlyargcount > 0 || (given > count && !varargs)) {
        Py_XDECREF(names);
        PyErr_Clear();
        return as_given;
    }
    Py_ssize_t total = given > count ? given : count;
    PyObject *bound = PyTuple_New(total), *rest = PyDict_Copy(kwargs);
    bool binds = bound != NULL && rest != NULL;
    for (Py_ssize_t i = 0; binds && i < total; i++) {
        PyObject *value = NULL;
        if (i < given) {
            value = PyTuple_GET_ITEM(args, i);
            if (i < count && PyDict_GetItemWithError(rest, PyTuple_GET_ITEM(names, i)) != NULL)
                binds = false; /* given twice */
        } else {
            PyObject *name = PyTuple_GET_ITEM(names, i);
            value = PyDict_GetItemWithError(rest, name);
            if (value != NULL) {
                Py_INCREF(value);
                PyTuple_SET_ITEM(bound, i, value);
                binds = PyDict_DelItem(rest, name) == 0;
                continue;
            }
            if (i >= count - num_defaults)
                value = PyTuple_GET_ITEM(defaults, i - (count - num_defaults));
        }
        if (value == NULL) binds = false;
        else PyTuple_SET_ITEM(bound, i, Py_NewRef(value));
    }
    PyObject *keyword_defaults = PyFunction_GET_KW_DEFAULTS(callable);
    Py_ssize_t position = 0;
    PyObject *name, *value;
    while (binds && keyword_defaults != NULL &&
           PyDict_Next(keyword_defaults, &position, &name, &value))
        binds = PyDict_SetDefault(rest, name, value) != NULL;
    PyObject *sorted = NULL;
    if (binds && PyDict_GET_SIZE(rest) > 1) {
        PyObject *keys = PyDict_Keys(rest);
        binds = keys != NULL && PyList_Sort(keys) == 0 && (sorted = PyDict_New()) != NULL;
        for (Py_ssize_t i = 0; binds && i < PyList_GET_SIZE(keys); i++) {
            PyObject *key = PyList_GET_ITEM(keys, i);
            binds = PyDict_SetItem(sorted, key, PyDict_GetItem(rest, key)) == 0;
        }
        Py_XDECREF(keys);
        if (binds) Py_SETREF(rest, sorted);
        else Py_XDECREF(sorted);
    }
    Py_DECREF(names);
    PyErr_Clear(); /* a key that cannot be sorted or compared: stay as given */
    if (!binds) {
        Py_XDECREF(bound);
        Py_XDECREF(rest);
        return as_given;
    }
    Py_DECREF(as_given);
    return Py_BuildValue("(NN)", bound, rest);
}

/* The concrete function of a call, and the leaves of its arguments (*out_leaves, a new
 * reference): tensors where the graph takes inputs. */
static concrete_t *prepare(function_object *self, PyObject *args, PyObject *kwargs,
                           PyObject **out_leaves) {
    *out_leaves = NULL;
    if (self->callable == NULL) {
        PyErr_SetString(PyExc_ValueError, "the tp.function was not initialized");
        return NULL;
    }
    PyObject *empty = kwargs == NULL ? PyDict_New() : NULL;
    if (kwargs == NULL && empty == NULL) return NULL;
    PyObject *arguments = bind(self->callable, args, kwargs == NULL ? empty : kwargs);
    Py_XDECREF(empty);
    PyObject *leaves = arguments == NULL ? NULL : PyList_New(0);
    concrete_t *concrete = leaves == NULL ? NULL : concrete_for(self, arguments, leaves);
    Py_XDECREF(arguments);
    if (concrete == NULL) Py_XDECREF(leaves);
    else *out_leaves = leaves;
    return concrete;
}

/* After a tp_function_* call: the body's Python exception, if it raised one, else the
 * status's. */
static PyObject *raise_failure(concrete_t *concrete, tp_status_t *status) {
    if (concrete->error_type == NULL) return tpy_raise(status);
    tp_status_free(status);
    PyErr_Restore(concrete->error_type, concrete->error_value, concrete->error_traceback);
    concrete->error_type = concrete->error_value = concrete->error_traceback = NULL;
    return NULL;
}

/* Runs (or with `graph`, writes the graph of) the concrete function on the tensors among
 * `leaves` and the captured variables' current values. A trace that found the body reads
 * variables it has no inputs for is run again with them captured, once per variable at
 * most. 0, or -1 with the exception set. */
static int run(concrete_t *concrete, PyObject *leaves, tp_tensor_t **outputs, FILE *graph) {
    for (;;) {
        Py_ssize_t num_captured = PyList_GET_SIZE(concrete->captured);
        size_t count = concrete->num_inputs + (size_t)num_captured;
        tp_tensor_t **inputs = calloc(count + 1, sizeof *inputs);
        if (inputs == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (size_t i = 0; i < concrete->num_inputs; i++)
            inputs[i] = TPY_TENSOR(PyList_GET_ITEM(leaves, concrete->tensor_at[i]));
        int read = 0;
        for (Py_ssize_t j = 0; read == 0 && j < num_captured; j++) {
            tp_variable_t *variable =
                tpy_variable_handle(PyList_GET_ITEM(concrete->captured, j));
            read = variable == NULL ? -1
                                    : tpy_check(tp_variable_read(
                                          variable, &inputs[concrete->num_inputs + (size_t)j]));
        }
        tp_status_t *status = NULL;
        if (read == 0) {
            Py_BEGIN_ALLOW_THREADS
            status = graph != NULL ? tp_function_write_graph(concrete->function, inputs, count,
                                                             TP_GRAPH_TEXT, graph)
                                   : tp_function_call(concrete->function, inputs, count,
                                                      outputs, OUTPUTS);
            Py_END_ALLOW_THREADS
        }
        for (size_t j = concrete->num_inputs; j < count; j++) tp_tensor_release(inputs[j]);
        free(inputs);
        if (read < 0) return -1;
        if (status == NULL) return 0;
        bool again = concrete->error_type == retrace_error;
        if (!again || PyList_GET_SIZE(concrete->pending) == 0) {
            if (again) { /* another thread captured it meanwhile */
                tp_status_free(status);
                Py_CLEAR(concrete->error_type);
                Py_CLEAR(concrete->error_value);
                Py_CLEAR(concrete->error_traceback);
                if (PyList_GET_SIZE(concrete->captured) > num_captured) continue;
                PyErr_SetString(PyExc_RuntimeError,
                                "tp.function: a variable read while tracing could not be "
                                "captured");
                return -1;
            }
            raise_failure(concrete, status);
            return -1;
        }
        tp_status_free(status);
        Py_CLEAR(concrete->error_type);
        Py_CLEAR(concrete->error_value);
        Py_CLEAR(concrete->error_traceback);
        PyObject *pending = concrete->pending;
        if (PyList_SetSlice(concrete->captured, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, pending) < 0 ||
            PyList_SetSlice(pending, 0, PY_SSIZE_T_MAX, NULL) < 0)
            return -1;
    }
}

static PyObject *function_call(PyObject *object, PyObject *args, PyObject *kwargs) {
    /* Called from another function's body, its ops are traced into that graph (inlined), as
     * the runtime does not call one graph from another. Tapes do not record a graph's run as
     * one op: under an eager tape the Python function runs eagerly, so that the tape records
     * its ops and gradients flow through the call. */
    if ((tpy_function_tracing() != NULL || tpy_tape_recording_eagerly()) &&
        ((function_object *)object)->callable != NULL)
        return PyObject_Call(((function_object *)object)->callable, args, kwargs);
    PyObject *leaves;
    concrete_t *concrete = prepare((function_object *)object, args, kwargs, &leaves);
    if (concrete == NULL) return NULL;
    tp_tensor_t *outputs[OUTPUTS] = {NULL};
    PyObject *result = NULL;
    if (run(concrete, leaves, outputs, NULL) == 0) {
        result = rebuild_result(concrete, outputs);
        for (size_t i = 0; i < OUTPUTS; i++) tp_tensor_release(outputs[i]);
    }
    Py_DECREF(leaves);
    return result;
}

/* experimental_get_graph(*args, **kwargs): the placed and optimized graph these arguments
 * run, one line per node (tp_function_write_graph), tracing it if need be. */
static PyObject *get_graph(PyObject *object, PyObject *args, PyObject *kwargs) {
    PyObject *leaves;
    concrete_t *concrete = prepare((function_object *)object, args, kwargs, &leaves);
    if (concrete == NULL) return NULL;
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    int ran = out == NULL ? -1 : run(concrete, leaves, NULL, out);
    if (out == NULL) PyErr_SetFromErrno(PyExc_OSError);
    else fclose(out);
    Py_DECREF(leaves);
    PyObject *result = ran < 0 ? NULL : PyUnicode_DecodeUTF8(text, (Py_ssize_t)size, "replace");
    free(text);
    return result;
}

/* Function(python_function, name=None): what tp.function returns. */
static int function_init(PyObject *object, PyObject *args, PyObject *kwargs) {
    function_object *self = (function_object *)object;
    static char *keywords[] = {"python_function", "name", NULL};
    PyObject *callable, *name = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:Function", keywords, &callable, &name))
        return -1;
    if (!PyCallable_Check(callable)) {
        PyErr_Format(PyExc_TypeError, "tp.function: %.100s is not callable",
                     Py_TYPE(callable)->tp_name);
        return -1;
    }
    if (self->callable != NULL) {
        PyErr_SetString(PyExc_TypeError, "a tp.function is initialized once");
        return -1;
    }
    if (name == Py_None) {
        name = PyObject_GetAttrString(callable, "__name__");
        if (name == NULL) {
            PyErr_Clear();
            name = PyUnicode_FromString("function");
        }
    } else {
        Py_INCREF(name);
    }
    if (name == NULL) return -1;
    if (!PyUnicode_Check(name)) {
        Py_DECREF(name);
        PyErr_SetString(PyExc_TypeError, "tp.function: name must be a str");
        return -1;
    }
    self->name = name;
    self->callable = Py_NewRef(callable);
    if ((self->concretes = PyDict_New()) == NULL) return -1;
    if (self->dict == NULL && (self->dict = PyDict_New()) == NULL) return -1;
    /* As functools.wraps: the decorated function keeps its name and documentation. */
    static const char *const copied[] = {"__module__", "__name__", "__qualname__", "__doc__"};
    for (size_t i = 0; i < sizeof copied / sizeof copied[0]; i++) {
        PyObject *value = PyObject_GetAttrString(callable, copied[i]);
        if (value == NULL) {
            PyErr_Clear();
            continue;
        }
        int result = PyDict_SetItemString(self->dict, copied[i], value);
        Py_DECREF(value);
        if (result < 0) return -1;
    }
    return PyDict_SetItemString(self->dict, "__wrapped__", callable);
}

static int function_traverse(PyObject *object, visitproc visit, void *arg) {
    function_object *self = (function_object *)object;
    Py_VISIT(self->callable);
    Py_VISIT(self->dict);
    Py_VISIT(self->concretes);
    return 0;
}

static int function_clear(PyObject *object) {
    function_object *self = (function_object *)object;
    Py_CLEAR(self->callable);
    Py_CLEAR(self->dict);
    Py_CLEAR(self->concretes);
    Py_CLEAR(self->name);
    return 0;
}

static void function_dealloc(PyObject *object) {
    function_object *self = (function_object *)object;
    PyObject_GC_UnTrack(object);
    if (self->weakrefs != NULL) PyObject_ClearWeakRefs(object);
    function_clear(object);
    Py_TYPE(object)->tp_free(object);
}

/* A tp.function in a class body is a method: bound to the instance, as plain functions are. */
static PyObject *function_get(PyObject *self, PyObject *instance, PyObject *owner) {
    (void)owner;
    if (instance == NULL || instance == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, instance);
}

/* How many times the Python function was traced (each signature once), as tf.function's. */
static PyObject *tracing_count(PyObject *object, PyObject *unused) {
    (void)unused;
    function_object *self = (function_object *)object;
    size_t total = 0;
    Py_ssize_t position = 0;
    PyObject *key, *capsule;
    while (self->concretes != NULL && PyDict_Next(self->concretes, &position, &key, &capsule)) {
        concrete_t *concrete = PyCapsule_GetPointer(capsule, "tensorplug.concrete");
        total += tp_function_trace_count(concrete->function);
    }
    return PyLong_FromSize_t(total);
}

static PyObject *get_python_function(PyObject *object, void *closure) {
    (void)closure;
    function_object *self = (function_object *)object;
    return Py_NewRef(self->callable == NULL ? Py_None : self->callable);
}

static PyMethodDef function_methods[] = {
    {"experimental_get_tracing_count", tracing_count, METH_NOARGS,
     "How many times the Python function was traced."},
    {"experimental_get_graph", (PyCFunction)(void (*)(void))get_graph,
     METH_VARARGS | METH_KEYWORDS,
     "The graph a call with these arguments runs, as text (one line per node)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef function_getset[] = {
    {"python_function", get_python_function, NULL, "the function traced", NULL},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject function_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tensorplug.Function",
    .tp_basicsize = sizeof(function_object),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A Python function traced into graphs, one per input signature (tp.function).",
    .tp_dealloc = function_dealloc,
    .tp_traverse = function_traverse,
    .tp_clear = function_clear,
    .tp_init = function_init,
    .tp_new = PyType_GenericNew,
    .tp_call = function_call,
    .tp_descr_get = function_get,
    .tp_methods = function_methods,
    .tp_getset = function_getset,
    .tp_dictoffset = offsetof(function_object, dict),
    .tp_weaklistoffset = offsetof(function_object, weakrefs),
};

/* function(func=None, input_signature=None, autograph=True, jit_compile=None,
 *          reduce_retracing=False, experimental_*=..., name=None): tf.function's arguments;
 * without func, the decorator that takes it (@tp.function(...)). */
static PyObject *function(PyObject *module, PyObject *args, PyObject *kwargs) {
    (void)module;
    PyObject *callable = Py_None, *signature_object = Py_None, *name = Py_None;
    if (args != NULL && PyTuple_GET_SIZE(args) > 1) {
        PyErr_SetString(PyExc_TypeError, "tp.function takes the function and keywords");
        return NULL;
    }
    if (args != NULL && PyTuple_GET_SIZE(args) == 1) callable = PyTuple_GET_ITEM(args, 0);
    Py_ssize_t position = 0;
    PyObject *key, *value;
    while (kwargs != NULL && PyDict_Next(kwargs, &position, &key, &value)) {
        const char *word = PyUnicode_AsUTF8(key);
        if (word == NULL) return NULL;
        if (strcmp(word, "func") == 0) callable = value;
        else if (strcmp(word, "input_signature") == 0) signature_object = value;
        else if (strcmp(word, "name") == 0) name = value;
        else if (strcmp(word, "autograph") != 0 && strcmp(word, "jit_compile") != 0 &&
                 strcmp(word, "reduce_retracing") != 0 &&
                 strncmp(word, "experimental_", 13) != 0) {
            PyErr_Format(PyExc_TypeError, "function() got an unexpected keyword argument '%s'",
                         word);
            return NULL;
        }
    }
    if (signature_object != Py_None) {
        PyErr_SetString(PyExc_NotImplementedError,
                        "tp.function: input_signature is not supported; each call's dtypes and "
                        "shapes make its signature");
        return NULL;
    }
    if (callable == Py_None) {
        PyObject *functools = PyImport_ImportModule("functools");
        PyObject *partial = functools == NULL ? NULL : PyObject_GetAttrString(functools, "partial");
        PyObject *self = partial == NULL ? NULL : PyObject_GetAttrString(module, "function");
        PyObject *decorator = NULL;
        if (self != NULL) {
            PyObject *call_args = PyTuple_Pack(1, self);
            decorator = call_args == NULL ? NULL : PyObject_Call(partial, call_args, kwargs);
            Py_XDECREF(call_args);
        }
        Py_XDECREF(self);
        Py_XDECREF(partial);
        Py_XDECREF(functools);
        return decorator;
    }
    return PyObject_CallFunctionObjArgs((PyObject *)&function_type, callable, name, NULL);
}

static PyMethodDef module_functions[] = {
    {"function", (PyCFunction)(void (*)(void))function, METH_VARARGS | METH_KEYWORDS,
     "function(func=None, ...): func traced into a graph per input signature, as tf.function."},
    {NULL, NULL, 0, NULL},
};

int tpy_init_function(PyObject *module) {
    if (PyType_Ready(&function_type) < 0) return -1;
    if (tensor_marker == NULL && (tensor_marker = PyUnicode_FromString("<tensor>")) == NULL)
        return -1;
    if (retrace_error == NULL &&
        (retrace_error = PyErr_NewException("tensorplug._RetraceWithVariables",
                                            PyExc_BaseException, NULL)) == NULL)
        return -1;
    PyObject *numpy = PyImport_ImportModule("numpy");
    if (numpy == NULL) return -1;
    Py_XSETREF(ndarray_type, PyObject_GetAttrString(numpy, "ndarray"));
    Py_DECREF(numpy);
    if (ndarray_type == NULL) return -1;
    if (PyModule_AddObjectRef(module, "Function", (PyObject *)&function_type) < 0) return -1;
    return PyModule_AddFunctions(module, module_functions);
}
