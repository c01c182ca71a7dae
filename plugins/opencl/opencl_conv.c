/* SPDX-License-Identifier: Apache-2.0 */
/* Conv2D, its two gradients, and the poolings MaxPool, AvgPool, MaxPoolGrad and AvgPoolGrad on
 * the GPU, from kernels/conv.cl: the device reads the op's window attributes itself, as any
 * plug-in must, and queues one kernel per op. compute never waits for the device. */
#include <stdio.h>
#include <string.h>

#include "opencl_device.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

typedef enum {
    CONV, CONV_INPUT, CONV_FILTER, MAX_POOL, AVG_POOL, MAX_POOL_GRAD, AVG_POOL_GRAD
} kind_t;

typedef struct conv_op {
    const char *op, *kernel;
    kind_t kind;
    int32_t ids[OPENCL_NUM_DTYPES];
} conv_op_t;

static conv_op_t ops[] = {
    {"Conv2D", "conv2d", CONV, {0}},
    {"Conv2DBackpropInput", "conv2d_input_grad", CONV_INPUT, {0}},
    {"Conv2DBackpropFilter", "conv2d_filter_grad", CONV_FILTER, {0}},
    {"MaxPool", "max_pool", MAX_POOL, {0}},
    {"AvgPool", "avg_pool", AVG_POOL, {0}},
    {"MaxPoolGrad", "max_pool_grad", MAX_POOL_GRAD, {0}},
    {"AvgPoolGrad", "avg_pool_grad", AVG_POOL_GRAD, {0}},
};

/* ---- The window ------------------------------------------------------------------------------ */

/* Where the windows lie, by TensorFlow's rules, in the order conv.cl unpacks its long16. */
enum { BATCH, IN_H, IN_W, CHANNELS, WINDOW_H, WINDOW_W, OUT_CHANNELS, OUT_H, OUT_W, STRIDE_H,
       STRIDE_W, DILATION_H, DILATION_W, PAD_TOP, PAD_LEFT };

/* Output size and padding before, along one dimension; SAME puts the odd row after. */
static void place(cl_long size, cl_long window, cl_long stride, cl_long dilation, bool same,
                  cl_long *out, cl_long *before) {
    cl_long span = (window - 1) * dilation + 1;
    if (!same) {
        *out = size >= span ? (size - span) / stride + 1 : 0;
        *before = 0;
        return;
    }
    *out = size / stride + (size % stride != 0);
    cl_long needed = (*out - 1) * stride + span - size;
    *before = needed > 0 ? needed / 2 : 0;
}

/* The 2nd and 3rd of attribute `name`'s 4 values; an empty list is ones when `empty_is_ones`. */
static bool read_pair(tp_kernel_context_t *context, const char *op, const char *name,
                      bool empty_is_ones, cl_long *height, cl_long *width,
                      tp_plugin_status_t *status) {
    const int64_t *values = NULL;
    int32_t count = 0;
    opencl_host->kernel_attr_int_list(context, name, &values, &count, status);
    if (opencl_failed(status)) return false;
    if (count == 0 && empty_is_ones) {
        *height = *width = 1;
        return true;
    }
    if (count != 4 || values[1] < 1 || values[2] < 1) {
        opencl_host->status_set(status, TP_INVALID_ARGUMENT,
                                "%s: %s must be 4 values of at least 1", op, name);
        return false;
    }
    *height = values[1];
    *width = values[2];
    return true;
}

/* The window of `op` over an image of dims `image`, a filter of dims `filter` (NULL for a
 * pooling, whose ksize gives the window). */
static bool read_window(tp_kernel_context_t *context, const conv_op_t *op, const int64_t *image,
                        const int64_t *filter, cl_long16 *window, tp_plugin_status_t *status) {
    cl_long *w = window->s;
    memset(window, 0, sizeof *window);
    w[BATCH] = image[0];
    w[IN_H] = image[1];
    w[IN_W] = image[2];
    w[CHANNELS] = image[3];
    bool ok;
    if (filter != NULL) {
        w[WINDOW_H] = filter[0];
        w[WINDOW_W] = filter[1];
        w[OUT_CHANNELS] = filter[3];
        ok = read_pair(context, op->op, "dilations", true, &w[DILATION_H], &w[DILATION_W],
                       status);
    } else {
        w[OUT_CHANNELS] = image[3];
        w[DILATION_H] = w[DILATION_W] = 1;
        ok = read_pair(context, op->op, "ksize", false, &w[WINDOW_H], &w[WINDOW_W], status);
    }
    ok = ok && read_pair(context, op->op, "strides", false, &w[STRIDE_H], &w[STRIDE_W], status);
    const char *padding = NULL;
    if (ok) opencl_host->kernel_attr_string(context, "padding", &padding, status);
    if (!ok || opencl_failed(status)) return false;
    if (strcmp(padding, "SAME") != 0 && strcmp(padding, "VALID") != 0) {
        opencl_host->status_set(status, TP_INVALID_ARGUMENT,
                                "%s: padding must be \"SAME\" or \"VALID\", got \"%.64s\"", op->op,
                                padding);
        return false;
    }
    bool same = padding[0] == 'S';
    place(w[IN_H], w[WINDOW_H], w[STRIDE_H], w[DILATION_H], same, &w[OUT_H], &w[PAD_TOP]);
    place(w[IN_W], w[WINDOW_W], w[STRIDE_W], w[DILATION_W], same, &w[OUT_W], &w[PAD_LEFT]);
    return true;
}

