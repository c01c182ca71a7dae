/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Gradients of the softmax family: Softmax, LogSoftmax and the softmax cross-entropy losses.
 * Each is composed of element-wise ops and a sum over the last axis, so it runs on any device
 * with those kernels and is itself differentiable (gradients of gradients work).
 *
 * With p = softmax(x) along the last axis, the Jacobian-vector products are
 *   Softmax:     dx = (dy - sum(dy p)) p
 *   LogSoftmax:  dx = dy - p sum(dy),        p = exp(logsoftmax(x))
 * and for the losses, whose outputs are loss [batch] and backprop = p - labels [batch, classes]:
 *   features:    dfeatures = dloss[:, None] backprop + (dbackprop - sum(dbackprop p)) p
 *   labels:      dlabels   = -dloss[:, None] logsoftmax(features) - dbackprop  (dense labels)
 * The first terms are TensorFlow's (dfeatures exact when each row of labels sums to one, as
 * the op assumes); the second terms differentiate the backprop output, which TensorFlow's
 * gradient takes into account for the features only: here the labels get theirs too, so every
 * output of the op is differentiated exactly.
 */
#include "autodiff/gradients.h"
#include "base/status.h"

/* Temporaries of a gradient, released together whatever happened. */
enum { MAX_TEMPS = 12 };
typedef struct {
    tp_tensor_t *t[MAX_TEMPS];
    int count;
} temps_t;

static tp_tensor_t **temp(temps_t *temps) {
    temps->t[temps->count] = NULL;
    return &temps->t[temps->count++];
}

static void release_temps(temps_t *temps) {
    for (int i = 0; i < temps->count; i++) tp_tensor_release(temps->t[i]);
}

static tp_status_t *sum_last_axis(tp_context_t *c, tp_tensor_t *x, tp_tensor_t **out) {
    const int64_t last[] = {-1};
    return tp_sum(c, x, last, 1, true, out);
}

/* (dy - sum(dy p)) p along the last axis: softmax's Jacobian-vector product. */
static tp_status_t *softmax_backward(tp_context_t *c, tp_tensor_t *p, tp_tensor_t *dy,
                                     tp_tensor_t **out) {
    temps_t temps = {.count = 0};
    tp_tensor_t **product = temp(&temps), **total = temp(&temps), **centred = temp(&temps);
    tp_status_t *error = tp_mul(c, dy, p, product);
    if (error == NULL) error = sum_last_axis(c, *product, total);
    if (error == NULL) error = tp_sub(c, dy, *total, centred);
    if (error == NULL) error = tp_mul(c, *centred, p, out);
    release_temps(&temps);
    return error;
}

static TP_GRADIENT_FN(tp_gradient_softmax) {
    (void)needed;
    return softmax_backward(op->context, op->outputs[0], output_grads[0], &input_grads[0]);
}

static TP_GRADIENT_FN(tp_gradient_log_softmax) {
    (void)needed;
    tp_context_t *c = op->context;
    temps_t temps = {.count = 0};
    tp_tensor_t **p = temp(&temps), **total = temp(&temps), **scaled = temp(&temps);
    tp_status_t *error = tp_exp(c, op->outputs[0], p);
    if (error == NULL) error = sum_last_axis(c, output_grads[0], total);
    if (error == NULL) error = tp_mul(c, *p, *total, scaled);
    if (error == NULL) error = tp_sub(c, output_grads[0], *scaled, &input_grads[0]);
    release_temps(&temps);
    return error;
}

/* The loss's gradient [batch] as a column [batch, 1], to broadcast over the classes. */
static tp_status_t *as_column(tp_context_t *c, tp_tensor_t *dloss, tp_tensor_t **out) {
    tp_shape_t shape = tp_tensor_shape(dloss);
    return tp_reshape(c, dloss, TP_SHAPE(shape.dims[0], 1), out);
}

/* What both losses give their features. */
static tp_status_t *features_gradient(const tp_gradient_op_t *op, tp_tensor_t *const *grads,
                                      tp_tensor_t *column, tp_tensor_t **out) {
    tp_context_t *c = op->context;
    temps_t temps = {.count = 0};
    tp_tensor_t **through_loss = temp(&temps), **p = temp(&temps);
    tp_tensor_t **through_backprop = temp(&temps);
    tp_status_t *error = tp_mul(c, column, op->outputs[1], through_loss);
    if (error == NULL) error = tp_softmax(c, op->inputs[0], p);
    if (error == NULL) error = softmax_backward(c, *p, grads[1], through_backprop);
    if (error == NULL) error = tp_add(c, *through_loss, *through_backprop, out);
    release_temps(&temps);
    return error;
}

static tp_status_t *loss_gradient(const tp_gradient_op_t *op, tp_tensor_t *const *grads,
                                  const bool *needed, bool dense_labels,
                                  tp_tensor_t **input_grads) {
    tp_context_t *c = op->context;
    temps_t temps = {.count = 0};
    tp_tensor_t **column = temp(&temps);
    tp_status_t *error = as_column(c, grads[0], column);
    if (error == NULL && needed[0]) error = features_gradient(op, grads, *column, &input_grads[0]);
    if (error == NULL && dense_labels && needed[1]) {
        tp_tensor_t **log_p = temp(&temps), **weighted = temp(&temps), **sum = temp(&temps);
        error = tp_log_softmax(c, op->inputs[0], log_p);
        if (error == NULL) error = tp_mul(c, *column, *log_p, weighted);
        if (error == NULL) error = tp_add(c, *weighted, grads[1], sum);
        if (error == NULL) error = tp_neg(c, *sum, &input_grads[1]);
        if (error != NULL && needed[0]) tp_gradient_release(input_grads, 1);
    }
    release_temps(&temps);
    return error;
}

static TP_GRADIENT_FN(tp_gradient_softmax_cross_entropy) {
    return loss_gradient(op, output_grads, needed, true, input_grads);
}

/* Integer labels receive no gradient. */
static TP_GRADIENT_FN(tp_gradient_sparse_softmax_cross_entropy) {
    return loss_gradient(op, output_grads, needed, false, input_grads);
}

static const tp_gradient_entry_t entries[] = {
    {"LogSoftmax", tp_gradient_log_softmax},
    {"Softmax", tp_gradient_softmax},
    {"SoftmaxCrossEntropyWithLogits", tp_gradient_softmax_cross_entropy},
    {"SparseSoftmaxCrossEntropyWithLogits", tp_gradient_sparse_softmax_cross_entropy},
};

const tp_gradient_family_t tp_gradients_loss = {entries, sizeof entries / sizeof entries[0]};
