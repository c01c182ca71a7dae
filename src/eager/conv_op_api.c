/* SPDX-License-Identifier: Apache-2.0 */
/* tp_conv2d, tp_max_pool and tp_avg_pool: the options structs turned into Conv2D's, MaxPool's
 * and AvgPool's NHWC attribute lists, then tp_execute. */
#include "base/status.h"

static tp_status_t *padding_name(const char *op, tp_padding_t padding, const char **out) {
    switch (padding) {
    case TP_PADDING_VALID: *out = "VALID"; return NULL;
    case TP_PADDING_SAME: *out = "SAME"; return NULL;
    }
    return tp_status_make(TP_INVALID_ARGUMENT,
                          "%s: padding %d is neither TP_PADDING_VALID nor TP_PADDING_SAME", op,
                          (int)padding);
}

static int64_t or_default(int32_t value, int32_t fallback) { return value == 0 ? fallback : value; }

tp_status_t *tp_conv2d(tp_context_t *c, tp_tensor_t *input, tp_tensor_t *filter,
                       const tp_conv2d_options_t *options, tp_tensor_t **out) {
    const tp_conv2d_options_t defaults = {0};
    if (options == NULL) options = &defaults;
    const char *padding = NULL;
    TP_RETURN_IF_ERROR(padding_name("Conv2D", options->padding, &padding));
    const int64_t strides[4] = {1, or_default(options->stride_height, 1),
                                or_default(options->stride_width, 1), 1};
    const int64_t dilations[4] = {1, or_default(options->dilation_height, 1),
                                  or_default(options->dilation_width, 1), 1};
    tp_tensor_t *inputs[2] = {input, filter};
    tp_attr_t attrs[3] = {TP_ATTR_LIST_VALUE("strides", strides, 4),
                          TP_ATTR_STRING_VALUE("padding", padding),
                          TP_ATTR_LIST_VALUE("dilations", dilations, 4)};
    return tp_execute(c, "Conv2D", inputs, 2, attrs, 3, out, 1);
}

static tp_status_t *pool(tp_context_t *c, const char *op, tp_tensor_t *input,
                         const tp_pool_options_t *options, tp_tensor_t **out) {
    if (options == NULL)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: the options (the window's size) are "
                              "NULL", op);
    const char *padding = NULL;
    TP_RETURN_IF_ERROR(padding_name(op, options->padding, &padding));
    const int64_t ksize[4] = {1, options->window_height, options->window_width, 1};
    const int64_t strides[4] = {1, or_default(options->stride_height, options->window_height),
                                or_default(options->stride_width, options->window_width), 1};
    tp_attr_t attrs[3] = {TP_ATTR_LIST_VALUE("ksize", ksize, 4),
                          TP_ATTR_LIST_VALUE("strides", strides, 4),
                          TP_ATTR_STRING_VALUE("padding", padding)};
    return tp_execute(c, op, &input, 1, attrs, 3, out, 1);
}

tp_status_t *tp_max_pool(tp_context_t *c, tp_tensor_t *input, const tp_pool_options_t *options,
                         tp_tensor_t **out) {
    return pool(c, "MaxPool", input, options, out);
}

tp_status_t *tp_avg_pool(tp_context_t *c, tp_tensor_t *input, const tp_pool_options_t *options,
                         tp_tensor_t **out) {
    return pool(c, "AvgPool", input, options, out);
}
