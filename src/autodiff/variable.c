/* SPDX-License-Identifier: Apache-2.0 */
/* Variables: a device, and the tensor that is their value now. Tensors are immutable, so an
 * update makes a new tensor and swaps it in; whoever read the old one keeps it. */
#include "autodiff/variable.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff/tape.h"
#include "base/shape.h"
#include "base/status.h"
#include "context/context.h"
#include "eager/execute.h"
#include "graph/trace.h"
#include "tensor/tensor.h"

struct tp_variable {
    tp_context_t *context; /* retained */
    char *name;
    tp_device_t *device;
    tp_dtype_t dtype;
    tp_shape_t shape;
    /* Guards `value`; held across an update's read, compute and swap, so that concurrent
     * updates all land. */
    pthread_mutex_t mutex;
    tp_tensor_t *value;
};

tp_status_t *tp_variable_create(tp_context_t *context, const char *name, tp_tensor_t *initial,
                                const char *device_name, tp_variable_t **out) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(name);
    TP_REQUIRE_ARG(initial);
    TP_REQUIRE_ARG(out);
    if (initial->context != context)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "tp_variable_create: '%s': the initial value belongs to another "
                              "context",
                              name);
    TP_RETURN_IF_ERROR(tp_status_annotate(
        tp_tensor_require_values(initial, "tp_variable_create"), "variable '%s'", name));
    tp_device_t *device = initial->device;
    if (device_name != NULL)
        TP_RETURN_IF_ERROR(tp_status_annotate(
            tp_context_find_device(context, device_name, &device), "tp_variable_create: '%s'",
            name));
    tp_variable_t *variable = calloc(1, sizeof *variable);
    char *copy = strdup(name);
    if (variable == NULL || copy == NULL || pthread_mutex_init(&variable->mutex, NULL) != 0) {
        free(variable);
        free(copy);
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "tp_variable_create: out of host memory");
    }
    tp_status_t *error = tp_tensor_to_device(initial, device, &variable->value);
    if (error != NULL) {
        pthread_mutex_destroy(&variable->mutex);
        free(variable);
        free(copy);
        return tp_status_annotate(error, "tp_variable_create: '%s'", name);
    }
    variable->context = context;
    tp_context_retain(context);
    variable->name = copy;
    variable->device = device;
    variable->dtype = initial->dtype;
    variable->shape = initial->shape;
    *out = variable;
    return NULL;
}

void tp_variable_destroy(tp_variable_t *variable) {
    if (variable == NULL) return;
    tp_tensor_release(variable->value);
    pthread_mutex_destroy(&variable->mutex);
    tp_context_release(variable->context);
    free(variable->name);
    free(variable);
}

const char *tp_variable_name(const tp_variable_t *variable) {
    return variable != NULL ? variable->name : "";
}

const char *tp_variable_device(const tp_variable_t *variable) {
    return variable != NULL ? variable->device->full_name : "";
}

tp_dtype_t tp_variable_dtype(const tp_variable_t *variable) {
    return variable != NULL ? variable->dtype : TP_DTYPE_INVALID;
}

tp_shape_t tp_variable_shape(const tp_variable_t *variable) {
    return variable != NULL ? variable->shape : TP_SCALAR_SHAPE;
}

tp_device_t *tp_variable_device_handle(const tp_variable_t *variable) {
    return variable->device;
}

tp_context_t *tp_variable_context(const tp_variable_t *variable) { return variable->context; }

tp_status_t *tp_variable_read_untaped(tp_variable_t *variable, tp_tensor_t **out) {
    pthread_mutex_lock(&variable->mutex);
    *out = tp_tensor_retain(variable->value);
    pthread_mutex_unlock(&variable->mutex);
    return NULL;
}

tp_status_t *tp_variable_read(tp_variable_t *variable, tp_tensor_t **out) {
    TP_REQUIRE_ARG(variable);
    TP_REQUIRE_ARG(out);
    if (tp_trace_current(variable->context) != NULL)
        return tp_status_make(TP_UNIMPLEMENTED,
                              "tp_variable_read: variable '%s' read inside a traced function: the "
                              "graph would keep the value it has now; pass it as an argument",
                              variable->name);
    tp_tensor_t *value;
    TP_RETURN_IF_ERROR(tp_variable_read_untaped(variable, &value));
    if (tp_tape_any_recording()) {
        tp_status_t *error = tp_tape_watch_variable(variable->context, variable, value);
        if (error != NULL) {
            tp_tensor_release(value);
            return error;
        }
    }
    *out = value;
    return NULL;
}

static tp_status_t *check_like(const tp_variable_t *variable, const tp_tensor_t *value,
                               const char *what) {
    if (value->context != variable->context)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: '%s': the value belongs to another "
                              "context", what, variable->name);
    TP_RETURN_IF_ERROR(tp_tensor_require_values(value, what));
    if (value->dtype != variable->dtype)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: '%s' holds %s, the value is %s", what,
                              variable->name, tp_dtype_name(variable->dtype),
                              tp_dtype_name(value->dtype));
    return NULL;
}

/* Swaps in `value` (a reference the variable takes) under the held mutex. */
static void swap_locked(tp_variable_t *variable, tp_tensor_t *value) {
    tp_tensor_t *old = variable->value;
    variable->value = value;
    tp_tensor_release(old);
}

