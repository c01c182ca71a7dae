/* SPDX-License-Identifier: Apache-2.0 */
/* GradientDescentUpdate: out = var - alpha * delta, the optimizer's step in one pass over the
 * variable, where a Mul and a Sub would read and write it twice and allocate the product. The
 * product is rounded before the subtraction, as the two ops round it, so that the fused step
 * gives the same bits as Mul then Sub. */
#include "cpu_kernels.h"

typedef struct {
    tp_dtype_t dtype;
    const void *var, *delta;
    double alpha;
    void *out;
} update_job_t;

#define UPDATE_RANGE(T)                                                                         \
    do {                                                                                        \
        const T *var = job->var, *delta = job->delta;                                           \
        T *out = job->out, alpha = (T)job->alpha;                                               \
        for (int64_t i = begin; i < end; i++) {                                                 \
            T step = alpha * delta[i];                                                          \
            out[i] = var[i] - step;                                                             \
        }                                                                                       \
    } while (0)

static void update_range(void *arg, int64_t begin, int64_t end) {
    const update_job_t *job = arg;
    if (job->dtype == TP_FLOAT32)
        UPDATE_RANGE(float);
    else
        UPDATE_RANGE(double);
}

static void gradient_descent_update(void *kernel, tp_kernel_context_t *context,
                                    tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t var, alpha, delta, out;
    if (!cpu_input(context, 0, &var, status) || !cpu_input(context, 1, &alpha, status) ||
        !cpu_input(context, 2, &delta, status) || !cpu_output(context, 0, &out, status))
        return;
    double rate = var.view.dtype == TP_FLOAT32 ? *(const float *)alpha.data
                                               : *(const double *)alpha.data;
    update_job_t job = {var.view.dtype, var.data, delta.data, rate, out.data};
    cpu_parallel_for(var.view.num_elements, 1, update_range, &job);
}

void cpu_register_optimizer_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    cpu_register(registrar, "GradientDescentUpdate", "T", CPU_FLOATS, gradient_descent_update,
                 status);
}
