/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device configuration under tp.config and tp.debugging: the C calls that list physical
 * and logical devices, configure memory and visibility before the context makes its logical
 * devices, read allocator statistics and switch placement logging and soft placement. The
 * package's tensorplug/config/ turns their tuples into PhysicalDevice and LogicalDevice and
 * keeps what the C API has no getter for.
 *
 * Errors are those TensorFlow raises for these calls: a change after the devices were made
 * is RuntimeError ("Physical devices cannot be modified after being initialized"), a device or
 * value the runtime refuses is ValueError, each with the runtime's message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tpy.h"

/* What the C API has no getter for; changed only here, under the GIL. */
static bool soft_device_placement;
static bool log_device_placement;

/* The runtime prefixes a configuration error with the C function's name
 * ("tp_context_set_memory_growth: ..."), which means nothing to a Python caller. */
static const char *without_function_name(const char *message) {
    if (strncmp(message, "tp_", 3) != 0) return message;
    const char *colon = strstr(message, ": ");
    return colon != NULL ? colon + 2 : message;
}

/* Raises what TensorFlow raises for a refused configuration call, and frees the status. */
static PyObject *config_raise(tp_status_t *status) {
    tp_code_t code = tp_status_code(status);
    const char *message = without_function_name(tp_status_message(status));
    PyObject *cls = NULL;
    if (strstr(message, "cannot be modified after being initialized") != NULL)
        cls = PyExc_RuntimeError;
    else if (code == TP_INVALID_ARGUMENT || code == TP_NOT_FOUND ||
             code == TP_FAILED_PRECONDITION)
        cls = PyExc_ValueError;
    if (cls == NULL) return tpy_raise(status);
    PyErr_SetString(cls, message);
    tp_status_free(status);
    return NULL;
}

static PyObject *config_result(tp_status_t *status) {
    if (status != NULL) return config_raise(status);
    Py_RETURN_NONE;
}

/* A device type or name argument: a str, or None for every device. */
static int optional_name(PyObject *object, const char *what, const char **out) {
    if (object == Py_None) {
        *out = NULL;
        return 0;
    }
    if (!PyUnicode_Check(object)) {
        PyErr_Format(PyExc_TypeError, "%s must be a str or None, not %.100s", what,
                     Py_TYPE(object)->tp_name);
        return -1;
    }
    *out = PyUnicode_AsUTF8(object);
    return *out == NULL ? -1 : 0;
}

static PyObject *pair(const char *name, const char *type) {
    return Py_BuildValue("(ss)", name, type);
}

/* _physical_devices(device_type): [(name, device_type)] of every physical device, hidden ones
 * included, as tf.config.list_physical_devices lists them. */
