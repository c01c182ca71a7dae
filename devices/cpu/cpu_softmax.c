/* SPDX-License-Identifier: Apache-2.0 */
/* Softmax and LogSoftmax along the last dimension, float32 and float64 (16-bit floats staged
 * to float32), rows in parallel. Each row's largest value m comes first; then one pass takes
 * exp(x - m) (Softmax keeps it in y) and its sum s, accumulated in double, and beside the
 * exps reads the next row's largest value and scales the last row's Softmax
 * (cpu_softmax_math.h), so that only a slice's first row waits on memory for its maximum and
 * only its last row takes a pass of its own for y *= 1/s; LogSoftmax then takes
 * y = (x - m) - log(s). Subtracting m keeps every exp at most 1, so logits of any magnitude
 * give finite results and the sum cannot overflow. A row holding NaN comes out NaN
 * throughout; one whose largest value is +inf or every value -inf, NaN too (inf - inf), as in
 * NumPy and libtorch. */
#include <math.h>

#include "cpu_kernels.h"
#include "cpu_math.h"
#include "cpu_softmax_math.h"

typedef struct {
    bool log;
    const cpu_math_t *math;
    const cpu_softmax_math_t *fused;
    tp_dtype_t dtype;
    int64_t width;
    const void *x;
    void *y;
} softmax_job_t;

/* Rows [begin, end) of one dtype: T the type, S its suffix in cpu_math_t. Softmax scales each
 * row in the pass of the row after it, the last on its own. */
#define SOFTMAX_ROWS(T, S)                                                                     \
    static void softmax_rows_##S(const softmax_job_t *job, int64_t begin, int64_t end) {       \
        int64_t width = job->width;                                                            \
        const T *x = (const T *)job->x + begin * width;                                        \
        T *y = (T *)job->y + begin * width;                                                    \
        T largest = job->math->max_##S(x, width), scale = 1;                                   \
        for (int64_t r = begin; r < end; r++, x += width, y += width) {                        \
            bool last = r + 1 == end, first = r == begin;                                      \
            T next_largest = 0;                                                                \
            double total = job->fused->exp_sum_next_##S(                                       \
                x, largest, job->log ? NULL : y, last ? NULL : x + width, &next_largest,       \
                last ? NULL : y + width, job->log || first ? NULL : y - width, scale, width);  \
            if (job->log)                                                                      \
                job->math->shift_##S(x, largest, (T)log(total), y, width);                     \
            scale = (T)(1.0 / total);                                                          \
            largest = next_largest;                                                            \
        }                                                                                      \
        if (!job->log) job->math->scale_##S(y - width, scale, width);                          \
    }
SOFTMAX_ROWS(float, f32)
SOFTMAX_ROWS(double, f64)

static void softmax_rows(void *arg, int64_t begin, int64_t end) {
    const softmax_job_t *job = arg;
    if (job->dtype == TP_FLOAT32)
        softmax_rows_f32(job, begin, end);
    else
        softmax_rows_f64(job, begin, end);
}

static void run(bool log, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    cpu_tensor_t x, y;
    if (!cpu_input(context, 0, &x, status) || !cpu_output(context, 0, &y, status)) return;
    int64_t width = x.view.dims[x.view.rank - 1]; /* rank >= 1: the shape function says so */
    if (width == 0) return;
    const cpu_math_t *math = cpu_math();
    softmax_job_t job = {log, math, cpu_softmax_math(math), x.view.dtype, width, x.data, y.data};
    cpu_parallel_for(x.view.num_elements / width, 3 * width, softmax_rows, &job);
}

const cpu_softmax_math_t *cpu_softmax_math(const cpu_math_t *math) {
#if defined(__x86_64__)
    if (math == &cpu_math_avx512) return &cpu_softmax_math_avx512;
    if (math == &cpu_math_avx2) return &cpu_softmax_math_avx2;
    if (math == &cpu_math_sse2) return &cpu_softmax_math_sse2;
#endif
    return &cpu_softmax_math_libm;
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
