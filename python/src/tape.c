/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tp.GradientTape over tp_tape_*. The C tape watches a variable's values as they are read;
 * to take gradients with respect to a variable (summed over its reads, None when none of them
 * leads to the target, as TensorFlow gives) this file keeps, per tape, the values each variable
 * gave while the tape recorded on this thread, and passes them to tp_tape_gradients as sources.
 */
#include <stdlib.h>
#include <string.h>

#include "tpy.h"

typedef struct read_entry {
    PyObject *variable; /* strong */
    tp_tensor_t *value; /* retained */
} read_entry_t;

typedef struct tape_object {
    PyObject_HEAD
    tp_tape_t *tape;
    bool persistent, watch_accessed_variables, entered, recording, used, paused;
    read_entry_t *reads;
    size_t num_reads, reads_capacity;
    PyObject *watched; /* dict: variables watched explicitly -> None */
    const void *trace; /* the tp.function trace it began in, or NULL */
    struct tape_object *next_active;
} tape_object;

/* The tapes recording on this thread, newest first; each holds a reference to itself while
 * listed. */
static _Thread_local tape_object *active_tapes;

/* After a one-shot tape's gradient: the values go back to their devices; which variables
 * were read stays, for watched_variables(). */
static void release_read_values(tape_object *tape) {
    for (size_t i = 0; i < tape->num_reads; i++) {
        tp_tensor_release(tape->reads[i].value);
        tape->reads[i].value = NULL;
    }
}

static void release_reads(tape_object *tape) {
    for (size_t i = 0; i < tape->num_reads; i++) {
        Py_DECREF(tape->reads[i].variable);
        tp_tensor_release(tape->reads[i].value);
    }
    free(tape->reads);
    tape->reads = NULL;
    tape->num_reads = tape->reads_capacity = 0;
}

/* Reads between assignments give the same tensor, which counts once. */
static bool already_noted(const tape_object *tape, PyObject *variable, tp_tensor_t *value) {
    for (size_t i = tape->num_reads; i-- > 0;)
        if (tape->reads[i].value == value && tape->reads[i].variable == variable) return true;
    return false;
}

int tpy_tape_note_read(PyObject *variable, tp_tensor_t *value, bool symbolic) {
    const void *trace = symbolic ? tpy_function_tracing() : NULL;
    for (tape_object *tape = active_tapes; tape != NULL; tape = tape->next_active) {
        if (tape->paused || tape->trace != trace || already_noted(tape, variable, value))
            continue;
        if (symbolic && tpy_check(tp_tape_watch(tape->tape, value)) < 0) return -1;
        if (tape->num_reads == tape->reads_capacity) {
            size_t capacity = tape->reads_capacity == 0 ? 8 : 2 * tape->reads_capacity;
            read_entry_t *grown = realloc(tape->reads, capacity * sizeof *grown);
            if (grown == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            tape->reads = grown;
            tape->reads_capacity = capacity;
        }
        tape->reads[tape->num_reads].variable = Py_NewRef(variable);
        tape->reads[tape->num_reads].value = tp_tensor_retain(value);
        tape->num_reads++;
    }
    return 0;
}

bool tpy_tape_recording_eagerly(void) {
    for (tape_object *tape = active_tapes; tape != NULL; tape = tape->next_active)
        if (tape->recording && !tape->paused && tape->trace == NULL) return true;
    return false;
}

static int tape_init(PyObject *self, PyObject *args, PyObject *kwargs) {
    tape_object *tape = (tape_object *)self;
    static char *keywords[] = {"persistent", "watch_accessed_variables", NULL};
    int persistent = 0, watch = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|pp:GradientTape", keywords, &persistent,
                                     &watch))
        return -1;
    if (tape->entered) {
        PyErr_SetString(PyExc_RuntimeError, "a GradientTape is initialized once");
        return -1;
    }
    tape->persistent = persistent != 0;
    tape->watch_accessed_variables = watch != 0;
    if (tape->watched == NULL && (tape->watched = PyDict_New()) == NULL) return -1;
    return 0;
}

