/* SPDX-License-Identifier: Apache-2.0 */
/*
 * _tensorplug.MirroredStrategy: tp_mirrored_strategy_t, the C half of
 * tp.distribute.MirroredStrategy. run() calls a Python function once per replica on the
 * replica's own thread, with the replica's device in scope: the GIL is released while the
 * runtime waits for the replicas and taken by each replica's callback, so the Python bodies
 * take turns while the ops they launch run on their devices concurrently.
 */
#include "tpy.h"

#include "strategy.h"

/* The replica this thread runs, while a run is calling it; what the replica context's
 * all_reduce joins. */
static _Thread_local tp_replica_context_t *current_replica;

static tpy_strategy_object *strategy_checked(PyObject *self) {
    tpy_strategy_object *object = (tpy_strategy_object *)self;
    if (object->strategy == NULL) {
        PyErr_SetString(PyExc_ValueError, "the MirroredStrategy was not initialized");
        return NULL;
    }
    return object;
}

tp_mirrored_strategy_t *tpy_strategy_handle(PyObject *object) {
    if (!PyObject_TypeCheck(object, &tpy_strategy_type)) {
        PyErr_Format(PyExc_TypeError, "a MirroredStrategy is needed, not %.100s",
                     Py_TYPE(object)->tp_name);
        return NULL;
    }
    tpy_strategy_object *checked = strategy_checked(object);
    return checked == NULL ? NULL : checked->strategy;
}

/* MirroredStrategy(devices, multi_worker=False, collective_timeout=300.0, chunk_bytes=0): the
 * logical devices, each named once, in any accepted form; with multi_worker, this process's
 * devices joined to the other workers of its MPI job (which loads MPI: a collective, every
 * worker makes it). */
static int strategy_init(PyObject *self, PyObject *args, PyObject *kwargs) {
    tpy_strategy_object *object = (tpy_strategy_object *)self;
    static char *keywords[] = {"devices", "multi_worker", "collective_timeout", "chunk_bytes",
                               NULL};
    PyObject *devices_object;
    int multi_worker = 0;
    tp_multi_worker_options_t options = TP_MULTI_WORKER_OPTIONS_INIT;
    Py_ssize_t chunk_bytes = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$pdn:MirroredStrategy", keywords,
                                     &devices_object, &multi_worker,
                                     &options.collective_timeout_seconds, &chunk_bytes))
        return -1;
    if (object->strategy != NULL) {
        PyErr_SetString(PyExc_TypeError, "a MirroredStrategy is initialized once");
        return -1;
    }
    if (chunk_bytes < 0) {
        PyErr_Format(PyExc_ValueError, "chunk_bytes must not be negative, not %zd", chunk_bytes);
        return -1;
    }
    options.chunk_bytes = (size_t)chunk_bytes;
    tp_context_t *context = tpy_context();
    if (context == NULL) return -1;
    if (PyUnicode_Check(devices_object)) {
        PyErr_SetString(PyExc_TypeError, "devices must be a list of device names, not a string");
        return -1;
    }
    PyObject *sequence = PySequence_Fast(devices_object, "devices must be a list of names");
    if (sequence == NULL) return -1;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(sequence);
    if (count == 0) {
        Py_DECREF(sequence);
        PyErr_SetString(PyExc_ValueError, "a MirroredStrategy needs at least one device");
        return -1;
    }
    const char **names = PyMem_Calloc((size_t)count, sizeof *names);
    if (names == NULL) {
        Py_DECREF(sequence);
        PyErr_NoMemory();
        return -1;
    }
    int result = 0;
    for (Py_ssize_t i = 0; i < count && result == 0; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(sequence, i);
        if (!PyUnicode_Check(item)) {
            PyErr_Format(PyExc_TypeError, "device %zd must be a str, not %.100s", i,
                         Py_TYPE(item)->tp_name);
            result = -1;
        } else if ((names[i] = PyUnicode_AsUTF8(item)) == NULL) {
            result = -1;
        }
    }
    if (result == 0 && multi_worker) {
        tp_status_t *status;
        /* Joining waits for every worker of the job. */
        Py_BEGIN_ALLOW_THREADS
        status = tp_multi_worker_mirrored_strategy_create(context, names, (size_t)count,
                                                          &options, &object->strategy);
        Py_END_ALLOW_THREADS
        result = tpy_check(status);
    } else if (result == 0) {
        result = tpy_check(
            tp_mirrored_strategy_create(context, names, (size_t)count, &object->strategy));
    }
    PyMem_Free(names);
    Py_DECREF(sequence);
    return result;
}

