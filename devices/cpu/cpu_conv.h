/* SPDX-License-Identifier: Apache-2.0 */
/* The two ways the CPU computes convolutions and poolings. float32 goes through oneDNN
 * (cpu_onednn.c): called directly it ran every shape of bench/bench_conv2d.c 2 to 6 times
 * faster than im2col over OpenBLAS's sgemm, and oneDNN's pooling ran 6 to 10 times faster than
 * a plain loop. oneDNN has no float64 convolution, so float64 (the gradient check's dtype) goes
 * through im2col and dgemm (cpu_conv_gemm.c) and plain loops for pooling (cpu_pool.c). */
#ifndef TP_DEVICES_CPU_CONV_H
#define TP_DEVICES_CPU_CONV_H

#include "cpu_window.h"

/* What cpu_onednn_run computes, and what its arguments a, b and out hold (NHWC images, HWIO
 * filters, all float32):
 *   CPU_ONEDNN_CONV          a: input       b: filter        out: output
 *   CPU_ONEDNN_CONV_INPUT    a: filter      b: output grad   out: input grad
 *   CPU_ONEDNN_CONV_FILTER   a: input       b: output grad   out: filter grad
 *   CPU_ONEDNN_MAX_POOL      a: input                        out: output
 *   CPU_ONEDNN_AVG_POOL      a: input                        out: output
 *   CPU_ONEDNN_MAX_POOL_GRAD a: input       b: output grad   out: input grad
 *   CPU_ONEDNN_AVG_POOL_GRAD                b: output grad   out: input grad */
typedef enum cpu_onednn_op {
    CPU_ONEDNN_CONV,
    CPU_ONEDNN_CONV_INPUT,
    CPU_ONEDNN_CONV_FILTER,
    CPU_ONEDNN_MAX_POOL,
    CPU_ONEDNN_AVG_POOL,
    CPU_ONEDNN_MAX_POOL_GRAD,
    CPU_ONEDNN_AVG_POOL_GRAD
} cpu_onednn_op_t;

/* Runs `op` over the window's tensors, none of them empty; failures name `op_name`.
 * Thread-safe: the primitives for a window are made once and kept. */
bool cpu_onednn_run(cpu_onednn_op_t op, const cpu_window_t *window, const float *a,
                    const float *b, float *out, const char *op_name,
                    tp_plugin_status_t *status);

/* float64 convolution through im2col (or col2im) and cblas_dgemm, in batches of images whose
 * column matrix stays small. Same tensors as the oneDNN ops of the same name. */
bool cpu_conv_gemm_forward(const cpu_window_t *window, const double *input,
                           const double *filter, double *output, const char *op_name,
                           tp_plugin_status_t *status);
bool cpu_conv_gemm_input_grad(const cpu_window_t *window, const double *filter,
                              const double *output_grad, double *input_grad, const char *op_name,
                              tp_plugin_status_t *status);
bool cpu_conv_gemm_filter_grad(const cpu_window_t *window, const double *input,
                               const double *output_grad, double *filter_grad,
                               const char *op_name, tp_plugin_status_t *status);

#endif
