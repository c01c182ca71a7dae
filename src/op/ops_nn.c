/* SPDX-License-Identifier: Apache-2.0 */
/* The ops of a classifier's training step beyond dense layers: LogSoftmax, the softmax
 * cross-entropy losses (dense and sparse labels), FusedBatchNorm with its gradient, Dropout,
 * and GradientDescentUpdate, the optimizer's step var - alpha * delta in one pass. Their
 * semantics are TensorFlow's; the shape functions here check every shape and attribute, so
 * kernels see only calls that make sense. */
#include <math.h>

#include "base/shape.h"
#include "base/status.h"
#include "kernel/kernel_context.h"
#include "op/op_defs.h"
#include "op/shape_functions.h"
#include "tensor/tensor.h"

static const tp_dtype_t floats[] = {TP_OP_FLOAT_DTYPES};
static const tp_dtype_t label_dtypes[] = {TP_INT32, TP_INT64};

#define COUNT TP_OP_COUNT
#define ARG TP_OP_ARG
#define TYPE_ATTR TP_OP_TYPE_ATTR

static const tp_op_arg_def_t arg_logits[] = {ARG("logits")};
static const tp_op_arg_def_t arg_logsoftmax[] = {ARG("logsoftmax")};
static const tp_op_arg_def_t args_features_labels[] = {ARG("features"), ARG("labels")};
static const tp_op_arg_def_t args_features_sparse_labels[] = {
    ARG("features"), TP_OP_TYPED_ARG("labels", "Tlabels")};
static const tp_op_arg_def_t args_loss_backprop[] = {ARG("loss"), ARG("backprop")};
static const tp_op_arg_def_t args_batch_norm[] = {ARG("x"), ARG("scale"), ARG("offset"),
                                                  ARG("mean"), ARG("variance")};
static const tp_op_arg_def_t args_batch_norm_outputs[] = {ARG("y"), ARG("batch_mean"),
                                                          ARG("batch_variance")};
static const tp_op_arg_def_t args_batch_norm_grad[] = {
    ARG("y_backprop"), ARG("x"),        ARG("scale"), ARG("mean"), ARG("variance"),
    ARG("batch_mean_backprop"), ARG("batch_variance_backprop")};
static const tp_op_arg_def_t args_batch_norm_grad_outputs[] = {
    ARG("x_backprop"), ARG("scale_backprop"), ARG("offset_backprop")};
static const tp_op_arg_def_t arg_x[] = {ARG("x")};
static const tp_op_arg_def_t args_y_mask[] = {ARG("y"), ARG("mask")};
static const tp_op_arg_def_t args_var_alpha_delta[] = {ARG("var"), ARG("alpha"), ARG("delta")};
static const tp_op_arg_def_t arg_out[] = {ARG("out")};

static const tp_op_attr_def_t float_type[] = {TYPE_ATTR(floats, COUNT(floats))};
static const tp_op_attr_def_t sparse_attrs[] = {
    TYPE_ATTR(floats, COUNT(floats)),
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "Tlabels", .type = TP_ATTR_DTYPE,
     .allowed_dtypes = label_dtypes, .num_allowed_dtypes = COUNT(label_dtypes),
     .has_default = 1, .default_int = TP_INT64}};
/* TensorFlow's defaults: epsilon 1e-4, training, no running average (factor 1). */
static const tp_op_attr_def_t batch_norm_attrs[] = {
    TYPE_ATTR(floats, COUNT(floats)),
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "epsilon", .type = TP_ATTR_FLOAT,
     .has_default = 1, .default_float = 0.0001},
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "is_training", .type = TP_ATTR_BOOL,
     .has_default = 1, .default_int = 1},
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "exponential_avg_factor",
     .type = TP_ATTR_FLOAT, .has_default = 1, .default_float = 1.0}};
static const tp_op_attr_def_t dropout_attrs[] = {
    TYPE_ATTR(floats, COUNT(floats)),
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "rate", .type = TP_ATTR_FLOAT},
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "seed", .type = TP_ATTR_INT,
     .has_default = 1}};

static const char *op_name(const tp_kernel_context_t *call) { return call->op->def->name; }

