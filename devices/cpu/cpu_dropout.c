/* SPDX-License-Identifier: Apache-2.0 */
/* Dropout: y = x * mask, with mask = 1 / (1 - rate) where an element is kept and 0 where it is
 * dropped (inverted dropout, as TensorFlow's: the expected value of y is x). The mask is an
 * output, so the gradient multiplies by the very mask the forward pass drew. Element i is kept
 * exactly where RandomUniform float32 with the same seed draws a value >= rate: the Philox
 * stream of cpu_philox.h, word i % 4 of block i / 4. With rate 0 every element is kept and
 * y = x exactly. */
#include "cpu_kernels.h"
#include "cpu_philox.h"

typedef struct {
    tp_dtype_t dtype;
    uint64_t seed;
    double rate, scale;
    int64_t count;
    const void *x;
    void *y, *mask;
} dropout_job_t;

#define DROPOUT_BLOCK(T)                                                                        \
    do {                                                                                        \
        const T *x = job->x;                                                                    \
        T *y = job->y, *mask = job->mask, scale = (T)job->scale;                                \
        for (int64_t k = 0, i = 4 * block; k < 4 && i < job->count; k++, i++) {                 \
            mask[i] = (double)cpu_philox_uniform24(words[k]) >= job->rate ? scale : (T)0;       \
            y[i] = x[i] * mask[i];                                                              \
        }                                                                                       \
    } while (0)

static void dropout_blocks(void *arg, int64_t begin, int64_t end) {
    const dropout_job_t *job = arg;
    for (int64_t block = begin; block < end; block++) {
        uint32_t words[4];
        cpu_philox_block(job->seed, (uint64_t)block, words);
        if (job->dtype == TP_FLOAT32)
            DROPOUT_BLOCK(float);
        else
            DROPOUT_BLOCK(double);
    }
}

static void dropout(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t x, y, mask;
    double rate = 0;
    int64_t seed = 0;
    if (!cpu_input(context, 0, &x, status) || !cpu_output(context, 0, &y, status) ||
        !cpu_output(context, 1, &mask, status))
        return;
    tp_cpu_host->kernel_attr_float(context, "rate", &rate, status);
    if (!cpu_failed(status)) tp_cpu_host->kernel_attr_int(context, "seed", &seed, status);
    if (cpu_failed(status)) return;
    /* The shape function refused any other rate; a kernel trusts no caller with a division. */
    if (!(rate >= 0 && rate < 1)) {
        tp_cpu_host->status_set(status, TP_INVALID_ARGUMENT,
                                "Dropout: rate must be in [0, 1), not %g", rate);
        return;
    }
    dropout_job_t job = {x.view.dtype, (uint64_t)seed, rate,   1 / (1 - rate),
                         x.view.num_elements, x.data,   y.data, mask.data};
    cpu_parallel_for((x.view.num_elements + 3) / 4, 16, dropout_blocks, &job);
}

void cpu_register_dropout_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    cpu_register(registrar, "Dropout", "T", CPU_FLOATS, dropout, status);
}
