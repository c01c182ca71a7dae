/* SPDX-License-Identifier: Apache-2.0 */
/* cpu_softmax_math.h's loops, written once over cpu_math_simd.h's vectors (its F_ and D_
 * macros, MATH_CAT and MATH_INSTANCE) and included by each ISA file after it. */
#include "cpu_softmax_math.h"

/* Four vector sums, so that the additions do not wait on each other, summed in double at the
 * end; four running maxima of the next row; the row before's Softmax scaled alongside. The tail
 * runs as one padded vector, as in cpu_math_simd.h's exp_sum (a pad of `shift` gives exp(0),
 * which is not added). */
#define SOFTMAX_DEFINE(P, T)                                                                       \
    static double MATH_CAT(P, exp_sum_next)(const T *x, T shift, T *y, const T *next,              \
                                            T *next_largest, T *next_y, T *prev, T prev_scale,     \
                                            int64_t n) {                                           \
        enum { W = MATH_CAT(P, W), STEP = 4 * W, STEP_BYTES = STEP * (int)sizeof(T) };             \
        MATH_CAT(P, V) s = MATH_CAT(P, SET1)(shift), zero = MATH_CAT(P, SET1)(0);                  \
        MATH_CAT(P, V) scale = MATH_CAT(P, SET1)(prev_scale);                                      \
        MATH_CAT(P, V) low = MATH_CAT(P, SET1)(-INFINITY);                                         \
        MATH_CAT(P, V) acc[4] = {zero, zero, zero, zero}, big[4] = {low, low, low, low};           \
        int64_t i = 0;                                                                             \
        for (; i + STEP <= n; i += STEP) {                                                         \
            for (int u = 0; u < 4; u++) {                                                          \
                MATH_CAT(P, V) e = MATH_CAT(P, EXP)(                                               \
                    MATH_CAT(P, SUB)(MATH_CAT(P, LOAD)(x + i + u * W), s));                        \
                if (y != NULL) MATH_CAT(P, STORE)(y + i + u * W, e);                               \
                acc[u] = MATH_CAT(P, ADD)(acc[u], e);                                              \
            }                                                                                      \
            if (next != NULL)                                                                      \
                for (int u = 0; u < 4; u++)                                                        \
                    big[u] = MATH_CAT(P, MAX)(big[u], MATH_CAT(P, LOAD)(next + i + u * W));        \
            if (prev != NULL)                                                                      \
                for (int u = 0; u < 4; u++)                                                        \
                    MATH_CAT(P, STORE)(prev + i + u * W,                                           \
                                       MATH_CAT(P, MUL)(MATH_CAT(P, LOAD)(prev + i + u * W),       \
                                                        scale));                                   \
            /* A line of next_y where this step starts one (every step, for 64-byte ones). */      \
            if (next_y != NULL && (i * (int64_t)sizeof(T)) % 64 < STEP_BYTES)                      \
                for (int b = 0; b < STEP_BYTES; b += 64)                                           \
                    __builtin_prefetch((const char *)(next_y + i) + b, 1);                         \
        }                                                                                          \
        double total = 0;                                                                          \
        T largest = -INFINITY;                                                                     \
        for (int u = 0; u < 4; u++) {                                                              \
            T lanes[W], tops[W];                                                                   \
            MATH_CAT(P, STORE)(lanes, acc[u]);                                                     \
            MATH_CAT(P, STORE)(tops, big[u]);                                                      \
            for (int k = 0; k < W; k++) {                                                          \
                total += lanes[k];                                                                 \
                largest = tops[k] > largest ? tops[k] : largest;                                   \
            }                                                                                      \
        }                                                                                          \
        for (; i < n; i += W) {                                                                    \
            int64_t left = n - i < W ? n - i : W;                                                  \
            T in[W], out[W];                                                                       \
            for (int k = 0; k < W; k++) in[k] = shift;                                             \
            memcpy(in, x + i, (size_t)left * sizeof(T));                                           \
            MATH_CAT(P, STORE)(out, MATH_CAT(P, EXP)(MATH_CAT(P, SUB)(                             \
                                         MATH_CAT(P, LOAD)(in), s)));                              \
            for (int64_t k = 0; k < left; k++) total += out[k];                                    \
            if (y != NULL) memcpy(y + i, out, (size_t)left * sizeof(T));                           \
            for (int64_t k = i; k < i + left && next != NULL; k++)                                 \
                largest = next[k] > largest ? next[k] : largest;                                   \
            for (int64_t k = i; k < i + left && prev != NULL; k++) prev[k] *= prev_scale;          \
        }                                                                                          \
        if (next != NULL) *next_largest = largest;                                                 \
        return total;                                                                              \
    }

SOFTMAX_DEFINE(F_, float)
SOFTMAX_DEFINE(D_, double)

const cpu_softmax_math_t MATH_CAT(cpu_softmax_math_, MATH_INSTANCE) = {
    .exp_sum_next_f32 = F_exp_sum_next,
    .exp_sum_next_f64 = D_exp_sum_next,
};

#undef SOFTMAX_DEFINE