static const tp_shape_t *input_shape(const tp_kernel_context_t *call, int32_t index) {
    return &call->inputs[index]->shape;
}

static void set_output(tp_kernel_context_t *call, int32_t index, const tp_shape_t *shape) {
    call->output_shapes[index] = *shape;
    call->output_shape_set[index] = true;
}

static tp_status_t *shape_log_softmax(tp_kernel_context_t *call) {
    if (input_shape(call, 0)->rank < 1)
        return tp_status_make(TP_INVALID_ARGUMENT, "LogSoftmax: logits must have rank >= 1");
    set_output(call, 0, input_shape(call, 0));
    return NULL;
}

/* TensorFlow's ApplyGradientDescent as a value: out = var - alpha * delta, a new tensor (the
 * variable swaps it in), with alpha a scalar and delta of var's shape. */
static tp_status_t *shape_gradient_descent_update(tp_kernel_context_t *call) {
    const tp_shape_t *var = input_shape(call, 0), *alpha = input_shape(call, 1),
                     *delta = input_shape(call, 2);
    char tv[256], td[256];
    if (alpha->rank != 0)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "GradientDescentUpdate: alpha must be a scalar; got shape %s",
                              tp_shape_text(alpha, tv, sizeof tv));
    if (!tp_shape_equal(var, delta))
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "GradientDescentUpdate: var and delta must have the same shape; "
                              "got %s and %s",
                              tp_shape_text(var, tv, sizeof tv),
                              tp_shape_text(delta, td, sizeof td));
    set_output(call, 0, var);
    return NULL;
}

/* loss [batch] and backprop [batch, classes] from features [batch, classes]. */
static void set_loss_outputs(tp_kernel_context_t *call, const tp_shape_t *features) {
    tp_shape_t loss = {.rank = 1, .dims = {features->dims[0]}};
    set_output(call, 0, &loss);
    set_output(call, 1, features);
}

static tp_status_t *shape_softmax_cross_entropy(tp_kernel_context_t *call) {
    const tp_shape_t *features = input_shape(call, 0), *labels = input_shape(call, 1);
    if (features->rank != 2 || !tp_shape_equal(features, labels)) {
        char tf[128], tl[128];
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "SoftmaxCrossEntropyWithLogits: features and labels must be "
                              "matrices [batch, classes] of one shape; got features %s and "
                              "labels %s",
                              tp_shape_text(features, tf, sizeof tf),
                              tp_shape_text(labels, tl, sizeof tl));
    }
    set_loss_outputs(call, features);
    return NULL;
}

static tp_status_t *shape_sparse_softmax_cross_entropy(tp_kernel_context_t *call) {
    const tp_shape_t *features = input_shape(call, 0), *labels = input_shape(call, 1);
    if (features->rank != 2 || labels->rank != 1 || labels->dims[0] != features->dims[0]) {
        char tf[128], tl[128];
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "SparseSoftmaxCrossEntropyWithLogits: features must be a matrix "
                              "[batch, classes] and labels a vector [batch]; got features %s "
                              "and labels %s",
                              tp_shape_text(features, tf, sizeof tf),
                              tp_shape_text(labels, tl, sizeof tl));
    }
    set_loss_outputs(call, features);
    return NULL;
}

/* FusedBatchNorm's and FusedBatchNormGrad's attributes. */
static tp_status_t *check_batch_norm_attrs(const tp_kernel_context_t *call) {
    double epsilon = tp_kernel_context_attr(call, "epsilon")->f;
    double factor = tp_kernel_context_attr(call, "exponential_avg_factor")->f;
    if (!(epsilon >= 0) || isinf(epsilon))
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "%s: epsilon must be a finite number >= 0, not %g", op_name(call),
                              epsilon);
    if (!(factor >= 0 && factor <= 1))
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "%s: exponential_avg_factor must be in [0, 1], not %g",
                              op_name(call), factor);
    return NULL;
}