static void unlist(tape_object *tape) {
    for (tape_object **link = &active_tapes; *link != NULL; link = &(*link)->next_active) {
        if (*link == tape) {
            *link = tape->next_active;
            tape->next_active = NULL;
            Py_DECREF(tape);
            return;
        }
    }
}

static void tape_dealloc(PyObject *self) {
    tape_object *tape = (tape_object *)self;
    tp_tape_destroy(tape->tape);
    release_reads(tape);
    Py_XDECREF(tape->watched);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *tape_enter(PyObject *self, PyObject *unused) {
    (void)unused;
    tape_object *tape = (tape_object *)self;
    if (tape->entered) {
        PyErr_SetString(PyExc_RuntimeError,
                        "a tp.GradientTape records once: its `with` block cannot be entered "
                        "again; make a new tape");
        return NULL;
    }
    tp_context_t *context = tpy_context();
    if (context == NULL) return NULL;
    if (tape->watched == NULL && (tape->watched = PyDict_New()) == NULL) return NULL;
    tp_tape_options_t options = TP_TAPE_OPTIONS_INIT;
    options.persistent = tape->persistent;
    if (tpy_check(tp_tape_begin_with(context, &options, &tape->tape)) < 0) return NULL;
    tape->entered = tape->recording = true;
    tape->trace = tpy_function_tracing();
    tape->next_active = active_tapes;
    active_tapes = (tape_object *)Py_NewRef(self);
    return Py_NewRef(self);
}

static PyObject *tape_exit(PyObject *self, PyObject *args) {
    (void)args;
    tape_object *tape = (tape_object *)self;
    if (!tape->recording) Py_RETURN_FALSE;
    tape->recording = false;
    tp_status_t *status = tp_tape_stop(tape->tape);
    unlist(tape);
    if (status != NULL) return tpy_raise(status);
    Py_RETURN_FALSE;
}

static int require_tape(tape_object *tape, const char *what) {
    if (tape->tape != NULL) return 0;
    PyErr_Format(PyExc_RuntimeError,
                 "GradientTape.%s: the tape has not recorded; use it as "
                 "`with tp.GradientTape() as tape:`",
                 what);
    return -1;
}

/* watch(tensor): gradients with respect to it can be taken; a variable, or a structure of
 * tensors and variables, too. */
static PyObject *tape_watch(PyObject *self, PyObject *structure) {
    tape_object *tape = (tape_object *)self;
    if (require_tape(tape, "watch") < 0) return NULL;
    PyObject *leaves = PyList_New(0);
    if (leaves == NULL || tpy_nest_flatten(structure, leaves) < 0) {
        Py_XDECREF(leaves);
        return NULL;
    }
    int result = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(leaves) && result == 0; i++) {
        PyObject *leaf = PyList_GET_ITEM(leaves, i);
        if (TPY_TENSOR_CHECK(leaf)) {
            result = tpy_check(tp_tape_watch(tape->tape, TPY_TENSOR(leaf)));
        } else if (PyObject_TypeCheck(leaf, &tpy_variable_type)) {
            result = PyDict_SetItem(tape->watched, leaf, Py_None);
        } else {
            PyErr_Format(PyExc_ValueError,
                         "GradientTape.watch: item %zd is a %.100s; only tensors and variables "
                         "can be watched",
                         i, Py_TYPE(leaf)->tp_name);
            result = -1;
        }
    }
    Py_DECREF(leaves);
    if (result < 0) return NULL;
    Py_RETURN_NONE;
}

/* The tensors the gradient call works on: targets, their output gradients, sources. */
typedef struct gradient_call {
    size_t num_targets, num_sources;
    tp_tensor_t **targets, **output_gradients, **sources, **grads;
    /* For source leaf i: sources[first[i] .. first[i + 1]). */
    size_t *first;
} gradient_call_t;