/* The output-side tensor (the result of a forward op, the gradient a backward op reads)
 * against the window: shape inference made them agree, and a kernel that indexes memory by the
 * window checks before it trusts that. */
static bool matches(const conv_op_t *op, const cl_long16 *window, const tp_tensor_view_t *view,
                    tp_plugin_status_t *status) {
    const cl_long *w = window->s;
    if (view->rank == 4 && view->dims[0] == w[BATCH] && view->dims[1] == w[OUT_H] &&
        view->dims[2] == w[OUT_W] && view->dims[3] == w[OUT_CHANNELS])
        return true;
    opencl_host->status_set(status, TP_INVALID_ARGUMENT,
                            "%s: a tensor of %lld elements in rank %d is not the window's "
                            "[%lld,%lld,%lld,%lld]",
                            op->op, (long long)view->num_elements, (int)view->rank,
                            (long long)w[BATCH], (long long)w[OUT_H], (long long)w[OUT_W],
                            (long long)w[OUT_CHANNELS]);
    return false;
}

/* ---- Compute --------------------------------------------------------------------------------- */

static void compute(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    const conv_op_t *op = kernel;
    /* The kernels' two inputs (one for the forward poolings and AvgPoolGrad) and the result. */
    tp_tensor_view_t a = {0}, b = {0}, y;
    bool one_input = op->kind == MAX_POOL || op->kind == AVG_POOL || op->kind == AVG_POOL_GRAD;
    int32_t num_inputs = one_input ? 1 : 2;
    int32_t a_index = 0, b_index = op->kind == MAX_POOL_GRAD ? 2 : 1;
    if (!opencl_input(context, a_index, &a, status) ||
        (num_inputs == 2 && !opencl_input(context, b_index, &b, status)) ||
        !opencl_output(context, 0, &y, status))
        return;
    int32_t id = opencl_kernel_for(op->op, op->ids, y.dtype, context, status);
    if (id < 0) return;
    /* The image and the filter, and the tensor on the output's side of the window. */
    const int64_t *image = NULL, *filter = NULL;
    const tp_tensor_view_t *pooled = NULL;
    switch (op->kind) {
    case CONV: image = a.dims; filter = b.dims; pooled = &y; break;
    case CONV_INPUT: image = y.dims; filter = a.dims; pooled = &b; break;
    case CONV_FILTER: image = a.dims; filter = y.dims; pooled = &b; break;
    case MAX_POOL: case AVG_POOL: image = a.dims; pooled = &y; break;
    case MAX_POOL_GRAD: image = y.dims; pooled = &b; break;
    case AVG_POOL_GRAD: image = y.dims; pooled = &a; break;
    }
    cl_long16 window;
    if (!read_window(context, op, image, filter, &window, status) ||
        !matches(op, &window, pooled, status) || y.num_elements == 0)
        return;
    cl_mem a_mem = (cl_mem)a.mem, b_mem = (cl_mem)b.mem, y_mem = (cl_mem)y.mem;
    cl_ulong n = (cl_ulong)y.num_elements;
    /* An empty input leaves a sum over nothing: the kernels write zeros, reading nothing. */
    opencl_arg_t args[8];
    size_t count = 0;
    args[count++] = OPENCL_ARG(a_mem);
    args[count++] = OPENCL_ARG(a.offset);
    if (num_inputs == 2) {
        args[count++] = OPENCL_ARG(b_mem);
        args[count++] = OPENCL_ARG(b.offset);
    }
    args[count++] = OPENCL_ARG(y_mem);
    args[count++] = OPENCL_ARG(y.offset);
    args[count++] = OPENCL_ARG(n);
    args[count++] = OPENCL_ARG(window);
    opencl_launch(context, op->op, id, args, count, (size_t)n, 0, status);
}

void opencl_register_conv_kernels(tp_registrar_t *registrar, bool fp64,
                                  tp_plugin_status_t *status) {
    tp_dtype_t floats[2] = {TP_FLOAT32, TP_FLOAT64};
    size_t num_floats = fp64 ? 2 : 1;
    for (size_t i = 0; i < COUNT(ops) && !opencl_failed(status); i++) {
        for (int d = 0; d < OPENCL_NUM_DTYPES; d++) ops[i].ids[d] = -1;
        for (size_t f = 0; f < num_floats && !opencl_failed(status); f++) {
            char name[64];
            snprintf(name, sizeof name, "%s_%s", ops[i].kernel, opencl_dtype_suffix(floats[f]));
            ops[i].ids[floats[f]] = opencl_kernel_id("conv", name, status);
        }
        opencl_register(registrar, ops[i].op, "T", floats, num_floats, &ops[i], compute, status);
    }
}