/* x is [N, C] or NHWC; inputs [first, first + count) are per-channel vectors [C]. */
static tp_status_t *check_batch_norm_shapes(const tp_kernel_context_t *call, int32_t x_index,
                                            int32_t first, int32_t count) {
    const tp_shape_t *x = input_shape(call, x_index);
    char tx[128], tv[128];
    if (x->rank != 2 && x->rank != 4)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "%s: x must be [batch, channels] or NHWC [batch, height, width, "
                              "channels]; got %s",
                              op_name(call), tp_shape_text(x, tx, sizeof tx));
    int64_t channels = x->dims[x->rank - 1];
    for (int32_t i = first; i < first + count; i++) {
        const tp_shape_t *v = input_shape(call, i);
        if (v->rank != 1 || v->dims[0] != channels)
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "%s: %s must be a vector of x's %lld channels [%lld]; got %s "
                                  "for x %s",
                                  op_name(call), call->op->def->inputs[i].name,
                                  (long long)channels, (long long)channels,
                                  tp_shape_text(v, tv, sizeof tv),
                                  tp_shape_text(x, tx, sizeof tx));
    }
    return NULL;
}

static tp_status_t *shape_fused_batch_norm(tp_kernel_context_t *call) {
    TP_RETURN_IF_ERROR(check_batch_norm_attrs(call));
    TP_RETURN_IF_ERROR(check_batch_norm_shapes(call, 0, 1, 4));
    set_output(call, 0, input_shape(call, 0));
    set_output(call, 1, input_shape(call, 1));
    set_output(call, 2, input_shape(call, 1));
    return NULL;
}

static tp_status_t *shape_fused_batch_norm_grad(tp_kernel_context_t *call) {
    TP_RETURN_IF_ERROR(check_batch_norm_attrs(call));
    TP_RETURN_IF_ERROR(check_batch_norm_shapes(call, 1, 2, 5));
    if (!tp_shape_equal(input_shape(call, 0), input_shape(call, 1))) {
        char ty[128], tx[128];
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "FusedBatchNormGrad: y_backprop %s must have x's shape %s",
                              tp_shape_text(input_shape(call, 0), ty, sizeof ty),
                              tp_shape_text(input_shape(call, 1), tx, sizeof tx));
    }
    set_output(call, 0, input_shape(call, 1));
    set_output(call, 1, input_shape(call, 2));
    set_output(call, 2, input_shape(call, 2));
    return NULL;
}

static tp_status_t *shape_dropout(tp_kernel_context_t *call) {
    double rate = tp_kernel_context_attr(call, "rate")->f;
    if (!(rate >= 0 && rate < 1))
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "Dropout: rate must be in [0, 1), not %g", rate);
    set_output(call, 0, input_shape(call, 0));
    set_output(call, 1, input_shape(call, 0));
    return NULL;
}

static const tp_builtin_op_entry_t entries[] = {
    TP_OP_ENTRY("LogSoftmax", arg_logits, arg_logsoftmax, float_type, shape_log_softmax),
    TP_OP_ENTRY("SoftmaxCrossEntropyWithLogits", args_features_labels, args_loss_backprop,
                float_type, shape_softmax_cross_entropy),
    TP_OP_ENTRY("SparseSoftmaxCrossEntropyWithLogits", args_features_sparse_labels,
                args_loss_backprop, sparse_attrs, shape_sparse_softmax_cross_entropy),
    TP_OP_ENTRY("FusedBatchNorm", args_batch_norm, args_batch_norm_outputs, batch_norm_attrs,
                shape_fused_batch_norm),
    TP_OP_ENTRY("FusedBatchNormGrad", args_batch_norm_grad, args_batch_norm_grad_outputs,
                batch_norm_attrs, shape_fused_batch_norm_grad),
    TP_OP_ENTRY("GradientDescentUpdate", args_var_alpha_delta, arg_out, float_type,
                shape_gradient_descent_update),
    /* Stateful, as the random ops: never folded or merged, and a traced function's calls draw
     * new masks (the executor varies the seed per run). */
    {{.struct_size = sizeof(tp_op_def_t), .name = "Dropout", .inputs = arg_x, .num_inputs = 1,
      .outputs = args_y_mask, .num_outputs = 2, .attrs = dropout_attrs,
      .num_attrs = COUNT(dropout_attrs), .is_stateful = 1},
     shape_dropout},
};

const tp_op_family_t tp_ops_nn = {"nn", entries, COUNT(entries)};
