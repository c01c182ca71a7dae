/* SPDX-License-Identifier: Apache-2.0 */
/* Private probes for the tests and benchmarks: the allocator statistics of one device, the
 * count of live Tensor objects, and a device scope for a test thread, so that a leak or a
 * scope bug shows as a number rather than as a guess. Not part of tp's TensorFlow names. */
#include "tpy.h"

Py_ssize_t tpy_live_tensors;

/* _memory_stats(device): a dict of tp_memory_stats_t's fields for one logical device
 * ("CPU:0", "/device:APU:0"). */
static PyObject *memory_stats(PyObject *self, PyObject *arg) {
    (void)self;
    const char *device = PyUnicode_AsUTF8(arg);
    if (device == NULL) return NULL;
    tp_context_t *context = tpy_context();
    if (context == NULL) return NULL;
    tp_memory_stats_t stats = {.struct_size = sizeof stats};
    if (tpy_check(tp_context_memory_stats(context, device, &stats)) < 0) return NULL;
    return Py_BuildValue("{sKsKsKsKsKsKsK}", "bytes_in_use",
                         (unsigned long long)stats.bytes_in_use, "peak_bytes_in_use",
                         (unsigned long long)stats.peak_bytes_in_use, "bytes_reserved",
                         (unsigned long long)stats.bytes_reserved, "bytes_limit",
                         (unsigned long long)stats.bytes_limit, "largest_free_block",
                         (unsigned long long)stats.largest_free_block, "num_allocations",
                         (unsigned long long)stats.num_allocations, "total_allocations",
                         (unsigned long long)stats.total_allocations);
}

/* _live_tensor_count(): Tensor objects are not tracked by gc (they hold no Python objects),
 * so gc.get_objects() cannot count them; tensor.c counts them instead. */
static PyObject *live_tensor_count(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromSsize_t(tpy_live_tensors);
}

/* _synchronize(): waits, without the GIL, until every device has finished its queued work,
 * so that a test reads memory statistics no pending free still changes. */
static PyObject *synchronize(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    tp_context_t *context = tpy_context();
    if (context == NULL) return NULL;
    tp_status_t *status;
    Py_BEGIN_ALLOW_THREADS
    status = tp_context_synchronize(context);
    Py_END_ALLOW_THREADS
    if (tpy_check(status) < 0) return NULL;
    Py_RETURN_NONE;
}

/* _test_device_push(name) and _test_device_pop(): this thread's device scope, for tests that
 * run before tp.device exists in a build. */
static PyObject *test_device_push(PyObject *self, PyObject *arg) {
    (void)self;
    const char *name = PyUnicode_AsUTF8(arg);
    if (name == NULL) return NULL;
    tp_context_t *context = tpy_context();
    if (context == NULL || tpy_check(tp_device_push(context, name)) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *test_device_pop(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    tp_context_t *context = tpy_context();
    if (context == NULL || tpy_check(tp_device_pop(context)) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef module_functions[] = {
    {"_memory_stats", memory_stats, METH_O, "The allocator statistics of one device (tests)."},
    {"_live_tensor_count", live_tensor_count, METH_NOARGS, "Live Tensor objects (tests)."},
    {"_synchronize", synchronize, METH_NOARGS, "Waits for every device's queued work (tests)."},
    {"_test_device_push", test_device_push, METH_O, "Pushes a device scope (tests)."},
    {"_test_device_pop", test_device_pop, METH_NOARGS, "Pops a device scope (tests)."},
    {NULL, NULL, 0, NULL},
};

int tpy_init_diagnostics(PyObject *module) {
    return PyModule_AddFunctions(module, module_functions);
}
