/* SPDX-License-Identifier: Apache-2.0 */
/* Optimizers with state: their options, their state variables (the step count and each
 * variable's slots), and a step that checks everything, computes every new value and only then
 * assigns them all at once. The update rules are in optimizer_updates.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff/tape.h"
#include "autodiff/variable.h"
#include "base/shape.h"
#include "base/status.h"
#include "context/context.h"
#include "eager/execute.h"
#include "graph/trace.h"
#include "model/optimizers.h"
#include "tensor/tensor.h"

static const char *const no_slots[] = {NULL};
static const char *const momentum_slots[] = {"momentum", NULL};
static const char *const adam_slots[] = {"m", "v", NULL};

const char *const *tp_optimizer_slot_names(const tp_optimizer_t *optimizer) {
    if (optimizer->kind == TP_OPTIMIZER_ADAM) return adam_slots;
    return optimizer->momentum != 0 ? momentum_slots : no_slots;
}

static size_t slot_count(const tp_optimizer_t *optimizer) {
    size_t count = 0;
    for (const char *const *name = tp_optimizer_slot_names(optimizer); *name != NULL; name++)
        count++;
    return count;
}

/* ---- Options ---------------------------------------------------------------------------- */

static tp_status_t *check_learning_rate(const char *function, double learning_rate) {
    if (!isfinite(learning_rate) || learning_rate < 0)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: the learning rate is %g; it must be "
                              "finite and >= 0", function, learning_rate);
    return NULL;
}

/* `value` in [0, 1] (or [0, 1) when `one_excluded`). */
static tp_status_t *check_fraction(const char *function, const char *name, double value,
                                   bool one_excluded) {
    if (!(value >= 0 && (one_excluded ? value < 1 : value <= 1)))
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: %s is %g; it must be in [0, 1%s",
                              function, name, value, one_excluded ? ")" : "]");
    return NULL;
}

static tp_status_t *check_struct_size(const char *function, size_t got, size_t want,
                                      const char *init) {
    if (got < want)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: options->struct_size is %zu; start from "
                              "%s", function, got, init);
    return NULL;
}

/* ---- Life ------------------------------------------------------------------------------- */

static tp_status_t *create(tp_context_t *context, tp_optimizer_t *proto, tp_optimizer_t **out) {
    tp_optimizer_t *optimizer = calloc(1, sizeof *optimizer);
    if (optimizer == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    *optimizer = *proto;
    if (pthread_mutex_init(&optimizer->mutex, NULL) != 0) {
        free(optimizer);
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "no mutex could be made");
    }
    optimizer->index = (tp_pointer_map_t)TP_POINTER_MAP_INIT;
    /* The step count on the host, which reads it for Adam's bias correction. */
    int64_t zero = 0;
    tp_tensor_t *initial;
    tp_status_t *error =
        tp_tensor_create(context, TP_INT64, TP_SCALAR_SHAPE, &zero, sizeof zero, &initial);
    if (error == NULL) {
        error = tp_variable_create(context, "optimizer/iterations", initial, "/device:CPU:0",
                                   &optimizer->iterations);
        tp_tensor_release(initial);
    }
    if (error != NULL) {
        pthread_mutex_destroy(&optimizer->mutex);
        free(optimizer);
        return error;
    }
    optimizer->context = context;
    tp_context_retain(context);
    *out = optimizer;
    return NULL;
}

tp_status_t *tp_optimizer_create_sgd(tp_context_t *context, const tp_sgd_options_t *options,
                                     tp_optimizer_t **out) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(out);
    const tp_sgd_options_t defaults = TP_SGD_OPTIONS_INIT;
    if (options == NULL) options = &defaults;
    TP_RETURN_IF_ERROR(check_struct_size(__func__, options->struct_size,
                                         sizeof(tp_sgd_options_t), "TP_SGD_OPTIONS_INIT"));
    TP_RETURN_IF_ERROR(check_learning_rate(__func__, options->learning_rate));
    TP_RETURN_IF_ERROR(check_fraction(__func__, "momentum", options->momentum, false));
    tp_optimizer_t proto = {.kind = TP_OPTIMIZER_SGD,
                            .learning_rate = options->learning_rate,
                            .momentum = options->momentum,
                            .nesterov = options->nesterov};
    return tp_status_annotate(create(context, &proto, out), __func__);
}

