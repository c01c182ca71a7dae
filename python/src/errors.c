/* SPDX-License-Identifier: Apache-2.0 */
/* tp.errors: a status becomes the exception TensorFlow raises for its code, a subclass of
 * OpError carrying the status's message (`message`) and code (`error_code`). */
#include <string.h>

#include "tpy.h"

/* TensorFlow's class names, indexed by tp_code_t. */
static const char *const class_names[] = {
    NULL,                      /* TP_OK */
    "CancelledError",          "UnknownError",         "InvalidArgumentError",
    "DeadlineExceededError",   "NotFoundError",        "AlreadyExistsError",
    "PermissionDeniedError",   "ResourceExhaustedError", "FailedPreconditionError",
    "AbortedError",            "OutOfRangeError",      "UnimplementedError",
    "InternalError",           "UnavailableError",     "DataLossError",
};
#define NUM_CODES (sizeof class_names / sizeof class_names[0])

static PyObject *op_error;
static PyObject *classes[NUM_CODES];

PyObject *tpy_error_class(tp_code_t code) {
    if ((size_t)code >= NUM_CODES || classes[code] == NULL) return classes[TP_UNKNOWN];
    return classes[code];
}

/* The runtime's message for an op placed on a device that does not exist. "Using GPUs" shows
 * TensorFlow raising RuntimeError for it, so that is what a program written from the document
 * catches. */
static bool is_unknown_device(const tp_status_t *status) {
    static const char prefix[] = "Error copying tensor to device: ";
    return tp_status_code(status) == TP_NOT_FOUND &&
           strncmp(tp_status_message(status), prefix, sizeof prefix - 1) == 0;
}

PyObject *tpy_raise(tp_status_t *status) {
    if (status == NULL) {
        PyErr_SetString(PyExc_SystemError, "tensorplug: an error was raised without a status");
        return NULL;
    }
    if (is_unknown_device(status)) {
        PyErr_SetString(PyExc_RuntimeError, tp_status_message(status));
        tp_status_free(status);
        return NULL;
    }
    tp_code_t code = tp_status_code(status);
    PyObject *cls = tpy_error_class(code);
    PyObject *message = PyUnicode_DecodeUTF8(tp_status_message(status),
                                             (Py_ssize_t)strlen(tp_status_message(status)),
                                             "backslashreplace");
    tp_status_free(status);
    if (message == NULL) return NULL;
    PyObject *error = PyObject_CallOneArg(cls, message);
    if (error != NULL) {
        PyObject *code_object = PyLong_FromLong((long)code);
        if (code_object == NULL || PyObject_SetAttrString(error, "message", message) < 0 ||
            PyObject_SetAttrString(error, "error_code", code_object) < 0) {
            Py_CLEAR(error);
        }
        Py_XDECREF(code_object);
    }
    Py_DECREF(message);
    if (error == NULL) return NULL;
    PyErr_SetObject(cls, error);
    Py_DECREF(error);
    return NULL;
}

int tpy_check(tp_status_t *status) {
    if (status == NULL) return 0;
    tpy_raise(status);
    return -1;
}

int tpy_init_errors(PyObject *module) {
    PyObject *errors = PyDict_New();
    if (errors == NULL) return -1;
    op_error = PyErr_NewExceptionWithDoc(
        "tensorplug.errors.OpError",
        "An operation failed: `message` is the runtime's message, `error_code` its code "
        "(tp.errors.INVALID_ARGUMENT and so on).",
        NULL, NULL);
    if (op_error == NULL || PyDict_SetItemString(errors, "OpError", op_error) < 0) goto fail;
    for (size_t code = 1; code < NUM_CODES; code++) {
        char qualified[96];
        snprintf(qualified, sizeof qualified, "tensorplug.errors.%s", class_names[code]);
        classes[code] = PyErr_NewException(qualified, op_error, NULL);
        if (classes[code] == NULL ||
            PyDict_SetItemString(errors, class_names[code], classes[code]) < 0)
            goto fail;
        /* The code's constant, as tf.errors.INVALID_ARGUMENT. */
        PyObject *number = PyLong_FromSize_t(code);
        int added = number == NULL ? -1
                                   : PyDict_SetItemString(errors, tp_code_name((tp_code_t)code),
                                                          number);
        Py_XDECREF(number);
        if (added < 0) goto fail;
    }
    if (PyModule_AddObject(module, "errors", errors) < 0) goto fail;
    return 0;
fail:
    Py_DECREF(errors);
    return -1;
}
