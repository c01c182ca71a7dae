/* SPDX-License-Identifier: Apache-2.0 */
/* Exp, Log, Tanh, Sigmoid, Sqrt and Rsqrt, and Softmax and LogSoftmax, on the CPU: every
 * instance of cpu_math.h this CPU runs (AVX-512, AVX2, SSE2, libm) against libm in a wider type, over
 * float bit patterns spread across the whole range (subnormals, huge, +-inf, NaN) and the edges
 * where the functions change regime, within the bounds SLEEF documents; then the ops through
 * the public API on odd sizes, size 0 and every float dtype. */
#include "cpu_fixture.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../../devices/cpu/cpu_math.h"

static const char *const instances[] = {"avx512", "avx2", "sse2", "libm"};

/* The error of `got` against the exact `want`, in units in the last place of got's type at
 * `want` (`mantissa` bits, `min_exponent` that of the smallest normal): 0 for matching NaNs and
 * infinities, HUGE_VAL where one is NaN or infinite and the other is not. A `want` beyond the
 * largest finite value counts as infinite where `got` is. */
static double ulps(long double got, long double want, int mantissa, int min_exponent,
                   long double largest) {
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got) ? 0 : HUGE_VAL;
    if (isinf(got) && fabsl(want) > largest && signbit(got) == signbit(want)) return 0;
    if (isinf(want) || isinf(got)) return got == want ? 0 : HUGE_VAL;
    int exponent = want == 0 ? min_exponent : ilogbl(want);
    if (exponent < min_exponent) exponent = min_exponent; /* subnormal: a fixed unit */
    return (double)(fabsl(got - want) / ldexpl(1.0L, exponent - mantissa + 1));
}

static double ulps_f32(float got, double want) {
    return ulps(got, want, FLT_MANT_DIG, FLT_MIN_EXP - 1, FLT_MAX);
}

static double ulps_f64(double got, long double want) {
    return ulps(got, want, DBL_MANT_DIG, DBL_MIN_EXP - 1, DBL_MAX);
}

static uint32_t bits_of(float v) {
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits;
}

static const char *const op_names[] = {"Exp", "Log", "Tanh", "Sigmoid", "Sqrt", "Rsqrt"};

/* The exact value, as near as long double gets. */
static long double reference(cpu_math_op_t op, long double x) {
    switch (op) {
    case CPU_MATH_EXP: return expl(x);
    case CPU_MATH_LOG: return logl(x);
    case CPU_MATH_TANH: return tanhl(x);
    case CPU_MATH_SIGMOID: return 1.0L / (1.0L + expl(-x));
    case CPU_MATH_SQRT: return sqrtl(x);
    case CPU_MATH_RSQRT: return 1.0L / sqrtl(x);
    }
    return x;
}

/* SLEEF's documented 1.0 ULP for exp, log and tanh; Sqrt correctly rounded (0.5); Rsqrt
 * correctly rounded for float32 (0.5 and a hair: the reference is long double's), rounded
 * twice (the root, then the quotient) for float64; Sigmoid exp's 1.0 and two roundings, an
 * addition whose error the quotient halves and the division. */
static double bound(cpu_math_op_t op, bool f64) {
    switch (op) {
    case CPU_MATH_SQRT: return 0.5;
    case CPU_MATH_RSQRT: return f64 ? 2.0 : 0.501;
    case CPU_MATH_SIGMOID: return 2.0;
    default: return 1.0;
    }
}