tp_status_t *tp_optimizer_create_adam(tp_context_t *context, const tp_adam_options_t *options,
                                      tp_optimizer_t **out) {
    TP_REQUIRE_ARG(context);
    TP_REQUIRE_ARG(out);
    const tp_adam_options_t defaults = TP_ADAM_OPTIONS_INIT;
    if (options == NULL) options = &defaults;
    TP_RETURN_IF_ERROR(check_struct_size(__func__, options->struct_size,
                                         sizeof(tp_adam_options_t), "TP_ADAM_OPTIONS_INIT"));
    TP_RETURN_IF_ERROR(check_learning_rate(__func__, options->learning_rate));
    TP_RETURN_IF_ERROR(check_fraction(__func__, "beta1", options->beta1, true));
    TP_RETURN_IF_ERROR(check_fraction(__func__, "beta2", options->beta2, true));
    if (!isfinite(options->epsilon) || options->epsilon < 0)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: epsilon is %g; it must be finite and "
                              ">= 0", __func__, options->epsilon);
    tp_optimizer_t proto = {.kind = TP_OPTIMIZER_ADAM,
                            .learning_rate = options->learning_rate,
                            .beta1 = options->beta1,
                            .beta2 = options->beta2,
                            .epsilon = options->epsilon};
    return tp_status_annotate(create(context, &proto, out), __func__);
}

void tp_optimizer_destroy(tp_optimizer_t *optimizer) {
    if (optimizer == NULL) return;
    for (size_t i = 0; i < optimizer->num_slots; i++) {
        for (size_t s = 0; s < TP_OPTIMIZER_MAX_SLOTS; s++)
            tp_variable_destroy(optimizer->slots[i]->slots[s]);
        free(optimizer->slots[i]);
    }
    free(optimizer->slots);
    tp_pointer_map_free(&optimizer->index);
    tp_variable_destroy(optimizer->iterations);
    pthread_mutex_destroy(&optimizer->mutex);
    tp_context_release(optimizer->context);
    free(optimizer);
}

const char *tp_optimizer_name(const tp_optimizer_t *optimizer) {
    if (optimizer == NULL) return "";
    return optimizer->kind == TP_OPTIMIZER_ADAM ? "Adam" : "SGD";
}

double tp_optimizer_learning_rate(const tp_optimizer_t *optimizer) {
    if (optimizer == NULL) return 0;
    tp_optimizer_t *mutable = (tp_optimizer_t *)optimizer; /* the mutex only */
    pthread_mutex_lock(&mutable->mutex);
    double rate = optimizer->learning_rate;
    pthread_mutex_unlock(&mutable->mutex);
    return rate;
}

tp_status_t *tp_optimizer_set_learning_rate(tp_optimizer_t *optimizer, double learning_rate) {
    TP_REQUIRE_ARG(optimizer);
    TP_RETURN_IF_ERROR(check_learning_rate(__func__, learning_rate));
    pthread_mutex_lock(&optimizer->mutex);
    optimizer->learning_rate = learning_rate;
    pthread_mutex_unlock(&optimizer->mutex);
    return NULL;
}

/* The step count as the variable holds it now (a checkpoint may have restored it). */
static tp_status_t *read_iterations(tp_optimizer_t *optimizer, int64_t *out) {
    tp_tensor_t *value;
    TP_RETURN_IF_ERROR(tp_variable_read_untaped(optimizer->iterations, &value));
    tp_status_t *error = tp_tensor_read(value, out, sizeof *out);
    tp_tensor_release(value);
    return tp_status_annotate(error, "reading optimizer/iterations");
}

tp_status_t *tp_optimizer_iterations(tp_optimizer_t *optimizer, int64_t *out_iterations) {
    TP_REQUIRE_ARG(optimizer);
    TP_REQUIRE_ARG(out_iterations);
    pthread_mutex_lock(&optimizer->mutex);
    tp_status_t *error = read_iterations(optimizer, out_iterations);
    pthread_mutex_unlock(&optimizer->mutex);
    return tp_status_annotate(error, __func__);
}

size_t tp_optimizer_variables(tp_optimizer_t *optimizer, tp_variable_t **out, size_t capacity) {
    if (optimizer == NULL) return 0;
    pthread_mutex_lock(&optimizer->mutex);
    size_t count = 0;
    if (count < capacity) out[count] = optimizer->iterations;
    count++;
    for (size_t i = 0; i < optimizer->num_slots; i++) {
        for (size_t s = 0; s < TP_OPTIMIZER_MAX_SLOTS && optimizer->slots[i]->slots[s] != NULL;
             s++) {
            if (count < capacity) out[count] = optimizer->slots[i]->slots[s];
            count++;
        }
    }
    pthread_mutex_unlock(&optimizer->mutex);
    return count;
}

