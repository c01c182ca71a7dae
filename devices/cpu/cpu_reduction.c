/* SPDX-License-Identifier: Apache-2.0 */
/* Reductions over axes (Sum, Mean, Max, Min, Prod): floats through cpu_reduce_runs.c,
 * integers by an element walk here. */
#include <stdbool.h>
#include <stdlib.h>

#include "cpu_kernels.h"
#include "cpu_reduce_runs.h"

typedef enum { SUM, MEAN, MAX, MIN, PROD } reduction_t;

/* The output element that input element i is reduced into: its coordinates over `out_strides`,
 * which are 0 along the reduced dimensions. */
static int64_t output_offset(const tp_tensor_view_t *x, const int64_t *out_strides, int64_t i) {
    int64_t o = 0;
    for (int32_t d = x->rank - 1; d >= 0; d--) {
        o += (i % x->dims[d]) * out_strides[d];
        i /= x->dims[d];
    }
    return o;
}

/* An integer reduction, in 64-bit integers whatever the dtype (cpu_dtypes.h): a sum wraps
 * modulo 2^64 and is stored modulo the dtype's range, as a sum in the dtype itself would wrap
 * (and so does a product, whose low bits do not depend on the bits above them);
 * a mean divides the 64-bit sum, so that it is exact where the sum fits in 64 bits, however
 * narrow the dtype. */
static void integer_reduction(reduction_t op, const cpu_tensor_t *x, cpu_tensor_t *y,
                              const int64_t *out_strides, int64_t group,
                              tp_kernel_context_t *context, tp_plugin_status_t *status) {
    tp_dtype_t dtype = x->view.dtype;
    bool is_signed = cpu_is_signed(dtype);
    int64_t outputs = y->view.num_elements;
    uint64_t *totals = outputs > 0 ? malloc((size_t)outputs * sizeof *totals) : NULL;
    if (outputs > 0 && totals == NULL) {
        tp_cpu_host->status_set(status, TP_RESOURCE_EXHAUSTED,
                                "%s: no host memory for %lld partial results",
                                tp_cpu_host->kernel_op_name(context), (long long)outputs);
        return;
    }
    for (int64_t o = 0; o < outputs; o++)
        totals[o] = op == MAX    ? cpu_integer_min(dtype)
                    : op == MIN  ? cpu_integer_max(dtype)
                    : op == PROD ? 1
                                 : 0;
    for (int64_t i = 0; i < x->view.num_elements; i++) {
        int64_t o = output_offset(&x->view, out_strides, i);
        uint64_t v = cpu_load_integer(x->data, dtype, i);
        bool above = is_signed ? (int64_t)v > (int64_t)totals[o] : v > totals[o];
        bool below = is_signed ? (int64_t)v < (int64_t)totals[o] : v < totals[o];
        if (op == SUM || op == MEAN)
            totals[o] += v;
        else if (op == PROD)
            totals[o] *= v;
        else if (op == MAX ? above : below)
            totals[o] = v;
    }
    /* The mean of nothing is 0 for integers, which have no NaN. */
    for (int64_t o = 0; o < outputs; o++) {
        uint64_t value = totals[o];
        if (op == MEAN)
            value = group == 0 ? 0
                    : is_signed ? (uint64_t)((int64_t)value / group)
                                : value / (uint64_t)group;
        cpu_store_integer(y->data, dtype, o, value);
    }
    free(totals);
}

static void run_reduction(reduction_t op, tp_kernel_context_t *context,
                          tp_plugin_status_t *status) {
    cpu_tensor_t x, y;
    if (!cpu_input(context, 0, &x, status) || !cpu_output(context, 0, &y, status)) return;
    const int64_t *axes = NULL;
    int32_t num_axes = 0;
    tp_cpu_host->kernel_attr_int_list(context, "axis", &axes, &num_axes, status);
    if (cpu_failed(status)) return;
    int32_t rank = x.view.rank;
    bool reduced[TP_MAX_RANK] = {false};
    for (int32_t d = 0; d < rank; d++) reduced[d] = num_axes == 0;
    for (int32_t i = 0; i < num_axes; i++) reduced[axes[i] < 0 ? axes[i] + rank : axes[i]] = true;
    /* Output strides over the input's dimensions: 0 along reduced ones. */
    int64_t out_strides[TP_MAX_RANK], stride = 1, group = 1;
    for (int32_t d = rank - 1; d >= 0; d--) {
        out_strides[d] = reduced[d] ? 0 : stride;
        if (reduced[d])
            group *= x.view.dims[d];
        else
            stride *= x.view.dims[d];
    }
    if (cpu_is_integer(x.view.dtype)) {
        integer_reduction(op, &x, &y, out_strides, group, context, status);
        return;
    }
    static const cpu_reduce_t runs[] = {
        [SUM] = CPU_REDUCE_SUM, [MEAN] = CPU_REDUCE_MEAN, [MAX] = CPU_REDUCE_MAX,
        [MIN] = CPU_REDUCE_MIN, [PROD] = CPU_REDUCE_PROD};
    cpu_reduce_floats(runs[op], &x, reduced, &y, tp_cpu_host->kernel_op_name(context), status);
}

#define REDUCTION_KERNEL(name, op)                                                             \
    static void name(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) { \
        (void)kernel;                                                                          \
        run_reduction(op, context, status);                                                    \
    }
REDUCTION_KERNEL(sum, SUM)
REDUCTION_KERNEL(mean, MEAN)
REDUCTION_KERNEL(max, MAX)
REDUCTION_KERNEL(min, MIN)
REDUCTION_KERNEL(prod, PROD)

void cpu_register_reduction_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    cpu_register(registrar, "Sum", "T", CPU_NUMBERS, sum, status);
    cpu_register(registrar, "Mean", "T", CPU_NUMBERS, mean, status);
    cpu_register(registrar, "Max", "T", CPU_NUMBERS, max, status);
    cpu_register(registrar, "Min", "T", CPU_NUMBERS, min, status);
    cpu_register(registrar, "Prod", "T", CPU_NUMBERS, prod, status);
}
