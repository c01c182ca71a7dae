/* SPDX-License-Identifier: Apache-2.0 */
/* Float Sum, Mean, Max, Min and Prod on the CPU against a float64 element walk: every axis set of odd
 * shapes up to rank 4 (with and without keep_dims), shapes long enough for the lanes, the row
 * strips, the pairwise tree and the split across cores, size-0 dimensions, NaN and infinities,
 * and sums whose error must stay within pairwise summation's bound where a running total's
 * would not (20M ones; alternating 1e8 and 1). */
#include "cpu_fixture.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef tp_status_t *(*reduce_fn)(tp_context_t *, tp_tensor_t *, const int64_t *, size_t, bool,
                                  tp_tensor_t **);
enum { SUM, MEAN, MAX, MIN, PROD, NUM_OPS };
static const char *const names[NUM_OPS] = {"Sum", "Mean", "Max", "Min", "Prod"};
static const reduce_fn fns[NUM_OPS] = {tp_sum, tp_mean, tp_max, tp_min, tp_prod};

/* The reduction of `x` (row-major over `shape`) over the axes in `mask` (bit d for axis d), in
 * float64, one element at a time: the output element of each input element from its
 * coordinates. Also the sum of magnitudes per output, for the error bound. */
static void reference(int op, const double *x, tp_shape_t shape, unsigned mask, double *out,
                      double *magnitude, int64_t outputs) {
    int64_t group = 1;
    for (int32_t d = 0; d < shape.rank; d++)
        if (mask & (1u << d)) group *= shape.dims[d];
    for (int64_t o = 0; o < outputs; o++) {
        out[o] = op == MAX ? -INFINITY : op == MIN ? INFINITY : op == PROD ? 1 : 0;
        magnitude[o] = 0;
    }
    for (int64_t i = 0; i < element_count(shape); i++) {
        int64_t rest = i, o = 0, stride = 1;
        for (int32_t d = shape.rank - 1; d >= 0; d--) {
            if (!(mask & (1u << d))) {
                o += rest % shape.dims[d] * stride;
                stride *= shape.dims[d];
            }
            rest /= shape.dims[d];
        }
        double v = x[i];
        if (op == MAX)
            out[o] = isnan(out[o]) || isnan(v) ? NAN : fmax(out[o], v);
        else if (op == MIN)
            out[o] = isnan(out[o]) || isnan(v) ? NAN : fmin(out[o], v);
        else if (op == PROD)
            out[o] *= v;
        else
            out[o] += v;
        magnitude[o] += fabs(v);
    }
    if (op == MEAN)
        for (int64_t o = 0; o < outputs; o++) {
            out[o] /= (double)group;
            magnitude[o] /= (double)group;
        }
}

/* A value for Prod in place of v in [-8, 8): magnitudes within 2^(1/8) of 1, so that a long
 * product neither overflows nor underflows, with either sign; 0, infinities and NaN kept. */
static double prod_value(double v) {
    if (v == 0 || !isfinite(v)) return v;
    return ((int64_t)floor(v * 4) & 1 ? -1 : 1) * exp2(v / 64);
}

/* Checks op over `mask` of a tensor of `values` against the reference: Max and Min exactly, a
 * sum within pairwise summation's bound, (log2(n) + 4) * eps * sum |x|, a product within
 * (n + 4) * eps of its size. */
