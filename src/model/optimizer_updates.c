/* SPDX-License-Identifier: Apache-2.0 */
/* The update rules of SGD (plain, momentum, Nesterov) and Adam, in Keras's order of operations,
 * as ordinary ops placed on the variable's device: so any device with Mul, Add, Sub, Div and
 * Sqrt kernels runs its own variables' updates, and one without them falls back to the CPU
 * (tp_execute_on) with the results copied back. */
#include <math.h>

#include "autodiff/variable.h"
#include "base/status.h"
#include "eager/execute.h"
#include "model/optimizers.h"
#include "tensor/tensor.h"

static tp_status_t *scalar(tp_context_t *context, tp_dtype_t dtype, double value,
                           tp_tensor_t **out) {
    return tp_tensor_float_scalar(context, dtype, value, out);
}

tp_status_t *tp_optimizer_make_scalars(const tp_optimizer_t *optimizer, tp_dtype_t dtype,
                                       int64_t step, tp_optimizer_scalars_t *out) {
    tp_context_t *context = optimizer->context;
    *out = (tp_optimizer_scalars_t){0};
    tp_status_t *error = scalar(context, dtype, optimizer->learning_rate, &out->learning_rate);
    if (optimizer->kind == TP_OPTIMIZER_SGD) {
        if (error == NULL) error = scalar(context, dtype, optimizer->momentum, &out->momentum);
    } else {
        /* The bias correction of step t, folded into the step size: in double, so that
         * beta2^t stays accurate where 1 - beta2^t is small (the first steps). */
        double t = (double)step;
        double alpha = optimizer->learning_rate * sqrt(1.0 - pow(optimizer->beta2, t)) /
                       (1.0 - pow(optimizer->beta1, t));
        if (error == NULL)
            error = scalar(context, dtype, 1.0 - optimizer->beta1, &out->one_minus_beta1);
        if (error == NULL)
            error = scalar(context, dtype, 1.0 - optimizer->beta2, &out->one_minus_beta2);
        if (error == NULL) error = scalar(context, dtype, alpha, &out->alpha);
        if (error == NULL) error = scalar(context, dtype, optimizer->epsilon, &out->epsilon);
    }
    if (error != NULL) tp_optimizer_release_scalars(out);
    return error;
}

void tp_optimizer_release_scalars(tp_optimizer_scalars_t *scalars) {
    tp_tensor_t **all[] = {&scalars->learning_rate,   &scalars->momentum, &scalars->one_minus_beta1,
                           &scalars->one_minus_beta2, &scalars->alpha,    &scalars->epsilon};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        tp_tensor_release(*all[i]);
        *all[i] = NULL;
    }
}

/* Where one variable's update runs, and the temporaries it makes. */
typedef struct {
    tp_context_t *context;
    tp_device_t *device;
    tp_tensor_t *made[16]; /* released at the end; results are retained out of it */
    size_t num_made;
} update_t;

/* out = op(a, b) (b NULL: op(a)) on the variable's device, kept for release. NULL stays NULL
 * after an earlier failure, so that a rule reads as its formula. */
/* Whether no earlier step failed and `made` has room for one more tensor. */
static bool can_make(update_t *u, tp_status_t **error) {
    if (*error != NULL) return false;
    if (u->num_made == sizeof u->made / sizeof u->made[0]) {
        *error = tp_status_make(TP_INTERNAL, "an update rule makes more than %zu tensors",
                                sizeof u->made / sizeof u->made[0]);
        return false;
    }
    return true;
}

static tp_tensor_t *op(update_t *u, tp_status_t **error, const char *name, tp_tensor_t *a,
                       tp_tensor_t *b) {
    if (!can_make(u, error)) return NULL;
    tp_tensor_t *inputs[2] = {a, b}, *out = NULL;
    *error = tp_execute_on(u->context, u->device, name, inputs, b != NULL ? 2 : 1, NULL, 0, &out,
                           1);
    if (*error != NULL) return NULL;
    u->made[u->num_made++] = out;
    return out;
}