static void strategy_dealloc(PyObject *self) {
    tpy_strategy_object *object = (tpy_strategy_object *)self;
    tp_mirrored_strategy_destroy(object->strategy);
    Py_TYPE(self)->tp_free(self);
}

/* A count the C API gives of a strategy: the closure of strategy_get_count. */
typedef struct count_reader {
    size_t (*count)(const tp_mirrored_strategy_t *strategy);
} count_reader_t;

static count_reader_t read_num_replicas = {tp_mirrored_strategy_num_replicas};
static count_reader_t read_num_workers = {tp_mirrored_strategy_num_workers};
static count_reader_t read_worker_index = {tp_mirrored_strategy_worker_index};
static count_reader_t read_num_global_replicas = {tp_mirrored_strategy_num_global_replicas};

static PyObject *strategy_get_count(PyObject *self, void *closure) {
    const count_reader_t *reader = closure;
    tpy_strategy_object *object = strategy_checked(self);
    if (object == NULL) return NULL;
    return PyLong_FromSize_t(reader->count(object->strategy));
}

static PyObject *strategy_get_devices(PyObject *self, void *closure) {
    (void)closure;
    tpy_strategy_object *object = strategy_checked(self);
    if (object == NULL) return NULL;
    size_t count = tp_mirrored_strategy_num_replicas(object->strategy);
    PyObject *tuple = PyTuple_New((Py_ssize_t)count);
    for (size_t i = 0; tuple != NULL && i < count; i++) {
        PyObject *name =
            PyUnicode_FromString(tp_mirrored_strategy_device(object->strategy, i));
        if (name == NULL) Py_CLEAR(tuple);
        else PyTuple_SET_ITEM(tuple, (Py_ssize_t)i, name);
    }
    return tuple;
}

/* broadcast_variables(variables): every worker's variables (a list of tp.Variable, the same
 * dtypes and shapes in the same order on every worker) take worker 0's values. */
static PyObject *strategy_broadcast_variables(PyObject *self, PyObject *args) {
    PyObject *list;
    if (!PyArg_ParseTuple(args, "O!:broadcast_variables", &PyList_Type, &list)) return NULL;
    tpy_strategy_object *object = strategy_checked(self);
    if (object == NULL) return NULL;
    size_t count = (size_t)PyList_GET_SIZE(list);
    tp_variable_t **variables = PyMem_Calloc(count + 1, sizeof *variables);
    if (variables == NULL) return PyErr_NoMemory();
    for (size_t i = 0; i < count; i++) {
        if ((variables[i] = tpy_variable_handle(PyList_GET_ITEM(list, (Py_ssize_t)i))) == NULL) {
            PyMem_Free(variables);
            return NULL;
        }
    }
    /* A copy of the list keeps the variables alive while the GIL is released, however the
     * caller's list changes meanwhile. */
    PyObject *held = PyList_GetSlice(list, 0, (Py_ssize_t)count);
    tp_status_t *status = NULL;
    if (held != NULL) {
        Py_BEGIN_ALLOW_THREADS
        status = tp_mirrored_strategy_broadcast_variables(object->strategy, variables, count);
        Py_END_ALLOW_THREADS
    }
    Py_XDECREF(held);
    PyMem_Free(variables);
    if (held == NULL) return NULL;
    if (status != NULL) return tpy_raise(status);
    Py_RETURN_NONE;
}

/* What one run shares with its replicas' callbacks. */
typedef struct run_state {
    PyObject *fn;
    PyObject *per_replica_args; /* a list of tuples, one per replica */
    PyObject *results;          /* a list, one slot per replica */
    PyObject **errors; /* per replica: type, value, traceback of what it raised, or NULLs */
} run_state_t;

