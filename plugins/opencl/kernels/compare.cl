/* SPDX-License-Identifier: Apache-2.0 */
/* Comparison kernels of tensorplug's OpenCL plug-in: Equal, NotEqual, Less, LessEqual, Greater
 * and GreaterEqual with NumPy broadcasting and bool (one byte, 0 or 1) results, and ArgMax and
 * ArgMin along one axis.
 *
 * As on the CPU, comparisons follow IEEE 754 (NaN is unequal to everything and neither less
 * nor greater than anything; -0 equals +0), ties in a search go to the first index, and NaN
 * counts as beyond every number, so the first NaN wins either search. */

/* z = a OP b; rank 0: a, b and z have the same elements; otherwise each operand is read with
 * its broadcast strides over the output's dims. */
#define COMPARE(name, T, suffix, OP)                                                               \
    __kernel void name##_##suffix(__global const char *a_base, ulong a_offset,                     \
                                  __global const char *b_base, ulong b_offset,                     \
                                  __global char *z_base, ulong z_offset, ulong n, int rank,        \
                                  long8 dims, long8 a_strides, long8 b_strides) {                  \
        size_t i = get_global_id(0);                                                               \
        if (i >= n) return;                                                                        \
        long ia = (long)i, ib = (long)i;                                                           \
        if (rank > 0) {                                                                            \
            ia = strided_offset(i, rank, dims, a_strides);                                         \
            ib = strided_offset(i, rank, dims, b_strides);                                         \
        }                                                                                          \
        T a = CONST_AT(T, a_base, a_offset)[ia], b = CONST_AT(T, b_base, b_offset)[ib];            \
        AT(uchar, z_base, z_offset)[i] = (a OP b) ? 1 : 0;                                         \
    }

#define EQUALITIES(T, suffix) COMPARE(equal, T, suffix, ==) COMPARE(not_equal, T, suffix, !=)
#define ORDERINGS(T, suffix)                                                                       \
    COMPARE(less, T, suffix, <) COMPARE(less_equal, T, suffix, <=)                                 \
    COMPARE(greater, T, suffix, >) COMPARE(greater_equal, T, suffix, >=)

/* The search along an axis of extent `extent`, the input seen as [outer, extent, inner]: one
 * work-item per (outer, inner) position, writing its index as I. */
#define IS_NAN_FLOAT(v) isnan(v)
#define NEVER_NAN(v) false
#define ARG_SEARCH(name, T, suffix, I, index_suffix, NAN_TEST, BETTER)                             \
    __kernel void name##_##suffix##_##index_suffix(__global const char *x_base, ulong x_offset,    \
                                                   __global char *y_base, ulong y_offset,          \
                                                   ulong n, long extent, long inner) {             \
        size_t i = get_global_id(0);                                                               \
        if (i >= n) return;                                                                        \
        __global const T *p = CONST_AT(T, x_base, x_offset) + ((long)i / inner) * extent * inner + \
                              (long)i % inner;                                                     \
        T best = p[0];                                                                             \
        long found = 0;                                                                            \
        for (long k = 1; k < extent && !NAN_TEST(best); k++) {                                     \
            T v = p[k * inner];                                                                    \
            if (NAN_TEST(v) || v BETTER best) {                                                    \
                best = v;                                                                          \
                found = k;                                                                         \
            }                                                                                      \
        }                                                                                          \
        AT(I, y_base, y_offset)[i] = (I)found;                                                     \
    }

#define SEARCHES(T, suffix, NAN_TEST)                                                              \
    ARG_SEARCH(arg_max, T, suffix, int, int32, NAN_TEST, >)                                        \
    ARG_SEARCH(arg_max, T, suffix, long, int64, NAN_TEST, >)                                       \
    ARG_SEARCH(arg_min, T, suffix, int, int32, NAN_TEST, <)                                        \
    ARG_SEARCH(arg_min, T, suffix, long, int64, NAN_TEST, <)

#define ORDERED(T, suffix, NAN_TEST)                                                               \
    EQUALITIES(T, suffix) ORDERINGS(T, suffix) SEARCHES(T, suffix, NAN_TEST)

ORDERED(float, float32, IS_NAN_FLOAT)
ORDERED(int, int32, NEVER_NAN)
ORDERED(long, int64, NEVER_NAN)
ORDERED(uchar, uint8, NEVER_NAN)
EQUALITIES(uchar, bool)
#ifdef TP_FP64
ORDERED(double, float64, IS_NAN_FLOAT)
#endif
