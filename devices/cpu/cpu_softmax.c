/* SPDX-License-Identifier: Apache-2.0 */
/* Softmax and LogSoftmax along the last dimension, float32 and float64 (16-bit floats staged
 * to float32), rows in parallel. Each row takes three passes through cpu_math.h's vector
 * loops: its largest value m; exp(x - m) (Softmax keeps it in y) and its sum s, accumulated in
 * double; then y *= 1/s, or y = (x - m) - log(s). Subtracting m keeps every exp at most 1, so
 * logits of any magnitude give finite results and the sum cannot overflow. A row holding NaN
 * comes out NaN throughout; one whose largest value is +inf or every value -inf, NaN too
 * (inf - inf), as in NumPy and libtorch. */
#include <math.h>

#include "cpu_kernels.h"
#include "cpu_math.h"

typedef struct {
    bool log;
    const cpu_math_t *math;
    tp_dtype_t dtype;
    int64_t width;
    const void *x;
    void *y;
} softmax_job_t;

static void softmax_rows(void *arg, int64_t begin, int64_t end) {
    const softmax_job_t *job = arg;
    const cpu_math_t *math = job->math;
    int64_t width = job->width;
    for (int64_t r = begin; r < end; r++) {
        if (job->dtype == TP_FLOAT32) {
            const float *x = (const float *)job->x + r * width;
            float *y = (float *)job->y + r * width;
            float largest = math->max_f32(x, width);
            double total = math->exp_sum_f32(x, largest, job->log ? NULL : y, width);
            if (job->log)
                math->shift_f32(x, largest, (float)log(total), y, width);
            else
                math->scale_f32(y, (float)(1.0 / total), width);
        } else {
            const double *x = (const double *)job->x + r * width;
            double *y = (double *)job->y + r * width;
            double largest = math->max_f64(x, width);
            double total = math->exp_sum_f64(x, largest, job->log ? NULL : y, width);
            if (job->log)
                math->shift_f64(x, largest, log(total), y, width);
            else
                math->scale_f64(y, 1.0 / total, width);
        }
    }
}

static void run(bool log, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    cpu_tensor_t x, y;
    if (!cpu_input(context, 0, &x, status) || !cpu_output(context, 0, &y, status)) return;
    int64_t width = x.view.dims[x.view.rank - 1]; /* rank >= 1: the shape function says so */
    if (width == 0) return;
    softmax_job_t job = {log, cpu_math(), x.view.dtype, width, x.data, y.data};
    cpu_parallel_for(x.view.num_elements / width, 3 * width, softmax_rows, &job);
}

static void softmax(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    run(false, context, status);
}

static void log_softmax(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    run(true, context, status);
}

void cpu_register_softmax_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    cpu_register(registrar, "Softmax", "T", CPU_FLOATS, softmax, status);
    cpu_register(registrar, "LogSoftmax", "T", CPU_FLOATS, log_softmax, status);
}