static void free_call(gradient_call_t *call) {
    for (size_t i = 0; i < call->num_targets; i++) {
        tp_tensor_release(call->targets[i]);
        if (call->output_gradients != NULL) tp_tensor_release(call->output_gradients[i]);
    }
    for (size_t i = 0; i < call->num_sources; i++) {
        tp_tensor_release(call->sources[i]);
        tp_tensor_release(call->grads[i]);
    }
    free(call->targets);
    free(call->output_gradients);
    free(call->sources);
    free(call->grads);
    free(call->first);
}

/* A target as a tensor (a new reference): a variable's value is read without a tape noting
 * it, being no new use of the variable. */
static int target_tensor(PyObject *object, tp_tensor_t **out) {
    if (PyObject_TypeCheck(object, &tpy_variable_type)) {
        tp_variable_t *variable = tpy_variable_handle(object);
        return variable == NULL ? -1 : tpy_check(tp_variable_read(variable, out));
    }
    if (object == Py_None) {
        PyErr_SetString(PyExc_TypeError, "GradientTape.gradient: a target is None");
        return -1;
    }
    return tpy_to_tensor(object, TP_DTYPE_INVALID, out);
}

static bool variable_counts(tape_object *tape, PyObject *variable) {
    return tape->watch_accessed_variables || PyDict_Contains(tape->watched, variable) == 1;
}

static int collect_sources(tape_object *tape, PyObject *leaves, gradient_call_t *call) {
    Py_ssize_t count = PyList_GET_SIZE(leaves);
    size_t total = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *leaf = PyList_GET_ITEM(leaves, i);
        if (TPY_TENSOR_CHECK(leaf)) {
            total++;
        } else if (PyObject_TypeCheck(leaf, &tpy_variable_type)) {
            if (variable_counts(tape, leaf))
                for (size_t r = 0; r < tape->num_reads; r++)
                    total += tape->reads[r].variable == leaf;
        } else {
            PyErr_Format(PyExc_ValueError,
                         "GradientTape.gradient: source %zd is a %.100s, not a Tensor or "
                         "Variable",
                         i, Py_TYPE(leaf)->tp_name);
            return -1;
        }
    }
    call->first = calloc((size_t)count + 1, sizeof *call->first);
    call->sources = calloc(total + 1, sizeof *call->sources);
    call->grads = calloc(total + 1, sizeof *call->grads);
    if (call->first == NULL || call->sources == NULL || call->grads == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    size_t next = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *leaf = PyList_GET_ITEM(leaves, i);
        call->first[i] = next;
        if (TPY_TENSOR_CHECK(leaf)) {
            call->sources[next++] = tp_tensor_retain(TPY_TENSOR(leaf));
        } else if (variable_counts(tape, leaf)) {
            for (size_t r = 0; r < tape->num_reads; r++)
                if (tape->reads[r].variable == leaf)
                    call->sources[next++] = tp_tensor_retain(tape->reads[r].value);
        }
    }
    call->first[count] = next;
    call->num_sources = next;
    return 0;
}

static int collect_targets(PyObject *target, PyObject *output_gradients, gradient_call_t *call) {
    PyObject *targets = PyList_New(0), *outputs = NULL;
    int result = targets == NULL ? -1 : tpy_nest_flatten(target, targets);
    if (result == 0 && output_gradients != Py_None) {
        outputs = PyList_New(0);
        result = outputs == NULL ? -1 : tpy_nest_flatten(output_gradients, outputs);
        if (result == 0 && PyList_GET_SIZE(outputs) != PyList_GET_SIZE(targets)) {
            PyErr_Format(PyExc_ValueError,
                         "GradientTape.gradient: %zd output_gradients for %zd targets",
                         PyList_GET_SIZE(outputs), PyList_GET_SIZE(targets));
            result = -1;
        }
    }
    size_t count = result == 0 ? (size_t)PyList_GET_SIZE(targets) : 0;
    if (result == 0) {
        call->targets = calloc(count + 1, sizeof *call->targets);
        call->output_gradients = outputs == NULL ? NULL : calloc(count + 1, sizeof(tp_tensor_t *));
        if (call->targets == NULL || (outputs != NULL && call->output_gradients == NULL)) {
            PyErr_NoMemory();
            result = -1;
        }
    }
    for (size_t i = 0; result == 0 && i < count; i++) {
        result = target_tensor(PyList_GET_ITEM(targets, (Py_ssize_t)i), &call->targets[i]);
        if (result == 0) call->num_targets = i + 1;
        PyObject *given = outputs == NULL ? Py_None : PyList_GET_ITEM(outputs, (Py_ssize_t)i);
        if (result == 0 && given != Py_None)
            result = tpy_to_tensor(given, tp_tensor_dtype(call->targets[i]),
                                   &call->output_gradients[i]);
    }
    Py_XDECREF(targets);
    Py_XDECREF(outputs);
    return result;
}

