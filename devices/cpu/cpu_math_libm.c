/* SPDX-License-Identifier: Apache-2.0 */
/* cpu_math.h's loops one element at a time through libm: the instance for a CPU without SSE2
 * or AVX2 code here, and for any architecture this file set has no vector instance for. */
#include <math.h>

#define F_V float
#define F_W 1
#define F_MASK int
#define F_LOAD(p) (*(p))
#define F_STORE(p, v) (*(p) = (v))
#define F_SET1(s) ((float)(s))
#define F_ADD(a, b) ((a) + (b))
#define F_SUB(a, b) ((a) - (b))
#define F_MUL(a, b) ((a) * (b))
#define F_DIV(a, b) ((a) / (b))
#define F_SQRT sqrtf
#define F_ABS fabsf
#define F_MAX(acc, v) ((v) > (acc) ? (v) : (acc)) /* acc where v is NaN */
#define F_LT(a, b) ((a) < (b))
#define F_SELECT(mask, a, b) ((mask) ? (a) : (b))
#define F_EXP expf
#define F_LOG logf
#define F_TANH tanhf
#define F_RSQRT(v) ((float)(1.0 / sqrt((double)(v))))
#define F_MIN(acc, v) ((v) < (acc) ? (v) : (acc))
#define F_GT(a, b) ((a) > (b))
#define F_NANS(v) ((v) != (v))
#define F_MASK_OR(a, b) ((a) | (b))
#define F_ANY(mask) ((mask) != 0)
#define F_NONE 0

#define D_V double
#define D_W 1
#define D_MASK int
#define D_LOAD(p) (*(p))
#define D_STORE(p, v) (*(p) = (v))
#define D_SET1(s) ((double)(s))
#define D_ADD(a, b) ((a) + (b))
#define D_SUB(a, b) ((a) - (b))
#define D_MUL(a, b) ((a) * (b))
#define D_DIV(a, b) ((a) / (b))
#define D_SQRT sqrt
#define D_ABS fabs
#define D_MAX(acc, v) ((v) > (acc) ? (v) : (acc))
#define D_LT(a, b) ((a) < (b))
#define D_SELECT(mask, a, b) ((mask) ? (a) : (b))
#define D_EXP exp
#define D_LOG log
#define D_TANH tanh
#define D_RSQRT(v) (1.0 / sqrt(v))
#define D_MIN(acc, v) ((v) < (acc) ? (v) : (acc))
#define D_GT(a, b) ((a) > (b))
#define D_NANS(v) ((v) != (v))
#define D_MASK_OR(a, b) ((a) | (b))
#define D_ANY(mask) ((mask) != 0)
#define D_NONE 0

#define MATH_INSTANCE libm
#define MATH_NAME "libm"
#include "cpu_math_simd.h"
#include "cpu_softmax_loops.h" /* Softmax's fused pass on the same vectors */