static tp_status_t *run_replica(tp_replica_context_t *replica, void *user_data) {
    run_state_t *state = user_data;
    size_t index = tp_replica_index(replica);
    PyGILState_STATE gil = PyGILState_Ensure();
    current_replica = replica;
    PyObject *args = PyList_GET_ITEM(state->per_replica_args, (Py_ssize_t)index);
    PyObject *result = PyObject_CallObject(state->fn, args);
    current_replica = NULL;
    if (result == NULL) {
        /* Kept to raise after the run, in replica order; the replica returns without
         * joining the others' collectives, which makes theirs fail rather than wait. */
        PyErr_Fetch(&state->errors[3 * index], &state->errors[3 * index + 1],
                    &state->errors[3 * index + 2]);
    } else {
        PyList_SetItem(state->results, (Py_ssize_t)index, result); /* steals result */
    }
    PyGILState_Release(gil);
    return NULL;
}

/* run(fn, per_replica_args): fn(*per_replica_args[r]) on replica r; the list of results. */
static PyObject *strategy_run(PyObject *self, PyObject *args) {
    PyObject *fn, *per_replica_args;
    if (!PyArg_ParseTuple(args, "OO!:run", &fn, &PyList_Type, &per_replica_args)) return NULL;
    tpy_strategy_object *object = strategy_checked(self);
    if (object == NULL) return NULL;
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "run() needs a callable, not %.100s", Py_TYPE(fn)->tp_name);
        return NULL;
    }
    size_t count = tp_mirrored_strategy_num_replicas(object->strategy);
    if (PyList_GET_SIZE(per_replica_args) != (Py_ssize_t)count) {
        PyErr_Format(PyExc_ValueError, "run() needs the arguments of %zu replicas, not %zd",
                     count, PyList_GET_SIZE(per_replica_args));
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        if (!PyTuple_Check(PyList_GET_ITEM(per_replica_args, (Py_ssize_t)i))) {
            PyErr_Format(PyExc_TypeError, "replica %zu's arguments must be a tuple", i);
            return NULL;
        }
    }
    run_state_t state = {fn, NULL, NULL, NULL};
    /* A copy, so that fn changing the caller's list cannot pull a tuple from under a replica. */
    state.per_replica_args = PyList_GetSlice(per_replica_args, 0, (Py_ssize_t)count);
    state.results = PyList_New((Py_ssize_t)count);
    state.errors = PyMem_Calloc(3 * count, sizeof *state.errors);
    if (state.per_replica_args == NULL || state.results == NULL || state.errors == NULL) {
        if (state.errors == NULL) PyErr_NoMemory();
        Py_XDECREF(state.per_replica_args);
        Py_XDECREF(state.results);
        PyMem_Free(state.errors);
        return NULL;
    }
    for (size_t i = 0; i < count; i++)
        PyList_SET_ITEM(state.results, (Py_ssize_t)i, Py_NewRef(Py_None));
    tp_status_t *status;
    Py_BEGIN_ALLOW_THREADS
    status = tp_mirrored_strategy_run(object->strategy, run_replica, &state);
    Py_END_ALLOW_THREADS
    /* The first exception by replica order, except that a collective aborted because another
     * replica left it (AbortedError) gives way to the exception that made that replica leave:
     * the cause, not its echo on the replicas that waited for it. */
    PyObject **first_error = NULL;
    PyObject *aborted = tpy_error_class(TP_ABORTED);
    for (int pass = 0; pass < 2 && first_error == NULL; pass++) {
        for (size_t i = 0; i < count && first_error == NULL; i++) {
            PyObject **error = &state.errors[3 * i];
            if (error[0] != NULL &&
                (pass == 1 || !PyErr_GivenExceptionMatches(error[0], aborted)))
                first_error = error;
        }
    }
    for (size_t i = 0; i < count; i++) {
        PyObject **error = &state.errors[3 * i];
        if (error[0] == NULL || error == first_error) continue;
        Py_DECREF(error[0]);
        Py_XDECREF(error[1]);
        Py_XDECREF(error[2]);
    }
    Py_DECREF(state.per_replica_args);
    if (first_error != NULL) {
        tp_status_free(status);
        Py_DECREF(state.results);
        PyErr_Restore(first_error[0], first_error[1], first_error[2]);
        PyMem_Free(state.errors);
        return NULL;
    }
    PyMem_Free(state.errors);
    if (status != NULL) {
        Py_DECREF(state.results);
        return tpy_raise(status);
    }
    return state.results;
}