tp_status_t *tp_optimizer_slot(tp_optimizer_t *optimizer, const tp_variable_t *variable,
                               const char *slot, tp_variable_t **out) {
    TP_REQUIRE_ARG(optimizer);
    TP_REQUIRE_ARG(variable);
    TP_REQUIRE_ARG(slot);
    TP_REQUIRE_ARG(out);
    const char *const *names = tp_optimizer_slot_names(optimizer);
    size_t s = 0;
    while (names[s] != NULL && strcmp(names[s], slot) != 0) s++;
    if (names[s] == NULL)
        return tp_status_make(TP_NOT_FOUND, "%s: %s%s keeps no slot '%s'", __func__,
                              tp_optimizer_name(optimizer),
                              optimizer->kind == TP_OPTIMIZER_SGD && optimizer->momentum == 0
                                  ? " without momentum"
                                  : "",
                              slot);
    pthread_mutex_lock(&optimizer->mutex);
    int32_t at = tp_pointer_map_get(&optimizer->index, variable);
    if (at >= 0) *out = optimizer->slots[at]->slots[s];
    pthread_mutex_unlock(&optimizer->mutex);
    if (at < 0)
        return tp_status_make(TP_NOT_FOUND, "%s: variable '%s' has no slots yet: the optimizer "
                              "has not updated or built it", __func__,
                              tp_variable_name(variable));
    return NULL;
}

/* ---- Checking a step's arguments -------------------------------------------------------- */

static tp_status_t *check_variable(const tp_optimizer_t *optimizer, tp_variable_t *const *variables,
                                   size_t i, tp_pointer_map_t *seen) {
    const tp_variable_t *variable = variables[i];
    const char *name = tp_variable_name(variable);
    if (tp_variable_context(variable) != optimizer->context)
        return tp_status_make(TP_INVALID_ARGUMENT, "variable '%s' belongs to another context than "
                              "the optimizer", name);
    tp_dtype_t dtype = tp_variable_dtype(variable);
    if (dtype != TP_FLOAT32 && dtype != TP_FLOAT64)
        return tp_status_make(TP_INVALID_ARGUMENT, "variable '%s' is %s; optimizers update "
                              "float32 and float64 variables", name, tp_dtype_name(dtype));
    int32_t earlier = tp_pointer_map_get(seen, variable);
    if (earlier >= 0)
        return tp_status_make(TP_INVALID_ARGUMENT, "variable '%s' is listed twice (%d and %zu); "
                              "one step updates each once", name, (int)earlier, i);
    if (i > INT32_MAX || !tp_pointer_map_put(seen, variable, (int32_t)i))
        return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    return NULL;
}

tp_status_t *tp_optimizer_check_gradient_like(const tp_variable_t *variable,
                                              const tp_tensor_t *grad) {
    tp_shape_t shape = tp_variable_shape(variable);
    if (grad->dtype == tp_variable_dtype(variable) && tp_shape_equal(&grad->shape, &shape))
        return NULL;
    char want[128], got[128];
    tp_shape_format(&shape, want, sizeof want);
    tp_shape_format(&grad->shape, got, sizeof got);
    return tp_status_make(TP_INVALID_ARGUMENT, "variable '%s' is %s %s, its gradient %s %s",
                          tp_variable_name(variable), tp_dtype_name(tp_variable_dtype(variable)),
                          want, tp_dtype_name(grad->dtype), got);
}

static tp_status_t *check_gradient(const tp_optimizer_t *optimizer, const tp_variable_t *variable,
                                   const tp_tensor_t *grad) {
    const char *name = tp_variable_name(variable);
    if (grad->context != optimizer->context)
        return tp_status_make(TP_INVALID_ARGUMENT, "the gradient of variable '%s' belongs to "
                              "another context", name);
    TP_RETURN_IF_ERROR(tp_optimizer_check_gradient_like(variable, grad));
    return tp_status_annotate(tp_tensor_require_values(grad, "an optimizer step"),
                              "the gradient of variable '%s'", name);
}