/* Whether `value` may become the variable's value: same context, dtype and shape. */
static tp_status_t *check_assignable(const tp_variable_t *variable, const tp_tensor_t *value,
                                     const char *what) {
    TP_RETURN_IF_ERROR(check_like(variable, value, what));
    if (!tp_shape_equal(&value->shape, &variable->shape)) {
        char want[128], got[128];
        tp_shape_format(&variable->shape, want, sizeof want);
        tp_shape_format(&value->shape, got, sizeof got);
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: '%s' has shape %s, the value %s", what,
                              variable->name, want, got);
    }
    return NULL;
}

tp_status_t *tp_variable_assign(tp_variable_t *variable, tp_tensor_t *value) {
    TP_REQUIRE_ARG(variable);
    TP_REQUIRE_ARG(value);
    TP_RETURN_IF_ERROR(check_assignable(variable, value, "tp_variable_assign"));
    tp_tensor_t *placed;
    TP_RETURN_IF_ERROR(tp_tensor_to_device(value, variable->device, &placed));
    pthread_mutex_lock(&variable->mutex);
    swap_locked(variable, placed);
    pthread_mutex_unlock(&variable->mutex);
    return NULL;
}

tp_status_t *tp_variable_assign_all(tp_variable_t *const *variables, tp_tensor_t *const *values,
                                    size_t count) {
    if (count == 0) return NULL;
    TP_REQUIRE_ARG(variables);
    TP_REQUIRE_ARG(values);
    for (size_t i = 0; i < count; i++) {
        if (variables[i] == NULL || values[i] == NULL)
            return tp_status_make(TP_INVALID_ARGUMENT, "tp_variable_assign_all: %s %zu is NULL",
                                  variables[i] == NULL ? "variable" : "value", i);
        TP_RETURN_IF_ERROR(check_assignable(variables[i], values[i], "tp_variable_assign_all"));
    }
    /* Every value on its variable's device first: the copies are what can fail. */
    tp_tensor_t **placed = calloc(count, sizeof *placed);
    if (placed == NULL)
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "tp_variable_assign_all: out of host memory");
    tp_status_t *error = NULL;
    for (size_t i = 0; i < count && error == NULL; i++)
        error = tp_status_annotate(tp_tensor_to_device(values[i], variables[i]->device,
                                                       &placed[i]),
                                   "tp_variable_assign_all: '%s'", variables[i]->name);
    for (size_t i = 0; i < count; i++) {
        if (error != NULL) {
            tp_tensor_release(placed[i]);
            continue;
        }
        pthread_mutex_lock(&variables[i]->mutex);
        swap_locked(variables[i], placed[i]);
        pthread_mutex_unlock(&variables[i]->mutex);
    }
    free(placed);
    return error;
}

/* Swaps in `result`, the value after an update by `delta` (held mutex), unless its shape is not
 * the variable's (a delta that broadcast to more): then the variable keeps its value. */
static tp_status_t *swap_in_update(tp_variable_t *variable, const tp_tensor_t *delta,
                                   tp_tensor_t *result) {
    if (!tp_shape_equal(&result->shape, &variable->shape)) {
        char want[128], got[128];
        tp_shape_format(&variable->shape, want, sizeof want);
        tp_shape_format(&delta->shape, got, sizeof got);
        tp_tensor_release(result);
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "'%s' has shape %s; a delta of shape %s would change it",
                              variable->name, want, got);
    }
    swap_locked(variable, result);
    return NULL;
}

tp_status_t *tp_variable_descend(tp_variable_t *variable, tp_tensor_t *alpha, tp_tensor_t *delta) {
    TP_REQUIRE_ARG(variable);
    TP_REQUIRE_ARG(alpha);
    TP_REQUIRE_ARG(delta);
    TP_RETURN_IF_ERROR(check_like(variable, delta, "gradient descent"));
    pthread_mutex_lock(&variable->mutex);
    tp_tensor_t *result = NULL;
    tp_tape_suspend();
    tp_status_t *error = tp_execute_descent_on(variable->context, variable->device,
                                               variable->value, alpha, delta, &result);
    tp_tape_resume();
    if (error == NULL) error = swap_in_update(variable, delta, result);
    pthread_mutex_unlock(&variable->mutex);
    return error;
}

tp_status_t *tp_variable_assign_sub(tp_variable_t *variable, tp_tensor_t *delta) {
    TP_REQUIRE_ARG(variable);
    TP_REQUIRE_ARG(delta);
    TP_RETURN_IF_ERROR(check_like(variable, delta, "tp_variable_assign_sub"));
    pthread_mutex_lock(&variable->mutex);
    tp_tensor_t *inputs[2] = {variable->value, delta}, *result;
    tp_tape_suspend();
    tp_status_t *error = tp_execute_on(variable->context, variable->device, "Sub", inputs, 2,
                                       NULL, 0, &result, 1);
    tp_tape_resume();
    if (error == NULL) error = swap_in_update(variable, delta, result);
    pthread_mutex_unlock(&variable->mutex);
    return tp_status_annotate(error, "tp_variable_assign_sub");
}