/* The gradient of source leaf `index` (a new reference): None, the one gradient, or for a
 * variable read several times the sum over its reads; zeros of the source's shape for
 * unconnected_gradients='zero'. */
static PyObject *leaf_gradient(gradient_call_t *call, PyObject *leaf, Py_ssize_t index,
                               bool zeros) {
    tp_context_t *context = tpy_context();
    if (context == NULL) return NULL;
    tp_tensor_t *sum = NULL;
    for (size_t s = call->first[index]; s < call->first[index + 1]; s++) {
        if (call->grads[s] == NULL) continue;
        if (sum == NULL) {
            sum = tp_tensor_retain(call->grads[s]);
            continue;
        }
        tp_tensor_t *added = NULL;
        tp_status_t *status = tp_add(context, sum, call->grads[s], &added);
        tp_tensor_release(sum);
        if (status != NULL) return tpy_raise(status);
        sum = added;
    }
    if (sum == NULL && zeros) {
        tp_tensor_t *value;
        if (TPY_TENSOR_CHECK(leaf)) value = tp_tensor_retain(TPY_TENSOR(leaf));
        else if (tpy_check(tp_variable_read(tpy_variable_handle(leaf), &value)) < 0) return NULL;
        tp_status_t *status = tp_zeros_like(context, value, &sum);
        tp_tensor_release(value);
        if (status != NULL) return tpy_raise(status);
    }
    if (sum == NULL) Py_RETURN_NONE;
    return tpy_tensor_wrap(sum);
}

static int unconnected_zero(PyObject *object, bool *zeros) {
    *zeros = false;
    if (object == Py_None) return 0;
    PyObject *value = PyObject_GetAttrString(object, "value");
    if (value == NULL) {
        PyErr_Clear();
        value = Py_NewRef(object);
    }
    int result = 0;
    if (PyUnicode_Check(value) && PyUnicode_CompareWithASCIIString(value, "zero") == 0) {
        *zeros = true;
    } else if (!PyUnicode_Check(value) || PyUnicode_CompareWithASCIIString(value, "none") != 0) {
        PyErr_Format(PyExc_ValueError,
                     "Unknown value for unconnected_gradients: %R (use 'none' or 'zero')",
                     object);
        result = -1;
    }
    Py_DECREF(value);
    return result;
}

/* The index a refusal of an unknown source names ("source 3 was neither watched ..."), or -1
 * for any other failure. */
static long unknown_source(const tp_status_t *status) {
    if (tp_status_code(status) != TP_INVALID_ARGUMENT) return -1;
    const char *message = tp_status_message(status);
    const char *at = strstr(message, "source ");
    if (at == NULL || strstr(message, "was neither watched") == NULL) return -1;
    char *end;
    long index = strtol(at + 7, &end, 10);
    return end == at + 7 || *end != ' ' ? -1 : index;
}

/* tp_tape_gradients over the sources, with the GIL released. A source the tape never saw
 * gets None, as TensorFlow gives for a tensor it did not watch: the C API refuses it, naming
 * it, before the tape is used, so it is dropped and the call made again. */
