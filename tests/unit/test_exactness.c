/* SPDX-License-Identifier: Apache-2.0 */
/* The conformance check's comparison of a plug-in's outputs with the CPU's: which ops are
 * exact, and what each class lets through and what it does not. */
#include "test_support.h"

#include <float.h>
#include <math.h>

#include "conformance/exactness.h"

/* Compares one float32 element under `exactness`: whether it matches. */
static bool float_matches(tp_exactness_t exactness, float got, float want) {
    return !tp_compare_values(exactness, TP_FLOAT32, &got, &want, 1, 1).mismatch;
}

static void ops_fall_into_their_classes(void **state) {
    (void)state;
    assert_int_equal(tp_exactness_of("Neg", TP_FLOAT32), TP_EXACT_BITS);
    assert_int_equal(tp_exactness_of("Transpose", TP_FLOAT64), TP_EXACT_BITS);
    assert_int_equal(tp_exactness_of("Relu", TP_FLOAT32), TP_EXACT_VALUES);
    assert_int_equal(tp_exactness_of("Mul", TP_FLOAT32), TP_ROUNDED_ONCE);
    assert_int_equal(tp_exactness_of("Div", TP_FLOAT32), TP_ROUNDED_APPROXIMATELY);
    assert_int_equal(tp_exactness_of("Exp", TP_FLOAT64), TP_ELEMENTARY);
    assert_int_equal(tp_exactness_of("MatMul", TP_FLOAT32), TP_ACCUMULATED);
    /* Integers are exact whatever the op; an op the table does not know is exact. */
    assert_int_equal(tp_exactness_of("Exp", TP_INT32), TP_EXACT_BITS);
    assert_int_equal(tp_exactness_of("Sum", TP_INT64), TP_EXACT_BITS);
    assert_int_equal(tp_exactness_of("VendorConv", TP_FLOAT32), TP_EXACT_BITS);
}

static void exact_classes_see_signed_zeros_and_nan_only_where_they_should(void **state) {
    (void)state;
    assert_false(float_matches(TP_EXACT_BITS, 0.0f, -0.0f));
    assert_true(float_matches(TP_EXACT_VALUES, 0.0f, -0.0f));
    assert_false(float_matches(TP_EXACT_VALUES, 0.0f, NAN));
    assert_false(float_matches(TP_EXACT_VALUES, NAN, 0.0f));
    /* Any NaN matches any NaN: payloads are not portable. */
    assert_true(float_matches(TP_EXACT_BITS, -NAN, NAN));
    assert_false(float_matches(TP_EXACT_BITS, FLT_TRUE_MIN, 0.0f));
    assert_false(float_matches(TP_EXACT_VALUES, -1e-6f, 0.0f));
    assert_false(float_matches(TP_EXACT_BITS, nextafterf(1.0f, 2.0f), 1.0f));
}

static void a_scale_of_one_point_00009_fails_every_inexact_class(void **state) {
    (void)state;
    const float want = 0.903042257f;
    const float scaled = want * 1.00009f;
    assert_false(float_matches(TP_ROUNDED_ONCE, scaled, want));
    assert_false(float_matches(TP_ROUNDED_APPROXIMATELY, scaled, want));
    assert_false(float_matches(TP_ELEMENTARY, scaled, want));
    assert_false(float_matches(TP_ACCUMULATED, scaled, want));
    /* The old tolerance, 1e-5 + 1e-4 |x|, let it through. */
    assert_true(fabsf(scaled - want) <= 1e-5f + 1e-4f * want);
}

static void inexact_classes_allow_what_they_say(void **state) {
    (void)state;
    float one_ulp_up = nextafterf(0.75f, 1.0f);
    assert_false(float_matches(TP_ROUNDED_ONCE, one_ulp_up, 0.75f));
    assert_true(float_matches(TP_ROUNDED_APPROXIMATELY, one_ulp_up, 0.75f));
    float sixteen_ulp_up = 0.75f + 16 * (FLT_EPSILON / 2);
    assert_true(float_matches(TP_ELEMENTARY, sixteen_ulp_up, 0.75f));
    assert_false(float_matches(TP_ROUNDED_APPROXIMATELY, sixteen_ulp_up, 0.75f));
    /* A result below the smallest normal may be flushed to zero, except where bits decide. */
    assert_true(float_matches(TP_ROUNDED_ONCE, 0.0f, FLT_TRUE_MIN * 3));
    assert_false(float_matches(TP_EXACT_BITS, 0.0f, FLT_TRUE_MIN * 3));
    /* Infinities are never near a finite number. */
    assert_false(float_matches(TP_ELEMENTARY, FLT_MAX, INFINITY));
    assert_true(float_matches(TP_ELEMENTARY, -INFINITY, -INFINITY));
}

