/* SPDX-License-Identifier: Apache-2.0 */
/* Conv2D and its gradients Conv2DBackpropInput and Conv2DBackpropFilter: float32 through
 * oneDNN, float64 through im2col and dgemm (cpu_conv.h says why). */
#include <string.h>

#include "cpu_conv.h"
#include "cpu_kernels.h"

/* An empty result needs nothing; a result whose sum runs over an empty input (no channels, no
 * images) is zero. True when the kernel is done. */
static bool trivial(const cpu_tensor_t *a, const cpu_tensor_t *b, cpu_tensor_t *out) {
    if (out->view.num_elements == 0) return true;
    if (a->view.num_elements > 0 && b->view.num_elements > 0) return false;
    memset(out->data, 0, (size_t)out->view.byte_size);
    return true;
}

static void conv2d(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t input, filter, output;
    cpu_window_t w;
    if (!cpu_input(context, 0, &input, status) || !cpu_input(context, 1, &filter, status) ||
        !cpu_output(context, 0, &output, status) ||
        !cpu_conv_window(context, input.view.dims, filter.view.dims, &w, status) ||
        !cpu_window_output_matches(&w, output.view.dims, "Conv2D", "the output",
                                   "convolution's", status) ||
        trivial(&input, &filter, &output))
        return;
    if (output.view.dtype == TP_FLOAT32)
        cpu_onednn_run(CPU_ONEDNN_CONV, &w, input.data, filter.data, output.data, "Conv2D",
                       status);
    else
        cpu_conv_gemm_forward(&w, input.data, filter.data, output.data, "Conv2D", status);
}

static void conv2d_backprop_input(void *kernel, tp_kernel_context_t *context,
                                  tp_plugin_status_t *status) {
    (void)kernel;
    static const char name[] = "Conv2DBackpropInput";
    cpu_tensor_t filter, output_grad, input_grad;
    cpu_window_t w;
    if (!cpu_input(context, 0, &filter, status) ||
        !cpu_input(context, 1, &output_grad, status) ||
        !cpu_output(context, 0, &input_grad, status) ||
        !cpu_conv_window(context, input_grad.view.dims, filter.view.dims, &w, status) ||
        !cpu_window_output_matches(&w, output_grad.view.dims, name, "out_backprop",
                                   "convolution's", status) ||
        trivial(&filter, &output_grad, &input_grad))
        return;
    if (input_grad.view.dtype == TP_FLOAT32)
        cpu_onednn_run(CPU_ONEDNN_CONV_INPUT, &w, filter.data, output_grad.data,
                       input_grad.data, name, status);
    else
        cpu_conv_gemm_input_grad(&w, filter.data, output_grad.data, input_grad.data, name,
                                 status);
}

static void conv2d_backprop_filter(void *kernel, tp_kernel_context_t *context,
                                   tp_plugin_status_t *status) {
    (void)kernel;
    static const char name[] = "Conv2DBackpropFilter";
    cpu_tensor_t input, output_grad, filter_grad;
    cpu_window_t w;
    if (!cpu_input(context, 0, &input, status) || !cpu_input(context, 1, &output_grad, status) ||
        !cpu_output(context, 0, &filter_grad, status) ||
        !cpu_conv_window(context, input.view.dims, filter_grad.view.dims, &w, status) ||
        !cpu_window_output_matches(&w, output_grad.view.dims, name, "out_backprop",
                                   "convolution's", status) ||
        trivial(&input, &output_grad, &filter_grad))
        return;
    if (filter_grad.view.dtype == TP_FLOAT32)
        cpu_onednn_run(CPU_ONEDNN_CONV_FILTER, &w, input.data, output_grad.data,
                       filter_grad.data, name, status);
    else
        cpu_conv_gemm_filter_grad(&w, input.data, output_grad.data, filter_grad.data, name,
                                  status);
}

void cpu_register_conv_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    cpu_register(registrar, "Conv2D", "T", CPU_FLOATS, conv2d, status);
    cpu_register(registrar, "Conv2DBackpropInput", "T", CPU_FLOATS, conv2d_backprop_input, status);
    cpu_register(registrar, "Conv2DBackpropFilter", "T", CPU_FLOATS, conv2d_backprop_filter,
                 status);
}
