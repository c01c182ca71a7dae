/* SPDX-License-Identifier: Apache-2.0 */
/* The softmax cross-entropy losses (Softmax and LogSoftmax are in cpu_softmax.c), row by row
 * over the last dimension, in double whatever the dtype. Each row subtracts its largest value
 * before exp (log-sum-exp), so logits of any magnitude give finite results: a row's log-sum-exp
 * is m + log(sum(exp(x - m))).
 *
 * The losses report what TensorFlow's would quietly return: a label outside [0, classes) is
 * INVALID_ARGUMENT naming the row and the label, checked before anything is computed; and a
 * loss that is NaN or infinite (features or labels that are not finite, or labels so large that
 * the sum overflows) is INVALID_ARGUMENT naming the op and the first such row, found here, in
 * the kernel that computes it, so that a training step fails at the loss rather than feeding
 * NaN to every weight. */
#include <math.h>
#include <stdatomic.h>

#include "cpu_kernels.h"

typedef enum { DENSE_LOSS, SPARSE_LOSS } softmax_op_t;

typedef struct {
    softmax_op_t op;
    tp_dtype_t dtype, label_dtype;
    int64_t width; /* classes */
    const void *x, *labels;
    void *y;        /* loss [rows] */
    void *backprop; /* softmax - labels [rows, width] */
    atomic_llong first_bad_row; /* the first row whose loss is not finite; -1 none */
} softmax_job_t;

static int64_t label_at(const softmax_job_t *job, int64_t row) {
    return job->label_dtype == TP_INT32 ? ((const int32_t *)job->labels)[row]
                                        : ((const int64_t *)job->labels)[row];
}

/* Keeps the smallest bad row seen by any thread. */
static void note_bad_row(softmax_job_t *job, int64_t row) {
    long long seen = atomic_load(&job->first_bad_row);
    while ((seen < 0 || row < seen) &&
           !atomic_compare_exchange_weak(&job->first_bad_row, &seen, (long long)row)) {
    }
}

static void softmax_rows(void *arg, int64_t begin, int64_t end) {
    softmax_job_t *job = arg;
    tp_dtype_t t = job->dtype;
    int64_t width = job->width;
    for (int64_t r = begin; r < end; r++) {
        int64_t base = r * width;
        double largest = -INFINITY, total = 0;
        for (int64_t j = 0; j < width; j++)
            largest = fmax(largest, cpu_load_float(job->x, t, base + j));
        for (int64_t j = 0; j < width; j++)
            total += exp(cpu_load_float(job->x, t, base + j) - largest);
        double log_total = log(total); /* log(sum(exp(x - m))): lse - m */
        /* loss = sum_j labels_j (lse - x_j); backprop_j = softmax_j - labels_j. A class whose
         * label is 0 adds nothing, even where its logit is -inf (0 log 0 = 0, the limit). */
        double loss = 0;
        int64_t label = job->op == SPARSE_LOSS ? label_at(job, r) : -1;
        for (int64_t j = 0; j < width; j++) {
            double shifted = cpu_load_float(job->x, t, base + j) - largest;
            double target = job->op == SPARSE_LOSS ? (j == label ? 1.0 : 0.0)
                                                   : cpu_load_float(job->labels, t, base + j);
            if (target != 0) loss += target * (log_total - shifted);
            cpu_store_float(job->backprop, t, base + j, exp(shifted - log_total) - target);
        }
        cpu_store_float(job->y, t, r, loss);
        if (!isfinite(loss)) note_bad_row(job, r);
    }
}

/* The first label outside [0, classes), with its row; false if every label is in range. */
static bool find_bad_label(const softmax_job_t *job, int64_t rows, int64_t *row, int64_t *value) {
    for (int64_t r = 0; r < rows; r++) {
        int64_t label = label_at(job, r);
        if (label < 0 || label >= job->width) {
            *row = r;
            *value = label;
            return true;
        }
    }
    return false;
}

static void run(softmax_op_t op, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    const char *name = tp_cpu_host->kernel_op_name(context);
    cpu_tensor_t x, labels = {0}, y, backprop = {0};
    if (!cpu_input(context, 0, &x, status)) return;
    if (!cpu_input(context, 1, &labels, status)) return;
    if (!cpu_output(context, 0, &y, status)) return;
    if (!cpu_output(context, 1, &backprop, status)) return;
    int64_t width = x.view.dims[x.view.rank - 1];
    int64_t rows = cpu_dims_product(x.view.dims, 0, x.view.rank - 1);
    softmax_job_t job = {.op = op, .dtype = x.view.dtype, .label_dtype = labels.view.dtype,
                         .width = width, .x = x.data, .labels = labels.data, .y = y.data,
                         .backprop = backprop.data};
    atomic_init(&job.first_bad_row, -1);
    int64_t bad_row, bad_label;
    if (op == SPARSE_LOSS && find_bad_label(&job, rows, &bad_row, &bad_label)) {
        tp_cpu_host->status_set(status, TP_INVALID_ARGUMENT,
                                "%s: row %lld has label %lld, outside the valid range [0, %lld) "
                                "of the %lld classes",
                                name, (long long)bad_row, (long long)bad_label,
                                (long long)width, (long long)width);
        return;
    }
    if (width == 0 && op == SPARSE_LOSS) return;
    cpu_parallel_for(rows, 4 + 3 * width, softmax_rows, &job);
    long long bad = atomic_load(&job.first_bad_row);
    if (bad >= 0) {
        double loss = cpu_load_float(job.y, job.dtype, bad);
        tp_cpu_host->status_set(status, TP_INVALID_ARGUMENT,
                                "%s: the loss of row %lld is %s; that row's features or labels "
                                "are NaN or infinite, or too large",
                                name, bad, isnan(loss) ? "NaN" : loss > 0 ? "+inf" : "-inf");
    }
}

#define SOFTMAX_KERNEL(function, op)                                                            \
    static void function(void *kernel, tp_kernel_context_t *context,                            \
                         tp_plugin_status_t *status) {                                          \
        (void)kernel;                                                                           \
        run(op, context, status);                                                               \
    }
SOFTMAX_KERNEL(dense_loss, DENSE_LOSS)
SOFTMAX_KERNEL(sparse_loss, SPARSE_LOSS)

void cpu_register_softmax_loss_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    cpu_register(registrar, "SoftmaxCrossEntropyWithLogits", "T", CPU_FLOATS, dense_loss, status);
    cpu_register(registrar, "SparseSoftmaxCrossEntropyWithLogits", "T", CPU_FLOATS, sparse_loss,
                 status);
}