static void check(tp_context_t *c, int op, tp_dtype_t dtype, tp_shape_t shape,
                  const double *given, unsigned mask, bool keep_dims) {
    const double *values = given;
    double *for_prod = NULL;
    if (op == PROD && given != NULL) {
        for_prod = malloc((size_t)(element_count(shape) + 1) * sizeof *for_prod);
        assert_non_null(for_prod);
        for (int64_t i = 0; i < element_count(shape); i++) for_prod[i] = prod_value(given[i]);
        values = for_prod;
    }
    int64_t count = element_count(shape), axes[TP_MAX_RANK];
    size_t num_axes = 0;
    tp_shape_t want_shape = {.rank = 0};
    int64_t outputs = 1, group = 1;
    for (int32_t d = 0; d < shape.rank; d++) {
        if (mask & (1u << d)) {
            axes[num_axes++] = d;
            group *= shape.dims[d];
            if (keep_dims) want_shape.dims[want_shape.rank++] = 1;
        } else {
            want_shape.dims[want_shape.rank++] = shape.dims[d];
            outputs *= shape.dims[d];
        }
    }
    /* The values as the tensor holds them, so that the reference sees no rounding. */
    double *stored = malloc((size_t)(count > 0 ? count : 1) * sizeof *stored);
    double *want = malloc((size_t)(outputs > 0 ? outputs : 1) * 2 * sizeof *want);
    assert_non_null(stored);
    assert_non_null(want);
    tp_tensor_t *x = tensor_of_doubles(c, dtype, shape, values), *y = NULL;
    double *held = read_doubles(x, NULL);
    memcpy(stored, held, (size_t)count * sizeof *stored);
    free(held);
    reference(op, stored, shape, mask, want, want + outputs, outputs);
    /* An empty axis list reduces every axis; give the full list when every axis is meant. */
    assert_ok(fns[op](c, x, axes, num_axes, keep_dims, &y));
    tp_tensor_release(x);
    assert_int_equal(tp_tensor_dtype(y), dtype);
    assert_tensor_shape(y, want_shape);
    size_t have = 0;
    double *got = read_doubles(y, &have);
    tp_tensor_release(y);
    assert_int_equal(have, outputs);
    double eps = dtype == TP_FLOAT32 ? 0x1p-24 : dtype == TP_FLOAT64 ? 0x1p-53 : 0x1p-8;
    double rounds = log2((double)(group > 1 ? group : 1)) + 4;
    for (int64_t o = 0; o < outputs; o++) {
        /* 16-bit floats are reduced in float32 and rounded once at the end. */
        double bound = op == MAX || op == MIN ? 0
                       : op == PROD
                           ? ((double)group + 4) * (dtype == TP_FLOAT64 ? eps : 0x1p-24) *
                                     fabs(want[o]) +
                                 eps * fabs(want[o])
                       : dtype == TP_FLOAT16 || dtype == TP_BFLOAT16
                           ? eps * fabs(want[o]) + rounds * 0x1p-24 * want[outputs + o]
                           : rounds * eps * want[outputs + o];
        bool same = isnan(want[o])   ? isnan(got[o])
                    : isinf(want[o]) ? got[o] == want[o]
                                     : fabs(got[o] - want[o]) <= bound;
        if (!same)
            fail_msg("%s of %s over axes 0x%x (keep_dims %d), rank %d, %lld elements, output "
                     "%lld: got %.17g, wanted %.17g (bound %.3g)",
                     names[op], tp_dtype_name(dtype), mask, keep_dims, shape.rank,
                     (long long)count, (long long)o, got[o], want[o], bound);
    }
    free(got);
    free(stored);
    free(want);
    free(for_prod);
}

/* Values in [-8, 8) with no pattern the reduction could line up with. */
static double *mixed_values(int64_t count) {
    double *values = malloc((size_t)(count > 0 ? count : 1) * sizeof *values);
    assert_non_null(values);
    uint32_t state = 12345;
    for (int64_t i = 0; i < count; i++) {
        state = state * 1664525u + 1013904223u;
        values[i] = (double)(state >> 8) / (double)(1u << 24) * 16 - 8;
    }
    return values;
}

static void every_axis_set_of_odd_shapes(void **state) {
    tp_context_t *c = *state;
    const tp_shape_t shapes[] = {TP_SHAPE(7),          TP_SHAPE(3, 5),     TP_SHAPE(2, 3, 4),
                                 TP_SHAPE(5, 1, 6, 3), TP_SHAPE(3, 17, 2, 9), TP_SHAPE(1, 1),
                                 TP_SHAPE(19, 33)};
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t s = 0; s < COUNT_OF(shapes); s++) {
        double *values = mixed_values(element_count(shapes[s]));
        for (size_t d = 0; d < COUNT_OF(dtypes); d++)
            for (int op = 0; op < NUM_OPS; op++)
                for (unsigned mask = 1; mask < (1u << shapes[s].rank); mask++) {
                    check(c, op, dtypes[d], shapes[s], values, mask, false);
                    check(c, op, dtypes[d], shapes[s], values, mask, true);
                }
        free(values);
    }
}

/* Long enough for the pairwise tree (over 256), the row strips (over 1024 floats wide, more
 * than 8 rows), and the split of a long run across cores (over 2 * 65536). */
