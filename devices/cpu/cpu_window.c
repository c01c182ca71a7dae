/* SPDX-License-Identifier: Apache-2.0 */
#include "cpu_window.h"

#include <stdio.h>
#include <string.h>

#include "cpu_kernels.h"

/* The output size and padding of one spatial dimension, by TensorFlow's rules. */
static void place(int64_t size, int64_t window, int64_t stride, int64_t dilation, bool same,
                  int64_t *out, int64_t *before, int64_t *after) {
    int64_t span = (window - 1) * dilation + 1;
    if (!same) {
        *out = size >= span ? (size - span) / stride + 1 : 0;
        *before = *after = 0;
        return;
    }
    *out = size / stride + (size % stride != 0);
    int64_t needed = (*out - 1) * stride + span - size;
    if (needed < 0) needed = 0;
    *before = needed / 2;
    *after = needed - *before;
}

/* The attribute `name`'s height and width entries (its 2nd and 3rd of 4); an empty list, when
 * `empty_is_ones`, means ones. */
static bool read_pair(tp_kernel_context_t *context, const char *name, bool empty_is_ones,
                      int64_t *height, int64_t *width, tp_plugin_status_t *status) {
    const int64_t *values = NULL;
    int32_t count = 0;
    tp_cpu_host->kernel_attr_int_list(context, name, &values, &count, status);
    if (cpu_failed(status)) return false;
    if (count == 0 && empty_is_ones) {
        *height = *width = 1;
        return true;
    }
    if (count != 4 || values[1] < 1 || values[2] < 1) {
        tp_cpu_host->status_set(status, TP_INVALID_ARGUMENT, "%s: %s must be 4 values of at "
                                "least 1", tp_cpu_host->kernel_op_name(context), name);
        return false;
    }
    *height = values[1];
    *width = values[2];
    return true;
}

static bool read_same(tp_kernel_context_t *context, bool *same, tp_plugin_status_t *status) {
    const char *padding = NULL;
    tp_cpu_host->kernel_attr_string(context, "padding", &padding, status);
    if (cpu_failed(status)) return false;
    if (strcmp(padding, "SAME") != 0 && strcmp(padding, "VALID") != 0) {
        tp_cpu_host->status_set(status, TP_INVALID_ARGUMENT,
                                "%s: padding must be \"SAME\" or \"VALID\", got \"%.64s\"",
                                tp_cpu_host->kernel_op_name(context), padding);
        return false;
    }
    *same = padding[0] == 'S';
    return true;
}

static void place_both(cpu_window_t *w, bool same) {
    place(w->in_h, w->window_h, w->stride_h, w->dilation_h, same, &w->out_h, &w->pad_top,
          &w->pad_bottom);
    place(w->in_w, w->window_w, w->stride_w, w->dilation_w, same, &w->out_w, &w->pad_left,
          &w->pad_right);
}

bool cpu_conv_window(tp_kernel_context_t *context, const int64_t *input, const int64_t *filter,
                     cpu_window_t *out, tp_plugin_status_t *status) {
    cpu_window_t w = {.batch = input[0], .in_h = input[1], .in_w = input[2],
                      .channels = input[3], .window_h = filter[0], .window_w = filter[1],
                      .out_channels = filter[3]};
    bool same = false;
    if (!read_pair(context, "strides", false, &w.stride_h, &w.stride_w, status) ||
        !read_pair(context, "dilations", true, &w.dilation_h, &w.dilation_w, status) ||
        !read_same(context, &same, status))
        return false;
    place_both(&w, same);
    *out = w;
    return true;
}

bool cpu_pool_window(tp_kernel_context_t *context, const int64_t *input, cpu_window_t *out,
                     tp_plugin_status_t *status) {
    cpu_window_t w = {.batch = input[0], .in_h = input[1], .in_w = input[2],
                      .channels = input[3], .out_channels = input[3], .dilation_h = 1,
                      .dilation_w = 1};
    bool same = false;
    if (!read_pair(context, "ksize", false, &w.window_h, &w.window_w, status) ||
        !read_pair(context, "strides", false, &w.stride_h, &w.stride_w, status) ||
        !read_same(context, &same, status))
        return false;
    place_both(&w, same);
    *out = w;
    return true;
}

bool cpu_window_output_matches(const cpu_window_t *w, const int64_t *dims,
                               const char *op_name, const char *what, const char *whose,
                               tp_plugin_status_t *status) {
    if (dims[0] == w->batch && dims[1] == w->out_h && dims[2] == w->out_w &&
        dims[3] == w->out_channels)
        return true;
    tp_cpu_host->status_set(status, TP_INVALID_ARGUMENT,
                            "%s: %s is [%lld,%lld,%lld,%lld], not the %s [%lld,%lld,%lld,%lld]",
                            op_name, what, (long long)dims[0], (long long)dims[1],
                            (long long)dims[2], (long long)dims[3], whose, (long long)w->batch,
                            (long long)w->out_h, (long long)w->out_w,
                            (long long)w->out_channels);
    return false;
}

void cpu_window_describe(const cpu_window_t *w, char *text, size_t capacity) {
    snprintf(text, capacity, "input [%lld,%lld,%lld,%lld], window %lldx%lld",
             (long long)w->batch, (long long)w->in_h, (long long)w->in_w,
             (long long)w->channels, (long long)w->window_h, (long long)w->window_w);
}
