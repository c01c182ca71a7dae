/* SPDX-License-Identifier: Apache-2.0 */
/* Optimizers with state: the object and its slot bookkeeping (optimizers.c), and the update
 * rules as ops (optimizer_updates.c). */
#ifndef TP_MODEL_OPTIMIZERS_H
#define TP_MODEL_OPTIMIZERS_H

#include <pthread.h>

#include "base/pointer_map.h"
#include "tensorplug/training.h"

enum { TP_OPTIMIZER_MAX_SLOTS = 2 };

typedef enum { TP_OPTIMIZER_SGD, TP_OPTIMIZER_ADAM } tp_optimizer_kind_t;

/* The state kept for one variable: its slots, in the order the kind names them. */
typedef struct tp_optimizer_slots {
    const tp_variable_t *variable; /* the caller's */
    tp_variable_t *slots[TP_OPTIMIZER_MAX_SLOTS];
} tp_optimizer_slots_t;

struct tp_optimizer {
    tp_context_t *context; /* retained */
    tp_optimizer_kind_t kind;
    /* The hyperparameters; learning_rate is read and written under `mutex`. */
    double learning_rate, momentum, beta1, beta2, epsilon;
    bool nesterov;
    /* Held by apply, build and the readers of what follows, so that steps run one at a time. */
    pthread_mutex_t mutex;
    tp_variable_t *iterations; /* int64 scalar on CPU:0 */
    tp_optimizer_slots_t **slots; /* by first use */
    size_t num_slots, capacity;
    tp_pointer_map_t index; /* variable -> position in `slots` */
};

/* The slot names the optimizer keeps per variable ("momentum"; "m", "v"; none for plain SGD),
 * NULL-terminated. */
const char *const *tp_optimizer_slot_names(const tp_optimizer_t *optimizer);

/* Fails naming both when `grad` has not `variable`'s dtype and shape ("variable 'w' is float32
 * (2, 3), its gradient ..."): what tp_sgd_apply and an optimizer step check of each pair. */
tp_status_t *tp_optimizer_check_gradient_like(const tp_variable_t *variable,
                                              const tp_tensor_t *grad);

/* The scalars of one step in a variable's dtype, on the host: made once per step and dtype. */
typedef struct tp_optimizer_scalars {
    tp_tensor_t *learning_rate, *momentum;               /* SGD */
    tp_tensor_t *one_minus_beta1, *one_minus_beta2, *alpha, *epsilon; /* Adam */
} tp_optimizer_scalars_t;

/* The scalars for `dtype` at step `step` (1 for the first). */
tp_status_t *tp_optimizer_make_scalars(const tp_optimizer_t *optimizer, tp_dtype_t dtype,
                                       int64_t step, tp_optimizer_scalars_t *out);
void tp_optimizer_release_scalars(tp_optimizer_scalars_t *scalars);

/* The new values of `variable` and its slots after a step by `grad`, computed on the
 * variable's device: out[0] the variable's, out[1 + s] slot s's. Changes nothing. */
tp_status_t *tp_optimizer_compute_update(const tp_optimizer_t *optimizer,
                                         tp_variable_t *variable,
                                         const tp_optimizer_slots_t *slots, tp_tensor_t *grad,
                                         const tp_optimizer_scalars_t *scalars,
                                         tp_tensor_t **out);

#endif
