/* SPDX-License-Identifier: Apache-2.0 */
/* Convolution and pooling over NHWC images, with TensorFlow's names, attributes and output
 * sizes: Conv2D and its two gradients, MaxPool, AvgPool and theirs. The gradients take the
 * shape TensorFlow passes as a tensor (input_sizes, filter_sizes, orig_input_shape) as a shape
 * attribute, since an op's shape here follows from its attributes and input shapes alone. */
#include <stdbool.h>
#include <string.h>

#include "base/printable.h"
#include "base/shape.h"
#include "base/status.h"
#include "kernel/kernel_context.h"
#include "op/op_defs.h"
#include "op/shape_functions.h"
#include "tensor/tensor.h"

static const tp_dtype_t floats[] = {TP_OP_FLOAT_DTYPES};

/* ---- Reading the attributes ------------------------------------------------------------------ */

static const char *op_name(const tp_kernel_context_t *call) { return call->op->def->name; }

/* Strides, dilations and window sizes are four numbers, one per NHWC dimension, that must be 1
 * for the batch and the channels; an empty list (dilations' default) means all ones. Values
 * stay within int32 so that every kernel's index arithmetic is exact. */
static tp_status_t *read_four(const tp_kernel_context_t *call, const char *name, bool empty_is_ones,
                              int64_t out[4]) {
    const tp_attr_t *attr = tp_kernel_context_attr(call, name);
    if (attr->count == 0 && empty_is_ones) {
        for (int i = 0; i < 4; i++) out[i] = 1;
        return NULL;
    }
    char text[256];
    if (attr->count != 4)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "%s: %s must have 4 values, one per dimension of NHWC, but has %d",
                              op_name(call), name, (int)attr->count);
    for (int i = 0; i < 4; i++) {
        if (attr->list[i] < 1 || attr->list[i] > INT32_MAX)
            return tp_status_make(TP_INVALID_ARGUMENT, "%s: %s must be between 1 and %d, got %s",
                                  op_name(call), name, INT32_MAX,
                                  tp_bracketed_list(attr->list, 4, text, sizeof text));
        out[i] = attr->list[i];
    }
    if (out[0] != 1 || out[3] != 1)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "%s: %s must be 1 for the batch and the channels, got %s",
                              op_name(call), name,
                              tp_bracketed_list(attr->list, 4, text, sizeof text));
    return NULL;
}

/* The caller's string as a message shows it, between double quotes: these attributes are ASCII
 * keywords, so every other byte (a newline, ESC, any non-ASCII, the quote) is written as \xHH,
 * and at most 64 bytes of it. */
typedef struct {
    char text[64 * 4 + sizeof "..."];
} shown_string_t;

static shown_string_t shown(const char *text) {
    shown_string_t out;
    tp_printable_ascii_quote(out.text, sizeof out.text, text, strlen(text), 64, '"');
    return out;
}

static tp_status_t *read_padding(const tp_kernel_context_t *call, bool *out_same) {
    const char *padding = tp_kernel_context_attr(call, "padding")->s;
    if (strcmp(padding, "SAME") != 0 && strcmp(padding, "VALID") != 0)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "%s: padding must be \"SAME\" or \"VALID\", got \"%s\"",
                              op_name(call), shown(padding).text);
    *out_same = padding[0] == 'S';
    return NULL;
}

static tp_status_t *check_format(const tp_kernel_context_t *call) {
    const char *format = tp_kernel_context_attr(call, "data_format")->s;
    if (strcmp(format, "NHWC") != 0)
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "%s: data_format \"%s\" is not supported; only \"NHWC\" is",
                              op_name(call), shown(format).text);
    return NULL;
}

/* A 4-dimensional shape from a shape attribute (input_sizes...), checked as a tensor's would
 * be. */
static tp_status_t *shape_attr(const tp_kernel_context_t *call, const char *name,
                               tp_shape_t *out) {
    const tp_attr_t *attr = tp_kernel_context_attr(call, name);
    char text[256];
    if (attr->count != 4)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: %s must have 4 dimensions, got %d",
                              op_name(call), name, (int)attr->count);
    *out = (tp_shape_t){.rank = 4};
    for (int i = 0; i < 4; i++) {
        if (attr->list[i] < 0)
            return tp_status_make(TP_INVALID_ARGUMENT, "%s: %s %s has a negative dimension",
                                  op_name(call), name,
                                  tp_bracketed_list(attr->list, 4, text, sizeof text));
        out->dims[i] = attr->list[i];
    }
    int64_t count;
    return tp_status_annotate(tp_shape_num_elements(out, &count), "%s: %s", op_name(call), name);
}

