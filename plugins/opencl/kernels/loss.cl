/* SPDX-License-Identifier: Apache-2.0 */
/* LogSoftmax and the softmax cross-entropy losses of tensorplug's OpenCL plug-in, one work-item
 * per row of the last dimension (a classifier's rows are a handful of classes), computed as the
 * CPU computes them: in double where the device has it, the row's largest value m subtracted
 * before exp, log-sum-exp = m + log(sum(exp(x - m))), and a class whose label is 0 adding
 * nothing to the loss even where its logit is -inf.
 *
 * The losses' checks fill a record that the host reads back after the launch (opencl_loss.c):
 * the first label outside [0, classes), with its row, before the loss is computed, and the
 * first row whose loss is NaN or infinite, after. Each check is one work-item that walks the
 * rows in order, so the row it reports is the first, as the CPU's. */

/* Sets, for row `row` of `width` values at x: largest (fmax: NaN is passed over, and then makes
 * the total NaN) and log_total = log(sum(exp(x - largest))). */
#define ROW_STATISTICS(A, x, width)                                                                \
    A largest = -INFINITY, total = 0;                                                              \
    for (long j = 0; j < (width); j++) largest = fmax(largest, (A)(x)[j]);                         \
    for (long j = 0; j < (width); j++) total += exp((A)(x)[j] - largest);                          \
    A log_total = log(total);

#define LOG_SOFTMAX(T, A, suffix)                                                                  \
    __kernel void log_softmax_##suffix(__global const char *x_base, ulong x_offset,                \
                                       __global char *y_base, ulong y_offset, ulong rows,          \
                                       long width) {                                               \
        size_t r = get_global_id(0);                                                               \
        if (r >= rows) return;                                                                     \
        __global const T *x = CONST_AT(T, x_base, x_offset) + (long)r * width;                     \
        __global T *y = AT(T, y_base, y_offset) + (long)r * width;                                 \
        ROW_STATISTICS(A, x, width)                                                                \
        for (long j = 0; j < width; j++) y[j] = (T)((A)x[j] - largest - log_total);                \
    }

/* loss = sum_j target_j (lse - x_j); backprop_j = softmax_j - target_j, where TARGET(j) gives
 * target_j in A. */
#define LOSS_BODY(T, A, TARGET)                                                                    \
    size_t r = get_global_id(0);                                                                   \
    if (r >= rows) return;                                                                         \
    __global const T *x = CONST_AT(T, x_base, x_offset) + (long)r * width;                         \
    __global T *backprop = AT(T, b_base, b_offset) + (long)r * width;                              \
    ROW_STATISTICS(A, x, width)                                                                    \
    A loss = 0;                                                                                    \
    for (long j = 0; j < width; j++) {                                                             \
        A shifted = (A)x[j] - largest, target = TARGET(A, j);                                     \
        if (target != 0) loss += target * (log_total - shifted);                                   \
        backprop[j] = (T)(exp(shifted - log_total) - target);                                      \
    }                                                                                              \
    AT(T, loss_base, loss_offset)[r] = (T)loss;

#define LOSS_PARAMS                                                                                \
    __global char *loss_base, ulong loss_offset, __global char *b_base, ulong b_offset,           \
        ulong rows, long width

#define DENSE_TARGET(A, j) ((A)labels[j])
#define SPARSE_TARGET(A, j) ((j) == label ? (A)1 : (A)0)

#define DENSE_LOSS(T, A, suffix)                                                                   \
    __kernel void dense_loss_##suffix(__global const char *x_base, ulong x_offset,                 \
                                      __global const char *l_base, ulong l_offset, LOSS_PARAMS) {  \
        __global const T *labels =                                                                 \
            CONST_AT(T, l_base, l_offset) + (long)min((ulong)get_global_id(0), rows) * width;      \
        LOSS_BODY(T, A, DENSE_TARGET)                                                              \
    }

#define SPARSE_LOSS(T, A, suffix, I, index_suffix)                                                 \
    __kernel void sparse_loss_##suffix##_##index_suffix(                                           \
        __global const char *x_base, ulong x_offset, __global const char *l_base,                  \
        ulong l_offset, LOSS_PARAMS) {                                                             \
        long label = get_global_id(0) < rows                                                       \
                         ? (long)CONST_AT(I, l_base, l_offset)[get_global_id(0)]                   \
                         : -1;                                                                     \
        LOSS_BODY(T, A, SPARSE_TARGET)                                                             \
    }

/* The first loss that is NaN or infinite: record {1, row, kind}, kind 0 NaN, 1 +inf, 2 -inf. */
#define CHECK_FINITE(T, suffix)                                                                    \
    __kernel void check_finite_##suffix(__global const char *loss_base, ulong loss_offset,         \
                                        ulong rows, __global long *record) {                       \
        if (get_global_id(0) != 0) return;                                                         \
        __global const T *loss = CONST_AT(T, loss_base, loss_offset);                              \
        for (ulong r = 0; r < rows; r++)                                                           \
            if (!isfinite(loss[r])) {                                                              \
                record[0] = 1;                                                                     \
                record[1] = (long)r;                                                               \
                record[2] = isnan(loss[r]) ? 0 : loss[r] > 0 ? 1 : 2;                              \
                return;                                                                            \
            }                                                                                      \
    }

/* The first label outside [0, width): record {1, row, label, width}. */
#define CHECK_LABELS(I, suffix)                                                                    \
    __kernel void check_labels_##suffix(__global const char *l_base, ulong l_offset, ulong rows,   \
                                        long width, __global long *record) {                       \
        if (get_global_id(0) != 0) return;                                                         \
        __global const I *labels = CONST_AT(I, l_base, l_offset);                                  \
        for (ulong r = 0; r < rows; r++)                                                           \
            if (labels[r] < 0 || (long)labels[r] >= width) {                                       \
                record[0] = 1;                                                                     \
                record[1] = (long)r;                                                               \
                record[2] = (long)labels[r];                                                       \
                record[3] = width;                                                                 \
                return;                                                                            \
            }                                                                                      \
    }

#define LOSSES(T, A, suffix)                                                                       \
    LOG_SOFTMAX(T, A, suffix) DENSE_LOSS(T, A, suffix) SPARSE_LOSS(T, A, suffix, int, int32)       \
    SPARSE_LOSS(T, A, suffix, long, int64) CHECK_FINITE(T, suffix)

LOSSES(float, MATH_TYPE_float, float32)
#ifdef TP_FP64
LOSSES(double, double, float64)
#endif
CHECK_LABELS(int, int32)
CHECK_LABELS(long, int64)