static void long_shapes_take_every_path(void **state) {
    tp_context_t *c = *state;
    const tp_shape_t shapes[] = {TP_SHAPE(4099),         TP_SHAPE(300001),  TP_SHAPE(2, 200003),
                                 TP_SHAPE(37, 2100),     TP_SHAPE(3, 70, 1030), TP_SHAPE(6, 5, 4001),
                                 TP_SHAPE(129, 3, 9)};
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t s = 0; s < COUNT_OF(shapes); s++) {
        double *values = mixed_values(element_count(shapes[s]));
        for (size_t d = 0; d < COUNT_OF(dtypes); d++)
            for (int op = 0; op < NUM_OPS; op++)
                for (unsigned mask = 1; mask < (1u << shapes[s].rank); mask++)
                    check(c, op, dtypes[d], shapes[s], values, mask, false);
        free(values);
    }
}

/* float16 and bfloat16 are reduced through float32 copies (cpu_staging.c). */
static void sixteen_bit_floats(void **state) {
    tp_context_t *c = *state;
    const tp_dtype_t dtypes[] = {TP_FLOAT16, TP_BFLOAT16};
    double *values = mixed_values(3 * 41);
    for (size_t d = 0; d < COUNT_OF(dtypes); d++)
        for (int op = 0; op < NUM_OPS; op++)
            for (unsigned mask = 1; mask < 4; mask++)
                check(c, op, dtypes[d], TP_SHAPE(3, 41), values, mask, false);
    free(values);
}

/* NaN wins Max and Min wherever it is (each lane, a strip, a split run); infinities add as IEEE
 * says, and inf - inf is NaN. */
static void nan_and_infinities(void **state) {
    tp_context_t *c = *state;
    const tp_shape_t shapes[] = {TP_SHAPE(40), TP_SHAPE(9, 1100), TP_SHAPE(140000), TP_SHAPE(5, 7)};
    for (size_t s = 0; s < COUNT_OF(shapes); s++) {
        int64_t count = element_count(shapes[s]);
        double *values = mixed_values(count);
        values[count / 3] = NAN;
        values[count / 4] = 0; /* a product with it is 0, or NaN beside an infinity */
        values[count / 2] = INFINITY;
        values[count - 1] = -INFINITY;
        for (int op = 0; op < NUM_OPS; op++)
            for (unsigned mask = 1; mask < (1u << shapes[s].rank); mask++) {
                check(c, op, TP_FLOAT32, shapes[s], values, mask, false);
                check(c, op, TP_FLOAT64, shapes[s], values, mask, false);
            }
        free(values);
    }
    /* All -inf: Max is -inf, not a value from the start of the walk. */
    const double lows[] = {-INFINITY, -INFINITY, -INFINITY};
    for (int op = 0; op < NUM_OPS; op++) check(c, op, TP_FLOAT32, TP_SHAPE(3), lows, 1, false);
}

/* A NaN or an infinity in each part of one contiguous run: the whole blocks of 256, the vectors
 * after them, the last few elements, and either side of a block's edge; lengths around the
 * block and its multiples, so that a run ends in each part. */
static void nan_and_infinities_in_every_part_of_a_run(void **state) {
    tp_context_t *c = *state;
    const int64_t lengths[] = {31, 255, 256, 257, 300, 1023, 1024, 1025, 4099};
    const double specials[] = {NAN, INFINITY, -INFINITY};
    for (size_t l = 0; l < COUNT_OF(lengths); l++) {
        int64_t n = lengths[l];
        const int64_t places[] = {0, 7, 255, 256, n / 2, n - 9, n - 1};
        for (size_t p = 0; p < COUNT_OF(places); p++) {
            if (places[p] >= n) continue;
            for (size_t k = 0; k < COUNT_OF(specials); k++) {
                double *values = mixed_values(n);
                values[places[p]] = specials[k];
                for (int op = 0; op < NUM_OPS; op++) {
                    check(c, op, TP_FLOAT32, TP_SHAPE(n), values, 1, false);
                    check(c, op, TP_FLOAT64, TP_SHAPE(n), values, 1, false);
                }
                free(values);
            }
        }
    }
}

/* Nothing reduced: Sum 0, Mean NaN (0 / 0), Max -inf, Min inf, Prod 1; an output of no
 * elements. */
