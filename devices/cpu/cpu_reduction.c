/* SPDX-License-Identifier: Apache-2.0 */
/* Reductions over axes (Sum, Mean, Max, Min) and Softmax over the last dimension. */
#include <math.h>
#include <stdbool.h>

#include "cpu_kernels.h"

typedef enum { SUM, MEAN, MAX, MIN } reduction_t;

/* Element i of a numeric tensor as a double; int64 values beyond 2^53 lose precision, so
 * integer sums are done in int64 below instead. */
static double load(const cpu_tensor_t *t, int64_t i) {
    switch (t->view.dtype) {
    case TP_FLOAT32: return ((const float *)t->data)[i];
    case TP_FLOAT64: return ((const double *)t->data)[i];
    case TP_INT32: return ((const int32_t *)t->data)[i];
    default: return (double)((const int64_t *)t->data)[i];
    }
}

static int64_t load_integer(const cpu_tensor_t *t, int64_t i) {
    return t->view.dtype == TP_INT32 ? ((const int32_t *)t->data)[i]
                                     : ((const int64_t *)t->data)[i];
}

static void store(cpu_tensor_t *t, int64_t i, double value, int64_t integer) {
    switch (t->view.dtype) {
    case TP_FLOAT32: ((float *)t->data)[i] = (float)value; break;
    case TP_FLOAT64: ((double *)t->data)[i] = value; break;
    case TP_INT32: ((int32_t *)t->data)[i] = (int32_t)integer; break;
    default: ((int64_t *)t->data)[i] = integer; break;
    }
}

/* A float sum walked by rows of the innermost dimension, the output offset found once per row:
 * the same additions in the same order as the element walk, without its divisions. */
#define FLOAT_ROW_SUM(T)                                                                        \
    do {                                                                                        \
        const T *in = x->data;                                                                  \
        T *out = y->data;                                                                       \
        for (int64_t i = 0; i < x->view.num_elements; i += inner) {                             \
            int64_t rest = i / inner, o = 0;                                                    \
            for (int32_t d = rank - 2; d >= 0; d--) {                                           \
                o += (rest % x->view.dims[d]) * out_strides[d];                                 \
                rest /= x->view.dims[d];                                                        \
            }                                                                                   \
            if (out_strides[rank - 1] == 0) {                                                   \
                T total = out[o];                                                               \
                for (int64_t k = 0; k < inner; k++) total += in[i + k];                         \
                out[o] = total;                                                                 \
            } else {                                                                            \
                for (int64_t k = 0; k < inner; k++) out[o + k] += in[i + k];                    \
            }                                                                                   \
        }                                                                                       \
    } while (0)

static void float_row_sum(const cpu_tensor_t *x, cpu_tensor_t *y, const int64_t *out_strides) {
    int32_t rank = x->view.rank;
    int64_t inner = x->view.dims[rank - 1];
    if (inner == 0) return;
    if (x->view.dtype == TP_FLOAT32)
        FLOAT_ROW_SUM(float);
    else
        FLOAT_ROW_SUM(double);
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
    bool integer = x.view.dtype == TP_INT32 || x.view.dtype == TP_INT64;
    int64_t outputs = y.view.num_elements;
    /* Max starts from the smallest value and Min from the largest, not from 0. */
    bool extreme = op == MAX || op == MIN;
    for (int64_t o = 0; o < outputs; o++) {
        store(&y, o, op == MAX ? -INFINITY : op == MIN ? INFINITY : 0.0, 0);
        if (op == MAX && integer)
            store(&y, o, 0, x.view.dtype == TP_INT32 ? INT32_MIN : INT64_MIN);
        if (op == MIN && integer)
            store(&y, o, 0, x.view.dtype == TP_INT32 ? INT32_MAX : INT64_MAX);
    }
    bool row_sum = !extreme && !integer && rank > 0;
    if (row_sum) float_row_sum(&x, &y, out_strides);
    for (int64_t i = 0; i < x.view.num_elements && !row_sum; i++) {
        int64_t rest = i, o = 0;
        for (int32_t d = rank - 1; d >= 0; d--) {
            o += (rest % x.view.dims[d]) * out_strides[d];
            rest /= x.view.dims[d];
        }
        if (integer) {
            int64_t current = load_integer(&y, o), v = load_integer(&x, i);
            int64_t next = op == MAX   ? (v > current ? v : current)
                           : op == MIN ? (v < current ? v : current)
                                       : (int64_t)((uint64_t)current + (uint64_t)v);
            store(&y, o, 0, next);
        } else {
            double current = load(&y, o), v = load(&x, i);
            /* A NaN wins, and stays: no comparison with it is true. */
            double next = op == MAX   ? (v > current || isnan(v) ? v : current)
                          : op == MIN ? (v < current || isnan(v) ? v : current)
                                      : current + v;
            store(&y, o, next, 0);
        }
    }
    /* The mean of nothing is NaN for floats (0 / 0), as in NumPy; integers have no NaN and
     * give 0. */
    if (op == MEAN) {
        for (int64_t o = 0; o < outputs; o++) {
            if (integer)
                store(&y, o, 0, group > 0 ? load_integer(&y, o) / group : 0);
            else
                store(&y, o, load(&y, o) / (double)group, 0);
        }
    }
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

/* Subtracting each row's maximum keeps exp() from overflowing. */
static void softmax(void *kernel, tp_kernel_context_t *context, tp_plugin_status_t *status) {
    (void)kernel;
    cpu_tensor_t x, y;
    if (!cpu_input(context, 0, &x, status) || !cpu_output(context, 0, &y, status)) return;
    int64_t width = x.view.dims[x.view.rank - 1];
    if (width == 0) return;
    int64_t rows = x.view.num_elements / width;
    for (int64_t r = 0; r < rows; r++) {
        int64_t base = r * width;
        double largest = -INFINITY, total = 0;
        for (int64_t j = 0; j < width; j++)
            if (load(&x, base + j) > largest) largest = load(&x, base + j);
        for (int64_t j = 0; j < width; j++) total += exp(load(&x, base + j) - largest);
        for (int64_t j = 0; j < width; j++)
            store(&y, base + j, exp(load(&x, base + j) - largest) / total, 0);
    }
}

void cpu_register_reduction_kernels(tp_registrar_t *registrar, tp_plugin_status_t *status) {
    static const tp_dtype_t numbers[] = {TP_FLOAT32, TP_FLOAT64, TP_INT32, TP_INT64};
    static const tp_dtype_t floats[] = {TP_FLOAT32, TP_FLOAT64};
    cpu_register(registrar, "Sum", "T", numbers, 4, sum, status);
    cpu_register(registrar, "Mean", "T", numbers, 4, mean, status);
    cpu_register(registrar, "Max", "T", numbers, 4, max, status);
    cpu_register(registrar, "Min", "T", numbers, 4, min, status);
    cpu_register(registrar, "Softmax", "T", floats, 2, softmax, status);
}