static int reduce_op_from(PyObject *object, tp_reduce_op_t *out) {
    const char *name = PyUnicode_Check(object) ? PyUnicode_AsUTF8(object) : NULL;
    if (name != NULL && strcmp(name, "SUM") == 0) *out = TP_REDUCE_SUM;
    else if (name != NULL && strcmp(name, "MEAN") == 0) *out = TP_REDUCE_MEAN;
    else {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "reduce_op must be 'SUM' or 'MEAN', not %R", object);
        return -1;
    }
    return 0;
}

/* Converts a list of values to tensors (new references); -1 with all released on failure. */
static int tensors_from_list(PyObject *list, tp_tensor_t **tensors, size_t count) {
    for (size_t i = 0; i < count; i++) {
        if (tpy_to_tensor(PyList_GET_ITEM(list, (Py_ssize_t)i), TP_DTYPE_INVALID, &tensors[i]) <
            0) {
            for (size_t j = 0; j < i; j++) tp_tensor_release(tensors[j]);
            return -1;
        }
    }
    return 0;
}

static PyObject *list_of_tensors(tp_tensor_t **tensors, size_t count) {
    PyObject *list = PyList_New((Py_ssize_t)count);
    if (list == NULL) {
        for (size_t i = 0; i < count; i++) tp_tensor_release(tensors[i]);
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        PyObject *item = tpy_tensor_wrap(tensors[i]);
        if (item == NULL) {
            for (size_t j = i + 1; j < count; j++) tp_tensor_release(tensors[j]);
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

/* all_reduce(reduce_op, per_replica_values): from outside a run, each replica's value reduced;
 * a list of the result on each replica's device. */
static PyObject *strategy_all_reduce(PyObject *self, PyObject *args) {
    PyObject *op_object, *values;
    if (!PyArg_ParseTuple(args, "OO!:all_reduce", &op_object, &PyList_Type, &values))
        return NULL;
    tpy_strategy_object *object = strategy_checked(self);
    tp_reduce_op_t op;
    if (object == NULL || reduce_op_from(op_object, &op) < 0) return NULL;
    size_t count = tp_mirrored_strategy_num_replicas(object->strategy);
    if (PyList_GET_SIZE(values) != (Py_ssize_t)count) {
        PyErr_Format(PyExc_ValueError, "all_reduce needs a value from each of %zu replicas, "
                                       "not %zd", count, PyList_GET_SIZE(values));
        return NULL;
    }
    tp_tensor_t **tensors = PyMem_Calloc(2 * count, sizeof *tensors);
    if (tensors == NULL) return PyErr_NoMemory();
    PyObject *result = NULL;
    if (tensors_from_list(values, tensors, count) == 0) {
        tp_status_t *status;
        Py_BEGIN_ALLOW_THREADS
        status = tp_mirrored_strategy_all_reduce(object->strategy, op, tensors, tensors + count);
        Py_END_ALLOW_THREADS
        for (size_t i = 0; i < count; i++) tp_tensor_release(tensors[i]);
        result = status != NULL ? tpy_raise(status) : list_of_tensors(tensors + count, count);
    }
    PyMem_Free(tensors);
    return result;
}

static PyGetSetDef strategy_getset[] = {
    {"num_replicas_in_sync", strategy_get_count, NULL, "how many replicas (this process's)",
     &read_num_replicas},
    {"devices", strategy_get_devices, NULL, "the replicas' devices, canonical names", NULL},
    {"num_workers", strategy_get_count, NULL, "the job's workers (1: this process)",
     &read_num_workers},
    {"worker_index", strategy_get_count, NULL, "this process's index among them",
     &read_worker_index},
    {"num_global_replicas", strategy_get_count, NULL, "the replicas of every worker",
     &read_num_global_replicas},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef strategy_methods[] = {
    {"run", strategy_run, METH_VARARGS,
     "run(fn, per_replica_args): fn(*args) on every replica's thread; a list of results."},
    {"all_reduce", strategy_all_reduce, METH_VARARGS,
     "all_reduce(op, values): 'SUM' or 'MEAN' of one value per replica, on each device."},
    {"broadcast_variables", strategy_broadcast_variables, METH_VARARGS,
     "broadcast_variables(variables): worker 0's values in every worker's variables."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject tpy_strategy_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tensorplug._tensorplug.MirroredStrategy",
    .tp_basicsize = sizeof(tpy_strategy_object),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "MirroredStrategy(devices, multi_worker=False, collective_timeout=300.0, "
              "chunk_bytes=0): tp_mirrored_strategy_t (tp.distribute wraps it)",
    .tp_dealloc = strategy_dealloc,
    .tp_init = strategy_init,
    .tp_new = PyType_GenericNew,
    .tp_methods = strategy_methods,
    .tp_getset = strategy_getset,
};

/* replica_all_reduce(op, values): inside run(), this replica's values reduced with every
 * other replica's (each replica must call it with values of the same dtypes and shapes). */
static PyObject *replica_all_reduce(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *op_object, *values;
    if (!PyArg_ParseTuple(args, "OO!:replica_all_reduce", &op_object, &PyList_Type, &values))
        return NULL;
    tp_reduce_op_t op;
    if (reduce_op_from(op_object, &op) < 0) return NULL;
    tp_replica_context_t *replica = current_replica;
    if (replica == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "all_reduce of a replica context is called inside strategy.run()");
        return NULL;
    }
    size_t count = (size_t)PyList_GET_SIZE(values);
    tp_tensor_t **tensors = PyMem_Calloc(2 * count + 1, sizeof *tensors);
    if (tensors == NULL) return PyErr_NoMemory();
    PyObject *result = NULL;
    if (tensors_from_list(values, tensors, count) == 0) {
        tp_status_t *status;
        /* The other replicas need the GIL to reach their own call of this collective. */
        Py_BEGIN_ALLOW_THREADS
        status = tp_replica_all_reduce(replica, op, tensors, count, tensors + count);
        Py_END_ALLOW_THREADS
        for (size_t i = 0; i < count; i++) tp_tensor_release(tensors[i]);
        result = status != NULL ? tpy_raise(status) : list_of_tensors(tensors + count, count);
    }
    PyMem_Free(tensors);
    return result;
}

/* replica_id(): the index of the replica this thread runs inside run(), else None. */
static PyObject *replica_id(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    if (current_replica == NULL) Py_RETURN_NONE;
    return PyLong_FromSize_t(tp_replica_index(current_replica));
}

/* _shard_range(count, num_shards, shard): (begin, end) of the items shard `shard` takes. */
static PyObject *shard_range(PyObject *self, PyObject *args) {
    (void)self;
    long long count;
    Py_ssize_t num_shards, shard;
    if (!PyArg_ParseTuple(args, "Lnn:_shard_range", &count, &num_shards, &shard)) return NULL;
    if (num_shards < 0 || shard < 0) {
        PyErr_SetString(PyExc_ValueError, "_shard_range: shards are counted from 0");
        return NULL;
    }
    int64_t begin, end;
    tp_shard_range(count, (size_t)num_shards, (size_t)shard, &begin, &end);
    return Py_BuildValue("(LL)", (long long)begin, (long long)end);
}

static PyMethodDef module_functions[] = {
    {"_shard_range", shard_range, METH_VARARGS, NULL},
    {"_replica_all_reduce", replica_all_reduce, METH_VARARGS, NULL},
    {"_replica_id", replica_id, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

int tpy_init_strategy(PyObject *module) {
    if (PyType_Ready(&tpy_strategy_type) < 0) return -1;
    if (PyModule_AddObjectRef(module, "MirroredStrategy", (PyObject *)&tpy_strategy_type) < 0)
        return -1;
    return PyModule_AddFunctions(module, module_functions);
}
