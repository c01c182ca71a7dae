/* SPDX-License-Identifier: Apache-2.0 */
/* Softmax's fused row pass, one instance beside each of cpu_math.h's (AVX-512F, AVX2, SSE2,
 * libm): each ISA file includes cpu_softmax_loops.h after cpu_math_simd.h, so that the loop
 * runs on that instance's vectors and SLEEF exp. */
#ifndef TP_DEVICES_CPU_SOFTMAX_MATH_H
#define TP_DEVICES_CPU_SOFTMAX_MATH_H

#include <stdint.h>

#include "cpu_math.h"

typedef struct {
    /* The sum of exp(x[i] - shift) over [0, n), each also stored to y[i] unless y is NULL;
     * unless next is NULL, the largest of next[0, n) into *next_largest as cpu_math_t's max
     * gives it (NaN skipped, -inf for none), with next_y[0, n) asked into the cache for writing
     * unless NULL; and prev[i] *= prev_scale unless prev is NULL. A row's exps leave the memory
     * and the other ports idle: reading the next row beside them means that row's first pass
     * no longer waits on memory, and the last row's Softmax is scaled with no pass of its own. */
    double (*exp_sum_next_f32)(const float *x, float shift, float *y, const float *next,
                               float *next_largest, float *next_y, float *prev,
                               float prev_scale, int64_t n);
    double (*exp_sum_next_f64)(const double *x, double shift, double *y, const double *next,
                               double *next_largest, double *next_y, double *prev,
                               double prev_scale, int64_t n);
} cpu_softmax_math_t;

/* The instance that matches `math` (one of cpu_math.h's). */
const cpu_softmax_math_t *cpu_softmax_math(const cpu_math_t *math);

extern const cpu_softmax_math_t cpu_softmax_math_libm;
#if defined(__x86_64__)
extern const cpu_softmax_math_t cpu_softmax_math_avx512;
extern const cpu_softmax_math_t cpu_softmax_math_avx2;
extern const cpu_softmax_math_t cpu_softmax_math_sse2;
#endif

#endif