/* Float bit patterns over the whole range by a stride prime to 2^32, and the edges. */
static float *float_inputs(size_t *count) {
    static const float edges[] = {
        0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, FLT_MIN, -FLT_MIN, FLT_TRUE_MIN,
        -FLT_TRUE_MIN, FLT_MAX, -FLT_MAX, 1.0f, -1.0f, 88.72283f, 88.7228394f, 88.72284f, 89.0f,
        -87.33654f, -87.4f, -103.97208f, -103.9721f, -104.0f, -110.0f, 1e-30f, -1e-30f, 1e-10f,
        1e-5f, -1e-5f, 0.004f, 0.5493f, 9.0f, 9.01f, -9.01f, 20.0f, 1e30f, -1e30f};
    size_t n_edges = sizeof edges / sizeof *edges, stride = 65521, n = n_edges;
    /* the stride's multiples below 2^32: 2^32 / stride rounded up */
    size_t n_strided = (size_t)(((1ull << 32) + stride - 1) / stride);
    float *x = malloc((n_edges + n_strided + 2001) * sizeof *x);
    assert_non_null(x);
    memcpy(x, edges, sizeof edges);
    for (uint64_t bits = 0; bits < (1ull << 32); bits += stride) {
        uint32_t b = (uint32_t)bits;
        memcpy(&x[n++], &b, sizeof b);
    }
    for (int k = -1000; k <= 1000; k++) x[n++] = (float)k * 0.0173f; /* tanh's small and mid x */
    *count = n;
    return x;
}

static void float32_within_bounds(void **state) {
    (void)state;
    size_t n;
    float *x = float_inputs(&n);
    float *y = malloc(n * sizeof *y);
    assert_non_null(y);
    int tested = 0;
    for (size_t k = 0; k < sizeof instances / sizeof *instances; k++) {
        const cpu_math_t *math = cpu_math_named(instances[k]);
        if (math == NULL) continue; /* this CPU lacks it */
        tested++;
        for (int op = CPU_MATH_EXP; op <= CPU_MATH_RSQRT; op++) {
            math->map_f32((cpu_math_op_t)op, x, y, (int64_t)n);
            double limit = bound((cpu_math_op_t)op, false), worst = 0;
            /* libm's float functions promise less than SLEEF's 1.0 ULP (glibc's are near it) */
            if (strcmp(instances[k], "libm") == 0 && op != CPU_MATH_SQRT) limit += 1.0;
            for (size_t i = 0; i < n; i++) {
                double e = ulps_f32(y[i], (double)reference((cpu_math_op_t)op, x[i]));
                if (e > worst) worst = e;
                if (e > limit)
                    fail_msg("%s %s float32 of %.9g (0x%08x): got %.9g, wanted %.17Lg, %.3f ulp",
                             instances[k], op_names[op], x[i], bits_of(x[i]), y[i],
                             reference((cpu_math_op_t)op, x[i]), e);
            }
            print_message("%s %s float32: worst %.3f ulp over %zu values\n", instances[k],
                          op_names[op], worst, n);
        }
    }
    assert_true(tested >= 2); /* libm and at least SSE2 on x86-64 */
    free(x);
    free(y);
}

static void float64_within_bounds(void **state) {
    (void)state;
    enum { N = 70000 };
    double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    const double edges[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, DBL_MIN, DBL_TRUE_MIN,
                            DBL_MAX, -DBL_MAX, 709.78, 709.79, -708.39, -745.1, -746, 1e-300,
                            1e-8, -1e-8, 19.06, 19.07, -19.07, 1e300};
    size_t n = sizeof edges / sizeof *edges;
    memcpy(x, edges, sizeof edges);
    /* Bit patterns by a stride prime to 2^64. */
    for (uint64_t bits = 0x0000123456789abcull; n < N; n++, bits += 0x0004b1f2e3d4c5a7ull)
        memcpy(&x[n], &bits, sizeof bits);
    for (size_t k = 0; k < sizeof instances / sizeof *instances; k++) {
        const cpu_math_t *math = cpu_math_named(instances[k]);
        if (math == NULL || strcmp(instances[k], "libm") == 0) continue;
        for (int op = CPU_MATH_EXP; op <= CPU_MATH_RSQRT; op++) {
            math->map_f64((cpu_math_op_t)op, x, y, N);
            double limit = bound((cpu_math_op_t)op, true);
            for (size_t i = 0; i < N; i++) {
                double e = ulps_f64(y[i], reference((cpu_math_op_t)op, x[i]));
                if (e > limit)
                    fail_msg("%s %s float64 of %.17g: got %.17g, wanted %.21Lg, %.3f ulp",
                             instances[k], op_names[op], x[i], y[i],
                             reference((cpu_math_op_t)op, x[i]), e);
            }
        }
    }
    free(x);
    free(y);
}

