/* SPDX-License-Identifier: Apache-2.0 */
/* Pow on the CPU against values computed by hand: floats with C's special cases (0^0, negative
 * bases to whole and fractional powers), integers exactly and wrapping, broadcasting, the
 * refusal of a negative integer exponent, and its gradient at a negative base. */
#include "cpu_fixture.h"
#include "tensorplug/training.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static void expect_values(tp_tensor_t *tensor, const double *want, int64_t count,
                          double tolerance) {
    size_t have = 0;
    double *got = read_doubles(tensor, &have);
    assert_int_equal(have, count);
    for (int64_t i = 0; i < count; i++) {
        bool same = isnan(want[i]) ? isnan(got[i])
                    : isinf(want[i]) || want[i] == 0
                        ? got[i] == want[i]
                        : fabs(got[i] - want[i]) <= tolerance * fabs(want[i]);
        if (!same)
            fail_msg("Pow on %s, element %lld: got %.17g, wanted %.17g",
                     tp_dtype_name(tp_tensor_dtype(tensor)), (long long)i, got[i], want[i]);
    }
    free(got);
}

static void pow_of_floats(void **state) {
    tp_context_t *c = *state;
    const double x[] = {2, 0, -2, -2, -8, 4, 0, 1, 2.5};
    const double y[] = {10, 0, 3, 2, 1.0 / 3, 0.5, -1, NAN, -2};
    const double want[] = {1024, 1, -8, 4, NAN, 2, INFINITY, 1, 0.16};
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t d = 0; d < COUNT_OF(dtypes); d++) {
        tp_tensor_t *a = tensor_of_doubles(c, dtypes[d], TP_SHAPE(9), x);
        tp_tensor_t *b = tensor_of_doubles(c, dtypes[d], TP_SHAPE(9), y), *out = NULL;
        assert_ok(tp_pow(c, a, b, &out));
        assert_int_equal(tp_tensor_dtype(out), dtypes[d]);
        expect_values(out, want, 9, dtypes[d] == TP_FLOAT32 ? 2e-7 : 1e-15);
        tp_tensor_release(a);
        tp_tensor_release(b);
        tp_tensor_release(out);
    }
}

static void pow_of_integers_is_exact_and_wraps(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *a = tensor_of_doubles(c, TP_INT32, TP_SHAPE(6),
                                      (const double[]){-3, 0, 7, 2, -1, 3});
    tp_tensor_t *b = tensor_of_doubles(c, TP_INT32, TP_SHAPE(6),
                                      (const double[]){3, 0, 0, 30, 5, 19});
    tp_tensor_t *out = NULL;
    assert_ok(tp_pow(c, a, b, &out));
    expect_values(out, (const double[]){-27, 1, 1, 1073741824, -1, 1162261467}, 6, 0);
    tp_tensor_release(out);
    tp_tensor_release(a);
    tp_tensor_release(b);
    /* 3^5 = 243 wraps to -13 in int8, and 2^8 to 0 in uint8, as repeated Mul would. */
    a = tensor_of_doubles(c, TP_INT8, TP_SHAPE(1), (const double[]){3});
    b = tensor_of_doubles(c, TP_INT8, TP_SHAPE(1), (const double[]){5});
    assert_ok(tp_pow(c, a, b, &out));
    expect_values(out, (const double[]){-13}, 1, 0);
    tp_tensor_release(out);
    tp_tensor_release(a);
    tp_tensor_release(b);
    a = tensor_of_doubles(c, TP_UINT8, TP_SHAPE(2), (const double[]){2, 255});
    b = tensor_of_doubles(c, TP_UINT8, TP_SHAPE(2), (const double[]){8, 1});
    assert_ok(tp_pow(c, a, b, &out));
    expect_values(out, (const double[]){0, 255}, 2, 0);
    tp_tensor_release(out);
    tp_tensor_release(a);
    tp_tensor_release(b);
}

