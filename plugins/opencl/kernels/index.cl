/* SPDX-License-Identifier: Apache-2.0 */
/* Kernels driven by integer indices: Gather and OneHot by element size (they move bytes),
 * UnsortedSegmentSum (Gather's gradient) by dtype, and the check of their indices.
 *
 * gather_N_I: params seen as [outer, n, inner] and the output as [outer, count, inner]; one
 * work-item per output row of `inner` elements. The indices were checked first
 * (check_indices_I), and a bad one is never read from: it is clamped, as the failure reaches
 * the output anyway.
 * one_hot_N_I: one work-item per output element, seen as [before, depth, after]: on where the
 * index at (before, after) equals the element's depth position, off elsewhere (an index outside
 * [0, depth) leaves its row all off, as on the CPU). */
#define GATHER(T, size, I, index_suffix)                                                           \
    __kernel void gather_##size##_##index_suffix(                                                  \
        __global const char *p_base, ulong p_offset, __global const char *i_base,                  \
        ulong i_offset, __global char *y_base, ulong y_offset, ulong rows, long count, long n,     \
        long inner) {                                                                              \
        size_t r = get_global_id(0);                                                               \
        if (r >= rows) return;                                                                     \
        long outer = (long)r / count;                                                              \
        long index = (long)CONST_AT(I, i_base, i_offset)[(long)r % count];                         \
        index = clamp(index, 0L, n - 1);                                                           \
        __global const T *from = CONST_AT(T, p_base, p_offset) + (outer * n + index) * inner;      \
        __global T *to = AT(T, y_base, y_offset) + (long)r * inner;                                \
        for (long k = 0; k < inner; k++) to[k] = from[k];                                          \
    }

#define ONE_HOT(T, size, I, index_suffix)                                                          \
    __kernel void one_hot_##size##_##index_suffix(__global const char *i_base, ulong i_offset,     \
                                                  __global char *y_base, ulong y_offset, ulong n,  \
                                                  long depth, long after, ulong on, ulong off) {   \
        size_t i = get_global_id(0);                                                               \
        if (i >= n) return;                                                                        \
        long rest = (long)i % after, j = ((long)i / after) % depth;                                \
        long before = (long)i / after / depth;                                                     \
        long index = (long)CONST_AT(I, i_base, i_offset)[before * after + rest];                   \
        AT(T, y_base, y_offset)[i] = index == j ? (T)on : (T)off;                                  \
    }

/* The first index outside [low, limit), in the indices' order: record {1, index, limit, rank,
 * its coordinates...}. */
#define CHECK_INDICES(I, index_suffix)                                                             \
    __kernel void check_indices_##index_suffix(__global const char *i_base, ulong i_offset,        \
                                               ulong count, long low, long limit, int rank,        \
                                               long8 dims8, __global long *record) {               \
        if (get_global_id(0) != 0) return;                                                         \
        __global const I *indices = CONST_AT(I, i_base, i_offset);                                 \
        for (ulong k = 0; k < count; k++) {                                                        \
            long index = (long)indices[k];                                                         \
            if (index >= low && index < limit) continue;                                           \
            long dims[8];                                                                          \
            vstore8(dims8, 0, dims);                                                               \
            record[0] = 1;                                                                         \
            record[1] = index;                                                                     \
            record[2] = limit;                                                                     \
            record[3] = rank;                                                                      \
            ulong rest = k;                                                                        \
            for (int d = rank - 1; d >= 0; d--) {                                                  \
                record[4 + d] = (long)(rest % (ulong)dims[d]);                                     \
                rest /= (ulong)dims[d];                                                            \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
    }

/* UnsortedSegmentSum: output element (segment, column) adds the column of every data row whose
 * id is that segment, in the rows' order, as the CPU does (so float sums round alike); a
 * negative id drops its row. Integers wrap, through unsigned arithmetic. */
#define SEGMENT_SUM(T, U, suffix, I, index_suffix)                                                 \
    __kernel void segment_sum_##suffix##_##index_suffix(                                           \
        __global const char *d_base, ulong d_offset, __global const char *i_base, ulong i_offset,  \
        __global char *y_base, ulong y_offset, ulong n, long rows, long columns) {                 \
        size_t i = get_global_id(0);                                                               \
        if (i >= n) return;                                                                        \
        long segment = (long)i / columns, column = (long)i % columns;                              \
        __global const T *data = CONST_AT(T, d_base, d_offset) + column;                           \
        __global const I *ids = CONST_AT(I, i_base, i_offset);                                     \
        T sum = 0;                                                                                 \
        for (long r = 0; r < rows; r++)                                                            \
            if ((long)ids[r] == segment) sum = (T)((U)sum + (U)data[r * columns]);                 \
        AT(T, y_base, y_offset)[i] = sum;                                                          \
    }

#define SEGMENT_SUMS(I, index_suffix)                                                              \
    SEGMENT_SUM(float, float, float32, I, index_suffix)                                            \
    SEGMENT_SUM(int, uint, int32, I, index_suffix)                                                 \
    SEGMENT_SUM(long, ulong, int64, I, index_suffix)

#define BY_SIZE(MACRO, I, index_suffix)                                                            \
    MACRO(uchar, 1, I, index_suffix) MACRO(ushort, 2, I, index_suffix)                             \
    MACRO(uint, 4, I, index_suffix) MACRO(ulong, 8, I, index_suffix)

BY_SIZE(GATHER, int, int32)
BY_SIZE(GATHER, long, int64)
BY_SIZE(ONE_HOT, int, int32)
BY_SIZE(ONE_HOT, long, int64)
BY_SIZE(ONE_HOT, uchar, uint8)
CHECK_INDICES(int, int32)
CHECK_INDICES(long, int64)
SEGMENT_SUMS(int, int32)
SEGMENT_SUMS(long, int64)
#ifdef TP_FP64
SEGMENT_SUM(double, double, float64, int, int32)
SEGMENT_SUM(double, double, float64, long, int64)
#endif