/* Whether y is 1/sqrt(x) correctly rounded to float: NaN below 0 and for NaN, +-inf for +-0, 0
 * for inf, else no further from 1/sqrt(x) than the midpoints to its neighbours, which holds
 * when 1/sqrt(x) <= above, i.e. above^2 x >= 1, and 1/sqrt(x) >= below: exact tests, since a
 * midpoint's square is exact in double (25 bits squared) and an fma's sign is that of the exact
 * result. */
static bool rsqrt_correctly_rounded(float x, float y) {
    if (isnan(x) || x < 0) return isnan(y);
    if (x == 0) return isinf(y) && signbit(y) == signbit(x);
    if (isinf(x)) return y == 0 && !signbit(y);
    if (!(y > 0) || isinf(y)) return false;
    double above = ((double)y + nextafterf(y, INFINITY)) / 2;
    double below = ((double)y + nextafterf(y, 0)) / 2;
    return fma(above * above, x, -1.0) >= 0 && fma(below * below, x, -1.0) <= 0;
}

/* Rsqrt of float32, every instance, correctly rounded for every float in [1, 4): every
 * mantissa with both exponent parities, which is every input up to scaling by a power of 4
 * (exact for the double root; for the refinement of the estimate in cpu_math_simd.h, which
 * hands over below 2^-124 and above 2^96, once checked on all 2^32 floats); then, by a
 * stride, the binades where it hands over, the largest floats and the subnormals; and
 * specials among them, so that vectors mix both paths. */
static void rsqrt_float32_is_correctly_rounded(void **state) {
    (void)state;
    enum { CHUNK = 1 << 20 };
    float *x = malloc(CHUNK * sizeof *x), *y = malloc(CHUNK * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    /* bit patterns [first, last) by a step */
    const uint32_t ranges[][3] = {
        {0x3f800000u, 0x40800000u, 1}, /* [1, 4) */
        {0x01000000u, 0x02000000u, 7}, /* [2^-125, 2^-123): the refinement's low end */
        {0x6f000000u, 0x70000000u, 7}, /* [2^95, 2^97): its high end */
        {0x7f000000u, 0x7f800000u, 7}, /* [2^127, FLT_MAX] */
        {0x00000000u, 0x00800000u, 997}, /* subnormals */
    };
    static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -1.0f, -FLT_MIN,
                                     FLT_TRUE_MIN, FLT_MIN, 0x1p-124f, 0x1p96f, FLT_MAX};
    for (size_t k = 0; k < sizeof instances / sizeof *instances; k++) {
        const cpu_math_t *math = cpu_math_named(instances[k]);
        if (math == NULL) continue;
        size_t wrong = 0, tested = 0;
        for (size_t r = 0; r < COUNT_OF(ranges); r++) {
            uint32_t first = ranges[r][0], last = ranges[r][1], step = ranges[r][2];
            for (uint64_t start = first; start < last;) {
                int64_t n = 0;
                for (; n < CHUNK && start < last; n++) {
                    /* a special in every 13th place, so that vectors mix both paths */
                    if (n % 13 == 5) {
                        x[n] = specials[(size_t)n % COUNT_OF(specials)];
                        continue;
                    }
                    uint32_t bits = (uint32_t)start;
                    memcpy(&x[n], &bits, sizeof bits);
                    start += step;
                }
                math->map_f32(CPU_MATH_RSQRT, x, y, n);
                for (int64_t i = 0; i < n; i++)
                    if (!rsqrt_correctly_rounded(x[i], y[i]) && wrong++ < 5)
                        print_error("%s Rsqrt of %a (0x%08x) gave %a\n", instances[k], x[i],
                                    bits_of(x[i]), y[i]);
                tested += (size_t)n;
            }
        }
        print_message("%s Rsqrt float32: %zu of %zu not correctly rounded\n", instances[k],
                      wrong, tested);
        assert_int_equal(wrong, 0);
    }
    free(x);
    free(y);
}

/* Every length from 0 to 40, the input the last floats of its own allocation (so that a read
 * past the end is one past it, which AddressSanitizer reports), the output's next element a
 * sentinel that must survive, and each result what the same element gives in a long array. */
