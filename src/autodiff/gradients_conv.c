/* SPDX-License-Identifier: Apache-2.0 */
/* Gradients of convolution and pooling, as TensorFlow's nn_grad.py writes them: Conv2D's input
 * and filter receive Conv2DBackpropInput and Conv2DBackpropFilter of the output's gradient,
 * MaxPool's input receives MaxPoolGrad and AvgPool's AvgPoolGrad, each with the forward op's
 * window attributes and the input's shape. */
#include "autodiff/gradients.h"
#include "base/status.h"

/* The forward op's attributes named in `names` (the window's), as given to the gradient op,
 * then `extra` (a shape attribute) unless NULL. Returns how many were written. */
static size_t window_attrs(const tp_gradient_op_t *op, const char *const *names, size_t count,
                           const tp_attr_t *extra, tp_attr_t *out) {
    size_t written = 0;
    for (size_t i = 0; i < count; i++) {
        const tp_attr_t *attr = tp_gradient_attr(op, names[i]);
        if (attr != NULL) out[written++] = *attr;
    }
    if (extra != NULL) out[written++] = *extra;
    return written;
}

static tp_attr_t shape_attr(const char *name, const tp_shape_t *shape) {
    return (tp_attr_t){.name = name, .type = TP_ATTR_SHAPE, .list = shape->dims,
                       .count = shape->rank};
}

static const char *const conv_attr_names[] = {"strides", "padding", "dilations", "data_format"};
static const char *const pool_attr_names[] = {"ksize", "strides", "padding", "data_format"};
enum { NUM_WINDOW_ATTRS = 4 };

static TP_GRADIENT_FN(tp_gradient_conv2d) {
    tp_tensor_t *input = op->inputs[0], *filter = op->inputs[1], *dy = output_grads[0];
    tp_attr_t attrs[NUM_WINDOW_ATTRS + 1];
    if (needed[0]) {
        tp_shape_t shape = tp_tensor_shape(input);
        tp_attr_t sizes = shape_attr("input_sizes", &shape);
        size_t count = window_attrs(op, conv_attr_names, NUM_WINDOW_ATTRS, &sizes, attrs);
        tp_tensor_t *inputs[2] = {filter, dy};
        TP_RETURN_IF_ERROR(tp_execute(op->context, "Conv2DBackpropInput", inputs, 2, attrs,
                                      count, &input_grads[0], 1));
    }
    if (needed[1]) {
        tp_shape_t shape = tp_tensor_shape(filter);
        tp_attr_t sizes = shape_attr("filter_sizes", &shape);
        size_t count = window_attrs(op, conv_attr_names, NUM_WINDOW_ATTRS, &sizes, attrs);
        tp_tensor_t *inputs[2] = {input, dy};
        tp_status_t *error = tp_execute(op->context, "Conv2DBackpropFilter", inputs, 2, attrs,
                                        count, &input_grads[1], 1);
        if (error != NULL) {
            tp_gradient_release(input_grads, 1);
            return error;
        }
    }
    return NULL;
}

/* The gradient flows to the maximum of each window; MaxPoolGrad finds it again from the input
 * and the output. */
static TP_GRADIENT_FN(tp_gradient_max_pool) {
    (void)needed;
    tp_attr_t attrs[NUM_WINDOW_ATTRS];
    size_t count = window_attrs(op, pool_attr_names, NUM_WINDOW_ATTRS, NULL, attrs);
    tp_tensor_t *inputs[3] = {op->inputs[0], op->outputs[0], output_grads[0]};
    return tp_execute(op->context, "MaxPoolGrad", inputs, 3, attrs, count, &input_grads[0], 1);
}

/* Each window's gradient is shared evenly among the values it averaged. */
static TP_GRADIENT_FN(tp_gradient_avg_pool) {
    (void)needed;
    tp_shape_t shape = tp_tensor_shape(op->inputs[0]);
    tp_attr_t attrs[NUM_WINDOW_ATTRS + 1];
    tp_attr_t sizes = shape_attr("orig_input_shape", &shape);
    size_t count = window_attrs(op, pool_attr_names, NUM_WINDOW_ATTRS, &sizes, attrs);
    return tp_execute(op->context, "AvgPoolGrad", &output_grads[0], 1, attrs, count,
                      &input_grads[0], 1);
}

static const tp_gradient_entry_t entries[] = {
    {"AvgPool", tp_gradient_avg_pool},
    {"Conv2D", tp_gradient_conv2d},
    {"MaxPool", tp_gradient_max_pool},
};

const tp_gradient_family_t tp_gradients_conv = {entries, sizeof entries / sizeof entries[0]};