/* variable - learning_rate * gradient, in one pass where the device has the fused kernel */
static void sgd(update_t *u, tp_status_t **error, tp_tensor_t *w, tp_tensor_t *g,
                const tp_optimizer_scalars_t *s, tp_tensor_t **out) {
    if (!can_make(u, error)) return;
    *error = tp_execute_descent_on(u->context, u->device, w, s->learning_rate, g, &out[0]);
    if (*error == NULL) u->made[u->num_made++] = out[0];
}

/* velocity' = momentum * velocity - lr * g; w + velocity' or, Nesterov's,
 * w + (momentum * velocity' - lr * g) */
static void momentum(update_t *u, tp_status_t **error, bool nesterov, tp_tensor_t *w,
                     tp_tensor_t *g, tp_tensor_t *velocity, const tp_optimizer_scalars_t *s,
                     tp_tensor_t **out) {
    tp_tensor_t *step = op(u, error, "Mul", g, s->learning_rate);
    tp_tensor_t *next = op(u, error, "Sub", op(u, error, "Mul", velocity, s->momentum), step);
    tp_tensor_t *delta =
        nesterov ? op(u, error, "Sub", op(u, error, "Mul", next, s->momentum), step) : next;
    out[0] = op(u, error, "Add", w, delta);
    out[1] = next;
}

/* m' = m + (g - m)(1 - beta1), v' = v + (g^2 - v)(1 - beta2), w - (m' alpha) / (sqrt(v') + eps) */
static void adam(update_t *u, tp_status_t **error, tp_tensor_t *w, tp_tensor_t *g,
                 tp_tensor_t *m, tp_tensor_t *v, const tp_optimizer_scalars_t *s,
                 tp_tensor_t **out) {
    tp_tensor_t *m_next = op(u, error, "Add", m,
                             op(u, error, "Mul", op(u, error, "Sub", g, m), s->one_minus_beta1));
    tp_tensor_t *squared = op(u, error, "Mul", g, g);
    tp_tensor_t *v_next =
        op(u, error, "Add", v,
           op(u, error, "Mul", op(u, error, "Sub", squared, v), s->one_minus_beta2));
    tp_tensor_t *denominator = op(u, error, "Add", op(u, error, "Sqrt", v_next, NULL), s->epsilon);
    tp_tensor_t *delta = op(u, error, "Div", op(u, error, "Mul", m_next, s->alpha), denominator);
    out[0] = op(u, error, "Sub", w, delta);
    out[1] = m_next;
    out[2] = v_next;
}

tp_status_t *tp_optimizer_compute_update(const tp_optimizer_t *optimizer,
                                         tp_variable_t *variable,
                                         const tp_optimizer_slots_t *slots, tp_tensor_t *grad,
                                         const tp_optimizer_scalars_t *scalars,
                                         tp_tensor_t **out) {
    update_t u = {.context = optimizer->context, .device = tp_variable_device_handle(variable)};
    tp_tensor_t *w = NULL, *state[TP_OPTIMIZER_MAX_SLOTS] = {NULL};
    tp_tensor_t *results[1 + TP_OPTIMIZER_MAX_SLOTS] = {NULL};
    size_t num_results = 1;
    tp_status_t *error = tp_variable_read_untaped(variable, &w);
    for (size_t s = 0; s < TP_OPTIMIZER_MAX_SLOTS && slots->slots[s] != NULL; s++) {
        if (error == NULL) error = tp_variable_read_untaped(slots->slots[s], &state[s]);
        num_results++;
    }
    if (optimizer->kind == TP_OPTIMIZER_ADAM)
        adam(&u, &error, w, grad, state[0], state[1], scalars, results);
    else if (optimizer->momentum != 0)
        momentum(&u, &error, optimizer->nesterov, w, grad, state[0], scalars, results);
    else
        sgd(&u, &error, w, grad, scalars, results);
    for (size_t r = 0; r < num_results; r++)
        out[r] = error == NULL ? tp_tensor_retain(results[r]) : NULL;
    for (size_t i = 0; i < u.num_made; i++) tp_tensor_release(u.made[i]);
    tp_tensor_release(w);
    for (size_t s = 0; s < TP_OPTIMIZER_MAX_SLOTS; s++) tp_tensor_release(state[s]);
    return error;
}
