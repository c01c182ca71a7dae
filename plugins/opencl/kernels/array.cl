/* SPDX-License-Identifier: Apache-2.0 */
/* Array kernels of tensorplug's OpenCL plug-in, by element size (they move bytes, whatever the
 * dtype): a general strided walk that Concat, Slice and Pad are made of, and Select.
 *
 * walk_N: element i of a row-major walk over `rank` (up to 16) dims is copied from the source at
 * from_start + sum(coordinate * from) elements to the destination at to_start + sum(coordinate *
 * to) elements, a work-item per row of the last dimension. A Slice reads with the input's
 * strides from its begin; Concat writes each input into the output at its offset along the
 * axis; Pad writes inside the borders of an output filled beforehand. */


/* The source and destination offsets of row `row` of the walk: a row-major walk over the
 * first rank - 1 dims. */
static void walk_offsets(ulong row, int rank, long16 dims16, long16 from16, long16 to16,
                         long *from_at, long *to_at) {
    long dims[16], from[16], to[16];
    vstore16(dims16, 0, dims);
    vstore16(from16, 0, from);
    vstore16(to16, 0, to);
    for (int d = rank - 2; d >= 0; d--) {
        long coordinate = (long)(row % (ulong)dims[d]);
        row /= (ulong)dims[d];
        *from_at += coordinate * from[d];
        *to_at += coordinate * to[d];
    }
}

/* One work-item per row of the last dimension (rank >= 1; the host makes a scalar one row of
 * one element), so the index arithmetic is paid once per row, not per element. */
#define WALK(T, size)                                                                              \
    __kernel void walk_##size(__global const char *x_base, ulong x_offset, __global char *y_base,  \
                              ulong y_offset, ulong rows, int rank, long16 dims, long16 from,      \
                              long16 to, long from_start, long to_start, long row_length,          \
                              long from_step, long to_step) {                                      \
        size_t i = get_global_id(0);                                                               \
        if (i >= rows) return;                                                                     \
        long from_at = from_start, to_at = to_start;                                               \
        walk_offsets(i, rank, dims, from, to, &from_at, &to_at);                                   \
        __global const T *x = CONST_AT(T, x_base, x_offset) + from_at;                             \
        __global T *y = AT(T, y_base, y_offset) + to_at;                                           \
        for (long k = 0; k < row_length; k++) y[k * to_step] = x[k * from_step];                   \
    }

/* Select: y = condition ? t : e, the three broadcast together over the output's `rank` dims
 * (rank 0: all have the output's elements). */
#define SELECT(T, size)                                                                            \
    __kernel void select_##size(__global const char *c_base, ulong c_offset,                       \
                                __global const char *t_base, ulong t_offset,                       \
                                __global const char *e_base, ulong e_offset,                       \
                                __global char *y_base, ulong y_offset, ulong n, int rank,          \
                                long8 dims, long8 c_strides, long8 t_strides, long8 e_strides) {   \
        size_t i = get_global_id(0);                                                               \
        if (i >= n) return;                                                                        \
        long ic = (long)i, it = (long)i, ie = (long)i;                                             \
        if (rank > 0) {                                                                            \
            ic = strided_offset(i, rank, dims, c_strides);                                         \
            it = strided_offset(i, rank, dims, t_strides);                                         \
            ie = strided_offset(i, rank, dims, e_strides);                                         \
        }                                                                                          \
        AT(T, y_base, y_offset)[i] = CONST_AT(uchar, c_base, c_offset)[ic]                         \
                                         ? CONST_AT(T, t_base, t_offset)[it]                       \
                                         : CONST_AT(T, e_base, e_offset)[ie];                      \
    }

WALK(uchar, 1) WALK(ushort, 2) WALK(uint, 4) WALK(ulong, 8)
SELECT(uchar, 1) SELECT(ushort, 2) SELECT(uint, 4) SELECT(ulong, 8)
