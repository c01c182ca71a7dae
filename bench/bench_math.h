/* SPDX-License-Identifier: Apache-2.0 */
/* What bench_math.c calls in bench_math_sleef.c. */
#ifndef TP_BENCH_BENCH_MATH_H
#define TP_BENCH_BENCH_MATH_H

#include <stddef.h>

/* Seconds for `op` ("Exp", "Tanh", "Sigmoid") over x[0, count) into y through SLEEF's AVX2
 * functions on the calling thread (count a multiple of 8); 0 in a build without them. */
double bench_sleef_seconds(const char *op, float *y, const float *x, size_t count);

#endif
