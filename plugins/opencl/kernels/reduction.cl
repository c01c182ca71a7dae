/* SPDX-License-Identifier: Apache-2.0 */
/* Reduction kernels of tensorplug's OpenCL plug-in: Sum, Mean, Max and Min over any set of
 * axes, and Softmax over the last dimension.
 *
 * The host views a reduction as outputs times a reduced extent: an output's first element is
 * found through the kept dimensions' dims and strides, and the k-th element it reduces through
 * the reduced ones' (one merged dimension when the axes are contiguous, a row-major walk over
 * several otherwise). A work-group takes `tile_x` consecutive outputs, each with
 * local_size / tile_x lanes that stride through the reduced extent, and combines the lanes by a
 * tree in local memory. Consecutive outputs are usually neighbours in memory, and consecutive
 * lanes are when the innermost axis is reduced, so reads coalesce either way.
 *
 * A long reduction over few outputs is split into `splits` chunks, one work-group each, that
 * write partial results (output o, chunk s at o * splits + s); the host then reduces those
 * with the same kernel, dividing for Mean only in that last pass. The global size is always a
 * whole number of groups, and every work-item reaches every barrier.
 *
 * Results match the CPU device's: integer sums wrap in the dtype (done unsigned, where
 * overflow is defined, and wrapping is associative, so the tree gives the CPU's sum exactly),
 * Mean of integers truncates and is 0 over nothing, Mean of floats over nothing is 0 / 0 =
 * NaN, Max over nothing is -inf or the dtype's smallest integer, and a NaN anywhere makes Max
 * NaN. Float sums differ from the CPU's sequential ones only by rounding. */
#define SUM_FLOAT(a, b) ((a) + (b))
#define SUM_INT32(a, b) ((int)((uint)(a) + (uint)(b)))
#define SUM_INT64(a, b) ((long)((ulong)(a) + (ulong)(b)))
/* NaN wins from either side, so the result is NaN when any element is. */
#define MAX_FLOAT(a, b) (isnan(a) || (a) >= (b) ? (a) : (b))
#define MAX_INTEGER(a, b) ((a) >= (b) ? (a) : (b))
#define MIN_FLOAT(a, b) (isnan(a) || (a) <= (b) ? (a) : (b))
#define MIN_INTEGER(a, b) ((a) <= (b) ? (a) : (b))
#define PROD_FLOAT(a, b) ((a) * (b))
#define PROD_INT32(a, b) ((int)((uint)(a) * (uint)(b)))
#define PROD_INT64(a, b) ((long)((ulong)(a) * (ulong)(b)))

/* Combines `value` of every lane of the work-group's columns; afterwards each work-item's
 * `value` holds its column's result. Uses lid, lanes, lane, column, tile_x and scratch. */
#define TREE(A, COMBINE, value)                                                                    \
    scratch[lid] = (value);                                                                        \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                  \
    for (uint step = lanes / 2; step > 0; step /= 2) {                                             \
        if (lane < step) {                                                                         \
            A mine = scratch[lid], other = scratch[lid + step * tile_x];                           \
            scratch[lid] = COMBINE(mine, other);                                                   \
        }                                                                                          \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
    }                                                                                              \
    (value) = scratch[column];                                                                     \
    barrier(CLK_LOCAL_MEM_FENCE);

#define GROUP_LAYOUT                                                                               \
    uint lid = (uint)get_local_id(0), lanes = (uint)get_local_size(0) / tile_x;                    \
    uint column = lid % tile_x, lane = lid / tile_x;

/* A reduction of T elements, read through LOAD into the accumulator type A, into A results.
 * PREPARE runs once per output before its elements are read (x points at its first element);
 * FINISH turns a whole sum into a mean when `divide` is set, by `count`. */
