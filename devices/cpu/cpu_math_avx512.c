/* SPDX-License-Identifier: Apache-2.0 */
/* cpu_math.h's loops on 16 floats or 8 doubles through SLEEF's AVX-512F functions: twice
 * AVX2's width, which the compute-bound functions (Tanh, Sigmoid) turn into speed. Compiled
 * with -mavx512f (src/CMakeLists.txt); run only where the CPU has it (cpu_transcendental.c). */
#if defined(__x86_64__) && defined(__AVX512F__)
#include <immintrin.h>
#include <sleef.h>

/* 1/sqrt(x) in double, rounded to float once (as in cpu_math_avx2.c). */
static inline __m512 rsqrt_f32(__m512 v) {
    __m512d one = _mm512_set1_pd(1.0);
    __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m256 low = _mm512_cvtpd_ps(_mm512_div_pd(one, _mm512_sqrt_pd(lo)));
    __m256 high = _mm512_cvtpd_ps(_mm512_div_pd(one, _mm512_sqrt_pd(hi)));
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(low)),
                                               _mm256_castps_pd(high), 1));
}

#define F_V __m512
#define F_W 16
#define F_MASK __mmask16
#define F_LOAD _mm512_loadu_ps
#define F_STORE _mm512_storeu_ps
#define F_SET1 _mm512_set1_ps
#define F_ADD _mm512_add_ps
#define F_SUB _mm512_sub_ps
#define F_MUL _mm512_mul_ps
#define F_DIV _mm512_div_ps
#define F_SQRT _mm512_sqrt_ps
#define F_ABS _mm512_abs_ps
#define F_MAX(acc, v) _mm512_max_ps((v), (acc)) /* the second operand where either is NaN */
#define F_LT(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_LT_OQ)
#define F_SELECT(mask, a, b) _mm512_mask_blend_ps((mask), (b), (a))
#define F_EXP Sleef_expf16_u10avx512f
#define F_LOG Sleef_logf16_u10avx512f
#define F_TANH Sleef_tanhf16_u10avx512f
#define F_RSQRT rsqrt_f32
#define F_MIN(acc, v) _mm512_min_ps((v), (acc))
#define F_GT(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_GT_OQ)
#define F_NANS(v) _mm512_cmp_ps_mask((v), (v), _CMP_UNORD_Q)
#define F_MASK_OR(a, b) ((__mmask16)((a) | (b)))
#define F_ANY(mask) ((mask) != 0)
#define F_NONE ((__mmask16)0)

#define D_V __m512d
#define D_W 8
#define D_MASK __mmask8
#define D_LOAD _mm512_loadu_pd
#define D_STORE _mm512_storeu_pd
#define D_SET1 _mm512_set1_pd
#define D_ADD _mm512_add_pd
#define D_SUB _mm512_sub_pd
#define D_MUL _mm512_mul_pd
#define D_DIV _mm512_div_pd
#define D_SQRT _mm512_sqrt_pd
#define D_ABS _mm512_abs_pd
#define D_MAX(acc, v) _mm512_max_pd((v), (acc))
#define D_LT(a, b) _mm512_cmp_pd_mask((a), (b), _CMP_LT_OQ)
#define D_SELECT(mask, a, b) _mm512_mask_blend_pd((mask), (b), (a))
#define D_EXP Sleef_expd8_u10avx512f
#define D_LOG Sleef_logd8_u10avx512f
#define D_TANH Sleef_tanhd8_u10avx512f
#define D_RSQRT(v) _mm512_div_pd(_mm512_set1_pd(1.0), _mm512_sqrt_pd(v))
#define D_MIN(acc, v) _mm512_min_pd((v), (acc))
#define D_GT(a, b) _mm512_cmp_pd_mask((a), (b), _CMP_GT_OQ)
#define D_NANS(v) _mm512_cmp_pd_mask((v), (v), _CMP_UNORD_Q)
#define D_MASK_OR(a, b) ((__mmask8)((a) | (b)))
#define D_ANY(mask) ((mask) != 0)
#define D_NONE ((__mmask8)0)

#define MATH_INSTANCE avx512
#define MATH_NAME "avx512"
#include "cpu_math_simd.h"
#include "cpu_softmax_loops.h" /* Softmax's fused pass on the same vectors */
#else
/* Not x86-64, or built without -mavx512f: cpu_math.h declares no AVX-512 instance. */
typedef int cpu_math_avx512_absent;
#endif
