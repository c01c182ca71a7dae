/* SPDX-License-Identifier: Apache-2.0 */
/* Softmax's fused row pass (cpu_softmax_math.h) on every instance this CPU runs, against a
 * long double reference: every length 0 to 70 and a few long ones, each array the whole of its
 * own allocation (so that a read past the end is one that AddressSanitizer reports), NaN and
 * infinities in either row; then Softmax and LogSoftmax through the ops on many rows, where
 * every row but a slice's first takes its maximum from the pass before it. */
#include "cpu_fixture.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../../devices/cpu/cpu_softmax_math.h"

static const char *const instances[] = {"avx512", "avx2", "sse2", "libm"};

/* A value in [-9, 3) for element i of stream `seed`, with NaN, +inf or -inf where `special`
 * asks for one (0 none, 1 NaN, 2 +inf, 3 -inf) at i == at. */
static double value(unsigned seed, int64_t i, int special, int64_t at) {
    if (i == at && special == 1) return NAN;
    if (i == at && special == 2) return INFINITY;
    if (i == at && special == 3) return -INFINITY;
    uint32_t state = seed * 2654435761u + (uint32_t)i * 40503u;
    state ^= state >> 13;
    state *= 1664525u;
    return (double)(state >> 8) / (double)(1u << 24) * 12 - 9;
}

/* The largest value, NaN skipped; -inf for none. */
static long double largest_of(const double *x, int64_t n) {
    long double top = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        if (x[i] > top) top = x[i];
    return top;
}

/* One call of the pass on arrays of exactly n elements, checked: the stored exps equal what
 * cpu_math_t's Exp gives of x - shift, bit for bit; the sum within n roundings of the exact
 * sum of those exps; the next row's largest value exact; the previous row scaled, each element
 * rounded once; y and prev not written past n. */