static tp_status_t *check_rank4(const tp_kernel_context_t *call, const char *what,
                                const char *layout, const tp_shape_t *shape) {
    if (shape->rank == 4) return NULL;
    char text[256];
    return tp_status_make(TP_INVALID_ARGUMENT, "%s: %s must be 4-dimensional %s, got %s",
                          op_name(call), what, layout, tp_shape_text(shape, text, sizeof text));
}

/* ---- Output sizes ---------------------------------------------------------------------------- */

/* One spatial dimension: `size` values seen through a window of `window` taps `dilation`
 * apart, moved by `stride`. SAME pads so that the output has ceil(size / stride) values; VALID
 * keeps only windows that lie inside, and refuses a window larger than the input. */
static tp_status_t *output_size(const tp_kernel_context_t *call, const char *dimension,
                                int64_t size, int64_t window, int64_t stride, int64_t dilation,
                                bool same, int64_t *out) {
    if (window < 1)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: the window's %s is %lld; it must be at "
                              "least 1", op_name(call), dimension, (long long)window);
    int64_t span;
    if (__builtin_mul_overflow(window - 1, dilation, &span) || span == INT64_MAX)
        return tp_status_make(TP_INVALID_ARGUMENT, "%s: the window's %s %lld dilated by %lld is "
                              "too large", op_name(call), dimension, (long long)window,
                              (long long)dilation);
    span += 1;
    if (same) {
        *out = size / stride + (size % stride != 0);
        return NULL;
    }
    if (span > size) {
        if (dilation > 1)
            return tp_status_make(TP_INVALID_ARGUMENT,
                                  "%s: with VALID padding the window's %s, %lld dilated by %lld "
                                  "to %lld, is larger than the input's %s, %lld",
                                  op_name(call), dimension, (long long)window,
                                  (long long)dilation, (long long)span, dimension,
                                  (long long)size);
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "%s: with VALID padding the window's %s, %lld, is larger than the "
                              "input's %s, %lld",
                              op_name(call), dimension, (long long)window, dimension,
                              (long long)size);
    }
    *out = (size - span) / stride + 1;
    return NULL;
}

/* The output shape of a convolution of `input` [N,H,W,C] by `filter` [KH,KW,C,O] under the
 * call's strides, dilations and padding. */
static tp_status_t *conv_output(const tp_kernel_context_t *call, const tp_shape_t *input,
                                const tp_shape_t *filter, tp_shape_t *out) {
    TP_RETURN_IF_ERROR(check_format(call));
    int64_t strides[4], dilations[4];
    bool same = false;
    TP_RETURN_IF_ERROR(read_four(call, "strides", false, strides));
    TP_RETURN_IF_ERROR(read_four(call, "dilations", true, dilations));
    TP_RETURN_IF_ERROR(read_padding(call, &same));
    TP_RETURN_IF_ERROR(check_rank4(call, "the input", "[batch, height, width, channels]", input));
    TP_RETURN_IF_ERROR(check_rank4(call, "the filter",
                                   "[height, width, in_channels, out_channels]", filter));
    if (input->dims[3] != filter->dims[2]) {
        char ti[256], tf[256];
        return tp_status_make(TP_INVALID_ARGUMENT,
                              "%s: the input has %lld channels but the filter takes %lld (input "
                              "%s, filter %s)",
                              op_name(call), (long long)input->dims[3],
                              (long long)filter->dims[2], tp_shape_text(input, ti, sizeof ti),
                              tp_shape_text(filter, tf, sizeof tf));
    }
    *out = (tp_shape_t){.rank = 4, .dims = {input->dims[0], 0, 0, filter->dims[3]}};
    TP_RETURN_IF_ERROR(output_size(call, "height", input->dims[1], filter->dims[0], strides[1],
                                   dilations[1], same, &out->dims[1]));
    return output_size(call, "width", input->dims[2], filter->dims[1], strides[2], dilations[2],
                       same, &out->dims[2]);
}

/* The output shape of a pooling of `input` [N,H,W,C] under the call's ksize, strides and
 * padding. */
