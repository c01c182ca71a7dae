/* SPDX-License-Identifier: Apache-2.0 */
/* The ops the gradients of Sqrt, Abs and Max brought along, on the CPU: Rsqrt, Sign and the Min
 * reduction, against values computed by hand, special values included, and their refusals. */
#include "cpu_fixture.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

/* Reads `tensor` (of `dtype` and `count` elements) back as doubles. */
static void read_back(tp_tensor_t *tensor, tp_dtype_t dtype, double *out, int64_t count) {
    assert_int_equal(tp_tensor_dtype(tensor), dtype);
    assert_int_equal(tp_tensor_num_elements(tensor), count);
    void *data = malloc((size_t)count * 8 + 1);
    assert_non_null(data);
    assert_ok(tp_tensor_read(tensor, data, (size_t)count * tp_dtype_size(dtype)));
    for (int64_t i = 0; i < count; i++) {
        switch (dtype) {
        case TP_FLOAT32: out[i] = ((float *)data)[i]; break;
        case TP_FLOAT64: out[i] = ((double *)data)[i]; break;
        case TP_INT32: out[i] = ((int32_t *)data)[i]; break;
        default: out[i] = (double)((int64_t *)data)[i]; break;
        }
    }
    free(data);
}

/* Equal, NaN matching NaN and zeros' signs compared, or within `tolerance` relative. */
static bool same_value(double got, double want, double tolerance) {
    if (isnan(want)) return isnan(got);
    if (want == 0) return got == 0 && signbit(got) == signbit(want);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= tolerance * fabs(want);
}

static void expect(tp_tensor_t *tensor, tp_dtype_t dtype, tp_shape_t shape, const double *want,
                   int64_t count, double tolerance, const char *what) {
    assert_tensor_shape(tensor, shape);
    double got[16];
    assert_true(count <= 16);
    read_back(tensor, dtype, got, count);
    for (int64_t i = 0; i < count; i++)
        if (!same_value(got[i], want[i], tolerance))
            fail_msg("%s on %s, element %lld: got %.17g, wanted %.17g", what,
                     tp_dtype_name(dtype), (long long)i, got[i], want[i]);
}

static void rsqrt_of_floats(void **state) {
    tp_context_t *c = *state;
    const double x[] = {4, 0.25, 2, 0, -0.0, -1, INFINITY, NAN};
    const double want[] = {0.5, 2, 0.70710678118654752, INFINITY, -INFINITY, NAN, 0, NAN};
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t d = 0; d < COUNT_OF(dtypes); d++) {
        tp_tensor_t *in = tensor_of_doubles(c, dtypes[d], TP_SHAPE(2, 4), x), *out = NULL;
        assert_ok(tp_rsqrt(c, in, &out));
        /* Two roundings in float64 (the root, then the quotient): within 2 ulp. */
        expect(out, dtypes[d], TP_SHAPE(2, 4), want, 8, dtypes[d] == TP_FLOAT32 ? 1e-7 : 3e-16,
               "Rsqrt");
        tp_tensor_release(in);
        tp_tensor_release(out);
    }
    /* Integers have no square root to invert: refused when the op is checked. */
    tp_tensor_t *integers = tensor_of_doubles(c, TP_INT32, TP_SHAPE(2), (const double[]){1, 4}),
                *out = NULL;
    assert_error(tp_rsqrt(c, integers, &out), TP_INVALID_ARGUMENT, "Rsqrt");
    assert_null(out);
    tp_tensor_release(integers);
}

static void sign_of_every_number_dtype(void **state) {
    tp_context_t *c = *state;
    const double x[] = {-3.5, -0.0, 0, 2, INFINITY, NAN};
    const double want[] = {-1, -0.0, 0, 1, 1, NAN};
    const tp_dtype_t floats[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t d = 0; d < COUNT_OF(floats); d++) {
        tp_tensor_t *in = tensor_of_doubles(c, floats[d], TP_SHAPE(6), x), *out = NULL;
        assert_ok(tp_sign(c, in, &out));
        expect(out, floats[d], TP_SHAPE(6), want, 6, 0, "Sign");
        tp_tensor_release(in);
        tp_tensor_release(out);
    }
    const double integers[] = {-7, 0, 5, -2147483648.0};
    const double integer_signs[] = {-1, 0, 1, -1};
    const tp_dtype_t integer_dtypes[] = {TP_INT32, TP_INT64};
    for (size_t d = 0; d < COUNT_OF(integer_dtypes); d++) {
        tp_tensor_t *in = tensor_of_doubles(c, integer_dtypes[d], TP_SHAPE(2, 2), integers),
                    *out = NULL;
        assert_ok(tp_sign(c, in, &out));
        expect(out, integer_dtypes[d], TP_SHAPE(2, 2), integer_signs, 4, 0, "Sign");
        tp_tensor_release(in);
        tp_tensor_release(out);
    }
}

