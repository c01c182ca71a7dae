/* SPDX-License-Identifier: Apache-2.0 */
/* Gradient-check cases of the softmax family (Softmax, LogSoftmax, the softmax cross-entropy
 * losses) and of the training layers (FusedBatchNorm, Dropout): src/autodiff/gradients_loss.c
 * and gradients_layers.c. Every output of a multi-output op is differentiated, so each case
 * names its outputs. Sizes drawn per run may be 0 wherever the op allows it: a training batch
 * norm needs a row at least (an empty batch has NaN statistics), and sparse labels need a
 * class. */
#include "gradcheck.h"

#define A GRADCHECK_SIZE_A
#define B GRADCHECK_SIZE_B

/* Plain initializers: the TP_ATTR_*_VALUE compound literals are not constant expressions. */
#define FLOAT_ATTR(n, v) {.name = (n), .type = TP_ATTR_FLOAT, .f = (v)}
#define INT_ATTR(n, v) {.name = (n), .type = TP_ATTR_INT, .i = (v)}
#define BOOL_ATTR(n, v) {.name = (n), .type = TP_ATTR_BOOL, .i = (v)}

#define INPUT(kind, rank, ...) {TP_FLOAT64, rank, {__VA_ARGS__}, kind, 0}
#define LABELS(dtype, limit, ...) {dtype, 1, {__VA_ARGS__}, GRADCHECK_INDEX, limit}

/* x, scale, offset, mean and a positive variance, channels A. */
#define BATCH_NORM_INPUTS(rank, ...)                                                          \
    {INPUT(GRADCHECK_ANY, rank, __VA_ARGS__), INPUT(GRADCHECK_ANY, 1, A),                    \
     INPUT(GRADCHECK_ANY, 1, A), INPUT(GRADCHECK_ANY, 1, A), INPUT(GRADCHECK_POSITIVE, 1, A)}, \
        5
#define BATCH_NORM_ATTRS(epsilon, training, factor)                                            \
    {FLOAT_ATTR("epsilon", epsilon), BOOL_ATTR("is_training", training),                       \
     FLOAT_ATTR("exponential_avg_factor", factor)},                                            \
        3

static const gradcheck_case_t cases[] = {
    {"Softmax", "a matrix, softmax along rows", {INPUT(GRADCHECK_ANY, 2, A, B)}, 1, {{0}}, 0, 0,
     0},
    {"Softmax", "a vector", {INPUT(GRADCHECK_ANY, 1, A)}, 1, {{0}}, 0, 0, 0},
    {"Softmax", "rank 3, along the last axis", {INPUT(GRADCHECK_ANY, 3, 2, A, B)}, 1, {{0}}, 0,
     0, 0},
    {"LogSoftmax", "a matrix", {INPUT(GRADCHECK_ANY, 2, A, B)}, 1, {{0}}, 0, 0, 0},
    {"LogSoftmax", "rank 3, along the last axis", {INPUT(GRADCHECK_ANY, 3, A, 2, B)}, 1, {{0}},
     0, 0, 0},
    {"SoftmaxCrossEntropyWithLogits",
     "loss and backprop, for features and labels whose rows sum to one",
     {INPUT(GRADCHECK_ANY, 2, A, B), INPUT(GRADCHECK_PROBABILITIES, 2, A, B)}, 2, {{0}}, 0, 2,
     0},
    {"SparseSoftmaxCrossEntropyWithLogits", "loss and backprop, int64 labels (held)",
     {INPUT(GRADCHECK_ANY, 2, A, 3), LABELS(TP_INT64, 3, A)}, 2, {{0}}, 0, 2, 0},
    {"SparseSoftmaxCrossEntropyWithLogits", "loss and backprop, int32 labels (held)",
     {INPUT(GRADCHECK_ANY, 2, A, 5), LABELS(TP_INT32, 5, A)}, 2, {{0}}, 0, 2, 0},
    {"FusedBatchNorm", "training on [N, C], the batch's own statistics",
     BATCH_NORM_INPUTS(2, 3, A), BATCH_NORM_ATTRS(1e-3, 1, 1.0), 3, 0},
    {"FusedBatchNorm", "training on NHWC with running averages",
     BATCH_NORM_INPUTS(4, 2, 2, 1, A), BATCH_NORM_ATTRS(1e-2, 1, 0.3), 3, 0},
    {"FusedBatchNorm", "training on a batch of one (variance 0)", BATCH_NORM_INPUTS(2, 1, A),
     BATCH_NORM_ATTRS(0.5, 1, 0.6), 3, 0},
    {"FusedBatchNorm", "inference on [N, C], empty batches included",
     BATCH_NORM_INPUTS(2, B, A), BATCH_NORM_ATTRS(1e-3, 0, 1.0), 3, 0},
    {"FusedBatchNorm", "inference on NHWC", BATCH_NORM_INPUTS(4, B, 2, 2, A),
     BATCH_NORM_ATTRS(0.1, 0, 0.5), 3, 0},
    {"Dropout", "rate 0.4: the mask of seed 3, reused by the gradient",
     {INPUT(GRADCHECK_ANY, 2, A, B)}, 1, {FLOAT_ATTR("rate", 0.4), INT_ATTR("seed", 3)}, 2, 2,
     0},
    {"Dropout", "rate 0: the identity", {INPUT(GRADCHECK_ANY, 1, A)}, 1,
     {FLOAT_ATTR("rate", 0.0), INT_ATTR("seed", 3)}, 2, 2, 0},
};

const gradcheck_family_t gradcheck_cases_nn = {"nn", cases, sizeof cases / sizeof cases[0]};