static tp_status_t *pool_output(const tp_kernel_context_t *call, const tp_shape_t *input,
                                tp_shape_t *out) {
    TP_RETURN_IF_ERROR(check_format(call));
    int64_t ksize[4], strides[4];
    bool same = false;
    TP_RETURN_IF_ERROR(read_four(call, "ksize", false, ksize));
    TP_RETURN_IF_ERROR(read_four(call, "strides", false, strides));
    TP_RETURN_IF_ERROR(read_padding(call, &same));
    TP_RETURN_IF_ERROR(check_rank4(call, "the input", "[batch, height, width, channels]", input));
    *out = (tp_shape_t){.rank = 4, .dims = {input->dims[0], 0, 0, input->dims[3]}};
    TP_RETURN_IF_ERROR(output_size(call, "height", input->dims[1], ksize[1], strides[1], 1, same,
                                   &out->dims[1]));
    return output_size(call, "width", input->dims[2], ksize[2], strides[2], 1, same,
                       &out->dims[2]);
}

/* A gradient's incoming tensor must have the shape its forward op gave. */
static tp_status_t *expect_shape(const tp_kernel_context_t *call, const char *what,
                                 const tp_shape_t *got, const tp_shape_t *want,
                                 const char *forward) {
    if (tp_shape_equal(got, want)) return NULL;
    char tg[256], tw[256];
    return tp_status_make(TP_INVALID_ARGUMENT, "%s: %s is %s, but the %s it follows gives %s",
                          op_name(call), what, tp_shape_text(got, tg, sizeof tg), forward,
                          tp_shape_text(want, tw, sizeof tw));
}

static const tp_shape_t *input_shape(const tp_kernel_context_t *call, int32_t index) {
    return &call->inputs[index]->shape;
}

static void set_output(tp_kernel_context_t *call, const tp_shape_t *shape) {
    call->output_shapes[0] = *shape;
    call->output_shape_set[0] = true;
}

/* ---- Shape functions ------------------------------------------------------------------------- */

static tp_status_t *shape_conv2d(tp_kernel_context_t *call) {
    tp_shape_t out;
    TP_RETURN_IF_ERROR(conv_output(call, input_shape(call, 0), input_shape(call, 1), &out));
    set_output(call, &out);
    return NULL;
}

/* Inputs filter and out_backprop; the result has the shape of input_sizes. */
static tp_status_t *shape_conv2d_backprop_input(tp_kernel_context_t *call) {
    tp_shape_t input, forward;
    TP_RETURN_IF_ERROR(shape_attr(call, "input_sizes", &input));
    TP_RETURN_IF_ERROR(conv_output(call, &input, input_shape(call, 0), &forward));
    TP_RETURN_IF_ERROR(
        expect_shape(call, "out_backprop", input_shape(call, 1), &forward, "Conv2D"));
    set_output(call, &input);
    return NULL;
}

/* Inputs input and out_backprop; the result has the shape of filter_sizes. */
static tp_status_t *shape_conv2d_backprop_filter(tp_kernel_context_t *call) {
    tp_shape_t filter, forward;
    TP_RETURN_IF_ERROR(shape_attr(call, "filter_sizes", &filter));
    TP_RETURN_IF_ERROR(conv_output(call, input_shape(call, 0), &filter, &forward));
    TP_RETURN_IF_ERROR(
        expect_shape(call, "out_backprop", input_shape(call, 1), &forward, "Conv2D"));
    set_output(call, &filter);
    return NULL;
}

static tp_status_t *shape_pool(tp_kernel_context_t *call) {
    tp_shape_t out;
    TP_RETURN_IF_ERROR(pool_output(call, input_shape(call, 0), &out));
    set_output(call, &out);
    return NULL;
}

/* Inputs orig_input, orig_output and grad; the result has orig_input's shape. */
static tp_status_t *shape_max_pool_grad(tp_kernel_context_t *call) {
    tp_shape_t forward;
    TP_RETURN_IF_ERROR(pool_output(call, input_shape(call, 0), &forward));
    TP_RETURN_IF_ERROR(
        expect_shape(call, "orig_output", input_shape(call, 1), &forward, "MaxPool"));
    TP_RETURN_IF_ERROR(expect_shape(call, "grad", input_shape(call, 2), &forward, "MaxPool"));
    set_output(call, input_shape(call, 0));
    return NULL;
}

/* Input grad; the result has the shape of orig_input_shape. */
static tp_status_t *shape_avg_pool_grad(tp_kernel_context_t *call) {
    tp_shape_t input, forward;
    TP_RETURN_IF_ERROR(shape_attr(call, "orig_input_shape", &input));
    TP_RETURN_IF_ERROR(pool_output(call, &input, &forward));
    TP_RETURN_IF_ERROR(expect_shape(call, "grad", input_shape(call, 0), &forward, "AvgPool"));
    set_output(call, &input);
    return NULL;
}

