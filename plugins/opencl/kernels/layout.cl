/* SPDX-License-Identifier: Apache-2.0 */
/* Layout kernels of tensorplug's OpenCL plug-in: Transpose, one work-item per output element.
 * Elements move as bytes of their size (1, 4 or 8), never as values, so every dtype comes out
 * bit for bit and float64 needs no cl_khr_fp64.
 *
 * Output element i, split into its indices along `dims` (the output's dims, row-major), reads
 * the input at the sum of index times `walk`: the input's stride along the dimension that
 * output dimension d takes. The kernel checks i against `n`, since the global size may be
 * rounded up to a group. */

#define TRANSPOSE(name, T)                                                                         \
    __kernel void name(__global const char *x_base, ulong x_offset, __global char *y_base,         \
                       ulong y_offset, ulong n, int rank, long8 dims, long8 walk) {                \
        size_t i = get_global_id(0);                                                               \
        if (i >= n) return;                                                                        \
        AT(T, y_base, y_offset)[i] =                                                               \
            CONST_AT(T, x_base, x_offset)[strided_offset(i, rank, dims, walk)];                      \
    }

TRANSPOSE(transpose_1, uchar)
TRANSPOSE(transpose_4, uint)
TRANSPOSE(transpose_8, ulong)