static tp_status_t *run_gradients(tape_object *tape, gradient_call_t *call) {
    size_t *index = calloc(call->num_sources + 1, sizeof *index);
    tp_tensor_t **sources = calloc(call->num_sources + 1, sizeof *sources);
    tp_tensor_t **grads = calloc(call->num_sources + 1, sizeof *grads);
    tp_status_t *status = NULL;
    for (;;) {
        if (index == NULL || sources == NULL || grads == NULL) {
            status = tp_status_create(TP_RESOURCE_EXHAUSTED, "out of host memory");
            break;
        }
        size_t count = 0;
        for (size_t s = 0; s < call->num_sources; s++) {
            if (call->sources[s] == NULL) continue;
            index[count] = s;
            sources[count++] = call->sources[s];
        }
        Py_BEGIN_ALLOW_THREADS
        status = tp_tape_gradients(tape->tape, call->targets, call->output_gradients,
                                   call->num_targets, sources, count, grads);
        Py_END_ALLOW_THREADS
        long unknown = unknown_source(status);
        if (status == NULL) {
            for (size_t i = 0; i < count; i++) call->grads[index[i]] = grads[i];
            break;
        }
        if (unknown < 0 || (size_t)unknown >= count) break;
        tp_status_free(status);
        status = NULL;
        tp_tensor_release(call->sources[index[unknown]]);
        call->sources[index[unknown]] = NULL;
    }
    free(index);
    free(sources);
    free(grads);
    return status;
}

/* gradient(target, sources, output_gradients=None, unconnected_gradients='none') */
static PyObject *tape_gradient(PyObject *self, PyObject *args, PyObject *kwargs) {
    tape_object *tape = (tape_object *)self;
    static char *keywords[] = {"target", "sources", "output_gradients", "unconnected_gradients",
                               NULL};
    PyObject *target, *sources, *output_gradients = Py_None, *unconnected = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|OO:gradient", keywords, &target,
                                     &sources, &output_gradients, &unconnected))
        return NULL;
    bool zeros;
    if (unconnected_zero(unconnected, &zeros) < 0 || require_tape(tape, "gradient") < 0)
        return NULL;
    if (tape->used) {
        PyErr_SetString(PyExc_RuntimeError,
                        "A non-persistent GradientTape can only be used to compute one set of "
                        "gradients (or jacobians)");
        return NULL;
    }
    gradient_call_t call = {0};
    PyObject *leaves = PyList_New(0), *grads = NULL, *result = NULL;
    if (leaves == NULL || tpy_nest_flatten(sources, leaves) < 0 ||
        collect_targets(target, output_gradients, &call) < 0 ||
        collect_sources(tape, leaves, &call) < 0)
        goto done;
    tp_status_t *status = run_gradients(tape, &call);
    if (!tape->persistent) {
        tape->used = true;
        release_read_values(tape);
    }
    if (status != NULL) {
        tpy_raise(status);
        goto done;
    }
    grads = PyList_New(PyList_GET_SIZE(leaves));
    for (Py_ssize_t i = 0; grads != NULL && i < PyList_GET_SIZE(leaves); i++) {
        PyObject *grad = leaf_gradient(&call, PyList_GET_ITEM(leaves, i), i, zeros);
        if (grad == NULL) Py_CLEAR(grads);
        else PyList_SET_ITEM(grads, i, grad);
    }
    if (grads != NULL) result = tpy_nest_pack(sources, grads);
done:
    free_call(&call);
    Py_XDECREF(leaves);
    Py_XDECREF(grads);
    return result;
}

/* The variables the tape watches, in the order first read (or watched), each once. */
static PyObject *tape_watched_variables(PyObject *self, PyObject *unused) {
    (void)unused;
    tape_object *tape = (tape_object *)self;
    if (require_tape(tape, "watched_variables") < 0) return NULL;
    PyObject *seen = PyDict_New();
    for (size_t i = 0; seen != NULL && i < tape->num_reads; i++)
        if (variable_counts(tape, tape->reads[i].variable) &&
            PyDict_SetItem(seen, tape->reads[i].variable, Py_None) < 0)
            Py_CLEAR(seen);
    if (seen != NULL && PyDict_Update(seen, tape->watched) < 0) Py_CLEAR(seen);
    if (seen == NULL) return NULL;
    PyObject *keys = PyDict_Keys(seen);
    Py_DECREF(seen);
    if (keys == NULL) return NULL;
    PyObject *tuple = PyList_AsTuple(keys);
    Py_DECREF(keys);
    return tuple;
}