static void check_pass(const char *instance, bool f64, int64_t n, int special, int64_t at,
                       bool store, bool with_next) {
    const double prev_scale = 0.3712;
    const cpu_math_t *math = cpu_math_named(instance);
    const cpu_softmax_math_t *fused = cpu_softmax_math(math);
    size_t size = f64 ? sizeof(double) : sizeof(float);
    void *x = malloc((size_t)n * size + 1), *next = malloc((size_t)n * size + 1);
    void *y = malloc((size_t)(n + 1) * size), *shifted = malloc((size_t)n * size + 1);
    void *want_y = malloc((size_t)n * size + 1), *next_y = malloc((size_t)n * size + 1);
    double *held = malloc((size_t)n * sizeof *held + 1), *held_next = malloc((size_t)n * 8 + 1);
    void *prev = malloc((size_t)(n + 1) * size);
    assert_true(x && next && y && shifted && want_y && next_y && held && held_next && prev);
    for (int64_t i = 0; i < n; i++) {
        double a = value(1, i, special, at), b = value(2, i, special, n - 1 - at);
        if (f64) {
            ((double *)x)[i] = held[i] = a;
            ((double *)next)[i] = held_next[i] = b;
            ((double *)prev)[i] = b;
        } else {
            ((float *)x)[i] = (float)a, held[i] = (float)a;
            ((float *)next)[i] = (float)b, held_next[i] = (float)b;
            ((float *)prev)[i] = (float)b;
        }
    }
    /* The shift a row gets: its largest value, or 0 where it has none. */
    long double top = largest_of(held, n);
    double shift = isfinite(top) ? (double)top : 0;
    double total, sentinel = 12345;
    double next_largest = -1;
    if (f64) {
        for (int64_t i = 0; i < n; i++) ((double *)shifted)[i] = held[i] - shift;
        math->map_f64(CPU_MATH_EXP, shifted, want_y, n);
        ((double *)y)[n] = ((double *)prev)[n] = sentinel;
        total = fused->exp_sum_next_f64(x, shift, store ? y : NULL, with_next ? next : NULL,
                                        &next_largest, with_next ? next_y : NULL,
                                        store ? prev : NULL, prev_scale, n);
        assert_true(((double *)y)[n] == sentinel && ((double *)prev)[n] == sentinel);
        for (int64_t i = 0; i < n; i++) {
            double want = store ? held_next[i] * prev_scale : held_next[i];
            assert_true(((double *)prev)[i] == want || (isnan(want) && isnan(((double *)prev)[i])));
        }
    } else {
        for (int64_t i = 0; i < n; i++) ((float *)shifted)[i] = (float)held[i] - (float)shift;
        math->map_f32(CPU_MATH_EXP, shifted, want_y, n);
        ((float *)y)[n] = ((float *)prev)[n] = (float)sentinel;
        float largest = -1;
        total = fused->exp_sum_next_f32(x, (float)shift, store ? y : NULL,
                                        with_next ? next : NULL, &largest,
                                        with_next ? next_y : NULL, store ? prev : NULL,
                                        (float)prev_scale, n);
        next_largest = largest;
        assert_true(((float *)y)[n] == (float)sentinel && ((float *)prev)[n] == (float)sentinel);
        for (int64_t i = 0; i < n; i++) {
            float want = store ? (float)held_next[i] * (float)prev_scale : (float)held_next[i];
            assert_true(((float *)prev)[i] == want || (isnan(want) && isnan(((float *)prev)[i])));
        }
    }
    if (store) assert_memory_equal(y, want_y, (size_t)n * size);
    long double exact = 0;
    for (int64_t i = 0; i < n; i++)
        exact += f64 ? ((double *)want_y)[i] : ((float *)want_y)[i];
    double eps = f64 ? DBL_EPSILON : FLT_EPSILON;
    bool sum_ok = isnan(exact)   ? isnan(total)
                  : isinf(exact) ? total == exact
                                 : fabsl(total - exact) <= (n + 4) * eps * exact;
    if (!sum_ok)
        fail_msg("%s %s n %lld special %d at %lld: sum %.17g, wanted %.17Lg", instance,
                 f64 ? "f64" : "f32", (long long)n, special, (long long)at, total, exact);
    long double want_largest = largest_of(held_next, n);
    if (with_next && next_largest != (double)want_largest)
        fail_msg("%s %s n %lld special %d: next row's largest %.17g, wanted %.17Lg", instance,
                 f64 ? "f64" : "f32", (long long)n, special, next_largest, want_largest);
    if (!with_next) assert_true(next_largest == -1); /* left alone */
    free(x), free(next), free(y), free(shifted), free(want_y), free(next_y);
    free(held), free(held_next), free(prev);
}

static void every_length_on_every_instance(void **state) {
    (void)state;
    int tested = 0;
    for (size_t k = 0; k < COUNT_OF(instances); k++) {
        if (cpu_math_named(instances[k]) == NULL) continue; /* this CPU lacks it */
        tested++;
        for (int f64 = 0; f64 < 2; f64++) {
            for (int64_t n = 0; n <= 70; n++)
                for (int variant = 0; variant < 4; variant++)
                    check_pass(instances[k], f64, n, 0, -1, variant & 1, variant & 2);
            const int64_t long_lengths[] = {1000, 1003, 4099};
            for (size_t l = 0; l < COUNT_OF(long_lengths); l++)
                check_pass(instances[k], f64, long_lengths[l], 0, -1, true, true);
        }
    }
    assert_true(tested >= 2); /* libm, and SSE2 at least on x86-64 */
}

/* NaN, +inf and -inf at the start, in the vector body and in the tail of either row. */
static void nan_and_infinities_in_either_row(void **state) {
    (void)state;
    for (size_t k = 0; k < COUNT_OF(instances); k++) {
        if (cpu_math_named(instances[k]) == NULL) continue;
        for (int f64 = 0; f64 < 2; f64++)
            for (int special = 1; special <= 3; special++) {
                const int64_t lengths[] = {1, 7, 37, 70};
                for (size_t l = 0; l < COUNT_OF(lengths); l++) {
                    int64_t n = lengths[l];
                    const int64_t places[] = {0, n / 2, n - 1};
                    for (size_t p = 0; p < COUNT_OF(places); p++)
                        check_pass(instances[k], f64, n, special, places[p], true, true);
                }
            }
    }
}

