/* SPDX-License-Identifier: Apache-2.0 */
/* MaxPool, AvgPool and their gradients: float32 through oneDNN (several times faster than a
 * loop here), float64 through the loops below. Padding is never pooled: a max is taken, and
 * an average counted, over the window's taps that lie inside the image, as TensorFlow does. */
#include <string.h>

#include "cpu_conv.h"
#include "cpu_kernels.h"

typedef enum { MAX_POOL, AVG_POOL, MAX_POOL_GRAD, AVG_POOL_GRAD } pool_op_t;

typedef struct {
    pool_op_t op;
    const cpu_window_t *w;
    const double *input; /* the image: forward and MaxPoolGrad */
    const double *grad;  /* the output's gradient: the gradients */
    double *out;         /* the output, or the input's gradient */
} pool_job_t;

/* The taps of output pixel (oh, ow) that lie inside the image: rows [*h0, *h1), columns
 * [*w0, *w1). SAME never leaves a window without one. */
static void window_taps(const cpu_window_t *w, int64_t oh, int64_t ow, int64_t *h0, int64_t *h1,
                        int64_t *w0, int64_t *w1) {
    int64_t top = oh * w->stride_h - w->pad_top, left = ow * w->stride_w - w->pad_left;
    *h0 = top < 0 ? 0 : top;
    *h1 = top + w->window_h < w->in_h ? top + w->window_h : w->in_h;
    *w0 = left < 0 ? 0 : left;
    *w1 = left + w->window_w < w->in_w ? left + w->window_w : w->in_w;
}

/* Images [begin, end): each image's output, or input gradient, is written by one thread. */
static void pool_images(void *arg, int64_t begin, int64_t end) {
    const pool_job_t *job = arg;
    const cpu_window_t *w = job->w;
    int64_t c_count = w->channels, image = w->in_h * w->in_w * c_count;
    int64_t out_image = w->out_h * w->out_w * c_count;
    for (int64_t n = begin; n < end; n++) {
        const double *x = job->input != NULL ? job->input + n * image : NULL;
        if (job->op == MAX_POOL_GRAD || job->op == AVG_POOL_GRAD)
            memset(job->out + n * image, 0, (size_t)image * sizeof(double));
        for (int64_t oh = 0; oh < w->out_h; oh++)
            for (int64_t ow = 0; ow < w->out_w; ow++) {
                int64_t h0, h1, w0, w1;
                window_taps(w, oh, ow, &h0, &h1, &w0, &w1);
                int64_t pixel = n * out_image + (oh * w->out_w + ow) * c_count;
                double count = (double)((h1 - h0) * (w1 - w0));
                for (int64_t c = 0; c < c_count; c++) {
                    int64_t best = -1;
                    double sum = 0;
                    for (int64_t ih = h0; ih < h1; ih++)
                        for (int64_t iw = w0; iw < w1; iw++) {
                            int64_t at = (ih * w->in_w + iw) * c_count + c;
                            if (job->op == AVG_POOL)
                                sum += x[at];
                            else if (job->op == AVG_POOL_GRAD)
                                job->out[n * image + at] += job->grad[pixel + c] / count;
                            else if (best < 0 || x[at] > x[best])
                                best = at; /* the first maximum, where values tie */
                        }
                    if (job->op == MAX_POOL)
                        job->out[pixel + c] = x[best];
                    else if (job->op == AVG_POOL)
                        job->out[pixel + c] = sum / count;
                    else if (job->op == MAX_POOL_GRAD)
                        job->out[n * image + best] += job->grad[pixel + c];
                }
            }
    }
}

/* The kernel of every pooling op: reads its tensors, then runs oneDNN or the loops. */
static void run_pool(pool_op_t op, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    static const char *const names[] = {"MaxPool", "AvgPool", "MaxPoolGrad", "AvgPoolGrad"};
    static const cpu_onednn_op_t onednn_ops[] = {CPU_ONEDNN_MAX_POOL, CPU_ONEDNN_AVG_POOL,
                                                 CPU_ONEDNN_MAX_POOL_GRAD,
                                                 CPU_ONEDNN_AVG_POOL_GRAD};
    cpu_tensor_t input = {0}, grad = {0}, out;
    if (op != AVG_POOL_GRAD && !cpu_input(context, 0, &input, status)) return;
    if (op == MAX_POOL_GRAD && !cpu_input(context, 2, &grad, status)) return;
    if (op == AVG_POOL_GRAD && !cpu_input(context, 0, &grad, status)) return;
    if (!cpu_output(context, 0, &out, status)) return;
    /* The image's shape: the input's, or for the gradients the result's. */
    const int64_t *image = op == MAX_POOL || op == AVG_POOL ? input.view.dims : out.view.dims;
    cpu_window_t w;
    if (!cpu_pool_window(context, image, &w, status)) return;
    if (out.view.num_elements == 0) return;
    const int64_t *pooled = op == MAX_POOL || op == AVG_POOL ? out.view.dims : grad.view.dims;
    /* A pooling's out_channels are its channels (cpu_pool_window). */
    if (!cpu_window_output_matches(&w, pooled, names[op], "the pooled tensor", "window's",
                                   status))
        return;
    if (out.view.dtype == TP_FLOAT32) {
        cpu_onednn_run(onednn_ops[op], &w, input.data, grad.data, out.data, names[op], status);
        return;
    }
    pool_job_t job = {op, &w, input.data, grad.data, out.data};
    cpu_parallel_for(w.batch, w.out_h * w.out_w * w.window_h * w.window_w * w.channels,
                     pool_images, &job);
}

#define POOL_KERNEL(name, op)                                                                  \
    static void name(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) { \
        (void)kernel;                                                                          \
        run_pool(op, context, status);                                                         \
    }
POOL_KERNEL(max_pool, MAX_POOL)
POOL_KERNEL(avg_pool, AVG_POOL)
POOL_KERNEL(max_pool_grad, MAX_POOL_GRAD)
POOL_KERNEL(avg_pool_grad, AVG_POOL_GRAD)

void cpu_register_pool_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    cpu_register(registrar, "MaxPool", "T", CPU_FLOATS, max_pool, status);
    cpu_register(registrar, "AvgPool", "T", CPU_FLOATS, avg_pool, status);
    cpu_register(registrar, "MaxPoolGrad", "T", CPU_FLOATS, max_pool_grad, status);
    cpu_register(registrar, "AvgPoolGrad", "T", CPU_FLOATS, avg_pool_grad, status);
}
