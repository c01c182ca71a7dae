/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Gradients of the layers that behave differently while training: FusedBatchNorm and Dropout.
 *
 * FusedBatchNorm's x, scale and offset receive what the FusedBatchNormGrad kernel computes in
 * one pass (devices/cpu/cpu_batch_norm.c gives the formulas), including the paths from x
 * through batch_mean and batch_variance. Its mean and variance inputs, small vectors, are
 * composed from element-wise ops, with inv = 1 / sqrt(variance + epsilon):
 *   training:  they only enter the running averages: dmean = (1 - f) dbatch_mean,
 *              dvariance = (1 - f) dbatch_variance (zero for f = 1);
 *   inference: they normalise y and pass through to batch_mean and batch_variance:
 *              dmean = dbatch_mean - scale inv sum(dy)          = dbatch_mean - scale inv doffset
 *              dvariance = dbatch_variance - scale inv^2 sum(dy x^) / 2
 *                        = dbatch_variance - scale dscale / (2 (variance + epsilon)).
 *
 * Dropout's x receives dy times the mask the forward pass drew, its second output: the same
 * elements are dropped going back as going forward.
 */
#include "autodiff/gradients.h"
#include "base/status.h"

/* A scalar of `like`'s dtype holding `value`. */
static tp_status_t *scalar_like(tp_context_t *c, tp_tensor_t *like, double value,
                                tp_tensor_t **out) {
    float single = (float)value;
    bool is_float32 = tp_tensor_dtype(like) == TP_FLOAT32;
    return tp_constant(c, tp_tensor_dtype(like), TP_SCALAR_SHAPE,
                       is_float32 ? (const void *)&single : (const void *)&value,
                       is_float32 ? sizeof single : sizeof value, out);
}

/* dmean and dvariance (each where needed) of a batch norm in training: (1 - f) times the
 * gradients of the running averages. */
static tp_status_t *running_average_gradients(const tp_gradient_op_t *op,
                                              tp_tensor_t *const *output_grads,
                                              const bool *needed, double factor,
                                              tp_tensor_t **input_grads) {
    tp_tensor_t *keep = NULL;
    tp_status_t *error = scalar_like(op->context, op->inputs[3], 1 - factor, &keep);
    for (int k = 0; k < 2 && error == NULL; k++)
        if (needed[3 + k])
            error = tp_mul(op->context, output_grads[1 + k], keep, &input_grads[3 + k]);
    tp_tensor_release(keep);
    return error;
}

/* dmean and dvariance of a batch norm in inference, from the kernel's doffset and dscale. */
static tp_status_t *statistics_gradients(const tp_gradient_op_t *op,
                                         tp_tensor_t *const *output_grads, const bool *needed,
                                         double epsilon, tp_tensor_t *dscale,
                                         tp_tensor_t *doffset, tp_tensor_t **input_grads) {
    tp_context_t *c = op->context;
    tp_tensor_t *scale = op->inputs[1], *variance = op->inputs[4];
    enum { EPSILON, HALF, SHIFTED, DEVIATION, PRODUCT, QUOTIENT, SCALED, COUNT };
    tp_tensor_t *t[COUNT] = {NULL};
    tp_status_t *error = scalar_like(c, variance, epsilon, &t[EPSILON]);
    if (error == NULL) error = tp_add(c, variance, t[EPSILON], &t[SHIFTED]);
    if (error == NULL && needed[3]) {
        error = tp_sqrt(c, t[SHIFTED], &t[DEVIATION]);
        if (error == NULL) error = tp_mul(c, scale, doffset, &t[PRODUCT]);
        if (error == NULL) error = tp_div(c, t[PRODUCT], t[DEVIATION], &t[QUOTIENT]);
        if (error == NULL) error = tp_sub(c, output_grads[1], t[QUOTIENT], &input_grads[3]);
        for (int k = PRODUCT; k <= QUOTIENT; k++) {
            tp_tensor_release(t[k]);
            t[k] = NULL;
        }
    }
    if (error == NULL && needed[4]) {
        error = scalar_like(c, variance, 0.5, &t[HALF]);
        if (error == NULL) error = tp_mul(c, scale, dscale, &t[PRODUCT]);
        if (error == NULL) error = tp_div(c, t[PRODUCT], t[SHIFTED], &t[QUOTIENT]);
        if (error == NULL) error = tp_mul(c, t[QUOTIENT], t[HALF], &t[SCALED]);
        if (error == NULL) error = tp_sub(c, output_grads[2], t[SCALED], &input_grads[4]);
    }
    for (int k = 0; k < COUNT; k++) tp_tensor_release(t[k]);
    return error;
}

static TP_GRADIENT_FN(tp_gradient_fused_batch_norm) {
    tp_context_t *c = op->context;
    double epsilon = tp_gradient_attr(op, "epsilon")->f;
    double factor = tp_gradient_attr(op, "exponential_avg_factor")->f;
    bool training = tp_gradient_attr(op, "is_training")->i != 0;
    tp_tensor_t *inputs[7] = {output_grads[0], op->inputs[0], op->inputs[1],  op->inputs[3],
                              op->inputs[4],   output_grads[1], output_grads[2]};
    tp_attr_t attrs[3] = {TP_ATTR_FLOAT_VALUE("epsilon", epsilon),
                          TP_ATTR_BOOL_VALUE("is_training", training),
                          TP_ATTR_FLOAT_VALUE("exponential_avg_factor", factor)};
    tp_tensor_t *grads[3] = {NULL, NULL, NULL}; /* dx, dscale, doffset */
    tp_status_t *error = tp_execute(c, "FusedBatchNormGrad", inputs, 7, attrs, 3, grads, 3);
    if (error == NULL && (needed[3] || needed[4]))
        error = training ? running_average_gradients(op, output_grads, needed, factor,
                                                     input_grads)
                         : statistics_gradients(op, output_grads, needed, epsilon, grads[1],
                                                grads[2], input_grads);
    for (int k = 0; k < 3; k++) {
        if (error == NULL && needed[k])
            input_grads[k] = grads[k];
        else
            tp_tensor_release(grads[k]);
    }
    if (error != NULL)
        for (int k = 3; k < 5; k++) {
            tp_tensor_release(input_grads[k]);
            input_grads[k] = NULL;
        }
    return error;
}

static TP_GRADIENT_FN(tp_gradient_dropout) {
    (void)needed;
    return tp_mul(op->context, output_grads[0], op->outputs[1], &input_grads[0]);
}

static const tp_gradient_entry_t entries[] = {
    {"Dropout", tp_gradient_dropout},
    {"FusedBatchNorm", tp_gradient_fused_batch_norm},
};

const tp_gradient_family_t tp_gradients_layers = {entries, sizeof entries / sizeof entries[0]};
