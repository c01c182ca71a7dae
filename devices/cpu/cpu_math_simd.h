/* SPDX-License-Identifier: Apache-2.0 */
/* The loops of cpu_math.h, written once over vectors of W elements and included by each
 * instance after it defines, for float (F_) and double (D_):
 *   F_V, F_W            the vector type and its width (1 for plain C)
 *   F_MASK              the type of a comparison's result
 *   F_LOAD(p) F_STORE(p, v) F_SET1(s)  unaligned load and store, a broadcast
 *   F_ADD F_SUB F_MUL F_DIV F_SQRT F_ABS
 *   F_MAX(acc, v)       the larger, acc where v is NaN
 *   F_LT(a, b) F_SELECT(mask, a, b)
 *   F_EXP F_LOG F_TANH  SLEEF's 1.0-ULP functions (or libm's)
 *   F_RSQRT             1/sqrt rounded once: through double for float, or
 *   F_RSQRT_ESTIMATE    for float instead, the hardware's approximate 1/sqrt (11 bits or more),
 *                       refined by rsqrt_refined below through the fused F_FMA(a, b, c) =
 *                       a * b + c, F_FMS(a, b, c) = a * b - c, F_FNMA(a, b, c) = c - a * b
 *   and what cpu_math_reduce.h names
 * and MATH_INSTANCE (avx2: defines cpu_math_avx2) and MATH_NAME ("avx2").
 * Every loop runs whole vectors, then the last n % W elements through one vector copied to the
 * stack, so that no load reads past the end and the tail gives what the body would. */
#include <math.h>
#include <string.h>

#include "cpu_math.h"

/* sqrt(3 ulp(1) / 2) and below: x^3/3 is less than half of x's last place. */
#define F_TINY 0x1p-12f
#define D_TINY 0x1p-27

#define MATH_CAT_(a, b) a##b
#define MATH_CAT(a, b) MATH_CAT_(a, b)

#ifdef F_RSQRT_ESTIMATE
/* 1/sqrt(x) correctly rounded, one element: r = 1/sqrt(x) in double is within a unit of the
 * answer, and the answer is whichever of r and its neighbours has x on the right side of the
 * midpoints between them: 1/sqrt(x) > m exactly where m^2 x - 1 < 0, m^2 exact in double (a
 * midpoint has 25 bits), the sign of the fma exact; m^2 x is never 1 (m is no power of 2). */
static float rsqrt_rounded(float x) {
    float r = (float)(1.0 / sqrt((double)x));
    if (!(x > 0) || isinf(x)) return r; /* 0, negative, NaN, inf: IEEE's answers already */
    float up = nextafterf(r, INFINITY), down = nextafterf(r, 0);
    double above = ((double)r + up) / 2, below = ((double)r + down) / 2;
    if (fma(above * above, x, -1.0) < 0) return up;
    if (fma(below * below, x, -1.0) > 0) return down;
    return r;
}

/* 1/sqrt(x) correctly rounded, in some 20 vector operations where a double root and division
 * take four times as long: the estimate y, one Newton step (y within about 2^-21), then the
 * next term of t = y / sqrt(x y^2) = y (1 + e/2 + 3e^2/8 + ...), e = 1 - x y^2, with e/2
 * exact enough through y^2 = h + l (an FMA's exact product) and x/2 (exact for these x): the
 * last FMA rounds y (1 + e/2), which lies below t by 3e^2/8 (under 2^-42) and off it by under
 * 2^-44 through roundings. That rounding is the answer unless a midpoint between two floats
 * lies within those bounds: y (1 + e/2 + 2^-40) and y (1 + e/2 - 2^-42) rounding apart say so,
 * and that vector (about one in 8000 for spread inputs), or one holding x outside [2^-124,
 * 2^96] (0, subnormals, negatives, infinities and where h, l or x/2 would leave the normal
 * range), is done element by element above. NaN stays NaN on the way. */
static inline F_V rsqrt_refined(F_V x) {
    const F_V half = F_SET1(0.5f), half_x = F_MUL(x, half);
    F_V y = F_RSQRT_ESTIMATE(x);
    y = F_MUL(y, F_FNMA(half_x, F_MUL(y, y), F_SET1(1.5f)));
    F_V h = F_MUL(y, y), l = F_FMS(y, y, h);
    F_V half_e = F_FNMA(half_x, l, F_FNMA(half_x, h, half));
    F_V up = F_FMA(y, F_ADD(half_e, F_SET1(0x1p-40f)), y);
    F_V down = F_FMA(y, F_SUB(half_e, F_SET1(0x1p-42f)), y);
    F_MASK outside = F_MASK_OR(F_LT(x, F_SET1(0x1p-124f)), F_GT(x, F_SET1(0x1p96f)));
    if (__builtin_expect(F_ANY(F_MASK_OR(outside, F_GT(up, down))), 0)) {
        float lanes[F_W];
        F_STORE(lanes, x);
        for (int i = 0; i < F_W; i++) lanes[i] = rsqrt_rounded(lanes[i]);
        return F_LOAD(lanes);
    }
    return down;
}
#define F_RSQRT rsqrt_refined
#endif