/* ---- stop_recording(): a context in which the tape records nothing ---------------------- */

typedef struct pause_object {
    PyObject_HEAD
    tape_object *tape; /* strong */
} pause_object;

static void pause_dealloc(PyObject *self) {
    Py_XDECREF(((pause_object *)self)->tape);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *set_paused(pause_object *pause, bool paused) {
    tape_object *tape = pause->tape;
    if (!tape->recording) {
        PyErr_SetString(PyExc_RuntimeError,
                        "GradientTape.stop_recording: the tape is not recording; use it inside "
                        "the tape's `with` block");
        return NULL;
    }
    if (tape->paused == paused && paused) {
        PyErr_SetString(PyExc_RuntimeError, "GradientTape.stop_recording is not reentrant");
        return NULL;
    }
    if (tpy_check(tp_tape_pause(tape->tape, paused)) < 0) return NULL;
    tape->paused = paused;
    return Py_NewRef((PyObject *)pause);
}

static PyObject *pause_enter(PyObject *self, PyObject *unused) {
    (void)unused;
    return set_paused((pause_object *)self, true);
}

static PyObject *pause_exit(PyObject *self, PyObject *args) {
    (void)args;
    pause_object *pause = (pause_object *)self;
    if (!pause->tape->paused || !pause->tape->recording) Py_RETURN_FALSE;
    PyObject *result = set_paused(pause, false);
    if (result == NULL) return NULL;
    Py_DECREF(result);
    Py_RETURN_FALSE;
}

static PyMethodDef pause_methods[] = {
    {"__enter__", pause_enter, METH_NOARGS, "Pauses the tape."},
    {"__exit__", pause_exit, METH_VARARGS, "Resumes it."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject pause_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tensorplug._StopRecording",
    .tp_basicsize = sizeof(pause_object),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = pause_dealloc,
    .tp_methods = pause_methods,
};

/* stop_recording(): `with tape.stop_recording():` runs ops the tape does not record. */
static PyObject *tape_stop_recording(PyObject *self, PyObject *unused) {
    (void)unused;
    if (require_tape((tape_object *)self, "stop_recording") < 0) return NULL;
    pause_object *pause = PyObject_New(pause_object, &pause_type);
    if (pause == NULL) return NULL;
    pause->tape = (tape_object *)Py_NewRef(self);
    return (PyObject *)pause;
}

static PyMethodDef tape_methods[] = {
    {"stop_recording", tape_stop_recording, METH_NOARGS,
     "A context manager in which the tape records nothing."},
    {"__enter__", tape_enter, METH_NOARGS, "Starts recording on this thread."},
    {"__exit__", tape_exit, METH_VARARGS, "Stops recording."},
    {"watch", tape_watch, METH_O, "Watches a tensor, a variable or a structure of them."},
    {"gradient", (PyCFunction)(void (*)(void))tape_gradient, METH_VARARGS | METH_KEYWORDS,
     "gradient(target, sources, output_gradients=None, unconnected_gradients='none'): the "
     "gradients of target with respect to sources, in sources' structure; None where "
     "unconnected."},
    {"watched_variables", tape_watched_variables, METH_NOARGS,
     "The variables this tape watches."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject tape_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tensorplug.GradientTape",
    .tp_basicsize = sizeof(tape_object),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "GradientTape(persistent=False, watch_accessed_variables=True): records the ops "
              "run inside its `with` block for gradient().",
    .tp_dealloc = tape_dealloc,
    .tp_init = tape_init,
    .tp_new = PyType_GenericNew,
    .tp_methods = tape_methods,
};

int tpy_init_tape(PyObject *module) {
    if (PyType_Ready(&tape_type) < 0 || PyType_Ready(&pause_type) < 0) return -1;
    return PyModule_AddObjectRef(module, "GradientTape", (PyObject *)&tape_type);
}