/* Everything about the arguments that can be known without running anything. */
static tp_status_t *check_step(const tp_optimizer_t *optimizer, tp_variable_t *const *variables,
                               tp_tensor_t *const *grads, size_t count) {
    if (tp_trace_current(optimizer->context) != NULL)
        return tp_status_make(TP_UNIMPLEMENTED, "inside a traced function: a graph cannot "
                              "update variables; step after calling it");
    if (count == 0) return NULL;
    if (variables == NULL)
        return tp_status_make(TP_INVALID_ARGUMENT, "argument 'variables' is NULL");
    tp_pointer_map_t seen = TP_POINTER_MAP_INIT;
    tp_status_t *error = NULL;
    for (size_t i = 0; i < count && error == NULL; i++) {
        if (variables[i] == NULL)
            error = tp_status_make(TP_INVALID_ARGUMENT, "variable %zu is NULL", i);
        else if (grads != NULL && grads[i] == NULL)
            error = tp_status_make(TP_INVALID_ARGUMENT, "the gradient of variable '%s' (%zu) is "
                                   "NULL", tp_variable_name(variables[i]), i);
        else
            error = check_variable(optimizer, variables, i, &seen);
        if (error == NULL && grads != NULL)
            error = check_gradient(optimizer, variables[i], grads[i]);
    }
    tp_pointer_map_free(&seen);
    return error;
}

/* ---- Slots ------------------------------------------------------------------------------ */

/* A slot named "optimizer/NAME/SLOT" of zeros like `variable`, on its device. */
static tp_status_t *make_slot(tp_optimizer_t *optimizer, tp_variable_t *variable,
                              const char *slot, tp_variable_t **out) {
    tp_tensor_t *value, *zeros = NULL;
    TP_RETURN_IF_ERROR(tp_variable_read_untaped(variable, &value));
    tp_status_t *error = tp_execute_on(optimizer->context, tp_variable_device_handle(variable),
                                       "ZerosLike", &value, 1, NULL, 0, &zeros, 1);
    tp_tensor_release(value);
    const char *name = tp_variable_name(variable);
    size_t length = strlen("optimizer/") + strlen(name) + 1 + strlen(slot) + 1;
    char *slot_name = error == NULL ? malloc(length) : NULL;
    if (error == NULL && slot_name == NULL)
        error = tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    if (error == NULL) {
        snprintf(slot_name, length, "optimizer/%s/%s", name, slot);
        error = tp_variable_create(optimizer->context, slot_name, zeros, NULL, out);
    }
    free(slot_name);
    tp_tensor_release(zeros);
    return tp_status_annotate(error, "making slot '%s' of variable '%s'", slot, name);
}

/* The slots of `variable`, made when it has none yet. Under the mutex. A slot of zeros is
 * what a variable without slots behaves as, so slots made for a step that then fails change
 * nothing that an update would see. */
static tp_status_t *slots_of(tp_optimizer_t *optimizer, tp_variable_t *variable,
                             tp_optimizer_slots_t **out) {
    int32_t at = tp_pointer_map_get(&optimizer->index, variable);
    if (at >= 0) {
        *out = optimizer->slots[at];
        return NULL;
    }
    if (optimizer->num_slots == optimizer->capacity) {
        size_t capacity = optimizer->capacity == 0 ? 16 : optimizer->capacity * 2;
        tp_optimizer_slots_t **grown = realloc(optimizer->slots, capacity * sizeof *grown);
        if (grown == NULL || capacity > INT32_MAX)
            return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
        optimizer->slots = grown;
        optimizer->capacity = capacity;
    }
    tp_optimizer_slots_t *slots = calloc(1, sizeof *slots);
    if (slots == NULL) return tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    slots->variable = variable;
    const char *const *names = tp_optimizer_slot_names(optimizer);
    tp_status_t *error = NULL;
    for (size_t s = 0; names[s] != NULL && error == NULL; s++)
        error = make_slot(optimizer, variable, names[s], &slots->slots[s]);
    if (error == NULL && !tp_pointer_map_put(&optimizer->index, variable,
                                             (int32_t)optimizer->num_slots))
        error = tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory");
    if (error != NULL) {
        for (size_t s = 0; s < TP_OPTIMIZER_MAX_SLOTS; s++) tp_variable_destroy(slots->slots[s]);
        free(slots);
        return error;
    }
    optimizer->slots[optimizer->num_slots++] = slots;
    *out = slots;
    return NULL;
}