static void accumulated_bounds_grow_with_the_terms_and_the_largest_result(void **state) {
    (void)state;
    const float want[2] = {1000.0f, 1.0f};
    const float got[2] = {1000.0f, 1.0f + 1e-3f};
    assert_false(tp_compare_values(TP_ACCUMULATED, TP_FLOAT32, got, want, 2, 4099).mismatch);
    tp_value_comparison_t few = tp_compare_values(TP_ACCUMULATED, TP_FLOAT32, got, want, 2, 4);
    assert_true(few.mismatch);
    assert_int_equal(few.at, 1);
}

static void integers_compare_bit_for_bit(void **state) {
    (void)state;
    const int32_t want[3] = {1, -2, 3}, got[3] = {1, -2, 4};
    tp_value_comparison_t found = tp_compare_values(TP_ELEMENTARY, TP_INT32, got, want, 3, 1);
    assert_true(found.mismatch);
    assert_int_equal(found.at, 2);
    assert_true(found.got == 4 && found.want == 3);
    assert_false(tp_compare_values(TP_EXACT_BITS, TP_INT32, want, want, 3, 1).mismatch);
}

/* The 16-bit floats are judged in their own units: an ulp of float16 at 1 is 2^-10, of
 * bfloat16 2^-7, and their own smallest normal numbers decide what may flush to zero. */
static void sixteen_bit_floats_are_judged_in_their_own_ulps(void **state) {
    (void)state;
    assert_int_equal(tp_exactness_of("Add", TP_FLOAT16), TP_ROUNDED_ONCE);
    assert_int_equal(tp_exactness_of("Exp", TP_BFLOAT16), TP_ELEMENTARY);
    assert_int_equal(tp_exactness_of("Add", TP_INT8), TP_EXACT_BITS);
    const struct {
        tp_exactness_t exactness;
        tp_dtype_t dtype;
        uint16_t got, want;
        bool matches;
    } cases[] = {
        /* 1 + 2^-10 against 1: one float16 ulp; 1 + 3 * 2^-10: three. */
        {TP_ROUNDED_ONCE, TP_FLOAT16, 0x3c01, 0x3c00, false},
        {TP_ROUNDED_APPROXIMATELY, TP_FLOAT16, 0x3c01, 0x3c00, true},
        {TP_ROUNDED_APPROXIMATELY, TP_FLOAT16, 0x3c03, 0x3c00, false},
        /* Elementary: 16 ulp + 16 eps is 32 ulp at 1; 33 is too many. */
        {TP_ELEMENTARY, TP_FLOAT16, 0x3c20, 0x3c00, true},
        {TP_ELEMENTARY, TP_FLOAT16, 0x3c21, 0x3c00, false},
        /* float16's subnormal 3 * 2^-24 may flush to zero where rounding decides. */
        {TP_ROUNDED_ONCE, TP_FLOAT16, 0x0000, 0x0003, true},
        {TP_EXACT_BITS, TP_FLOAT16, 0x0000, 0x0003, false},
        {TP_EXACT_BITS, TP_FLOAT16, 0x7e01, 0xfe00, true}, /* NaN is NaN */
        {TP_ROUNDED_APPROXIMATELY, TP_BFLOAT16, 0x3f81, 0x3f80, true},
        {TP_ROUNDED_ONCE, TP_BFLOAT16, 0x3f81, 0x3f80, false},
        /* 1e-30 is a normal bfloat16 number (its range is float's): it may not flush. */
        {TP_ROUNDED_ONCE, TP_BFLOAT16, 0x0000, 0x0da2, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tp_value_comparison_t c = tp_compare_values(cases[i].exactness, cases[i].dtype,
                                                    &cases[i].got, &cases[i].want, 1, 1);
        if (c.mismatch == cases[i].matches) fail_msg("case %zu", i);
    }
}

/* The new integer dtypes compare by their bits: uint64 values that one double rounds to alike
 * still differ. */
static void new_integers_compare_bit_for_bit(void **state) {
    (void)state;
    const uint64_t got = (UINT64_C(1) << 60) + 1, want = UINT64_C(1) << 60;
    tp_value_comparison_t c = tp_compare_values(TP_ROUNDED_ONCE, TP_UINT64, &got, &want, 1, 1);
    assert_true(c.mismatch);
    const int8_t small[2] = {-1, 5}, same[2] = {-1, 5}, other[2] = {-1, 4};
    assert_false(tp_compare_values(TP_EXACT_BITS, TP_INT8, small, same, 2, 1).mismatch);
    assert_int_equal(tp_compare_values(TP_EXACT_BITS, TP_INT8, small, other, 2, 1).at, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ops_fall_into_their_classes),
        cmocka_unit_test(exact_classes_see_signed_zeros_and_nan_only_where_they_should),
        cmocka_unit_test(a_scale_of_one_point_00009_fails_every_inexact_class),
        cmocka_unit_test(inexact_classes_allow_what_they_say),
        cmocka_unit_test(accumulated_bounds_grow_with_the_terms_and_the_largest_result),
        cmocka_unit_test(integers_compare_bit_for_bit),
        cmocka_unit_test(sixteen_bit_floats_are_judged_in_their_own_ulps),
        cmocka_unit_test(new_integers_compare_bit_for_bit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