static PyObject *physical_devices(PyObject *self, PyObject *type_object) {
    (void)self;
    tp_context_t *context = tpy_context();
    const char *type;
    if (context == NULL || optional_name(type_object, "device_type", &type) < 0) return NULL;
    size_t count = tp_physical_device_count(context, type);
    PyObject *list = PyList_New((Py_ssize_t)count);
    if (list == NULL) return NULL;
    for (size_t i = 0; i < count; i++) {
        const tp_physical_device_t *device = NULL;
        tp_status_t *status = tp_physical_device_get(context, type, i, &device);
        PyObject *item = status != NULL ? tpy_raise(status)
                                        : pair(tp_physical_device_name(device),
                                               tp_physical_device_type(device));
        if (item == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

/* _logical_devices(device_type): [(name, device_type)]. The first call makes the logical
 * devices, which may start a device's driver: the GIL is released meanwhile. */
static PyObject *logical_devices(PyObject *self, PyObject *type_object) {
    (void)self;
    tp_context_t *context = tpy_context();
    const char *type;
    if (context == NULL || optional_name(type_object, "device_type", &type) < 0) return NULL;
    size_t count = 0;
    tp_status_t *status;
    Py_BEGIN_ALLOW_THREADS
    status = tp_logical_device_count(context, type, &count);
    Py_END_ALLOW_THREADS
    if (status != NULL) return tpy_raise(status);
    PyObject *list = PyList_New((Py_ssize_t)count);
    if (list == NULL) return NULL;
    for (size_t i = 0; i < count; i++) {
        tp_logical_device_info_t info = {.struct_size = sizeof info};
        status = tp_logical_device_get(context, type, i, &info);
        PyObject *item = status != NULL ? tpy_raise(status) : pair(info.name, info.device_type);
        if (item == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

/* _physical_device_details(name): {'device_name', 'vendor', 'driver_version',
 * 'compute_units', 'memory_bytes'} of one physical device. */
static PyObject *physical_device_details(PyObject *self, PyObject *name_object) {
    (void)self;
    tp_context_t *context = tpy_context();
    const char *name;
    if (context == NULL || optional_name(name_object, "device", &name) < 0) return NULL;
    if (name == NULL) {
        PyErr_SetString(PyExc_ValueError, "device must name a physical device, not None");
        return NULL;
    }
    const tp_physical_device_t *device = NULL;
    tp_status_t *status = tp_physical_device_find(context, name, &device);
    if (status != NULL) return config_raise(status);
    return Py_BuildValue("{s:s,s:s,s:s,s:i,s:K}", "device_name",
                         tp_physical_device_hardware_name(device), "vendor",
                         tp_physical_device_vendor(device), "driver_version",
                         tp_physical_device_driver_version(device), "compute_units",
                         (int)tp_physical_device_compute_units(device), "memory_bytes",
                         (unsigned long long)tp_physical_device_memory_bytes(device));
}

static PyObject *set_visible_devices(PyObject *self, PyObject *list_object) {
    (void)self;
    tp_context_t *context = tpy_context();
    const char *list;
    if (context == NULL || optional_name(list_object, "devices", &list) < 0) return NULL;
    if (list == NULL) {
        PyErr_SetString(PyExc_ValueError, "devices must be a list such as 'CPU:0,APU:1'");
        return NULL;
    }
    return config_result(tp_context_set_visible_devices(context, list));
}

/* _set_memory_growth(device or None, enabled) */
static PyObject *set_memory_growth(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *name_object;
    int enabled;
    if (!PyArg_ParseTuple(args, "Op:_set_memory_growth", &name_object, &enabled)) return NULL;
    tp_context_t *context = tpy_context();
    const char *name;
    if (context == NULL || optional_name(name_object, "device", &name) < 0) return NULL;
    return config_result(tp_context_set_memory_growth(context, name, enabled != 0));
}

/* _set_memory_fraction(device or None, fraction) */
static PyObject *set_memory_fraction(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *name_object;
    double fraction;
    if (!PyArg_ParseTuple(args, "Od:_set_memory_fraction", &name_object, &fraction))
        return NULL;
    tp_context_t *context = tpy_context();
    const char *name;
    if (context == NULL || optional_name(name_object, "device", &name) < 0) return NULL;
    return config_result(tp_context_set_memory_fraction(context, name, fraction));
}

/* _set_logical_devices(device, [bytes, ...]) */
static PyObject *set_logical_devices(PyObject *self, PyObject *args) {
    (void)self;
    const char *name;
    PyObject *limits_object;
    if (!PyArg_ParseTuple(args, "sO:_set_logical_devices", &name, &limits_object)) return NULL;
    tp_context_t *context = tpy_context();
    if (context == NULL) return NULL;
    PyObject *sequence = PySequence_Fast(limits_object, "memory limits must be a sequence");
    if (sequence == NULL) return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(sequence);
    uint64_t *limits = PyMem_Calloc(count > 0 ? (size_t)count : 1, sizeof *limits);
    if (limits == NULL) {
        Py_DECREF(sequence);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        unsigned long long bytes =
            PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(sequence, i));
        if (bytes == (unsigned long long)-1 && PyErr_Occurred()) {
            PyMem_Free(limits);
            Py_DECREF(sequence);
            return NULL;
        }
        limits[i] = bytes;
    }
    Py_DECREF(sequence);
    tp_status_t *status = tp_context_set_logical_devices(context, name, limits, (size_t)count);
    PyMem_Free(limits);
    return config_result(status);
}

/* _memory_info(device): {'current', 'peak'} in bytes, as tf.config.experimental.get_memory_info
 * gives them. The device's queued work is waited for first, so that the memory of tensors
 * Python has released, which goes back in stream order, no longer counts. */
static PyObject *memory_info(PyObject *self, PyObject *name_object) {
    (void)self;
    tp_context_t *context = tpy_context();
    const char *name;
    if (context == NULL || optional_name(name_object, "device", &name) < 0) return NULL;
    if (name == NULL) {
        PyErr_SetString(PyExc_ValueError, "device must name a logical device, as 'GPU:0'");
        return NULL;
    }
    tp_memory_stats_t stats = {.struct_size = sizeof stats};
    tp_status_t *status;
    Py_BEGIN_ALLOW_THREADS
    status = tp_context_synchronize(context);
    if (status == NULL) status = tp_context_memory_stats(context, name, &stats);
    Py_END_ALLOW_THREADS
    if (status != NULL) return config_raise(status);
    return Py_BuildValue("{s:K,s:K}", "current", (unsigned long long)stats.bytes_in_use, "peak",
                         (unsigned long long)stats.peak_bytes_in_use);
}

static PyObject *reset_memory_stats(PyObject *self, PyObject *name_object) {
    (void)self;
    tp_context_t *context = tpy_context();
    const char *name;
    if (context == NULL || optional_name(name_object, "device", &name) < 0) return NULL;
    if (name == NULL) {
        PyErr_SetString(PyExc_ValueError, "device must name a logical device, as 'GPU:0'");
        return NULL;
    }
    tp_status_t *status;
    Py_BEGIN_ALLOW_THREADS
    status = tp_context_synchronize(context);
    if (status == NULL) status = tp_context_reset_peak_memory(context, name);
    Py_END_ALLOW_THREADS
    return config_result(status);
}

static PyObject *set_soft_device_placement(PyObject *self, PyObject *enabled_object) {
    (void)self;
    tp_context_t *context = tpy_context();
    int enabled = PyObject_IsTrue(enabled_object);
    if (context == NULL || enabled < 0) return NULL;
    tp_context_set_soft_device_placement(context, enabled != 0);
    soft_device_placement = enabled != 0;
    Py_RETURN_NONE;
}

static PyObject *get_soft_device_placement(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(soft_device_placement);
}

static PyObject *set_log_device_placement(PyObject *self, PyObject *enabled_object) {
    (void)self;
    tp_context_t *context = tpy_context();
    int enabled = PyObject_IsTrue(enabled_object);
    if (context == NULL || enabled < 0) return NULL;
    tp_context_set_log_device_placement(context, enabled != 0);
    log_device_placement = enabled != 0;
    Py_RETURN_NONE;
}

static PyObject *get_log_device_placement(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(log_device_placement);
}

/* _parse_device_spec(name): (type or None, id or None, physical) of a device name, or
 * ValueError quoting it when it is malformed. */
static PyObject *parse_device_spec(PyObject *self, PyObject *name_object) {
    (void)self;
    const char *name;
    if (optional_name(name_object, "device name", &name) < 0) return NULL;
    if (name == NULL) {
        PyErr_SetString(PyExc_ValueError, "a device name is needed, not None");
        return NULL;
    }
    tp_device_spec_t spec;
    tp_status_t *status = tp_device_spec_parse(name, &spec);
    if (status != NULL) return config_raise(status);
    PyObject *type = spec.has_type ? PyUnicode_FromString(spec.type) : Py_NewRef(Py_None);
    PyObject *id = spec.has_id ? PyLong_FromLongLong(spec.id) : Py_NewRef(Py_None);
    PyObject *result = type != NULL && id != NULL
                           ? PyTuple_Pack(3, type, id, spec.physical ? Py_True : Py_False)
                           : NULL;
    Py_XDECREF(type);
    Py_XDECREF(id);
    return result;
}

static PyMethodDef config_functions[] = {
    {"_physical_devices", physical_devices, METH_O, NULL},
    {"_logical_devices", logical_devices, METH_O, NULL},
    {"_physical_device_details", physical_device_details, METH_O, NULL},
    {"_set_visible_devices", set_visible_devices, METH_O, NULL},
    {"_set_memory_growth", set_memory_growth, METH_VARARGS, NULL},
    {"_set_memory_fraction", set_memory_fraction, METH_VARARGS, NULL},
    {"_set_logical_devices", set_logical_devices, METH_VARARGS, NULL},
    {"_memory_info", memory_info, METH_O, NULL},
    {"_reset_memory_stats", reset_memory_stats, METH_O, NULL},
    {"_set_soft_device_placement", set_soft_device_placement, METH_O, NULL},
    {"_get_soft_device_placement", get_soft_device_placement, METH_NOARGS, NULL},
    {"_set_log_device_placement", set_log_device_placement, METH_O, NULL},
    {"_get_log_device_placement", get_log_device_placement, METH_NOARGS, NULL},
    {"_parse_device_spec", parse_device_spec, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

int tpy_init_config(PyObject *module) {
    /* The context turns placement logging on from the environment as well; the getter says so
     * (the runtime's flag reading: "1" or "true", any case). */
    const char *flag = getenv("TP_LOG_DEVICE_PLACEMENT");
    log_device_placement =
        flag != NULL && (strcmp(flag, "1") == 0 || strcasecmp(flag, "true") == 0);
    return PyModule_AddFunctions(module, config_functions);
}