tp_status_t *tp_optimizer_build(tp_optimizer_t *optimizer, tp_variable_t *const *variables,
                                size_t count) {
    TP_REQUIRE_ARG(optimizer);
    TP_RETURN_IF_ERROR(
        tp_status_annotate(check_step(optimizer, variables, NULL, count), __func__));
    pthread_mutex_lock(&optimizer->mutex);
    tp_status_t *error = NULL;
    for (size_t i = 0; i < count && error == NULL; i++) {
        tp_optimizer_slots_t *slots;
        error = slots_of(optimizer, variables[i], &slots);
    }
    pthread_mutex_unlock(&optimizer->mutex);
    return tp_status_annotate(error, __func__);
}

/* ---- A step ----------------------------------------------------------------------------- */

/* Every new value, then one all-or-nothing assignment. Under the mutex. */
static tp_status_t *step_locked(tp_optimizer_t *optimizer, tp_variable_t *const *variables,
                                tp_tensor_t *const *grads, size_t count) {
    int64_t iterations;
    TP_RETURN_IF_ERROR(read_iterations(optimizer, &iterations));
    if (iterations < 0 || iterations == INT64_MAX)
        return tp_status_make(TP_FAILED_PRECONDITION, "optimizer/iterations is %lld; a step "
                              "needs it in [0, %lld)", (long long)iterations,
                              (long long)INT64_MAX);
    size_t per_variable = 1 + slot_count(optimizer), total = count * per_variable + 1;
    tp_variable_t **targets = calloc(total, sizeof *targets);
    tp_tensor_t **values = calloc(total, sizeof *values);
    tp_status_t *error = targets == NULL || values == NULL
                             ? tp_status_make(TP_RESOURCE_EXHAUSTED, "out of host memory")
                             : NULL;
    /* The scalars in each dtype a variable has: float32 and float64. */
    tp_optimizer_scalars_t scalars[2] = {{0}};
    bool made[2] = {false, false};
    for (size_t i = 0; i < count && error == NULL; i++) {
        tp_dtype_t dtype = tp_variable_dtype(variables[i]);
        size_t which = dtype == TP_FLOAT64;
        if (!made[which]) {
            error = tp_optimizer_make_scalars(optimizer, dtype, iterations + 1, &scalars[which]);
            made[which] = error == NULL;
        }
        tp_optimizer_slots_t *slots = NULL;
        if (error == NULL) error = slots_of(optimizer, variables[i], &slots);
        if (error == NULL)
            error = tp_optimizer_compute_update(optimizer, variables[i], slots, grads[i],
                                                &scalars[which], values + i * per_variable);
        if (error != NULL) {
            error = tp_status_annotate(error, "variable '%s'", tp_variable_name(variables[i]));
            break;
        }
        targets[i * per_variable] = variables[i];
        for (size_t s = 1; s < per_variable; s++)
            targets[i * per_variable + s] = slots->slots[s - 1];
    }
    int64_t next = iterations + 1;
    if (error == NULL) {
        targets[total - 1] = optimizer->iterations;
        error = tp_tensor_create(optimizer->context, TP_INT64, TP_SCALAR_SHAPE, &next,
                                 sizeof next, &values[total - 1]);
    }
    if (error == NULL) error = tp_variable_assign_all(targets, values, total);
    for (size_t i = 0; values != NULL && i < total; i++) tp_tensor_release(values[i]);
    for (size_t d = 0; d < 2; d++) tp_optimizer_release_scalars(&scalars[d]);
    free(targets);
    free(values);
    return error;
}

tp_status_t *tp_optimizer_apply(tp_optimizer_t *optimizer, tp_variable_t *const *variables,
                                tp_tensor_t *const *grads, size_t count) {
    TP_REQUIRE_ARG(optimizer);
    if (count > 0) TP_REQUIRE_ARG(grads);
    TP_RETURN_IF_ERROR(
        tp_status_annotate(check_step(optimizer, variables, grads, count), __func__));
    pthread_mutex_lock(&optimizer->mutex);
    /* An update is not part of what a tape differentiates. */
    tp_tape_suspend();
    tp_status_t *error = step_locked(optimizer, variables, grads, count);
    tp_tape_resume();
    pthread_mutex_unlock(&optimizer->mutex);
    return tp_status_annotate(error, "%s (%s)", __func__, tp_optimizer_name(optimizer));
}