static void pow_broadcasts(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *a = tensor_of_doubles(c, TP_FLOAT32, TP_SHAPE(2, 1), (const double[]){2, -3});
    tp_tensor_t *b = tensor_of_doubles(c, TP_FLOAT32, TP_SHAPE(3), (const double[]){0, 1, 2});
    tp_tensor_t *out = NULL;
    assert_ok(tp_pow(c, a, b, &out));
    assert_tensor_shape(out, TP_SHAPE(2, 3));
    expect_values(out, (const double[]){1, 2, 4, 1, -3, 9}, 6, 0);
    tp_tensor_release(out);
    tp_tensor_release(a);
    tp_tensor_release(b);
}

static void pow_refuses_negative_integer_exponents(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *a = tensor_of_doubles(c, TP_INT64, TP_SHAPE(2), (const double[]){2, 2});
    tp_tensor_t *b = tensor_of_doubles(c, TP_INT64, TP_SHAPE(2), (const double[]){1, -1});
    tp_tensor_t *out = NULL;
    tp_status_t *error = tp_pow(c, a, b, &out);
    /* The CPU is synchronous: the kernel's refusal comes back from the call, or from the wait
     * on an output a queued run poisoned. */
    if (error == NULL) error = tp_tensor_wait(out);
    assert_non_null(error);
    assert_int_equal(tp_status_code(error), TP_INVALID_ARGUMENT);
    assert_non_null(strstr(tp_status_message(error),
                           "integers to negative integer powers are not allowed"));
    tp_status_free(error);
    tp_tensor_release(out);
    tp_tensor_release(a);
    tp_tensor_release(b);
    /* Types are checked too: bool has no powers. */
    bool flags[2] = {true, false};
    tp_tensor_t *bools = NULL;
    assert_ok(tp_tensor_create(c, TP_BOOL, TP_SHAPE(2), flags, sizeof flags, &bools));
    out = NULL;
    assert_error(tp_pow(c, bools, bools, &out), TP_INVALID_ARGUMENT, "Pow");
    assert_null(out);
    tp_tensor_release(bools);
}

/* At x = -2, y = 3: d/dx = y x^(y-1) = 12; d/dy is taken as 0 where x <= 0 (TensorFlow's
 * choice); at x = 2: d/dy = x^y log x = 8 log 2. */
static void pow_gradient_at_negative_and_positive_bases(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = tensor_of_doubles(c, TP_FLOAT64, TP_SHAPE(2), (const double[]){-2, 2});
    tp_tensor_t *y = tensor_of_doubles(c, TP_FLOAT64, TP_SHAPE(2), (const double[]){3, 3});
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, x));
    assert_ok(tp_tape_watch(tape, y));
    tp_tensor_t *z = NULL, *total = NULL;
    assert_ok(tp_pow(c, x, y, &z));
    assert_ok(tp_sum(c, z, NULL, 0, false, &total));
    tp_tensor_t *grads[2] = {NULL, NULL};
    assert_ok(tp_tape_gradient(tape, total, (tp_tensor_t *[]){x, y}, 2, grads));
    expect_values(grads[0], (const double[]){12, 12}, 2, 1e-15);
    expect_values(grads[1], (const double[]){0, 8 * log(2.0)}, 2, 1e-15);
    tp_tensor_release(grads[0]);
    tp_tensor_release(grads[1]);
    tp_tensor_release(total);
    tp_tensor_release(z);
    tp_tape_destroy(tape);
    tp_tensor_release(x);
    tp_tensor_release(y);
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, cpu_context_setup, cpu_context_teardown)
    const struct CMUnitTest tests[] = {
        TEST(pow_of_floats),
        TEST(pow_of_integers_is_exact_and_wraps),
        TEST(pow_broadcasts),
        TEST(pow_refuses_negative_integer_exponents),
        TEST(pow_gradient_at_negative_and_positive_bases),
    };
#undef TEST
    return cmocka_run_group_tests(tests, NULL, NULL);
}
