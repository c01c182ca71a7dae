/* SPDX-License-Identifier: Apache-2.0 */
/* Gradient check cases for the softmax family (Softmax, LogSoftmax, the softmax cross-entropy
 * losses) and the training layers (FusedBatchNorm, Dropout): src/autodiff/gradients_loss.c and
 * gradients_layers.c. Every floating-point output of a multi-output op is differentiated, so
 * each case names its outputs. Drawn sizes may be 0 wherever the op allows it: a training
 * batch norm needs a row (an empty batch has NaN statistics), and sparse labels a class. */
#include "gradcheck.h"

#define A GRADCHECK_SIZE_A
#define B GRADCHECK_SIZE_B

/* A float64 input of rank `rank` and the dimensions that follow, drawn as `values`. */
#define IN(values, rank, ...) {TP_FLOAT64, rank, {__VA_ARGS__}, values, 0}
#define ANY(rank, ...) IN(GRADCHECK_ANY, rank, __VA_ARGS__)
/* Class indices [batch] below `classes`, held fixed. */
#define LABELS(dtype, classes, batch) {dtype, 1, {batch}, GRADCHECK_INDEX, classes}

#define FLOAT_ATTR(attr_name, value) {.name = attr_name, .type = TP_ATTR_FLOAT, .f = (value)}
#define INT_ATTR(attr_name, value) {.name = attr_name, .type = TP_ATTR_INT, .i = (value)}
#define BOOL_ATTR(attr_name, value) {.name = attr_name, .type = TP_ATTR_BOOL, .i = (value)}

/* FusedBatchNorm of x (rank and dimensions given, A channels last) with scale, offset, mean
 * and a positive variance [A]; every input and its three outputs differentiated. */
#define BATCH_NORM_CASE(what_text, epsilon, training, factor, rank, ...)                       \
    {.op = "FusedBatchNorm", .what = what_text, .num_inputs = 5,                               \
     .inputs = {ANY(rank, __VA_ARGS__), ANY(1, A), ANY(1, A), ANY(1, A),                        \
                IN(GRADCHECK_POSITIVE, 1, A)},                                                 \
     .attrs = {FLOAT_ATTR("epsilon", epsilon), BOOL_ATTR("is_training", training),             \
               FLOAT_ATTR("exponential_avg_factor", factor)},                                  \
     .num_attrs = 3, .num_outputs = 3}

static const gradcheck_case_t cases[] = {
    {.op = "Softmax", .what = "a matrix, along its rows", .num_inputs = 1,
     .inputs = {ANY(2, A, B)}},
    {.op = "Softmax", .what = "a vector", .num_inputs = 1, .inputs = {ANY(1, A)}},
    {.op = "Softmax", .what = "rank 3, along the last axis", .num_inputs = 1,
     .inputs = {ANY(3, 2, A, B)}},
    {.op = "LogSoftmax", .what = "a matrix, along its rows", .num_inputs = 1,
     .inputs = {ANY(2, A, B)}},
    {.op = "LogSoftmax", .what = "rank 3, along the last axis", .num_inputs = 1,
     .inputs = {ANY(3, A, 2, B)}},

    {.op = "SoftmaxCrossEntropyWithLogits",
     .what = "loss and backprop, for features and labels whose rows sum to one",
     .num_inputs = 2, .inputs = {ANY(2, A, B), IN(GRADCHECK_PROBABILITIES, 2, A, B)},
     .num_outputs = 2},
    {.op = "SparseSoftmaxCrossEntropyWithLogits", .what = "loss and backprop, int64 labels",
     .num_inputs = 2, .inputs = {ANY(2, A, 3), LABELS(TP_INT64, 3, A)}, .num_outputs = 2},
    {.op = "SparseSoftmaxCrossEntropyWithLogits", .what = "loss and backprop, int32 labels",
     .num_inputs = 2, .inputs = {ANY(2, A, 5), LABELS(TP_INT32, 5, A)}, .num_outputs = 2},

    BATCH_NORM_CASE("training on [N, C], the batch's own statistics", 1e-3, 1, 1.0, 2, 3, A),
    BATCH_NORM_CASE("training on NHWC, with running averages", 1e-2, 1, 0.3, 4, 2, 2, 1, A),
    BATCH_NORM_CASE("training on a batch of one (variance 0)", 0.5, 1, 0.6, 2, 1, A),
    BATCH_NORM_CASE("inference on [N, C], empty batches included", 1e-3, 0, 1.0, 2, B, A),
    BATCH_NORM_CASE("inference on NHWC", 0.1, 0, 0.5, 4, B, 2, 2, A),

    {.op = "Dropout", .what = "rate 0.4: seed 3's mask, which the gradient reuses",
     .num_inputs = 1, .inputs = {ANY(2, A, B)},
     .attrs = {FLOAT_ATTR("rate", 0.4), INT_ATTR("seed", 3)}, .num_attrs = 2, .num_outputs = 2},
    {.op = "Dropout", .what = "rate 0: the identity", .num_inputs = 1, .inputs = {ANY(1, A)},
     .attrs = {FLOAT_ATTR("rate", 0.0), INT_ATTR("seed", 3)}, .num_attrs = 2, .num_outputs = 2},
};

const gradcheck_family_t gradcheck_cases_nn = {"nn", cases, sizeof cases / sizeof cases[0]};