#define REDUCE(name, T, A, IDENTITY, LOAD, COMBINE, FINISH, EXTRA_PARAMS, PREPARE)                \
    __kernel void name(__global const char *x_base, ulong x_offset, __global char *y_base,         \
                       ulong y_offset, ulong n_out, ulong n_red, ulong splits, uint tile_x,        \
                       int out_rank, long8 out_dims, long8 out_strides, int red_rank,              \
                       long8 red_dims, long8 red_strides, int divide, long count,                  \
                       __local A *scratch EXTRA_PARAMS) {                                          \
        GROUP_LAYOUT                                                                               \
        ulong group = get_group_id(0), split = group % splits;                                     \
        ulong out = group / splits * tile_x + column;                                              \
        A acc = IDENTITY;                                                                          \
        if (out < n_out) {                                                                         \
            __global const T *x = CONST_AT(T, x_base, x_offset) +                                  \
                                  strided_offset(out, out_rank, out_dims, out_strides);            \
            PREPARE                                                                                \
            ulong chunk = (n_red + splits - 1) / splits;                                           \
            ulong begin = split * chunk, end = min(n_red, begin + chunk);                          \
            if (red_rank <= 1) {                                                                   \
                long stride = red_strides.s0;                                                      \
                for (ulong k = begin + lane; k < end; k += lanes) {                                \
                    A v = LOAD(A, x[(long)k * stride]);                                            \
                    acc = COMBINE(acc, v);                                                         \
                }                                                                                  \
            } else {                                                                               \
                for (ulong k = begin + lane; k < end; k += lanes) {                                \
                    A v = LOAD(A, x[strided_offset(k, red_rank, red_dims, red_strides)]);          \
                    acc = COMBINE(acc, v);                                                         \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        TREE(A, COMBINE, acc)                                                                      \
        if (lane == 0 && out < n_out)                                                              \
            AT(A, y_base, y_offset)[out * splits + split] = divide ? FINISH(acc) : acc;            \
    }

#define READ_AS(A, v) ((A)(v))
#define WHOLE(total) (total)
#define MEAN_FLOAT(T, M, total) ((T)((M)(total) / (M)count))
#define MEAN_INTEGER(T, total) (count > 0 ? (T)((long)(total) / count) : (T)0)
#define MEAN_float(total) MEAN_FLOAT(float, MATH_TYPE_float, total)
#define MEAN_double(total) MEAN_FLOAT(double, double, total)
#define MEAN_int(total) MEAN_INTEGER(int, total)
#define MEAN_long(total) MEAN_INTEGER(long, total)

/* Min starts from the largest value, as Max from the smallest; Prod from 1, wrapping as Mul
 * does for integers. */
#define SUM_AND_MAX(T, suffix, SUM, MAX, LOWEST, MIN, HIGHEST, PROD)                               \
    REDUCE(reduce_sum_##suffix, T, T, (T)0, READ_AS, SUM, MEAN_##T, , )                            \
    REDUCE(reduce_max_##suffix, T, T, LOWEST, READ_AS, MAX, WHOLE, , )                             \
    REDUCE(reduce_min_##suffix, T, T, HIGHEST, READ_AS, MIN, WHOLE, , )                            \
    REDUCE(reduce_prod_##suffix, T, T, (T)1, READ_AS, PROD, WHOLE, , )

SUM_AND_MAX(float, float32, SUM_FLOAT, MAX_FLOAT, -INFINITY, MIN_FLOAT, INFINITY, PROD_FLOAT)
SUM_AND_MAX(int, int32, SUM_INT32, MAX_INTEGER, INT_MIN, MIN_INTEGER, INT_MAX, PROD_INT32)
SUM_AND_MAX(long, int64, SUM_INT64, MAX_INTEGER, LONG_MIN, MIN_INTEGER, LONG_MAX, PROD_INT64)
#ifdef TP_FP64
SUM_AND_MAX(double, float64, SUM_FLOAT, MAX_FLOAT, -(double)INFINITY, MIN_FLOAT,
            (double)INFINITY, PROD_FLOAT)
#endif

/* ---- Softmax --------------------------------------------------------------------------------- */

/* Softmax as the CPU computes it, in the math type A: y = exp(x - m) / sum(exp(x - m)) with m
 * the row's largest element, which keeps exp() from overflowing. A NaN in a row makes the sum,
 * and so the whole row, NaN, whichever maximum is subtracted.
 *
 * softmax_T: one row per column of a work-group, for rows the host does not split.
 * softmax_sum_T: sum(exp(x - m)) of a split row, m from the row maxima at shift; its partial
 *   sums are added by reduce_sum of A.
 * softmax_scale_T: one work-item per element, given the rows' maxima and sums. */
#define SHIFT_PARAMS , __global const char *shift_base, ulong shift_offset
#define EXP_SHIFTED(A, v) exp((A)(v) - shift)

#define SOFTMAX(T, A, suffix)                                                                      \
    __kernel void softmax_##suffix(__global const char *x_base, ulong x_offset,                    \
                                   __global char *y_base, ulong y_offset, ulong rows,              \
                                   ulong width, uint tile_x, __local A *scratch) {                 \
        GROUP_LAYOUT                                                                               \
        ulong row = get_group_id(0) * tile_x + column;                                             \
        bool active = row < rows;                                                                  \
        ulong first = active ? row * width : 0;                                                    \
        __global const T *x = CONST_AT(T, x_base, x_offset) + first;                               \
        __global T *y = AT(T, y_base, y_offset) + first;                                           \
        A largest = -INFINITY;                                                                     \
        for (ulong k = lane; active && k < width; k += lanes) {                                    \
            A v = (A)x[k];                                                                         \
            largest = MAX_FLOAT(largest, v);                                                       \
        }                                                                                          \
        TREE(A, MAX_FLOAT, largest)                                                                \
        A total = 0;                                                                               \
        for (ulong k = lane; active && k < width; k += lanes) total += exp((A)x[k] - largest);     \
        TREE(A, SUM_FLOAT, total)                                                                  \
        for (ulong k = lane; active && k < width; k += lanes)                                      \
            y[k] = (T)(exp((A)x[k] - largest) / total);                                            \
    }                                                                                              \
                                                                                                   \
    REDUCE(softmax_sum_##suffix, T, A, (A)0, EXP_SHIFTED, SUM_FLOAT, WHOLE, SHIFT_PARAMS,          \
           A shift = (A)CONST_AT(T, shift_base, shift_offset)[out];)                               \
                                                                                                   \
    __kernel void softmax_scale_##suffix(__global const char *x_base, ulong x_offset,              \
                                         __global const char *m_base, ulong m_offset,              \
                                         __global const char *s_base, ulong s_offset,              \
                                         __global char *y_base, ulong y_offset, ulong n,           \
                                         ulong width) {                                            \
        size_t i = get_global_id(0);                                                               \
        if (i >= n) return;                                                                        \
        ulong row = i / width;                                                                     \
        A largest = (A)CONST_AT(T, m_base, m_offset)[row];                                         \
        A total = CONST_AT(A, s_base, s_offset)[row];                                              \
        AT(T, y_base, y_offset)[i] = (T)(exp((A)CONST_AT(T, x_base, x_offset)[i] - largest) /     \
                                         total);                                                   \
    }

SOFTMAX(float, MATH_TYPE_float, float32)
#ifdef TP_FP64
SOFTMAX(double, double, float64)
#endif
