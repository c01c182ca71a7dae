/* SPDX-License-Identifier: Apache-2.0 */
/* The gradients of Relu, Sigmoid and Tanh as kernels: one pass over memory instead of the
 * three or four element-wise ops they would take composed. Both inputs have one shape. */
#include "cpu_kernels.h"

typedef enum { RELU_GRAD, SIGMOID_GRAD, TANH_GRAD } activation_grad_t;

typedef struct {
    activation_grad_t op;
    tp_dtype_t dtype;
    const void *a, *b; /* ReluGrad: gradients, features. The others: y, dy. */
    void *z;
} activation_grad_job_t;

#define ACTIVATION_GRAD_LOOP(T)                                                                 \
    do {                                                                                        \
        const T *a = job->a, *b = job->b;                                                       \
        T *z = job->z;                                                                          \
        for (int64_t i = begin; i < end; i++) {                                                 \
            switch (job->op) {                                                                  \
            case RELU_GRAD: z[i] = b[i] > 0 ? a[i] : (T)0; break;                               \
            case SIGMOID_GRAD: z[i] = b[i] * a[i] * ((T)1 - a[i]); break;                       \
            case TANH_GRAD: z[i] = b[i] * ((T)1 - a[i] * a[i]); break;                          \
            }                                                                                   \
        }                                                                                       \
    } while (0)

static void activation_grad_range(void *arg, int64_t begin, int64_t end) {
    activation_grad_job_t *job = arg;
    switch (job->dtype) {
    case TP_FLOAT32: ACTIVATION_GRAD_LOOP(float); break;
    case TP_FLOAT64: ACTIVATION_GRAD_LOOP(double); break;
#define INTEGER_CASE(dt, T, U, is_signed)                                                       \
    case dt: ACTIVATION_GRAD_LOOP(T); break;
        CPU_FOR_EACH_INTEGER(INTEGER_CASE)
#undef INTEGER_CASE
    default: break;
    }
}

static void run(activation_grad_t op, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    cpu_tensor_t a, b, z;
    if (!cpu_input(context, 0, &a, status) || !cpu_input(context, 1, &b, status) ||
        !cpu_output(context, 0, &z, status))
        return;
    activation_grad_job_t job = {op, z.view.dtype, a.data, b.data, z.data};
    cpu_parallel_for(z.view.num_elements, 2, activation_grad_range, &job);
}

#define ACTIVATION_GRAD_KERNEL(name, op)                                                        \
    static void name(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {  \
        (void)kernel;                                                                           \
        run(op, context, status);                                                               \
    }
ACTIVATION_GRAD_KERNEL(relu_grad, RELU_GRAD)
ACTIVATION_GRAD_KERNEL(sigmoid_grad, SIGMOID_GRAD)
ACTIVATION_GRAD_KERNEL(tanh_grad, TANH_GRAD)

void cpu_register_activation_grad_kernels(tp_registrar_t *registrar,
                                          tp_plugin_status_t *status) {
    cpu_register(registrar, "ReluGrad", "T", CPU_NUMBERS, relu_grad, status);
    cpu_register(registrar, "SigmoidGrad", "T", CPU_FLOATS, sigmoid_grad, status);
    cpu_register(registrar, "TanhGrad", "T", CPU_FLOATS, tanh_grad, status);
}
