/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU's vectorised math over contiguous arrays, and its reductions: one set of loops
 * (cpu_math_simd.h, cpu_math_reduce.h)
 * instantiated for AVX-512F (cpu_math_avx512.c), AVX2 (cpu_math_avx2.c), SSE2
 * (cpu_math_sse2.c) and plain libm, the fastest
 * that the CPU runs chosen once (cpu_transcendental.c). Exp, Log and Tanh are SLEEF's 1.0-ULP
 * functions; Sqrt is the hardware's, correctly rounded. */
#ifndef TP_DEVICES_CPU_MATH_H
#define TP_DEVICES_CPU_MATH_H

#include <stdbool.h>
#include <stdint.h>

typedef enum {
    CPU_MATH_EXP,
    CPU_MATH_LOG,
    CPU_MATH_TANH,
    CPU_MATH_SIGMOID,
    CPU_MATH_SQRT,
    CPU_MATH_RSQRT
} cpu_math_op_t;

/* The reductions of a run or of rows (cpu_reduce_runs.c's Sum, Mean, Prod, Max and Min). */
typedef enum { CPU_MATH_SUM, CPU_MATH_PROD, CPU_MATH_MAX, CPU_MATH_MIN } cpu_math_reduce_t;

/* Elements a pairwise sum adds in its vector accumulators before splitting in two. */
enum { CPU_MATH_PAIRWISE_BASE = 256 };

typedef struct {
    const char *name; /* "avx512", "avx2", "sse2", "libm" */
    /* y[i] = op(x[i]) for i in [0, n); y may be x. */
    void (*map_f32)(cpu_math_op_t op, const float *x, float *y, int64_t n);
    void (*map_f64)(cpu_math_op_t op, const double *x, double *y, int64_t n);
    /* The largest of x[0, n), n > 0; NaNs are skipped (a row holding one still ends NaN,
     * through exp). -inf where every element is NaN or -inf. */
    float (*max_f32)(const float *x, int64_t n);
    double (*max_f64)(const double *x, int64_t n);
    /* y[i] *= scale */
    void (*scale_f32)(float *y, float scale, int64_t n);
    void (*scale_f64)(double *y, double scale, int64_t n);
    /* y[i] = (x[i] - first) - second: LogSoftmax's x - max - log(sum), rounded twice rather
     * than through max + log(sum), which would lose log(sum)'s digits beside a large max. */
    void (*shift_f32)(const float *x, float first, float second, float *y, int64_t n);
    void (*shift_f64)(const double *x, double first, double second, double *y, int64_t n);
    /* x[0, n) reduced by `op`: a sum pairwise, Max and Min NaN where any element is, the
     * reduction of nothing its identity (0, 1, -inf, inf). */
    float (*reduce_f32)(cpu_math_reduce_t op, const float *x, int64_t n);
    double (*reduce_f64)(cpu_math_reduce_t op, const double *x, int64_t n);
    /* out[c] for c in [0, n) becomes the reduction of in[r * stride + c] over r in
     * [0, count), count > 0, and, when `into`, of out[c] too; eight rows of a sum, not into,
     * are added as a balanced tree. */
    void (*rows_f32)(cpu_math_reduce_t op, float *out, const float *in, int64_t stride,
                     int64_t count, int64_t n, bool into);
    void (*rows_f64)(cpu_math_reduce_t op, double *out, const double *in, int64_t stride,
                     int64_t count, int64_t n, bool into);
} cpu_math_t;

/* The instance for this CPU, chosen on the first call (thread-safe). */
const cpu_math_t *cpu_math(void);

/* The instances; a name for one this build or CPU lacks is NULL. Tests compare them. */
const cpu_math_t *cpu_math_named(const char *name);

extern const cpu_math_t cpu_math_libm;
#if defined(__x86_64__)
extern const cpu_math_t cpu_math_avx512;
extern const cpu_math_t cpu_math_avx2;
extern const cpu_math_t cpu_math_sse2;
#endif

#endif
