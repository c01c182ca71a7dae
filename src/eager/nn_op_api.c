/* SPDX-License-Identifier: Apache-2.0 */
/* The typed functions for the ops of src/op/ops_nn.c: each is tp_execute with its inputs and
 * attributes; outputs the caller does not want (a NULL pointer) are released here. */
#include "base/status.h"
#include "eager/op_api.h"

/* Runs `op` with two outputs, handing the second to `second` or releasing it. */
static tp_status_t *two_outputs(tp_context_t *c, const char *op, tp_tensor_t *const *inputs,
                                size_t num_inputs, const tp_attr_t *attrs, size_t num_attrs,
                                tp_tensor_t **first, tp_tensor_t **second) {
    if (first == NULL)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: the pointer for its first output is NULL",
                              op);
    tp_tensor_t *outputs[2] = {NULL, NULL};
    TP_RETURN_IF_ERROR(tp_execute(c, op, inputs, num_inputs, attrs, num_attrs, outputs, 2));
    *first = outputs[0];
    if (second != NULL)
        *second = outputs[1];
    else
        tp_tensor_release(outputs[1]);
    return NULL;
}

UNARY(tp_log_softmax, "LogSoftmax")

tp_status_t *tp_softmax_cross_entropy_with_logits(tp_context_t *c, tp_tensor_t *features,
                                                  tp_tensor_t *labels, tp_tensor_t **loss,
                                                  tp_tensor_t **backprop) {
    tp_tensor_t *inputs[2] = {features, labels};
    return two_outputs(c, "SoftmaxCrossEntropyWithLogits", inputs, 2, NULL, 0, loss, backprop);
}

tp_status_t *tp_sparse_softmax_cross_entropy_with_logits(tp_context_t *c, tp_tensor_t *features,
                                                         tp_tensor_t *labels, tp_tensor_t **loss,
                                                         tp_tensor_t **backprop) {
    tp_tensor_t *inputs[2] = {features, labels};
    return two_outputs(c, "SparseSoftmaxCrossEntropyWithLogits", inputs, 2, NULL, 0, loss,
                       backprop);
}

tp_status_t *tp_fused_batch_norm(tp_context_t *c, tp_tensor_t *x, tp_tensor_t *scale,
                                 tp_tensor_t *offset, tp_tensor_t *mean, tp_tensor_t *variance,
                                 double epsilon, bool is_training, double exponential_avg_factor,
                                 tp_tensor_t **y, tp_tensor_t **batch_mean,
                                 tp_tensor_t **batch_variance) {
    TP_REQUIRE_ARG(y);
    tp_tensor_t *inputs[5] = {x, scale, offset, mean, variance};
    tp_attr_t attrs[3] = {TP_ATTR_FLOAT_VALUE("epsilon", epsilon),
                          TP_ATTR_BOOL_VALUE("is_training", is_training),
                          TP_ATTR_FLOAT_VALUE("exponential_avg_factor", exponential_avg_factor)};
    tp_tensor_t *outputs[3] = {NULL, NULL, NULL};
    TP_RETURN_IF_ERROR(tp_execute(c, "FusedBatchNorm", inputs, 5, attrs, 3, outputs, 3));
    *y = outputs[0];
    tp_tensor_t **wanted[2] = {batch_mean, batch_variance};
    for (int k = 0; k < 2; k++) {
        if (wanted[k] != NULL)
            *wanted[k] = outputs[k + 1];
        else
            tp_tensor_release(outputs[k + 1]);
    }
    return NULL;
}

tp_status_t *tp_dropout(tp_context_t *c, tp_tensor_t *x, double rate, int64_t seed,
                        tp_tensor_t **y, tp_tensor_t **mask) {
    tp_attr_t attrs[2] = {TP_ATTR_FLOAT_VALUE("rate", rate), TP_ATTR_INT_VALUE("seed", seed)};
    return two_outputs(c, "Dropout", &x, 1, attrs, 2, y, mask);
}