/* x = [[4, -2, 7], [1, 9, -5]]. */
static void min_over_each_axis(void **state) {
    tp_context_t *c = *state;
    const double x[] = {4, -2, 7, 1, 9, -5};
    const int64_t zero = 0, minus_one = -1;
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64, TP_INT32, TP_INT64};
    for (size_t d = 0; d < COUNT_OF(dtypes); d++) {
        tp_tensor_t *in = tensor_of_doubles(c, dtypes[d], TP_SHAPE(2, 3), x), *out = NULL;
        assert_ok(tp_min(c, in, NULL, 0, false, &out));
        expect(out, dtypes[d], TP_SCALAR_SHAPE, (const double[]){-5}, 1, 0, "Min");
        tp_tensor_release(out);
        assert_ok(tp_min(c, in, &zero, 1, false, &out));
        expect(out, dtypes[d], TP_SHAPE(3), (const double[]){1, -2, -5}, 3, 0, "Min axis 0");
        tp_tensor_release(out);
        assert_ok(tp_min(c, in, &minus_one, 1, true, &out));
        expect(out, dtypes[d], TP_SHAPE(2, 1), (const double[]){-2, -5}, 2, 0, "Min axis -1");
        tp_tensor_release(out);
        tp_tensor_release(in);
    }
}

/* Min starts from the largest value, not from 0; a NaN wins; nothing gives +inf. */
static void min_starts_from_the_largest_value(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *in = tensor_of_doubles(c, TP_INT32, TP_SHAPE(3), (const double[]){5, 2, 9}),
                *out = NULL;
    assert_ok(tp_min(c, in, NULL, 0, false, &out));
    expect(out, TP_INT32, TP_SCALAR_SHAPE, (const double[]){2}, 1, 0, "Min of positives");
    tp_tensor_release(in);
    tp_tensor_release(out);
    /* int64 compared as integers: 2^62 + 1 and 2^62 are one double. */
    const int64_t big[3] = {(INT64_C(1) << 62) + 1, INT64_C(1) << 62, (INT64_C(1) << 62) + 2};
    assert_ok(tp_tensor_create(c, TP_INT64, TP_SHAPE(3), big, sizeof big, &in));
    assert_ok(tp_min(c, in, NULL, 0, false, &out));
    int64_t smallest = 0;
    assert_ok(tp_tensor_read(out, &smallest, sizeof smallest));
    assert_true(smallest == INT64_C(1) << 62);
    tp_tensor_release(in);
    tp_tensor_release(out);
    in = tensor_of_doubles(c, TP_FLOAT64, TP_SHAPE(2, 3), (const double[]){3, NAN, 1, 2, 8, 6});
    const int64_t one = 1;
    assert_ok(tp_min(c, in, &one, 1, false, &out));
    expect(out, TP_FLOAT64, TP_SHAPE(2), (const double[]){NAN, 2}, 2, 0, "Min with a NaN");
    tp_tensor_release(in);
    tp_tensor_release(out);
    in = tensor_of_doubles(c, TP_FLOAT32, TP_SHAPE(0, 2), NULL);
    const int64_t zero = 0;
    assert_ok(tp_min(c, in, &zero, 1, false, &out));
    expect(out, TP_FLOAT32, TP_SHAPE(2), (const double[]){INFINITY, INFINITY}, 2, 0,
           "Min over nothing");
    tp_tensor_release(in);
    tp_tensor_release(out);
}

static void min_refuses_bad_axes_and_bools(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *in =
        tensor_of_doubles(c, TP_FLOAT32, TP_SHAPE(2, 3), (const double[]){1, 2, 3, 4, 5, 6});
    tp_tensor_t *out = NULL;
    const int64_t two = 2, repeated[] = {0, -2};
    assert_error(tp_min(c, in, &two, 1, false, &out), TP_INVALID_ARGUMENT,
                 "Min: axis 2 is out of range for a tensor of rank 2");
    assert_null(out);
    assert_error(tp_min(c, in, repeated, 2, false, &out), TP_INVALID_ARGUMENT,
                 "Min: axis -2 is given twice");
    assert_null(out);
    tp_tensor_release(in);
    bool flags[2] = {true, false};
    tp_tensor_t *bools = NULL;
    assert_ok(tp_tensor_create(c, TP_BOOL, TP_SHAPE(2), flags, sizeof flags, &bools));
    assert_error(tp_min(c, bools, NULL, 0, false, &out), TP_INVALID_ARGUMENT,
                 "Min does not support bool");
    assert_null(out);
    tp_tensor_release(bools);
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, cpu_context_setup, cpu_context_teardown)
    const struct CMUnitTest tests[] = {
        TEST(rsqrt_of_floats),
        TEST(sign_of_every_number_dtype),
        TEST(min_over_each_axis),
        TEST(min_starts_from_the_largest_value),
        TEST(min_refuses_bad_axes_and_bools),
    };
#undef TEST
    return cmocka_run_group_tests(tests, NULL, NULL);
}