static void odd_lengths_read_and_write_nothing_past_the_end(void **state) {
    (void)state;
    size_t count;
    float *values = float_inputs(&count);
    float whole[64];
    for (size_t k = 0; k < sizeof instances / sizeof *instances; k++) {
        const cpu_math_t *math = cpu_math_named(instances[k]);
        if (math == NULL) continue;
        for (int op = CPU_MATH_EXP; op <= CPU_MATH_RSQRT; op++) {
            math->map_f32((cpu_math_op_t)op, values, whole, 64);
            for (int64_t n = 0; n <= 40; n++) {
                float *x = malloc((size_t)n * sizeof *x + 1), y[41];
                assert_non_null(x);
                memcpy(x, values, (size_t)n * sizeof *x);
                y[n] = 12345.0f;
                math->map_f32((cpu_math_op_t)op, x, y, n);
                assert_true(y[n] == 12345.0f);
                assert_memory_equal(y, whole, (size_t)n * sizeof *y);
                if (n > 0) assert_true(math->max_f32(x, n) >= (isnan(x[0]) ? -INFINITY : x[0]));
                free(x);
            }
        }
    }
    free(values);
}

/* ---- Through the ops ------------------------------------------------------------------------ */

/* The n elements of `tensor` as doubles, into `out`. */
static void read_into(tp_tensor_t *tensor, double *out, int64_t n) {
    size_t count = 0;
    double *values = read_doubles(tensor, &count);
    assert_int_equal(count, n);
    memcpy(out, values, count * sizeof *values);
    free(values);
}

static const tp_dtype_t float_dtypes[] = {TP_FLOAT32, TP_FLOAT64, TP_FLOAT16, TP_BFLOAT16};

/* Each op on an odd size in every float dtype against libm to the dtype's precision, and on
 * an empty tensor. */
static void the_ops_in_every_float_dtype(void **state) {
    tp_context_t *c = *state;
    enum { N = 1001 };
    double *x = malloc(N * sizeof *x), *got = malloc(N * sizeof *got);
    assert_non_null(x);
    assert_non_null(got);
    for (int i = 0; i < N; i++) x[i] = (i - N / 2) * 0.0371 + (i % 3 == 0 ? 0 : 40.0);
    x[0] = NAN, x[1] = INFINITY, x[2] = -INFINITY, x[3] = 0;
    tp_status_t *(*const ops[])(tp_context_t *, tp_tensor_t *, tp_tensor_t **) = {
        tp_exp, tp_log, tp_tanh, tp_sigmoid, tp_sqrt, tp_rsqrt};
    for (size_t d = 0; d < COUNT_OF(float_dtypes); d++) {
        tp_dtype_t dtype = float_dtypes[d];
        double eps = dtype == TP_FLOAT32   ? 2 * FLT_EPSILON
                     : dtype == TP_FLOAT64 ? 2 * DBL_EPSILON
                     : dtype == TP_FLOAT16 ? 1.0 / 1024
                                           : 1.0 / 128;
        /* the dtype's smallest subnormal: a result below it may round to 0 */
        double tiny = dtype == TP_FLOAT32   ? FLT_TRUE_MIN
                      : dtype == TP_FLOAT64 ? DBL_TRUE_MIN
                      : dtype == TP_FLOAT16 ? 0x1p-24
                                            : 0x1p-133;
        double *rounded = malloc(N * sizeof *rounded);
        assert_non_null(rounded);
        tp_tensor_t *in = tensor_of_doubles(c, dtype, TP_SHAPE(7, 11, 13), x);
        read_into(in, rounded, N); /* the inputs as the dtype holds them */
        for (size_t o = 0; o < COUNT_OF(ops); o++) {
            tp_tensor_t *out = NULL;
            assert_ok(ops[o](c, in, &out));
            assert_tensor_shape(out, TP_SHAPE(7, 11, 13));
            read_into(out, got, N);
            for (int i = 0; i < N; i++) {
                double want = (double)reference((cpu_math_op_t)o, rounded[i]);
                bool ok = isnan(want)   ? isnan(got[i])
                          : isinf(want) ? got[i] == want
                                        : fabs(got[i] - want) <= eps * fabs(want) ||
                                              fabs(got[i] - want) <= tiny ||
                                              (dtype != TP_FLOAT64 && fabs(want) > 6e4 &&
                                               (isinf(got[i]) || fabs(got[i] - want) <=
                                                                     eps * fabs(want)));
                if (!ok)
                    fail_msg("%s %s of %.17g: got %.17g, wanted %.17g", op_names[o],
                             tp_dtype_name(dtype), rounded[i], got[i], want);
            }
            tp_tensor_release(out);
        }
        tp_tensor_release(in);
        free(rounded);
        tp_tensor_t *empty = NULL, *out = NULL;
        assert_ok(tp_tensor_create(c, dtype, TP_SHAPE(3, 0), NULL, 0, &empty));
        for (size_t o = 0; o < COUNT_OF(ops); o++) {
            assert_ok(ops[o](c, empty, &out));
            assert_tensor_shape(out, TP_SHAPE(3, 0));
            tp_tensor_release(out);
        }
        tp_tensor_release(empty);
    }
    free(x);
    free(got);
}

