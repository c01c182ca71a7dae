/* SPDX-License-Identifier: Apache-2.0 */
/* The sequential model's insides, shared by its construction and its training loop. */
#ifndef TP_MODEL_MODEL_H
#define TP_MODEL_MODEL_H

#include "tensorplug/training.h"

typedef struct tp_dense_layer {
    int64_t inputs, units;
    tp_activation_t activation;
    tp_variable_t **kernel; /* by replica: inputs x units */
    tp_variable_t **bias;   /* by replica: units */
} tp_dense_layer_t;

struct tp_model {
    tp_context_t *context; /* retained */
    int64_t input_features;
    tp_mirrored_strategy_t *strategy;
    bool owns_strategy; /* made for a model given none: CPU:0 alone */
    size_t num_replicas;
    tp_dense_layer_t *layers;
    size_t num_layers;
};

/* The model's output for rows `x`, with replica `replica`'s variables read through the tapes
 * recording; ops go where the calling thread's scope puts them. */
tp_status_t *tp_model_forward(tp_model_t *model, size_t replica, tp_tensor_t *x,
                              tp_tensor_t **out);

/* Every variable of replica `replica`, layer by layer, kernel then bias: 2 per layer. */
void tp_model_replica_variables(const tp_model_t *model, size_t replica,
                                tp_variable_t **out);

#endif
