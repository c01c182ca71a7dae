/* SPDX-License-Identifier: Apache-2.0 */
/* cpu_math.h's loops on 4 floats or 2 doubles through SLEEF's SSE2 functions: every x86-64
 * CPU runs them, so this is the fallback where AVX2 is missing. */
#if defined(__x86_64__)
#include <emmintrin.h>
#include <sleef.h>

/* 1/sqrt(x) in double, rounded to float once (as in cpu_math_avx2.c). */
static inline __m128 rsqrt_f32(__m128 v) {
    __m128d one = _mm_set1_pd(1.0);
    __m128d lo = _mm_div_pd(one, _mm_sqrt_pd(_mm_cvtps_pd(v)));
    __m128d hi = _mm_div_pd(one, _mm_sqrt_pd(_mm_cvtps_pd(_mm_movehl_ps(v, v))));
    return _mm_movelh_ps(_mm_cvtpd_ps(lo), _mm_cvtpd_ps(hi));
}

/* SSE2 has no blend: (mask & a) | (~mask & b). */
#define SSE2_SELECT(s, mask, a, b) _mm_or_##s(_mm_and_##s((mask), (a)), _mm_andnot_##s((mask), (b)))

#define F_V __m128
#define F_W 4
#define F_MASK __m128
#define F_LOAD _mm_loadu_ps
#define F_STORE _mm_storeu_ps
#define F_SET1 _mm_set1_ps
#define F_ADD _mm_add_ps
#define F_SUB _mm_sub_ps
#define F_MUL _mm_mul_ps
#define F_DIV _mm_div_ps
#define F_SQRT _mm_sqrt_ps
#define F_ABS(v) _mm_andnot_ps(_mm_set1_ps(-0.0f), (v))
#define F_MAX(acc, v) _mm_max_ps((v), (acc)) /* the second operand where either is NaN */
#define F_LT _mm_cmplt_ps
#define F_SELECT(mask, a, b) SSE2_SELECT(ps, mask, a, b)
#define F_EXP Sleef_expf4_u10sse2
#define F_LOG Sleef_logf4_u10sse2
#define F_TANH Sleef_tanhf4_u10sse2
#define F_RSQRT rsqrt_f32
#define F_MIN(acc, v) _mm_min_ps((v), (acc))
#define F_GT _mm_cmpgt_ps
#define F_NANS(v) _mm_cmpunord_ps((v), (v))
#define F_MASK_OR _mm_or_ps
#define F_ANY(mask) (_mm_movemask_ps(mask) != 0)
#define F_NONE _mm_setzero_ps()

#define D_V __m128d
#define D_W 2
#define D_MASK __m128d
#define D_LOAD _mm_loadu_pd
#define D_STORE _mm_storeu_pd
#define D_SET1 _mm_set1_pd
#define D_ADD _mm_add_pd
#define D_SUB _mm_sub_pd
#define D_MUL _mm_mul_pd
#define D_DIV _mm_div_pd
#define D_SQRT _mm_sqrt_pd
#define D_ABS(v) _mm_andnot_pd(_mm_set1_pd(-0.0), (v))
#define D_MAX(acc, v) _mm_max_pd((v), (acc))
#define D_LT _mm_cmplt_pd
#define D_SELECT(mask, a, b) SSE2_SELECT(pd, mask, a, b)
#define D_EXP Sleef_expd2_u10sse2
#define D_LOG Sleef_logd2_u10sse2
#define D_TANH Sleef_tanhd2_u10sse2
#define D_RSQRT(v) _mm_div_pd(_mm_set1_pd(1.0), _mm_sqrt_pd(v))
#define D_MIN(acc, v) _mm_min_pd((v), (acc))
#define D_GT _mm_cmpgt_pd
#define D_NANS(v) _mm_cmpunord_pd((v), (v))
#define D_MASK_OR _mm_or_pd
#define D_ANY(mask) (_mm_movemask_pd(mask) != 0)
#define D_NONE _mm_setzero_pd()

#define MATH_INSTANCE sse2
#define MATH_NAME "sse2"
#include "cpu_math_simd.h"
#include "cpu_softmax_loops.h" /* Softmax's fused pass on the same vectors */
#else
typedef int cpu_math_sse2_absent;
#endif
