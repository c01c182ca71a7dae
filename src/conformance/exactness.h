/* SPDX-License-Identifier: Apache-2.0 */
/* How exactly a plug-in's kernel must reproduce the CPU's: the op's class of exactness and the
 * comparison of two outputs under it. The op schema says nothing of numerics, so the classes
 * of the built-in ops are a table here; an op the table does not know (a plug-in's own) is
 * exact, since the check cannot know what rounding its vendor intended and a false pass hides
 * more than a false failure. Integer and boolean results are always exact. */
#ifndef TP_CONFORMANCE_EXACTNESS_H
#define TP_CONFORMANCE_EXACTNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "tensorplug/tensorplug.h"

typedef enum tp_exactness {
    /* Moves or flips bits (Neg, Abs, Identity, Reshape, Transpose, Cast, Fill): bit for bit,
     * except that any NaN matches any NaN. */
    TP_EXACT_BITS,
    /* Selects one of its inputs or 0 (Relu, ReluGrad, Max): equal values, NaN only as NaN;
     * +0 and -0 are the same, as IEEE 754 lets max(-0, +0) be either. */
    TP_EXACT_VALUES,
    /* One correctly rounded IEEE operation per element (Add, Sub, Mul, Square, BiasAdd): equal
     * values; a result below the smallest normal number may be flushed to zero. */
    TP_ROUNDED_ONCE,
    /* Div and Sqrt, which devices often approximate: within 2 ulp, flushing as above. */
    TP_ROUNDED_APPROXIMATELY,
    /* Elementary functions and their gradients (Exp, Log, Tanh, Sigmoid, TanhGrad,
     * SigmoidGrad): within 16 ulp + 16 epsilon. */
    TP_ELEMENTARY,
    /* Sums in an order that is the device's (MatMul, Sum, Mean, Softmax, AddN): within 16 ulp
     * + 2 n epsilon max|y|, n the number of terms an element can sum. */
    TP_ACCUMULATED,
} tp_exactness_t;

/* The class of `op`'s results of `dtype`. */
tp_exactness_t tp_exactness_of(const char *op, tp_dtype_t dtype);

/* "bit for bit, ...", "within 16 ulp + 16 eps", ...: how results of the class must match the
 * CPU's, for messages. */
const char *tp_exactness_rule(tp_exactness_t exactness);

/* What comparing two outputs found: the first element out of bounds, or none, and how close
 * the others came to their bound (0 for the exact classes). */
typedef struct tp_value_comparison {
    bool mismatch;
    int64_t at;
    double got, want;
    uint64_t got_bits, want_bits;
    double worst; /* the largest |got - want| / bound among elements within bounds */
} tp_value_comparison_t;

/* Compares `count` elements of `dtype`: `got` (the plug-in's) against `want` (the CPU's).
 * `terms` bounds the number of terms one element of an accumulated result sums. */
tp_value_comparison_t tp_compare_values(tp_exactness_t exactness, tp_dtype_t dtype,
                                        const void *got, const void *want, int64_t count,
                                        int64_t terms);

#endif
