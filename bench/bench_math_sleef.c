/* SPDX-License-Identifier: Apache-2.0 */
/* bench_math's baseline: SLEEF's AVX2 functions called directly over an array on one thread.
 * Compiled with -mavx2 -mfma (bench/CMakeLists.txt); bench_math calls it only where the CPU
 * has both. */
#include <string.h>

#include "bench_math.h"
#include "bench_support.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#include <sleef.h>

double bench_sleef_seconds(const char *op, float *y, const float *x, size_t count) {
    int which = strcmp(op, "Exp") == 0 ? 0 : strcmp(op, "Tanh") == 0 ? 1 : 2;
    double start = now_seconds();
    __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    for (size_t i = 0; i + 8 <= count; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        if (which == 0)
            v = Sleef_expf8_u10avx2(v);
        else if (which == 1)
            v = Sleef_tanhf8_u10avx2(v);
        else /* Sigmoid, the plain formula */
            v = _mm256_div_ps(one, _mm256_add_ps(one, Sleef_expf8_u10avx2(_mm256_sub_ps(zero, v))));
        _mm256_storeu_ps(y + i, v);
    }
    return now_seconds() - start;
}
#else
double bench_sleef_seconds(const char *op, float *y, const float *x, size_t count) {
    (void)op, (void)y, (void)x, (void)count;
    return 0;
}
#endif
