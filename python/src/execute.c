/* SPDX-License-Identifier: Apache-2.0 */
/* Running one op from Python: tp_execute or a typed op function, the GIL released when the
 * work is big enough for another thread to gain from it, and the results wrapped. */
#include "tpy.h"

/* Inputs of fewer elements than this run with the GIL held: releasing and taking it back
 * costs about as much as a small op (a tenth of a microsecond), and the op returns as soon as
 * its work is queued or done. */
#define GIL_RELEASE_ELEMENTS 16384

/* Whether the op may wait long: large inputs, or an input still pending on an asynchronous
 * device, whose values an op on another device (Add on the CPU, of an APU's Relu) waits for
 * inside the call, however small it is. */
static bool worth_releasing(tp_tensor_t *const *inputs, size_t num_inputs) {
    int64_t elements = 0;
    for (size_t i = 0; i < num_inputs; i++) {
        elements += tp_tensor_num_elements(inputs[i]);
        bool ready = true;
        /* A poisoned input fails the op at once; its failure is the op's to report. */
        tp_status_free(tp_tensor_query(inputs[i], &ready));
        if (!ready) return true;
    }
    return elements >= GIL_RELEASE_ELEMENTS;
}

static PyObject *wrap_outputs(tp_tensor_t **outputs, size_t num_outputs) {
    if (num_outputs == 1) return tpy_tensor_wrap(outputs[0]);
    PyObject *tuple = PyTuple_New((Py_ssize_t)num_outputs);
    if (tuple == NULL) {
        for (size_t i = 0; i < num_outputs; i++) tp_tensor_release(outputs[i]);
        return NULL;
    }
    for (size_t i = 0; i < num_outputs; i++) {
        PyObject *item = tpy_tensor_wrap(outputs[i]);
        if (item == NULL) {
            for (size_t j = i + 1; j < num_outputs; j++) tp_tensor_release(outputs[j]);
            Py_DECREF(tuple);
            return NULL;
        }
        PyTuple_SET_ITEM(tuple, (Py_ssize_t)i, item);
    }
    return tuple;
}

PyObject *tpy_execute(const char *op, tp_tensor_t *const *inputs, size_t num_inputs,
                      const tp_attr_t *attrs, size_t num_attrs, size_t num_outputs) {
    tp_context_t *context = tpy_context();
    if (context == NULL) return NULL;
    tp_tensor_t *outputs[16] = {NULL};
    if (num_outputs == 0 || num_outputs > sizeof outputs / sizeof outputs[0]) {
        PyErr_Format(PyExc_ValueError, "op %s: %zu outputs is not in [1, 16]", op, num_outputs);
        return NULL;
    }
    tp_status_t *status;
    if (worth_releasing(inputs, num_inputs)) {
        Py_BEGIN_ALLOW_THREADS
        status = tp_execute(context, op, inputs, num_inputs, attrs, num_attrs, outputs,
                            num_outputs);
        Py_END_ALLOW_THREADS
    } else {
        status = tp_execute(context, op, inputs, num_inputs, attrs, num_attrs, outputs,
                            num_outputs);
    }
    if (status != NULL) return tpy_raise(status);
    return wrap_outputs(outputs, num_outputs);
}

PyObject *tpy_call_unary(tpy_unary_fn fn, PyObject *x) {
    tp_context_t *context = tpy_context();
    if (context == NULL) return NULL;
    tp_tensor_t *input;
    if (TPY_TENSOR_CHECK(x)) {
        input = TPY_TENSOR(x); /* borrowed: the fast path of tp.nn.relu(t) */
    } else if (tpy_to_tensor(x, TP_DTYPE_INVALID, &input) < 0) {
        return NULL;
    }
    tp_tensor_t *out = NULL;
    tp_status_t *status;
    if (worth_releasing(&input, 1)) {
        Py_BEGIN_ALLOW_THREADS
        status = fn(context, input, &out);
        Py_END_ALLOW_THREADS
    } else {
        status = fn(context, input, &out);
    }
    if (!TPY_TENSOR_CHECK(x)) tp_tensor_release(input);
    if (status != NULL) return tpy_raise(status);
    return tpy_tensor_wrap(out);
}

/* Converts the operands of a binary op: Tensors are borrowed; a Python value becomes a tensor
 * of the other operand's dtype (a new reference, marked in `owned`). */
static int binary_operands(PyObject *x, PyObject *y, tp_tensor_t *operands[2], bool owned[2]) {
    owned[0] = owned[1] = false;
    PyObject *objects[2] = {x, y};
    for (int i = 0; i < 2; i++)
        if (TPY_TENSOR_CHECK(objects[i])) operands[i] = TPY_TENSOR(objects[i]);
    for (int i = 0; i < 2; i++) {
        if (TPY_TENSOR_CHECK(objects[i])) continue;
        int result = TPY_TENSOR_CHECK(objects[1 - i])
                         ? tpy_to_tensor_like(objects[i], operands[1 - i], &operands[i])
                         : tpy_to_tensor(objects[i], TP_DTYPE_INVALID, &operands[i]);
        if (result < 0) {
            if (i == 1 && owned[0]) tp_tensor_release(operands[0]);
            return -1;
        }
        owned[i] = true;
    }
    return 0;
}

PyObject *tpy_call_binary(tpy_binary_fn fn, PyObject *x, PyObject *y) {
    tp_context_t *context = tpy_context();
    if (context == NULL) return NULL;
    tp_tensor_t *operands[2];
    bool owned[2];
    if (binary_operands(x, y, operands, owned) < 0) return NULL;
    tp_tensor_t *out = NULL;
    tp_status_t *status;
    if (worth_releasing(operands, 2)) {
        Py_BEGIN_ALLOW_THREADS
        status = fn(context, operands[0], operands[1], &out);
        Py_END_ALLOW_THREADS
    } else {
        status = fn(context, operands[0], operands[1], &out);
    }
    for (int i = 0; i < 2; i++)
        if (owned[i]) tp_tensor_release(operands[i]);
    if (status != NULL) return tpy_raise(status);
    return tpy_tensor_wrap(out);
}

int tpy_init_execute(PyObject *module) {
    (void)module;
    return 0;
}