static void integers_are_refused_naming_the_op(void **state) {
    tp_context_t *c = *state;
    const int32_t v[] = {1, 2};
    tp_tensor_t *x = NULL, *y = NULL;
    assert_ok(tp_tensor_create(c, TP_INT32, TP_SHAPE(2), v, sizeof v, &x));
    tp_status_t *status = tp_exp(c, x, &y);
    assert_non_null(status);
    assert_non_null(strstr(tp_status_message(status), "Exp"));
    tp_status_free(status);
    assert_null(y);
    tp_tensor_release(x);
}

/* A value as a tensor of `dtype` holds it. Through a volatile float: gcc 12 at -O3 vectorised the
 * plain (double)(float) loop below and left the last elements of a 1003-wide row unrounded
 * (1e30 where the tensor holds 1.0000000150474662e30), so the reference saw a tie fewer. */
static double as_held(tp_dtype_t dtype, double value) {
    if (dtype != TP_FLOAT32) return value;
    volatile float held = (float)value;
    return held;
}

/* Softmax and LogSoftmax of `rows` x `width` float32 or float64 `x` against a long double
 * reference, relative to the dtype's precision; Softmax's rows sum to 1. */
static void check_softmax(tp_context_t *c, tp_dtype_t dtype, const double *x, int64_t rows,
                          int64_t width) {
    int64_t n = rows * width;
    double *soft = malloc((size_t)n * sizeof *soft + 8);
    double *logs = malloc((size_t)n * sizeof *logs + 8);
    assert_non_null(soft);
    assert_non_null(logs);
    tp_tensor_t *in = tensor_of_doubles(c, dtype, TP_SHAPE(rows, width), x), *s = NULL, *l = NULL;
    assert_ok(tp_softmax(c, in, &s));
    assert_ok(tp_log_softmax(c, in, &l));
    assert_tensor_shape(s, TP_SHAPE(rows, width));
    read_into(s, soft, n);
    read_into(l, logs, n);
    double eps = dtype == TP_FLOAT32 ? FLT_EPSILON : DBL_EPSILON;
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * width;
        double in_dtype[2048];
        assert_true(width <= 2048);
        for (int64_t j = 0; j < width; j++)
            in_dtype[j] = as_held(dtype, xr[j]);
        long double largest = -INFINITY, total = 0, sum = 0;
        for (int64_t j = 0; j < width; j++) largest = fmaxl(largest, in_dtype[j]);
        for (int64_t j = 0; j < width; j++) total += expl(in_dtype[j] - largest);
        for (int64_t j = 0; j < width; j++) {
            long double want = expl(in_dtype[j] - largest) / total;
            long double want_log = in_dtype[j] - largest - logl(total);
            double got = soft[r * width + j], got_log = logs[r * width + j];
            sum += got;
            /* A few roundings each, and x - max's, which exp turns into a relative error of
             * |x - max| half-units; log's relative to 1, where it meets numbers near 0. */
            long double spread = fabsl(in_dtype[j] - largest);
            if (fabsl(got - want) > (4 + spread) * eps * want + DBL_MIN ||
                fabsl(got_log - want_log) > 4 * eps * fmaxl(1, fabsl(want_log)))
                fail_msg("%s row %lld element %lld of %.17g: Softmax %.17g (wanted %.17Lg), "
                         "LogSoftmax %.17g (wanted %.17Lg)",
                         tp_dtype_name(dtype), (long long)r, (long long)j, in_dtype[j], got, want,
                         got_log, want_log);
        }
        if (fabsl(sum - 1) > (width + 4) * eps)
            fail_msg("%s row %lld sums to %.17Lg", tp_dtype_name(dtype), (long long)r, sum);
    }
    tp_tensor_release(in), tp_tensor_release(s), tp_tensor_release(l);
    free(soft);
    free(logs);
}

