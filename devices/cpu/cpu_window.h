/* SPDX-License-Identifier: Apache-2.0 */
/* Where a convolution's or a pooling's windows lie over an NHWC image: what the CPU's conv and
 * pool kernels, oneDNN's descriptors and the float64 loops all read. The core's shape
 * functions (src/op/ops_conv.c) have checked the attributes before a kernel runs; this is the
 * device's own reading of them, as a plug-in's would be. */
#ifndef TP_DEVICES_CPU_WINDOW_H
#define TP_DEVICES_CPU_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "tensorplug/plugin.h"

typedef struct cpu_window {
    int64_t batch, in_h, in_w, channels;      /* the image, [N,H,W,C] */
    int64_t window_h, window_w, out_channels; /* a filter [KH,KW,C,O]; pooling: 1 output per
                                                 channel, out_channels == channels */
    int64_t out_h, out_w;
    int64_t stride_h, stride_w;
    int64_t dilation_h, dilation_w; /* 1: adjacent taps */
    /* Rows and columns of padding before and after the image. SAME splits the padding it
     * needs as TensorFlow does, the odd one after. */
    int64_t pad_top, pad_left, pad_bottom, pad_right;
} cpu_window_t;

/* A convolution of an image of dims `input` [N,H,W,C] by a filter of dims `filter`
 * [KH,KW,C,O], with the call's strides, dilations and padding. */
bool cpu_conv_window(tp_kernel_context_t *context, const int64_t *input, const int64_t *filter,
                     cpu_window_t *out, tp_plugin_status_t *status);

/* A pooling of an image of dims `input` with the call's ksize, strides and padding. */
bool cpu_pool_window(tp_kernel_context_t *context, const int64_t *input, cpu_window_t *out,
                     tp_plugin_status_t *status);

/* True when `dims` [N,H,W,C] are the window's output [batch, out_h, out_w, out_channels]: the
 * host's shape inference made them agree, and a kernel that indexes memory by the window checks
 * before it trusts that. Otherwise fails with "<op_name>: <what> is [...], not the <whose>
 * [...]". */
bool cpu_window_output_matches(const cpu_window_t *window, const int64_t *dims,
                               const char *op_name, const char *what, const char *whose,
                               tp_plugin_status_t *status);

/* "[32,8,8,1] by [3,3,1,32]": the shapes of a window, for messages. */
void cpu_window_describe(const cpu_window_t *window, char *text, size_t capacity);

#endif