/* sigmoid(x) = 1 / (1 + e^-x) for x >= 0 and e^x / (1 + e^x) below, both as num / (1 + e)
 * with e = exp(-|x|) <= 1: nothing overflows, sigmoid(-100) is the subnormal e^-100 rather
 * than 1 / inf = 0, +-inf give 1 and 0 exactly, and NaN stays NaN. */
#define MATH_DEFINE(P, T)                                                                      \
    static inline MATH_CAT(P, V) MATH_CAT(P, apply)(cpu_math_op_t op, MATH_CAT(P, V) v) {     \
        switch (op) {                                                                          \
        case CPU_MATH_EXP: return MATH_CAT(P, EXP)(v);                                         \
        case CPU_MATH_LOG: return MATH_CAT(P, LOG)(v);                                         \
        case CPU_MATH_TANH: {                                                                  \
            /* Below TINY tanh(x) = x - x^3/3 rounds to x, which SLEEF misses by a unit. */     \
            MATH_CAT(P, MASK) tiny = MATH_CAT(P, LT)(MATH_CAT(P, ABS)(v),                      \
                                                     MATH_CAT(P, SET1)(MATH_CAT(P, TINY)));    \
            return MATH_CAT(P, SELECT)(tiny, v, MATH_CAT(P, TANH)(v));                         \
        }                                                                                      \
        case CPU_MATH_SQRT: return MATH_CAT(P, SQRT)(v);                                       \
        case CPU_MATH_RSQRT: return MATH_CAT(P, RSQRT)(v);                                     \
        case CPU_MATH_SIGMOID: {                                                               \
            MATH_CAT(P, V) one = MATH_CAT(P, SET1)(1);                                         \
            MATH_CAT(P, V) e = MATH_CAT(P, EXP)(MATH_CAT(P, SUB)(MATH_CAT(P, SET1)(0),         \
                                                                 MATH_CAT(P, ABS)(v)));        \
            MATH_CAT(P, MASK) negative = MATH_CAT(P, LT)(v, MATH_CAT(P, SET1)(0));             \
            return MATH_CAT(P, DIV)(MATH_CAT(P, SELECT)(negative, e, one),                     \
                                    MATH_CAT(P, ADD)(one, e));                                 \
        }                                                                                      \
        }                                                                                      \
        return v;                                                                              \
    }                                                                                          \
                                                                                               \
    /* The op's loop is chosen once per call, outside it: a switch per vector would cost as     \
     * much as a cheap op. */                                                                  \
    static void MATH_CAT(P, map_loop)(cpu_math_op_t op, const T *x, T *y, int64_t n) {         \
        enum { W = MATH_CAT(P, W) };                                                           \
        int64_t i = 0;                                                                         \
        switch (op) {                                                                          \
        case CPU_MATH_EXP:                                                                     \
            for (; i + W <= n; i += W)                                                         \
                MATH_CAT(P, STORE)(y + i, MATH_CAT(P, apply)(CPU_MATH_EXP,                     \
                                                              MATH_CAT(P, LOAD)(x + i)));      \
            break;                                                                             \
        case CPU_MATH_LOG:                                                                     \
            for (; i + W <= n; i += W)                                                         \
                MATH_CAT(P, STORE)(y + i, MATH_CAT(P, apply)(CPU_MATH_LOG,                     \
                                                              MATH_CAT(P, LOAD)(x + i)));      \
            break;                                                                             \
        case CPU_MATH_TANH:                                                                    \
            for (; i + W <= n; i += W)                                                         \
                MATH_CAT(P, STORE)(y + i, MATH_CAT(P, apply)(CPU_MATH_TANH,                    \
                                                              MATH_CAT(P, LOAD)(x + i)));      \
            break;                                                                             \
        case CPU_MATH_SIGMOID:                                                                 \
            for (; i + W <= n; i += W)                                                         \
                MATH_CAT(P, STORE)(y + i, MATH_CAT(P, apply)(CPU_MATH_SIGMOID,                 \
                                                              MATH_CAT(P, LOAD)(x + i)));      \
            break;                                                                             \
        case CPU_MATH_SQRT:                                                                    \
            for (; i + W <= n; i += W)                                                         \
                MATH_CAT(P, STORE)(y + i, MATH_CAT(P, apply)(CPU_MATH_SQRT,                    \
                                                              MATH_CAT(P, LOAD)(x + i)));      \
            break;                                                                             \
        case CPU_MATH_RSQRT:                                                                   \
            /* 2 KB ahead: its 20-odd instructions a vector leave the out-of-order window too   \
             * few loads in flight to keep memory busy (0.8x of Sqrt's speed on 16M elements    \
             * without). The address as an integer: it may lie past x, where it costs nothing.  \
             * SLEEF's bodies are longer, but Exp and Sigmoid measured slower with it. */       \
            for (; i + W <= n; i += W) {                                                       \
                __builtin_prefetch((const void *)((uintptr_t)(x + i) + 2048));                 \
                MATH_CAT(P, STORE)(y + i, MATH_CAT(P, apply)(CPU_MATH_RSQRT,                   \
                                                              MATH_CAT(P, LOAD)(x + i)));      \
            }                                                                                  \
            break;                                                                             \
        }                                                                                      \
        if (i < n) {                                                                           \
            T in[W], out[W];                                                                   \
            for (int k = 0; k < W; k++) in[k] = 1;                                             \
            memcpy(in, x + i, (size_t)(n - i) * sizeof(T));                                    \
            MATH_CAT(P, STORE)(out, MATH_CAT(P, apply)(op, MATH_CAT(P, LOAD)(in)));            \
            memcpy(y + i, out, (size_t)(n - i) * sizeof(T));                                   \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    static T MATH_CAT(P, max_loop)(const T *x, int64_t n) {                                    \
        enum { W = MATH_CAT(P, W) };                                                           \
        MATH_CAT(P, V) acc = MATH_CAT(P, SET1)(-INFINITY);                                     \
        int64_t i = 0;                                                                         \
        for (; i + W <= n; i += W) acc = MATH_CAT(P, MAX)(acc, MATH_CAT(P, LOAD)(x + i));      \
        T lanes[W];                                                                            \
        MATH_CAT(P, STORE)(lanes, acc);                                                        \
        T largest = -INFINITY;                                                                 \
        for (int k = 0; k < W; k++) largest = lanes[k] > largest ? lanes[k] : largest;         \
        for (; i < n; i++) largest = x[i] > largest ? x[i] : largest;                          \
        return largest;                                                                        \
    }                                                                                          \
                                                                                               \
    static void MATH_CAT(P, scale_loop)(T *y, T scale, int64_t n) {                            \
        enum { W = MATH_CAT(P, W) };                                                           \
        MATH_CAT(P, V) s = MATH_CAT(P, SET1)(scale);                                           \
        int64_t i = 0;                                                                         \
        for (; i + W <= n; i += W)                                                             \
            MATH_CAT(P, STORE)(y + i, MATH_CAT(P, MUL)(MATH_CAT(P, LOAD)(y + i), s));          \
        for (; i < n; i++) y[i] *= scale;                                                      \
    }                                                                                          \
                                                                                               \
    static void MATH_CAT(P, shift_loop)(const T *x, T first, T second, T *y, int64_t n) {     \
        enum { W = MATH_CAT(P, W) };                                                           \
        MATH_CAT(P, V) a = MATH_CAT(P, SET1)(first), b = MATH_CAT(P, SET1)(second);            \
        int64_t i = 0;                                                                         \
        for (; i + W <= n; i += W)                                                             \
            MATH_CAT(P, STORE)(y + i, MATH_CAT(P, SUB)(MATH_CAT(P, SUB)(MATH_CAT(P, LOAD)(x + i), \
                                                                        a), b));               \
        for (; i < n; i++) y[i] = (x[i] - first) - second;                                     \
    }

MATH_DEFINE(F_, float)
MATH_DEFINE(D_, double)

#define R_P F_
#define R_T float
#include "cpu_math_reduce.h"
#define R_P D_
#define R_T double
#include "cpu_math_reduce.h"

const cpu_math_t MATH_CAT(cpu_math_, MATH_INSTANCE) = {
    .name = MATH_NAME,
    .map_f32 = F_map_loop,
    .map_f64 = D_map_loop,
    .max_f32 = F_max_loop,
    .max_f64 = D_max_loop,
    .scale_f32 = F_scale_loop,
    .scale_f64 = D_scale_loop,
    .shift_f32 = F_shift_loop,
    .shift_f64 = D_shift_loop,
    .reduce_f32 = F_reduce_loop,
    .reduce_f64 = D_reduce_loop,
    .rows_f32 = F_rows_loop,
    .rows_f64 = D_rows_loop,
};