static void softmax_rows_sum_to_one_at_any_magnitude(void **state) {
    tp_context_t *c = *state;
    enum { ROWS = 9, WIDTH = 1003 };
    double *x = malloc(ROWS * WIDTH * sizeof *x);
    assert_non_null(x);
    for (int r = 0; r < ROWS; r++)
        for (int j = 0; j < WIDTH; j++) {
            double v = sin(r * 31.0 + j * 0.7) * 12;
            /* rows of +-1e30 logits, where an unshifted exp overflows; a row of one value */
            x[r * WIDTH + j] = r == 0 ? v * 1e29 : r == 1 ? (j % 5 == 0 ? 1e30 : -1e30)
                               : r == 2 ? 7.5 : v;
        }
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t d = 0; d < COUNT_OF(dtypes); d++) {
        check_softmax(c, dtypes[d], x, ROWS, WIDTH);
        for (int64_t width = 1; width <= 19; width++) check_softmax(c, dtypes[d], x, 3, width);
    }
    free(x);
}

/* A NaN anywhere in a row makes the whole row NaN, and no other; an empty tensor is fine. */
static void softmax_of_nan_and_of_nothing(void **state) {
    tp_context_t *c = *state;
    const double x[] = {1, NAN, 3, 1, 2, 3};
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t d = 0; d < COUNT_OF(dtypes); d++) {
        tp_tensor_t *in = tensor_of_doubles(c, dtypes[d], TP_SHAPE(2, 3), x), *s = NULL, *l = NULL;
        assert_ok(tp_softmax(c, in, &s));
        assert_ok(tp_log_softmax(c, in, &l));
        double got[6], got_log[6];
        read_into(s, got, 6);
        read_into(l, got_log, 6);
        for (int j = 0; j < 3; j++) assert_true(isnan(got[j]) && isnan(got_log[j]));
        for (int j = 3; j < 6; j++) assert_true(isfinite(got[j]) && isfinite(got_log[j]));
        tp_tensor_release(in), tp_tensor_release(s), tp_tensor_release(l);
        tp_tensor_t *empty = NULL;
        assert_ok(tp_tensor_create(c, dtypes[d], TP_SHAPE(0, 5), NULL, 0, &empty));
        assert_ok(tp_softmax(c, empty, &s));
        assert_tensor_shape(s, TP_SHAPE(0, 5));
        tp_tensor_release(s), tp_tensor_release(empty);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(float32_within_bounds),
        cmocka_unit_test(float64_within_bounds),
        cmocka_unit_test(rsqrt_float32_is_correctly_rounded),
        cmocka_unit_test(odd_lengths_read_and_write_nothing_past_the_end),
        cmocka_unit_test_setup_teardown(the_ops_in_every_float_dtype, cpu_context_setup,
                                        cpu_context_teardown),
        cmocka_unit_test_setup_teardown(integers_are_refused_naming_the_op, cpu_context_setup,
                                        cpu_context_teardown),
        cmocka_unit_test_setup_teardown(softmax_rows_sum_to_one_at_any_magnitude,
                                        cpu_context_setup, cpu_context_teardown),
        cmocka_unit_test_setup_teardown(softmax_of_nan_and_of_nothing, cpu_context_setup,
                                        cpu_context_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