static void size_zero_dimensions(void **state) {
    tp_context_t *c = *state;
    const tp_shape_t shapes[] = {TP_SHAPE(0), TP_SHAPE(0, 3), TP_SHAPE(2, 0, 3), TP_SHAPE(4, 0)};
    for (size_t s = 0; s < COUNT_OF(shapes); s++)
        for (int op = 0; op < NUM_OPS; op++)
            for (unsigned mask = 1; mask < (1u << shapes[s].rank); mask++) {
                check(c, op, TP_FLOAT32, shapes[s], NULL, mask, false);
                check(c, op, TP_FLOAT64, shapes[s], NULL, mask, true);
            }
    tp_tensor_t *x = tensor_of_doubles(c, TP_FLOAT32, TP_SHAPE(0, 2), NULL), *y = NULL;
    const int64_t zero = 0;
    const double want[NUM_OPS] = {0, NAN, -INFINITY, INFINITY, 1};
    for (int op = 0; op < NUM_OPS; op++) {
        assert_ok(fns[op](c, x, &zero, 1, false, &y));
        double *got = read_doubles(y, NULL);
        tp_tensor_release(y);
        for (int i = 0; i < 2; i++)
            if (isnan(want[op]) ? !isnan(got[i]) : got[i] != want[op])
                fail_msg("%s over an axis of 0: got %g, wanted %g", names[op], got[i], want[op]);
        free(got);
    }
    tp_tensor_release(x);
}

/* float32 sums of `count` elements, values[i % 2], over every axis or down axis 0 of a
 * (count / 2, 2) matrix, against `want` within `bound`. */
static void check_float32_sum(tp_context_t *c, int64_t count, const double *pair, bool columns,
                              double want, double bound) {
    float *values = malloc((size_t)count * sizeof *values);
    assert_non_null(values);
    for (int64_t i = 0; i < count; i++) values[i] = (float)pair[columns ? (i / 2) % 2 : i % 2];
    tp_tensor_t *x = NULL, *y = NULL;
    tp_shape_t shape = columns ? TP_SHAPE(count / 2, 2) : TP_SHAPE(count);
    assert_ok(tp_tensor_create(c, TP_FLOAT32, shape, values, (size_t)count * sizeof *values, &x));
    free(values);
    const int64_t zero = 0;
    assert_ok(tp_sum(c, x, columns ? &zero : NULL, columns ? 1 : 0, false, &y));
    tp_tensor_release(x);
    size_t have = 0;
    double *got = read_doubles(y, &have);
    tp_tensor_release(y);
    for (size_t i = 0; i < have; i++)
        if (!(fabs(got[i] - want) <= bound))
            fail_msg("Sum of %lld elements (%g, %g%s): got %.17g, wanted %.17g within %g",
                     (long long)count, pair[0], pair[1], columns ? ", down columns" : "", got[i],
                     want, bound);
    free(got);
}

static void float32_sums_stay_within_the_pairwise_bound(void **state) {
    tp_context_t *c = *state;
    const double ones[] = {1, 1}, alternating[] = {1e8, 1};
    /* 2^24 ones are exact in a running total too; 20M are not (it stops at 2^24). */
    check_float32_sum(c, 1 << 24, ones, false, 16777216, 0);
    check_float32_sum(c, 20000000, ones, false, 20000000, 0);
    check_float32_sum(c, 40000000, ones, true, 20000000, 0);
    /* sum |x| * eps * (log2(n) + 4); a running total is off by 5.5e11 here. */
    int64_t n = 1 << 21;
    double exact = (double)(n / 2) * (1e8 + 1), bound = exact * 0x1p-24 * 25;
    check_float32_sum(c, n, alternating, false, exact, bound);
    check_float32_sum(c, 2 * n, alternating, true, exact, bound);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(every_axis_set_of_odd_shapes, cpu_context_setup,
                                        cpu_context_teardown),
        cmocka_unit_test_setup_teardown(long_shapes_take_every_path, cpu_context_setup,
                                        cpu_context_teardown),
        cmocka_unit_test_setup_teardown(sixteen_bit_floats, cpu_context_setup,
                                        cpu_context_teardown),
        cmocka_unit_test_setup_teardown(nan_and_infinities, cpu_context_setup,
                                        cpu_context_teardown),
        cmocka_unit_test_setup_teardown(nan_and_infinities_in_every_part_of_a_run,
                                        cpu_context_setup, cpu_context_teardown),
        cmocka_unit_test_setup_teardown(size_zero_dimensions, cpu_context_setup,
                                        cpu_context_teardown),
        cmocka_unit_test_setup_teardown(float32_sums_stay_within_the_pairwise_bound,
                                        cpu_context_setup, cpu_context_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
