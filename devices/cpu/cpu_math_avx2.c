/* SPDX-License-Identifier: Apache-2.0 */
/* cpu_math.h's loops on 8 floats or 4 doubles through SLEEF's AVX2 functions. Compiled with
 * -mavx2 -mfma (src/CMakeLists.txt); run only where the CPU has both (cpu_transcendental.c). */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#include <sleef.h>

#define F_V __m256
#define F_W 8
#define F_MASK __m256
#define F_LOAD _mm256_loadu_ps
#define F_STORE _mm256_storeu_ps
#define F_SET1 _mm256_set1_ps
#define F_ADD _mm256_add_ps
#define F_SUB _mm256_sub_ps
#define F_MUL _mm256_mul_ps
#define F_DIV _mm256_div_ps
#define F_SQRT _mm256_sqrt_ps
#define F_ABS(v) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), (v))
#define F_MAX(acc, v) _mm256_max_ps((v), (acc)) /* the second operand where either is NaN */
#define F_LT(a, b) _mm256_cmp_ps((a), (b), _CMP_LT_OQ)
#define F_SELECT(mask, a, b) _mm256_blendv_ps((b), (a), (mask))
#define F_EXP Sleef_expf8_u10avx2
#define F_LOG Sleef_logf8_u10avx2
#define F_TANH Sleef_tanhf8_u10avx2
/* rsqrt's 12-bit estimate, refined and rounded once in cpu_math_simd.h: float's root and
 * division would round twice and miss by up to a unit, double's cost four times as much. */
#define F_RSQRT_ESTIMATE _mm256_rsqrt_ps
#define F_FMA _mm256_fmadd_ps
#define F_FMS _mm256_fmsub_ps
#define F_FNMA _mm256_fnmadd_ps
#define F_MIN(acc, v) _mm256_min_ps((v), (acc))
#define F_GT(a, b) _mm256_cmp_ps((a), (b), _CMP_GT_OQ)
#define F_NANS(v) _mm256_cmp_ps((v), (v), _CMP_UNORD_Q)
#define F_MASK_OR _mm256_or_ps
#define F_ANY(mask) (_mm256_movemask_ps(mask) != 0)
#define F_NONE _mm256_setzero_ps()

#define D_V __m256d
#define D_W 4
#define D_MASK __m256d
#define D_LOAD _mm256_loadu_pd
#define D_STORE _mm256_storeu_pd
#define D_SET1 _mm256_set1_pd
#define D_ADD _mm256_add_pd
#define D_SUB _mm256_sub_pd
#define D_MUL _mm256_mul_pd
#define D_DIV _mm256_div_pd
#define D_SQRT _mm256_sqrt_pd
#define D_ABS(v) _mm256_andnot_pd(_mm256_set1_pd(-0.0), (v))
#define D_MAX(acc, v) _mm256_max_pd((v), (acc))
#define D_LT(a, b) _mm256_cmp_pd((a), (b), _CMP_LT_OQ)
#define D_SELECT(mask, a, b) _mm256_blendv_pd((b), (a), (mask))
#define D_EXP Sleef_expd4_u10avx2
#define D_LOG Sleef_logd4_u10avx2
#define D_TANH Sleef_tanhd4_u10avx2
#define D_RSQRT(v) _mm256_div_pd(_mm256_set1_pd(1.0), _mm256_sqrt_pd(v))
#define D_MIN(acc, v) _mm256_min_pd((v), (acc))
#define D_GT(a, b) _mm256_cmp_pd((a), (b), _CMP_GT_OQ)
#define D_NANS(v) _mm256_cmp_pd((v), (v), _CMP_UNORD_Q)
#define D_MASK_OR _mm256_or_pd
#define D_ANY(mask) (_mm256_movemask_pd(mask) != 0)
#define D_NONE _mm256_setzero_pd()

#define MATH_INSTANCE avx2
#define MATH_NAME "avx2"
#include "cpu_math_simd.h"
#include "cpu_softmax_loops.h" /* Softmax's fused pass on the same vectors */
#else
/* Not x86-64, or built without -mavx2 -mfma: cpu_math.h declares no AVX2 instance. */
typedef int cpu_math_avx2_absent;
#endif
