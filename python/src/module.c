/* SPDX-License-Identifier: Apache-2.0 */
/* The extension module _tensorplug: its table of init functions and the process's context. */
#include "tpy.h"

static tp_context_t *context;

tp_context_t *tpy_context(void) {
    if (context == NULL)
        PyErr_SetString(PyExc_RuntimeError,
                        "tensorplug is not initialized: import tensorplug, not _tensorplug");
    return context;
}

/* _initialize(plugin_path): makes the context, loading the plug-ins found in `plugin_path`
 * (folders separated by ':', None: TP_PLUGIN_PATH) and then the system folder, as TensorFlow
 * registers PluggableDevices at `import tensorflow`. A second call does nothing. */
static PyObject *initialize(PyObject *self, PyObject *args) {
    (void)self;
    const char *plugin_path = NULL;
    if (!PyArg_ParseTuple(args, "z:_initialize", &plugin_path)) return NULL;
    if (context != NULL) Py_RETURN_NONE;
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.plugin_path = plugin_path;
    tp_context_t *made = NULL;
    tp_status_t *status;
    Py_BEGIN_ALLOW_THREADS
    status = tp_context_create(&options, &made);
    Py_END_ALLOW_THREADS
    if (status != NULL) return tpy_raise(status);
    context = made;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"_initialize", initialize, METH_VARARGS, "Makes the process's context (import time)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "_tensorplug",
    "The C half of tensorplug: tensors, ops and devices over the tensorplug C API.", -1,
    module_methods, NULL, NULL, NULL, NULL,
};

/* Each file's init, in order: later ones may use what earlier ones added. */
static int (*const init_functions[])(PyObject *) = {
    tpy_init_errors,  tpy_init_dtypes,  tpy_init_tensor,
    tpy_init_convert, tpy_init_variable,
    tpy_init_config, tpy_init_device_scope,
    tpy_init_ops_math, tpy_init_ops_array, tpy_init_ops_nn, tpy_init_ops_random,
    tpy_init_tape, tpy_init_optimizer, tpy_init_function,
    tpy_init_diagnostics,
    tpy_init_strategy, tpy_init_keras,
};

PyMODINIT_FUNC PyInit__tensorplug(void);
PyMODINIT_FUNC PyInit__tensorplug(void) {
    PyObject *module = PyModule_Create(&module_definition);
    if (module == NULL) return NULL;
    for (size_t i = 0; i < sizeof init_functions / sizeof init_functions[0]; i++) {
        if (init_functions[i](module) < 0) {
            Py_DECREF(module);
            return NULL;
        }
    }
    if (PyModule_AddStringConstant(module, "__version__", tp_version()) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