/* Softmax and LogSoftmax of `rows` x `width` against the definition in long double: the
 * shifted exps over their sum, and x - max - log(sum); a row with NaN, or with +inf, or of
 * -inf alone, all NaN. */
static void check_op(tp_context_t *c, tp_dtype_t dtype, const double *x, int64_t rows,
                     int64_t width) {
    int64_t n = rows * width;
    tp_tensor_t *in = tensor_of_doubles(c, dtype, TP_SHAPE(rows, width), x), *s = NULL, *l = NULL;
    assert_ok(tp_softmax(c, in, &s));
    assert_ok(tp_log_softmax(c, in, &l));
    double *held = read_doubles(in, NULL), *soft = read_doubles(s, NULL);
    double *logs = read_doubles(l, NULL);
    double eps = dtype == TP_FLOAT32 ? FLT_EPSILON : DBL_EPSILON;
    for (int64_t r = 0; r < rows; r++) {
        const double *row = held + r * width;
        bool nan_row = false;
        for (int64_t j = 0; j < width; j++) nan_row |= isnan(row[j]);
        long double top = largest_of(row, width), total = 0;
        nan_row |= isinf(top);
        for (int64_t j = 0; j < width && !nan_row; j++) total += expl(row[j] - top);
        for (int64_t j = 0; j < width; j++) {
            double got = soft[r * width + j], got_log = logs[r * width + j];
            if (nan_row) {
                if (!isnan(got) || !isnan(got_log))
                    fail_msg("%s row %lld (%lld wide) holds NaN or inf: element %lld gave %g "
                             "and %g",
                             tp_dtype_name(dtype), (long long)r, (long long)width, (long long)j,
                             got, got_log);
                continue;
            }
            long double want = expl(row[j] - top) / total;
            long double want_log = row[j] - top - logl(total);
            long double spread = fabsl(row[j] - top);
            /* Written so that a NaN fails; a -inf logit gives 0 and -inf exactly. */
            if (!(got == want || fabsl(got - want) <= (4 + spread) * eps * want + DBL_MIN) ||
                !(got_log == want_log ||
                  fabsl(got_log - want_log) <= 4 * eps * fmaxl(1, fabsl(want_log))))
                fail_msg("%s row %lld element %lld of %.17g: Softmax %.17g (wanted %.17Lg), "
                         "LogSoftmax %.17g (wanted %.17Lg)",
                         tp_dtype_name(dtype), (long long)r, (long long)j, row[j], got, want,
                         got_log, want_log);
        }
    }
    assert_int_equal(tp_tensor_num_elements(s), n);
    free(held), free(soft), free(logs);
    tp_tensor_release(in), tp_tensor_release(s), tp_tensor_release(l);
}

static void many_rows_through_the_ops(void **state) {
    tp_context_t *c = *state;
    /* Long enough for the rows to be split across cores at 1000 wide; odd widths for tails. */
    const int64_t shapes[][2] = {{300, 1000}, {64, 37}, {129, 1}, {17, 70}, {5, 0}};
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t s = 0; s < COUNT_OF(shapes); s++) {
        int64_t rows = shapes[s][0], width = shapes[s][1], n = rows * width;
        double *x = malloc((size_t)n * sizeof *x + 1);
        assert_non_null(x);
        for (int64_t i = 0; i < n; i++) x[i] = value(3, i, 0, -1);
        /* Rows 3, 4 and 5 with NaN, +inf and -inf; row 6 all -inf; the rows beside them, and
         * the first row after a NaN row, must come out as if alone. */
        if (rows > 6 && width > 0) {
            x[3 * width + width / 2] = NAN;
            x[4 * width] = INFINITY;
            x[5 * width + width - 1] = -INFINITY;
            for (int64_t j = 0; j < width; j++) x[6 * width + j] = -INFINITY;
        }
        for (size_t d = 0; d < COUNT_OF(dtypes); d++) check_op(c, dtypes[d], x, rows, width);
        free(x);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_length_on_every_instance),
        cmocka_unit_test(nan_and_infinities_in_either_row),
        cmocka_unit_test_setup_teardown(many_rows_through_the_ops, cpu_context_setup,
                                        cpu_context_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
