/* SPDX-License-Identifier: Apache-2.0 */
/* The classifier's losses: the softmax cross-entropy ops (ops_nn.c) averaged over the batch, so
 * that a tape differentiates them like any op and the mean is what the optimiser minimises. */
#include "base/status.h"
#include "tensorplug/training.h"

typedef tp_status_t *(*loss_op_fn)(tp_context_t *, tp_tensor_t *, tp_tensor_t *, tp_tensor_t **,
                                   tp_tensor_t **);

static tp_status_t *mean_loss(const char *name, tp_context_t *context, loss_op_fn op,
                              tp_tensor_t *labels, tp_tensor_t *logits, tp_tensor_t **out) {
    if (context == NULL || out == NULL)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: argument '%s' is NULL", name,
                              context == NULL ? "context" : "mean_loss");
    tp_tensor_t *per_row = NULL;
    TP_RETURN_IF_ERROR(op(context, logits, labels, &per_row, NULL));
    tp_status_t *error = tp_mean(context, per_row, NULL, 0, false, out);
    tp_tensor_release(per_row);
    return error;
}

tp_status_t *tp_softmax_cross_entropy(tp_context_t *context, tp_tensor_t *labels,
                                      tp_tensor_t *logits, tp_tensor_t **mean_loss_out) {
    return mean_loss(__func__, context, tp_softmax_cross_entropy_with_logits, labels, logits,
                     mean_loss_out);
}

tp_status_t *tp_sparse_softmax_cross_entropy(tp_context_t *context, tp_tensor_t *labels,
                                             tp_tensor_t *logits, tp_tensor_t **mean_loss_out) {
    return mean_loss(__func__, context, tp_sparse_softmax_cross_entropy_with_logits, labels,
                     logits, mean_loss_out);
}