/* ---- The table ------------------------------------------------------------------------------- */

#define ARG TP_OP_ARG
#define COUNT TP_OP_COUNT
#define LIST_ATTR(attr_name)                                                                   \
    {.struct_size = sizeof(tp_op_attr_def_t), .name = attr_name, .type = TP_ATTR_INT_LIST}
#define SHAPE_ATTR(attr_name)                                                                  \
    {.struct_size = sizeof(tp_op_attr_def_t), .name = attr_name, .type = TP_ATTR_SHAPE}
#define PADDING_ATTR                                                                           \
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "padding", .type = TP_ATTR_STRING}
#define FORMAT_ATTR                                                                            \
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "data_format", .type = TP_ATTR_STRING,   \
     .has_default = 1, .default_string = "NHWC"}
#define DILATIONS_ATTR                                                                         \
    {.struct_size = sizeof(tp_op_attr_def_t), .name = "dilations", .type = TP_ATTR_INT_LIST,   \
     .has_default = 1}
#define FLOAT_TYPE TP_OP_TYPE_ATTR(floats, COUNT(floats))

static const tp_op_arg_def_t args_input_filter[] = {ARG("input"), ARG("filter")};
static const tp_op_arg_def_t args_filter_backprop[] = {ARG("filter"), ARG("out_backprop")};
static const tp_op_arg_def_t args_input_backprop[] = {ARG("input"), ARG("out_backprop")};
static const tp_op_arg_def_t arg_input[] = {ARG("input")};
static const tp_op_arg_def_t arg_value[] = {ARG("value")};
static const tp_op_arg_def_t args_max_pool_grad[] = {ARG("orig_input"), ARG("orig_output"),
                                                     ARG("grad")};
static const tp_op_arg_def_t arg_grad[] = {ARG("grad")};
static const tp_op_arg_def_t arg_output[] = {ARG("output")};

static const tp_op_attr_def_t conv_attrs[] = {FLOAT_TYPE, LIST_ATTR("strides"), PADDING_ATTR,
                                              DILATIONS_ATTR, FORMAT_ATTR};
static const tp_op_attr_def_t conv_input_attrs[] = {
    FLOAT_TYPE, SHAPE_ATTR("input_sizes"), LIST_ATTR("strides"), PADDING_ATTR, DILATIONS_ATTR,
    FORMAT_ATTR};
static const tp_op_attr_def_t conv_filter_attrs[] = {
    FLOAT_TYPE, SHAPE_ATTR("filter_sizes"), LIST_ATTR("strides"), PADDING_ATTR, DILATIONS_ATTR,
    FORMAT_ATTR};
static const tp_op_attr_def_t pool_attrs[] = {FLOAT_TYPE, LIST_ATTR("ksize"),
                                              LIST_ATTR("strides"), PADDING_ATTR, FORMAT_ATTR};
static const tp_op_attr_def_t avg_pool_grad_attrs[] = {
    FLOAT_TYPE, SHAPE_ATTR("orig_input_shape"), LIST_ATTR("ksize"), LIST_ATTR("strides"),
    PADDING_ATTR, FORMAT_ATTR};

static const tp_builtin_op_entry_t entries[] = {
    TP_OP_ENTRY("AvgPool", arg_value, arg_output, pool_attrs, shape_pool),
    TP_OP_ENTRY("AvgPoolGrad", arg_grad, arg_output, avg_pool_grad_attrs, shape_avg_pool_grad),
    TP_OP_ENTRY("Conv2D", args_input_filter, arg_output, conv_attrs, shape_conv2d),
    TP_OP_ENTRY("Conv2DBackpropFilter", args_input_backprop, arg_output, conv_filter_attrs,
                shape_conv2d_backprop_filter),
    TP_OP_ENTRY("Conv2DBackpropInput", args_filter_backprop, arg_output, conv_input_attrs,
                shape_conv2d_backprop_input),
    TP_OP_ENTRY("MaxPool", arg_input, arg_output, pool_attrs, shape_pool),
    TP_OP_ENTRY("MaxPoolGrad", args_max_pool_grad, arg_output, pool_attrs, shape_max_pool_grad),
};

const tp_op_family_t tp_ops_conv = {"conv", entries, COUNT(entries)};
