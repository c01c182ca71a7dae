/* SPDX-License-Identifier: Apache-2.0 */
/* LogSoftmax, SoftmaxCrossEntropyWithLogits and SparseSoftmaxCrossEntropyWithLogits on the GPU,
 * from kernels/loss.cl. The losses report bad input as the CPU does, found on the device
 * without the host waiting: a label outside [0, classes) names its row and value, and a loss
 * that is NaN or infinite names its row. Each check fills a record that the stream reads back
 * behind the launch (opencl_stream_check_record), so the failure reaches exactly the tensors
 * computed from the loss. */
#include <stdio.h>

#include "opencl_device.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

typedef enum { LOG_SOFTMAX, DENSE_LOSS, SPARSE_LOSS } loss_kind_t;

typedef struct loss_op {
    const char *op;
    loss_kind_t kind;
    /* The main kernel by label dtype (0 int32, 1 int64: the sparse loss's alone differ) and
     * dtype. */
    int32_t ids[2][OPENCL_NUM_DTYPES];
} loss_op_t;

static loss_op_t ops[] = {
    {"LogSoftmax", LOG_SOFTMAX, {{0}}},
    {"SoftmaxCrossEntropyWithLogits", DENSE_LOSS, {{0}}},
    {"SparseSoftmaxCrossEntropyWithLogits", SPARSE_LOSS, {{0}}},
};

/* check_finite_T by dtype, check_labels_I by label dtype (0 int32, 1 int64). */
static int32_t finite_ids[OPENCL_NUM_DTYPES], label_ids[2];

/* The CPU's messages for a label outside [0, classes) (record {1, row, label, classes}) and a
 * loss that is not finite (record {1, row, kind}: 0 NaN, 1 +inf, 2 -inf). */
static void describe_bad_label(const int64_t *record, char *text, size_t capacity) {
    snprintf(text, capacity,
             "row %lld has label %lld, outside the valid range [0, %lld) of the %lld classes",
             (long long)record[1], (long long)record[2], (long long)record[3],
             (long long)record[3]);
}

static void describe_bad_loss(const int64_t *record, char *text, size_t capacity) {
    static const char *const kinds[3] = {"NaN", "+inf", "-inf"};
    snprintf(text, capacity,
             "the loss of row %lld is %s; that row's features or labels are NaN or infinite, "
             "or too large",
             (long long)record[1], kinds[record[2] >= 0 && record[2] < 3 ? record[2] : 0]);
}

static void compute(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    const loss_op_t *op = kernel;
    tp_tensor_view_t x, labels = {0}, y, backprop = {0};
    if (!opencl_input(context, 0, &x, status) ||
        (op->kind != LOG_SOFTMAX && !opencl_input(context, 1, &labels, status)) ||
        !opencl_output(context, 0, &y, status) ||
        (op->kind != LOG_SOFTMAX && !opencl_output(context, 1, &backprop, status)))
        return;
    int index = labels.dtype == TP_INT64 ? 1 : 0;
    int32_t id = opencl_kernel_for(op->op, op->ids[index], x.dtype, context, status);
    if (id < 0 || x.rank < 1) return; /* the shape functions refuse rank 0 */
    cl_long width = x.dims[x.rank - 1];
    cl_ulong rows = 1;
    for (int32_t d = 0; d + 1 < x.rank; d++) rows *= (cl_ulong)x.dims[d];
    cl_mem x_mem = (cl_mem)x.mem, l_mem = (cl_mem)labels.mem, y_mem = (cl_mem)y.mem,
           b_mem = (cl_mem)backprop.mem;
    if (op->kind == SPARSE_LOSS && rows > 0) {
        opencl_arg_t args[] = {OPENCL_ARG(l_mem), OPENCL_ARG(labels.offset), OPENCL_ARG(rows),
                               OPENCL_ARG(width), {0, NULL}};
        if (!opencl_launch_check(context, op->op, label_ids[index], args, COUNT(args) - 1,
                                 describe_bad_label, status))
            return;
    }
    if (rows == 0 || (width == 0 && op->kind != DENSE_LOSS)) return;
    if (op->kind == LOG_SOFTMAX) {
        const opencl_arg_t args[] = {OPENCL_ARG(x_mem), OPENCL_ARG(x.offset), OPENCL_ARG(y_mem),
                                     OPENCL_ARG(y.offset), OPENCL_ARG(rows), OPENCL_ARG(width)};
        opencl_launch(context, op->op, id, args, COUNT(args), (size_t)rows, 0, status);
        return;
    }
    const opencl_arg_t args[] = {OPENCL_ARG(x_mem),    OPENCL_ARG(x.offset),
                                 OPENCL_ARG(l_mem),    OPENCL_ARG(labels.offset),
                                 OPENCL_ARG(y_mem),    OPENCL_ARG(y.offset),
                                 OPENCL_ARG(b_mem),    OPENCL_ARG(backprop.offset),
                                 OPENCL_ARG(rows),     OPENCL_ARG(width)};
    if (!opencl_launch(context, op->op, id, args, COUNT(args), (size_t)rows, 0, status)) return;
    opencl_arg_t finite_args[] = {OPENCL_ARG(y_mem), OPENCL_ARG(y.offset), OPENCL_ARG(rows),
                                  {0, NULL}};
    opencl_launch_check(context, op->op, finite_ids[x.dtype], finite_args,
                        COUNT(finite_args) - 1, describe_bad_loss, status);
}

void opencl_register_loss_kernels(tp_registrar_t *registrar, bool fp64,
                                  tp_plugin_status_t *status) {
    tp_dtype_t floats[2] = {TP_FLOAT32, TP_FLOAT64};
    size_t num_floats = fp64 ? 2 : 1;
    static const char *const families[] = {"log_softmax", "dense_loss", "sparse_loss"};
    static const char *const index_suffixes[2] = {"int32", "int64"};
    for (int d = 0; d < OPENCL_NUM_DTYPES; d++) finite_ids[d] = -1;
    for (int index = 0; index < 2 && !opencl_failed(status); index++) {
        char name[64];
        snprintf(name, sizeof name, "check_labels_%s", index_suffixes[index]);
        label_ids[index] = opencl_kernel_id("loss", name, status);
    }
    for (size_t f = 0; f < num_floats && !opencl_failed(status); f++) {
        char name[64];
        snprintf(name, sizeof name, "check_finite_%s", opencl_dtype_suffix(floats[f]));
        finite_ids[floats[f]] = opencl_kernel_id("loss", name, status);
    }
    for (size_t i = 0; i < COUNT(ops) && !opencl_failed(status); i++) {
        loss_op_t *op = &ops[i];
        for (int d = 0; d < OPENCL_NUM_DTYPES; d++) op->ids[0][d] = op->ids[1][d] = -1;
        for (size_t f = 0; f < num_floats && !opencl_failed(status); f++)
            for (int index = 0; index < 2 && !opencl_failed(status); index++) {
                char name[64];
                if (op->kind == SPARSE_LOSS)
                    snprintf(name, sizeof name, "%s_%s_%s", families[op->kind],
                             opencl_dtype_suffix(floats[f]), index_suffixes[index]);
                else
                    snprintf(name, sizeof name, "%s_%s", families[op->kind],
                             opencl_dtype_suffix(floats[f]));
                op->ids[index][floats[f]] = opencl_kernel_id("loss", name, status);
            }
        opencl_register(registrar, op->op, "T", floats, num_floats, op, compute, status);
    }
}
