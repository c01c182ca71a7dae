/* SPDX-License-Identifier: Apache-2.0 */
/* The built-in ops on the CPU: values, shapes and dtypes of every op checked against values
 * computed by hand; NumPy broadcasting; reductions; the layout ops; the random ops; the
 * multi-threaded paths; and calls that tp_execute must refuse without touching the output. */
#include "cpu_fixture.h"
#include "base/dtype.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context/context.h"
#include "device/physical_device.h"
#include "op/op.h"

/* ---- Fixture --------------------------------------------------------------------------------- */

/* What the check in progress is about, for failure messages in table-driven tests. */
static char label[160];

__attribute__((format(printf, 1, 2))) static void describe(const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(label, sizeof label, format, args);
    va_end(args);
}

/* assert_ok that also says which case of a table failed. */
#define assert_ok_labelled(expr)                                                               \
    do {                                                                                       \
        tp_status_t *labelled_status_ = (expr);                                                \
        if (labelled_status_ != NULL) print_error("in %s:\n", label);                         \
        assert_ok(labelled_status_);                                                           \
    } while (0)

static int setup(void **state) {
    describe("%s", "tensor");
    return cpu_context_setup(state);
}



/* ---- Making tensors -------------------------------------------------------------------------- */

typedef tp_status_t *(*unary_fn)(tp_context_t *, tp_tensor_t *, tp_tensor_t **);
typedef tp_status_t *(*binary_fn)(tp_context_t *, tp_tensor_t *, tp_tensor_t *, tp_tensor_t **);
typedef tp_status_t *(*reduce_fn)(tp_context_t *, tp_tensor_t *, const int64_t *, size_t, bool,
                                  tp_tensor_t **);

/* F32(c, TP_SHAPE(2, 3), 1, 2, 3, 4, 5, 6): a tensor of those values. tp_tensor_create checks
 * that the number of values matches the shape. */
#define F32(c, shape, ...) TENSOR_OF(c, TP_FLOAT32, float, shape, __VA_ARGS__)
#define F64(c, shape, ...) TENSOR_OF(c, TP_FLOAT64, double, shape, __VA_ARGS__)
#define I32(c, shape, ...) TENSOR_OF(c, TP_INT32, int32_t, shape, __VA_ARGS__)
#define I64(c, shape, ...) TENSOR_OF(c, TP_INT64, int64_t, shape, __VA_ARGS__)
#define BOOLS(c, shape, ...) TENSOR_OF(c, TP_BOOL, bool, shape, __VA_ARGS__)

static int64_t load_integer(const void *data, tp_dtype_t dtype, int64_t i) {
    switch (dtype) {
    case TP_INT32: return ((const int32_t *)data)[i];
    case TP_INT64: return ((const int64_t *)data)[i];
    case TP_UINT8: return ((const uint8_t *)data)[i];
    case TP_BOOL: return ((const bool *)data)[i];
    default: fail_msg("dtype %d is not an integer type", (int)dtype);
    }
    return 0;
}

/* ---- Reading tensors ------------------------------------------------------------------------- */

enum { MAX_SNAPSHOT = 64 };

/* What a small output holds, taken before the tensor is released so that a failed check
 * leaks nothing. */
typedef struct {
    tp_dtype_t dtype;
    tp_shape_t shape;
    size_t count;
    double values[MAX_SNAPSHOT];
    int64_t integers[MAX_SNAPSHOT]; /* for integer and bool tensors, exactly */
} snapshot_t;

static bool is_float(tp_dtype_t dtype) { return dtype == TP_FLOAT32 || dtype == TP_FLOAT64; }

/* Reads `tensor` into *out and releases it. */
static void take_snapshot(tp_tensor_t *tensor, snapshot_t *out) {
    assert_non_null(tensor);
    out->dtype = tp_tensor_dtype(tensor);
    out->shape = tp_tensor_shape(tensor);
    out->count = (size_t)tp_tensor_num_elements(tensor);
    unsigned char raw[MAX_SNAPSHOT * sizeof(double)];
    size_t size = tp_tensor_byte_size(tensor);
    tp_status_t *status = out->count <= MAX_SNAPSHOT ? tp_tensor_read(tensor, raw, size) : NULL;
    tp_tensor_release(tensor);
    assert_true(out->count <= MAX_SNAPSHOT);
    assert_ok(status);
    for (size_t i = 0; i < out->count; i++) {
        out->values[i] = tp_dtype_load_double(raw, out->dtype, (int64_t)i);
        out->integers[i] = is_float(out->dtype) ? 0 : load_integer(raw, out->dtype, (int64_t)i);
    }
}

static void assert_shape(tp_shape_t got, tp_shape_t wanted) {
    if (!same_shape(got, wanted)) {
        char g[128], w[128];
        tp_shape_format(&got, g, sizeof g);
        tp_shape_format(&wanted, w, sizeof w);
        fail_msg("%s: shape %s, wanted %s", label, g, w);
    }
}

static void assert_header(const snapshot_t *got, tp_dtype_t dtype, tp_shape_t shape,
                          size_t expected_count) {
    if (got->dtype != dtype)
        fail_msg("%s: dtype %s, wanted %s", label, tp_dtype_name(got->dtype),
                 tp_dtype_name(dtype));
    assert_shape(got->shape, shape);
    if (got->count != expected_count)
        fail_msg("%s: %zu elements, wanted %zu", label, got->count, expected_count);
}

/* rel_tol 0: exactly equal. NaN matches NaN; infinities must be equal. */
static bool close_enough(double got, double wanted, double rel_tol) {
    if (isnan(wanted)) return isnan(got);
    if (rel_tol == 0 || isinf(wanted)) return got == wanted;
    return fabs(got - wanted) <= rel_tol * fabs(wanted);
}

static void assert_doubles(const double *got, const double *wanted, size_t count,
                           double rel_tol) {
    for (size_t i = 0; i < count; i++)
        if (!close_enough(got[i], wanted[i], rel_tol))
            fail_msg("%s: element %zu is %.17g, wanted %.17g (relative tolerance %g)", label, i,
                     got[i], wanted[i], rel_tol);
}

/* Checks `tensor`'s dtype, shape and values, and releases it. */
static void expect_values(tp_tensor_t *tensor, tp_dtype_t dtype, tp_shape_t shape,
                          const double *wanted, size_t count, double rel_tol) {
    snapshot_t got;
    take_snapshot(tensor, &got);
    assert_header(&got, dtype, shape, count);
    assert_doubles(got.values, wanted, count, rel_tol);
}

/* The same for integer and bool tensors, compared as int64 (exact beyond 2^53). */
static void expect_integers(tp_tensor_t *tensor, tp_dtype_t dtype, tp_shape_t shape,
                            const int64_t *wanted, size_t count) {
    snapshot_t got;
    take_snapshot(tensor, &got);
    assert_header(&got, dtype, shape, count);
    for (size_t i = 0; i < count; i++)
        if (got.integers[i] != wanted[i])
            fail_msg("%s: element %zu is %lld, wanted %lld", label, i,
                     (long long)got.integers[i], (long long)wanted[i]);
}

#define DOUBLES(...) ((const double[]){__VA_ARGS__})
#define INTEGERS(...) ((const int64_t[]){__VA_ARGS__})
/* expect_exact(t, TP_FLOAT32, TP_SHAPE(2), 1, 2): the values, exactly; releases t. */
#define expect_exact(t, dtype, shape, ...)                                                     \
    expect_values((t), (dtype), (shape), DOUBLES(__VA_ARGS__), COUNT_OF(DOUBLES(__VA_ARGS__)), 0)
#define expect_near(t, dtype, shape, rel_tol, ...)                                             \
    expect_values((t), (dtype), (shape), DOUBLES(__VA_ARGS__), COUNT_OF(DOUBLES(__VA_ARGS__)), \
                  (rel_tol))
#define expect_ints(t, dtype, shape, ...)                                                      \
    expect_integers((t), (dtype), (shape), INTEGERS(__VA_ARGS__),                              \
                    COUNT_OF(INTEGERS(__VA_ARGS__)))

/* Tolerances: float32 transcendental results are rounded from double, float64 ones come from
 * libm. */
static const double F32_TOL = 1e-6, F64_TOL = 1e-14;

/* ---- Unary ops ------------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    unary_fn fn;
    int count;
    double input[6];
    double expected[6];
    bool transcendental;
} unary_case_t;

static const unary_case_t float_unary_cases[] = {
    {"Relu", tp_relu, 5, {-2, -0.5, 0, 0.5, 3}, {0, 0, 0, 0.5, 3}, false},
    {"Neg", tp_neg, 5, {-2, -0.5, 0, 0.5, 3}, {2, 0.5, 0, -0.5, -3}, false},
    {"Abs", tp_abs, 5, {-2, -0.5, 0, 0.5, 3}, {2, 0.5, 0, 0.5, 3}, false},
    {"Square", tp_square, 5, {-2, -0.5, 0, 0.5, 3}, {4, 0.25, 0, 0.25, 9}, false},
    {"Sigmoid", tp_sigmoid, 4, {-1, 0, 1, 2},
     {0.2689414213699951, 0.5, 0.7310585786300049, 0.8807970779778823}, true},
    {"Tanh", tp_tanh, 4, {-1, 0, 0.5, 2},
     {-0.7615941559557649, 0, 0.46211715726000974, 0.9640275800758169}, true},
    {"Exp", tp_exp, 4, {-1, 0, 1, 2},
     {0.36787944117144233, 1, 2.718281828459045, 7.38905609893065}, true},
    {"Log", tp_log, 5, {0.5, 1, 2, 10, 0},
     {-0.6931471805599453, 0, 0.6931471805599453, 2.302585092994046, -INFINITY}, true},
    {"Sqrt", tp_sqrt, 5, {0, 0.25, 2, 9, -1}, {0, 0.5, 1.4142135623730951, 3, NAN}, true},
};

static void run_unary_case(tp_context_t *c, const unary_case_t *test, tp_dtype_t dtype) {
    tp_shape_t shape = TP_SHAPE(test->count);
    tp_tensor_t *x = tensor_of_doubles(c, dtype, shape, test->input);
    tp_tensor_t *y = NULL;
    tp_status_t *status = test->fn(c, x, &y);
    tp_tensor_release(x);
    describe("%s on %s", test->name, tp_dtype_name(dtype));
    assert_ok_labelled(status);
    double tolerance = !test->transcendental ? 0 : dtype == TP_FLOAT32 ? F32_TOL : F64_TOL;
    snapshot_t got;
    take_snapshot(y, &got);
    assert_header(&got, dtype, shape, (size_t)test->count);
    for (int i = 0; i < test->count; i++)
        if (!close_enough(got.values[i], test->expected[i], tolerance))
            fail_msg("%s(%g) on %s is %.17g, wanted %.17g", test->name, test->input[i],
                     tp_dtype_name(dtype), got.values[i], test->expected[i]);
}

static void unary_ops_on_floats_match_hand_computed_values(void **state) {
    tp_context_t *c = *state;
    for (size_t i = 0; i < COUNT_OF(float_unary_cases); i++) {
        run_unary_case(c, &float_unary_cases[i], TP_FLOAT32);
        run_unary_case(c, &float_unary_cases[i], TP_FLOAT64);
    }
}

static void unary_ops_keep_the_shape_of_a_matrix(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F32(c, TP_SHAPE(2, 3), -1, 2, -3, 4, -5, 6), *y = NULL;
    assert_ok(tp_relu(c, x, &y));
    expect_exact(y, TP_FLOAT32, TP_SHAPE(2, 3), 0, 2, 0, 4, 0, 6);
    assert_ok(tp_square(c, x, &y));
    expect_exact(y, TP_FLOAT32, TP_SHAPE(2, 3), 1, 4, 9, 16, 25, 36);
    tp_tensor_release(x);
}

typedef struct {
    const char *name;
    unary_fn fn;
    int64_t expected32[5]; /* for the int32 inputs below */
    int64_t expected64[5]; /* for the int64 inputs below */
} integer_unary_case_t;

static void unary_ops_on_integers_wrap_like_the_hardware(void **state) {
    tp_context_t *c = *state;
    /* Square wraps mod 2^32 or 2^64: the square of 2^31 - 1 (2^63 - 1) is 1 modulo 2^32 (2^64)
     * and the square of the minimum is 0. */
    const integer_unary_case_t cases[] = {
        {"Relu", tp_relu, {0, 0, 5, 0, INT32_MAX}, {0, 0, 5, 0, INT64_MAX}},
        {"Neg", tp_neg, {3, 0, -5, INT32_MIN, -INT32_MAX}, {3, 0, -5, INT64_MIN, -INT64_MAX}},
        {"Abs", tp_abs, {3, 0, 5, INT32_MIN, INT32_MAX}, {3, 0, 5, INT64_MIN, INT64_MAX}},
        {"Square", tp_square, {9, 0, 25, 0, 1}, {9, 0, 25, 0, 1}},
    };
    for (size_t i = 0; i < COUNT_OF(cases); i++) {
        tp_tensor_t *x32 = I32(c, TP_SHAPE(5), -3, 0, 5, INT32_MIN, INT32_MAX);
        tp_tensor_t *x64 = I64(c, TP_SHAPE(5), -3, 0, 5, INT64_MIN, INT64_MAX);
        tp_tensor_t *y32 = NULL, *y64 = NULL;
        tp_status_t *s32 = cases[i].fn(c, x32, &y32), *s64 = cases[i].fn(c, x64, &y64);
        tp_tensor_release(x32);
        tp_tensor_release(x64);
        describe("%s on int32", cases[i].name);
        assert_ok_labelled(s32);
        describe("%s on int64", cases[i].name);
        assert_ok_labelled(s64);
        describe("%s on int32", cases[i].name);
        expect_integers(y32, TP_INT32, TP_SHAPE(5), cases[i].expected32, 5);
        describe("%s on int64", cases[i].name);
        expect_integers(y64, TP_INT64, TP_SHAPE(5), cases[i].expected64, 5);
    }
}

static void neg_and_abs_of_int32_min_wrap_to_int32_min(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = I32(c, TP_SCALAR_SHAPE, INT32_MIN), *y = NULL;
    assert_ok(tp_neg(c, x, &y));
    expect_ints(y, TP_INT32, TP_SCALAR_SHAPE, INT32_MIN);
    assert_ok(tp_abs(c, x, &y));
    expect_ints(y, TP_INT32, TP_SCALAR_SHAPE, INT32_MIN);
    tp_tensor_release(x);
}

static void float_only_unary_ops_refuse_integers(void **state) {
    tp_context_t *c = *state;
    const unary_fn fns[] = {tp_sigmoid, tp_tanh, tp_exp, tp_log, tp_sqrt, tp_softmax};
    const char *names[] = {"Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Softmax"};
    tp_tensor_t *x = I32(c, TP_SHAPE(2), 1, 2), *y;
    char wanted[64];
    for (size_t i = 0; i < COUNT_OF(fns); i++) {
        snprintf(wanted, sizeof wanted, "%s does not support int32", names[i]);
        assert_op_fails(y, fns[i](c, x, &y), TP_INVALID_ARGUMENT, wanted);
    }
    tp_tensor_release(x);
}

/* ---- Identity, ZerosLike, OnesLike, Fill ----------------------------------------------------- */

static void identity_copies_values_of_every_dtype(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *inputs[] = {
        F32(c, TP_SHAPE(2, 2), 1.5f, -2, 0, 7), F64(c, TP_SHAPE(4), 0.1, -1e300, 3, 4),
        I32(c, TP_SHAPE(4), INT32_MIN, -1, 0, INT32_MAX),
        I64(c, TP_SHAPE(1, 4), INT64_MIN, -1, 0, INT64_MAX),
        BOOLS(c, TP_SHAPE(4), true, false, false, true)};
    for (size_t i = 0; i < COUNT_OF(inputs); i++) {
        tp_tensor_t *y = NULL;
        assert_ok(tp_identity(c, inputs[i], &y));
        assert_ptr_not_equal(y, inputs[i]);
        assert_int_equal(tp_tensor_dtype(y), tp_tensor_dtype(inputs[i]));
        assert_shape(tp_tensor_shape(y), tp_tensor_shape(inputs[i]));
        unsigned char a[64], b[64];
        size_t size = tp_tensor_byte_size(inputs[i]);
        assert_int_equal(tp_tensor_byte_size(y), size);
        assert_ok(tp_tensor_read(inputs[i], a, size));
        assert_ok(tp_tensor_read(y, b, size));
        tp_tensor_release(y);
        assert_memory_equal(a, b, size);
    }
    for (size_t i = 0; i < COUNT_OF(inputs); i++) tp_tensor_release(inputs[i]);
}

static void zeros_like_and_ones_like_keep_dtype_and_shape(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *f = F32(c, TP_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tp_tensor_t *i = I32(c, TP_SHAPE(3), -1, 2, 3);
    tp_tensor_t *b = BOOLS(c, TP_SHAPE(2, 1), true, false);
    tp_tensor_t *y = NULL;
    assert_ok(tp_zeros_like(c, f, &y));
    expect_exact(y, TP_FLOAT32, TP_SHAPE(2, 3), 0, 0, 0, 0, 0, 0);
    assert_ok(tp_ones_like(c, f, &y));
    expect_exact(y, TP_FLOAT32, TP_SHAPE(2, 3), 1, 1, 1, 1, 1, 1);
    assert_ok(tp_zeros_like(c, i, &y));
    expect_ints(y, TP_INT32, TP_SHAPE(3), 0, 0, 0);
    assert_ok(tp_ones_like(c, i, &y));
    expect_ints(y, TP_INT32, TP_SHAPE(3), 1, 1, 1);
    assert_ok(tp_zeros_like(c, b, &y));
    expect_ints(y, TP_BOOL, TP_SHAPE(2, 1), false, false);
    assert_ok(tp_ones_like(c, b, &y));
    expect_ints(y, TP_BOOL, TP_SHAPE(2, 1), true, true);
    tp_tensor_release(f);
    tp_tensor_release(i);
    tp_tensor_release(b);
}

static void fill_repeats_a_scalar_over_the_shape_attribute(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *f = F32(c, TP_SCALAR_SHAPE, 2.5f), *i = I32(c, TP_SCALAR_SHAPE, -7);
    tp_tensor_t *b = BOOLS(c, TP_SCALAR_SHAPE, true), *y = NULL;
    assert_ok(tp_fill(c, TP_SHAPE(2, 3), f, &y));
    expect_exact(y, TP_FLOAT32, TP_SHAPE(2, 3), 2.5, 2.5, 2.5, 2.5, 2.5, 2.5);
    assert_ok(tp_fill(c, TP_SHAPE(4), i, &y));
    expect_ints(y, TP_INT32, TP_SHAPE(4), -7, -7, -7, -7);
    assert_ok(tp_fill(c, TP_SHAPE(1, 2), b, &y));
    expect_ints(y, TP_BOOL, TP_SHAPE(1, 2), true, true);
    assert_ok(tp_fill(c, TP_SCALAR_SHAPE, f, &y));
    expect_exact(y, TP_FLOAT32, TP_SCALAR_SHAPE, 2.5);
    assert_ok(tp_fill(c, TP_SHAPE(0, 3), f, &y));
    assert_int_equal(tp_tensor_num_elements(y), 0);
    assert_shape(tp_tensor_shape(y), TP_SHAPE(0, 3));
    tp_tensor_release(y);
    tp_tensor_release(f);
    tp_tensor_release(i);
    tp_tensor_release(b);
}

static void fill_refuses_a_non_scalar_value_and_a_negative_dimension(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *v = F32(c, TP_SHAPE(2), 1, 2), *s = F32(c, TP_SCALAR_SHAPE, 1), *y;
    assert_op_fails(y, tp_fill(c, TP_SHAPE(2, 2), v, &y), TP_INVALID_ARGUMENT,
                    "Fill: value must be a scalar, not [2]");
    assert_op_fails(y, tp_fill(c, TP_SHAPE(2, -1), s, &y), TP_INVALID_ARGUMENT,
                    "dimension 1 is negative");
    tp_tensor_release(v);
    tp_tensor_release(s);
}

/* ---- Cast ------------------------------------------------------------------------------------ */

static void cast_float32_to_int32_truncates_toward_zero_and_saturates(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F32(c, TP_SHAPE(9), 3.7f, -3.7f, 1e10f, -1e10f, NAN, 0.0f, INFINITY,
                         -INFINITY, 0.999f),
                *y = NULL;
    assert_ok(tp_cast(c, x, TP_INT32, &y));
    expect_ints(y, TP_INT32, TP_SHAPE(9), 3, -3, INT32_MAX, INT32_MIN, 0, 0, INT32_MAX,
                INT32_MIN, 0);
    tp_tensor_release(x);
}

static void cast_int32_to_float64_is_exact(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = I32(c, TP_SHAPE(2, 2), INT32_MIN, -1, 0, INT32_MAX), *y = NULL;
    assert_ok(tp_cast(c, x, TP_FLOAT64, &y));
    expect_exact(y, TP_FLOAT64, TP_SHAPE(2, 2), -2147483648.0, -1, 0, 2147483647.0);
    tp_tensor_release(x);
}

static void cast_to_and_from_bool(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *f = F32(c, TP_SHAPE(5), 0.0f, -0.0f, 0.5f, -2.0f, NAN), *y = NULL;
    assert_ok(tp_cast(c, f, TP_BOOL, &y));
    expect_ints(y, TP_BOOL, TP_SHAPE(5), false, false, true, true, true);
    tp_tensor_t *b = BOOLS(c, TP_SHAPE(3), true, false, true);
    assert_ok(tp_cast(c, b, TP_FLOAT32, &y));
    expect_exact(y, TP_FLOAT32, TP_SHAPE(3), 1, 0, 1);
    tp_tensor_release(f);
    tp_tensor_release(b);
}

static void cast_int64_to_uint8_wraps_mod_256(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = I64(c, TP_SHAPE(7), 0, 255, 256, 300, -1, 1000, INT64_MIN), *y = NULL;
    assert_ok(tp_cast(c, x, TP_UINT8, &y));
    expect_ints(y, TP_UINT8, TP_SHAPE(7), 0, 255, 0, 44, 255, 232, 0);
    tp_tensor_release(x);
}

static void cast_float_to_uint8_saturates(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F64(c, TP_SHAPE(5), -5.5, 0.9, 254.9, 300.0, NAN), *y = NULL;
    assert_ok(tp_cast(c, x, TP_UINT8, &y));
    expect_ints(y, TP_UINT8, TP_SHAPE(5), 0, 0, 254, 255, 0);
    tp_tensor_release(x);
}

/* A saturating cast clamps to the largest int64, as float32 -> int32 clamps to INT32_MAX. */
static void cast_float64_to_int64_saturates_at_int64_max(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F64(c, TP_SHAPE(4), 1e30, -1e30, 9223372036854775808.0, -2.5), *y = NULL;
    assert_ok(tp_cast(c, x, TP_INT64, &y));
    tp_tensor_release(x);
    describe("Cast float64 -> int64");
    expect_ints(y, TP_INT64, TP_SHAPE(4), INT64_MAX, INT64_MIN, INT64_MAX, -2);
}

/* 2^60 + 2^36 + 1 lies just above the midpoint of the float32 neighbours 2^60 and 2^60 + 2^37,
 * so it rounds up, as C's own conversion does. Rounding first to double loses the final 1 and
 * then ties to the even 2^60. */
static void cast_int64_to_float32_rounds_once(void **state) {
    tp_context_t *c = *state;
    const int64_t above_midpoint = (INT64_C(1) << 60) + (INT64_C(1) << 36) + 1;
    tp_tensor_t *x = I64(c, TP_SHAPE(3), above_midpoint, -above_midpoint, 16777217), *y = NULL;
    assert_ok(tp_cast(c, x, TP_FLOAT32, &y));
    tp_tensor_release(x);
    describe("Cast int64 -> float32");
    expect_exact(y, TP_FLOAT32, TP_SHAPE(3), 1152921642045800448.0, -1152921642045800448.0,
                 16777216.0);
}

static void cast_needs_its_dst_type(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F32(c, TP_SHAPE(1), 1), *y;
    assert_op_fails(y, tp_execute(c, "Cast", &x, 1, NULL, 0, &y, 1), TP_INVALID_ARGUMENT,
                    "Cast: attribute 'DstT' must be given");
    tp_attr_t wrong_src[] = {TP_ATTR_DTYPE_VALUE("SrcT", TP_INT32),
                             TP_ATTR_DTYPE_VALUE("DstT", TP_FLOAT64)};
    assert_op_fails(y, tp_execute(c, "Cast", &x, 1, wrong_src, 2, &y, 1), TP_INVALID_ARGUMENT,
                    "Cast: input 0 ('x') is float32, but SrcT is int32");
    tp_tensor_release(x);
}

/* ---- Broadcasting binary arithmetic ---------------------------------------------------------- */

typedef struct {
    tp_shape_t x_shape, y_shape, z_shape;
    double x[12], y[12];
    double add[24], sub[24], mul[24], div[24];
} broadcast_case_t;

static const binary_fn binary_fns[] = {tp_add, tp_sub, tp_mul, tp_div};
static const char *const binary_names[] = {"Add", "Sub", "Mul", "Div"};

static void run_broadcast_case(tp_context_t *c, const broadcast_case_t *test, tp_dtype_t dtype) {
    const double *expected[] = {test->add, test->sub, test->mul, test->div};
    size_t count = (size_t)element_count(test->z_shape);
    for (size_t op = 0; op < COUNT_OF(binary_fns); op++) {
        tp_tensor_t *x = tensor_of_doubles(c, dtype, test->x_shape, test->x);
        tp_tensor_t *y = tensor_of_doubles(c, dtype, test->y_shape, test->y);
        tp_tensor_t *z = NULL;
        tp_status_t *status = binary_fns[op](c, x, y, &z);
        tp_tensor_release(x);
        tp_tensor_release(y);
        char xs[64], ys[64];
        tp_shape_format(&test->x_shape, xs, sizeof xs);
        tp_shape_format(&test->y_shape, ys, sizeof ys);
        describe("%s of %s %s and %s", binary_names[op], tp_dtype_name(dtype), xs, ys);
        assert_ok_labelled(status);
        expect_values(z, dtype, test->z_shape, expected[op], count, 0);
    }
}

static const broadcast_case_t broadcast_cases[] = {
    /* Same shape. */
    {TP_SHAPE(2, 2), TP_SHAPE(2, 2), TP_SHAPE(2, 2), {1, 6, 3, 4}, {2, 4, 8, 0.5},
     {3, 10, 11, 4.5}, {-1, 2, -5, 3.5}, {2, 24, 24, 2}, {0.5, 1.5, 0.375, 8}},
    /* A scalar with a matrix, both ways round. */
    {TP_SCALAR_SHAPE, TP_SHAPE(2, 3), TP_SHAPE(2, 3), {2}, {1, 2, 4, 8, 16, -2},
     {3, 4, 6, 10, 18, 0}, {1, 0, -2, -6, -14, 4}, {2, 4, 8, 16, 32, -4},
     {2, 1, 0.5, 0.25, 0.125, -1}},
    {TP_SHAPE(2, 3), TP_SCALAR_SHAPE, TP_SHAPE(2, 3), {1, 2, 4, 8, 16, -2}, {2},
     {3, 4, 6, 10, 18, 0}, {-1, 0, 2, 6, 14, -4}, {2, 4, 8, 16, 32, -4},
     {0.5, 1, 2, 4, 8, -1}},
    /* (2, 3) with (3,). */
    {TP_SHAPE(2, 3), TP_SHAPE(3), TP_SHAPE(2, 3), {1, 2, 3, 4, 5, 6}, {1, 2, 4},
     {2, 4, 7, 5, 7, 10}, {0, 0, -1, 3, 3, 2}, {1, 4, 12, 4, 10, 24},
     {1, 1, 0.75, 4, 2.5, 1.5}},
    /* (2, 1) with (1, 3) makes (2, 3). */
    {TP_SHAPE(2, 1), TP_SHAPE(1, 3), TP_SHAPE(2, 3), {1, 2}, {1, 2, 4},
     {2, 3, 5, 3, 4, 6}, {0, -1, -3, 1, 0, -2}, {1, 2, 4, 2, 4, 8},
     {1, 0.5, 0.25, 2, 1, 0.5}},
    /* (4, 1, 3) with (2, 1) makes (4, 2, 3): out[i][j][k] = x[i][0][k] op y[j][0]. */
    {TP_SHAPE(4, 1, 3), TP_SHAPE(2, 1), TP_SHAPE(4, 2, 3),
     {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 4},
     {2, 3, 4, 4, 5, 6, 5, 6, 7, 7, 8, 9, 8, 9, 10, 10, 11, 12, 11, 12, 13, 13, 14, 15},
     {-2, -1, 0, -4, -3, -2, 1, 2, 3, -1, 0, 1, 4, 5, 6, 2, 3, 4, 7, 8, 9, 5, 6, 7},
     {0, 2, 4, 0, 4, 8, 6, 8, 10, 12, 16, 20, 12, 14, 16, 24, 28, 32, 18, 20, 22, 36, 40, 44},
     {0, 0.5, 1, 0, 0.25, 0.5, 1.5, 2, 2.5, 0.75, 1, 1.25, 3, 3.5, 4, 1.5, 1.75, 2, 4.5, 5,
      5.5, 2.25, 2.5, 2.75}},
};

static void add_sub_mul_div_broadcast_like_numpy(void **state) {
    tp_context_t *c = *state;
    for (size_t i = 0; i < COUNT_OF(broadcast_cases); i++) {
        run_broadcast_case(c, &broadcast_cases[i], TP_FLOAT32);
        run_broadcast_case(c, &broadcast_cases[i], TP_FLOAT64);
    }
}

static void broadcasting_puts_the_smaller_rank_first_too(void **state) {
    tp_context_t *c = *state;
    /* (2, 1) - (4, 1, 3): out[i][j][k] = y[j] - x[i][k] with y = {100, 200}, x = 0..11. */
    tp_tensor_t *y = F32(c, TP_SHAPE(2, 1), 100, 200);
    tp_tensor_t *x = F32(c, TP_SHAPE(4, 1, 3), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), *z = NULL;
    assert_ok(tp_sub(c, y, x, &z));
    expect_exact(z, TP_FLOAT32, TP_SHAPE(4, 2, 3), 100, 99, 98, 200, 199, 198, 97, 96, 95, 197,
                 196, 195, 94, 93, 92, 194, 193, 192, 91, 90, 89, 191, 190, 189);
    assert_ok(tp_add(c, y, x, &z));
    expect_exact(z, TP_FLOAT32, TP_SHAPE(4, 2, 3), 100, 101, 102, 200, 201, 202, 103, 104, 105,
                 203, 204, 205, 106, 107, 108, 206, 207, 208, 109, 110, 111, 209, 210, 211);
    tp_tensor_release(x);
    tp_tensor_release(y);
}

static void incompatible_shapes_are_refused_by_every_binary_op(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F32(c, TP_SHAPE(2, 3), 1, 2, 3, 4, 5, 6), *y = F32(c, TP_SHAPE(2), 1, 2);
    tp_tensor_t *z;
    char wanted[96];
    for (size_t op = 0; op < COUNT_OF(binary_fns); op++) {
        snprintf(wanted, sizeof wanted, "%s: Incompatible shapes: [2,3] vs. [2]",
                 binary_names[op]);
        assert_op_fails(z, binary_fns[op](c, x, y, &z), TP_INVALID_ARGUMENT, wanted);
    }
    assert_op_fails(z, tp_add(c, y, x, &z), TP_INVALID_ARGUMENT,
                    "Incompatible shapes: [2] vs. [2,3]");
    tp_tensor_release(x);
    tp_tensor_release(y);
}

static void float_division_by_zero_gives_infinities_and_nan(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F32(c, TP_SHAPE(3), 1, -1, 0), *y = F32(c, TP_SHAPE(3), 0, 0, 0), *z = NULL;
    assert_ok(tp_div(c, x, y, &z));
    expect_exact(z, TP_FLOAT32, TP_SHAPE(3), INFINITY, -INFINITY, NAN);
    tp_tensor_release(x);
    tp_tensor_release(y);
}

static void integer_add_sub_mul_wrap(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = I32(c, TP_SHAPE(4), INT32_MAX, INT32_MIN, 65536, -7);
    tp_tensor_t *y = I32(c, TP_SHAPE(4), 1, -1, 65536, 3), *z = NULL;
    assert_ok(tp_add(c, x, y, &z));
    expect_ints(z, TP_INT32, TP_SHAPE(4), INT32_MIN, INT32_MAX, 131072, -4);
    assert_ok(tp_sub(c, x, y, &z));
    expect_ints(z, TP_INT32, TP_SHAPE(4), INT32_MAX - 1, INT32_MIN + 1, 0, -10);
    assert_ok(tp_mul(c, x, y, &z));
    expect_ints(z, TP_INT32, TP_SHAPE(4), INT32_MAX, INT32_MIN, 0, -21);
    tp_tensor_release(x);
    tp_tensor_release(y);

    x = I64(c, TP_SHAPE(2, 2), 1, 2, 3, INT64_MAX);
    y = I64(c, TP_SHAPE(2), 10, 1);
    assert_ok(tp_add(c, x, y, &z));
    expect_ints(z, TP_INT64, TP_SHAPE(2, 2), 11, 3, 13, INT64_MIN);
    tp_tensor_release(x);
    tp_tensor_release(y);
}

static void integer_division_truncates_toward_zero(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = I32(c, TP_SHAPE(7), 7, -7, 7, -7, 0, INT32_MIN, 6);
    tp_tensor_t *y = I32(c, TP_SHAPE(7), 2, 2, -2, -2, 5, -1, 3), *z = NULL;
    assert_ok(tp_div(c, x, y, &z));
    expect_ints(z, TP_INT32, TP_SHAPE(7), 3, -3, -3, 3, 0, INT32_MIN, 2);
    tp_tensor_release(x);
    tp_tensor_release(y);

    /* Broadcast over rows; INT64_MIN / -1 wraps to INT64_MIN. */
    x = I64(c, TP_SHAPE(2, 2), 7, -7, 9, INT64_MIN);
    y = I64(c, TP_SHAPE(2), 2, -1);
    assert_ok(tp_div(c, x, y, &z));
    expect_ints(z, TP_INT64, TP_SHAPE(2, 2), 3, 7, 4, INT64_MIN);
    tp_tensor_release(x);
    tp_tensor_release(y);
}

/* The CPU runs kernels as they are queued, so the error comes back from tp_div itself and no
 * output is made. */
static void integer_division_by_zero_fails_in_tp_div(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = I32(c, TP_SHAPE(3), 1, 2, 3), *y = I32(c, TP_SHAPE(3), 1, 0, 1);
    tp_tensor_t *zero = I64(c, TP_SCALAR_SHAPE, 0), *x64 = I64(c, TP_SHAPE(2), 5, 6), *z;
    assert_op_fails(z, tp_div(c, x, y, &z), TP_INVALID_ARGUMENT, "integer division by zero");
    assert_op_fails(z, tp_div(c, x64, zero, &z), TP_INVALID_ARGUMENT,
                    "integer division by zero");
    tp_tensor_release(x);
    tp_tensor_release(y);
    tp_tensor_release(zero);
    tp_tensor_release(x64);
}

/* ---- AddN and BiasAdd ------------------------------------------------------------------------ */

static void add_n_sums_its_inputs(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *in[] = {F32(c, TP_SHAPE(2, 2), 1, 2, 3, 4),
                         F32(c, TP_SHAPE(2, 2), 10, 20, 30, 40),
                         F32(c, TP_SHAPE(2, 2), 100, 200, 300, 400)};
    tp_tensor_t *y = NULL;
    assert_ok(tp_add_n(c, in, 3, &y));
    expect_exact(y, TP_FLOAT32, TP_SHAPE(2, 2), 111, 222, 333, 444);
    assert_ok(tp_add_n(c, in, 1, &y));
    expect_exact(y, TP_FLOAT32, TP_SHAPE(2, 2), 1, 2, 3, 4);
    /* The inputs are unchanged (AddN accumulates in its output). */
    expect_exact(tp_tensor_retain(in[0]), TP_FLOAT32, TP_SHAPE(2, 2), 1, 2, 3, 4);
    for (size_t i = 0; i < COUNT_OF(in); i++) tp_tensor_release(in[i]);

    /* More inputs than the executor keeps on its stack. */
    tp_tensor_t *many[10];
    for (int i = 0; i < 10; i++) many[i] = I32(c, TP_SHAPE(2), i, -i * 10);
    assert_ok(tp_add_n(c, many, 10, &y));
    expect_ints(y, TP_INT32, TP_SHAPE(2), 45, -450);
    for (int i = 0; i < 10; i++) tp_tensor_release(many[i]);
}

static void add_n_refuses_mismatched_or_missing_inputs(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *in[] = {F32(c, TP_SHAPE(2, 2), 1, 2, 3, 4), F32(c, TP_SHAPE(2, 2), 1, 2, 3, 4),
                         F32(c, TP_SHAPE(4), 1, 2, 3, 4), I32(c, TP_SHAPE(2, 2), 1, 2, 3, 4)};
    tp_tensor_t *y;
    assert_op_fails(y, tp_add_n(c, in, 3, &y), TP_INVALID_ARGUMENT,
                    "AddN: all inputs must have one shape; input 0 is [2,2], input 2 is [4]");
    tp_tensor_t *mixed[] = {in[0], in[3]};
    assert_op_fails(y, tp_add_n(c, mixed, 2, &y), TP_INVALID_ARGUMENT,
                    "AddN: input 1 ('inputs') is int32, but T is float32");
    assert_op_fails(y, tp_add_n(c, in, 0, &y), TP_INVALID_ARGUMENT,
                    "AddN: 'inputs' needs at least one tensor");
    for (size_t i = 0; i < COUNT_OF(in); i++) tp_tensor_release(in[i]);
}

static void bias_add_adds_along_the_last_dimension(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F32(c, TP_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tp_tensor_t *bias = F32(c, TP_SHAPE(3), 10, 20, 30), *y = NULL;
    assert_ok(tp_bias_add(c, x, bias, &y));
    expect_exact(y, TP_FLOAT32, TP_SHAPE(2, 3), 11, 22, 33, 14, 25, 36);
    tp_tensor_release(x);
    x = F32(c, TP_SHAPE(2, 2, 3), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
    assert_ok(tp_bias_add(c, x, bias, &y));
    expect_exact(y, TP_FLOAT32, TP_SHAPE(2, 2, 3), 10, 21, 32, 13, 24, 35, 16, 27, 38, 19, 30,
                 41);
    tp_tensor_release(x);
    tp_tensor_release(bias);

    tp_tensor_t *xi = I64(c, TP_SHAPE(2, 2), 1, 2, 3, 4), *bi = I64(c, TP_SHAPE(2), -1, 100);
    assert_ok(tp_bias_add(c, xi, bi, &y));
    expect_ints(y, TP_INT64, TP_SHAPE(2, 2), 0, 102, 2, 104);
    tp_tensor_release(xi);
    tp_tensor_release(bi);
}

static void bias_add_refuses_a_bias_of_the_wrong_length(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F32(c, TP_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tp_tensor_t *short_bias = F32(c, TP_SHAPE(2), 1, 2);
    tp_tensor_t *matrix_bias = F32(c, TP_SHAPE(1, 3), 1, 2, 3), *y;
    assert_op_fails(y, tp_bias_add(c, x, short_bias, &y), TP_INVALID_ARGUMENT,
                    "BiasAdd: bias must be a vector as long as the last dimension of the input; "
                    "got input [2,3] and bias [2]");
    assert_op_fails(y, tp_bias_add(c, x, matrix_bias, &y), TP_INVALID_ARGUMENT,
                    "got input [2,3] and bias [1,3]");
    tp_tensor_release(x);
    tp_tensor_release(short_bias);
    tp_tensor_release(matrix_bias);
}

/* ---- MatMul ---------------------------------------------------------------------------------- */

/* a*b for a = [1..6] as 2x3 and b = [1..6] as 3x2 is [[22, 28], [49, 64]]; each transpose flag
 * gets the operand stored transposed, so all four calls give that product. */
static void matmul_with_every_transpose_combination(void **state) {
    tp_context_t *c = *state;
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    const double a[] = {1, 2, 3, 4, 5, 6}, a_t[] = {1, 4, 2, 5, 3, 6};
    const double b[] = {1, 2, 3, 4, 5, 6}, b_t[] = {1, 3, 5, 2, 4, 6};
    for (size_t d = 0; d < COUNT_OF(dtypes); d++) {
        for (int flags = 0; flags < 4; flags++) {
            bool ta = flags & 1, tb = flags & 2;
            tp_tensor_t *x =
                tensor_of_doubles(c, dtypes[d], ta ? TP_SHAPE(3, 2) : TP_SHAPE(2, 3), ta ? a_t : a);
            tp_tensor_t *y =
                tensor_of_doubles(c, dtypes[d], tb ? TP_SHAPE(2, 3) : TP_SHAPE(3, 2), tb ? b_t : b);
            tp_tensor_t *z = NULL;
            tp_status_t *status = tp_matmul(c, x, y, ta, tb, &z);
            tp_tensor_release(x);
            tp_tensor_release(y);
            describe("%s MatMul, transpose_a=%d transpose_b=%d", tp_dtype_name(dtypes[d]), ta,
                     tb);
            assert_ok_labelled(status);
            expect_exact(z, dtypes[d], TP_SHAPE(2, 2), 22, 28, 49, 64);
        }
    }
}

/* With square operands an ignored flag would still give a result of the right shape,
 * so the four products of a = [[1, 2], [3, 4]] and b = [[5, 6], [7, 8]] must all differ. */
static void matmul_transpose_flags_change_square_products(void **state) {
    tp_context_t *c = *state;
    const double products[4][4] = {
        {19, 22, 43, 50}, /* a*b */
        {26, 30, 38, 44}, /* a^T*b */
        {17, 23, 39, 53}, /* a*b^T */
        {23, 31, 34, 46}, /* a^T*b^T */
    };
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t d = 0; d < COUNT_OF(dtypes); d++) {
        tp_tensor_t *a = tensor_of_doubles(c, dtypes[d], TP_SHAPE(2, 2), DOUBLES(1, 2, 3, 4));
        tp_tensor_t *b = tensor_of_doubles(c, dtypes[d], TP_SHAPE(2, 2), DOUBLES(5, 6, 7, 8));
        for (int flags = 0; flags < 4; flags++) {
            tp_tensor_t *z = NULL;
            describe("%s MatMul of 2x2 matrices, flags %d", tp_dtype_name(dtypes[d]), flags);
            assert_ok(tp_matmul(c, a, b, flags & 1, flags & 2, &z));
            expect_values(z, dtypes[d], TP_SHAPE(2, 2), products[flags], 4, 0);
        }
        tp_tensor_release(a);
        tp_tensor_release(b);
    }
}

static void matmul_transposed_operands_give_the_outer_shape(void **state) {
    tp_context_t *c = *state;
    /* a^T*b for a = b = [[1, 2, 3], [4, 5, 6]]: a 3x3 result. */
    tp_tensor_t *a = F64(c, TP_SHAPE(2, 3), 1, 2, 3, 4, 5, 6), *z = NULL;
    assert_ok(tp_matmul(c, a, a, true, false, &z));
    expect_exact(z, TP_FLOAT64, TP_SHAPE(3, 3), 17, 22, 27, 22, 29, 36, 27, 36, 45);
    /* a*a^T: 2x2. */
    assert_ok(tp_matmul(c, a, a, false, true, &z));
    expect_exact(z, TP_FLOAT64, TP_SHAPE(2, 2), 14, 32, 32, 77);
    tp_tensor_release(a);
}

/* An empty inner dimension: the product of (2, 0) and (0, 3) is a (2, 3) matrix of zeros. */
static void matmul_with_an_empty_inner_dimension_gives_zeros(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *a = tensor_of_bytes(c, TP_FLOAT32, TP_SHAPE(2, 0), NULL, 0);
    tp_tensor_t *b = tensor_of_bytes(c, TP_FLOAT32, TP_SHAPE(0, 3), NULL, 0);
    /* Leave garbage where the output is likely to be allocated. */
    tp_tensor_t *garbage = F32(c, TP_SHAPE(2, 3), NAN, NAN, NAN, NAN, NAN, NAN);
    tp_tensor_release(garbage);
    tp_tensor_t *z = NULL;
    tp_status_t *status = tp_matmul(c, a, b, false, false, &z);
    tp_tensor_release(a);
    tp_tensor_release(b);
    assert_ok(status);
    expect_exact(z, TP_FLOAT32, TP_SHAPE(2, 3), 0, 0, 0, 0, 0, 0);
}

static void matmul_refuses_mismatched_and_non_matrix_inputs(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *a = F32(c, TP_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tp_tensor_t *v = F32(c, TP_SHAPE(6), 1, 2, 3, 4, 5, 6);
    tp_tensor_t *b = F32(c, TP_SHAPE(3, 2), 1, 2, 3, 4, 5, 6);
    tp_tensor_t *i = I32(c, TP_SHAPE(2, 2), 1, 2, 3, 4);
    tp_tensor_t *d = F64(c, TP_SHAPE(3, 2), 1, 2, 3, 4, 5, 6);
    tp_tensor_t *z;
    assert_op_fails(z, tp_matmul(c, a, a, false, false, &z), TP_INVALID_ARGUMENT,
                    "MatMul: Matrix size-incompatible: In[0]: [2,3], In[1]: [2,3]");
    assert_op_fails(z, tp_matmul(c, a, b, true, false, &z), TP_INVALID_ARGUMENT,
                    "Matrix size-incompatible: In[0]: [2,3], In[1]: [3,2] (with transposes)");
    assert_op_fails(z, tp_matmul(c, v, b, false, false, &z), TP_INVALID_ARGUMENT,
                    "MatMul: inputs must be matrices, but are [6] and [3,2]");
    assert_op_fails(z, tp_matmul(c, i, i, false, false, &z), TP_INVALID_ARGUMENT,
                    "MatMul does not support int32");
    assert_op_fails(z, tp_matmul(c, a, d, false, false, &z), TP_INVALID_ARGUMENT,
                    "MatMul: input 1 ('b') is float64, but T is float32");
    tp_tensor_release(a);
    tp_tensor_release(v);
    tp_tensor_release(b);
    tp_tensor_release(i);
    tp_tensor_release(d);
}

/* ---- Reductions ------------------------------------------------------------------------------ */

typedef struct {
    const char *name;
    reduce_fn fn;
} reduction_t;

static const reduction_t reductions[] = {{"Sum", tp_sum}, {"Mean", tp_mean}, {"Max", tp_max}};

/* Runs reductions[r] on `x` and checks the result; x is kept. */
static void check_reduction(tp_context_t *c, size_t r, tp_tensor_t *x, const int64_t *axes,
                            size_t num_axes, bool keep_dims, tp_shape_t shape,
                            const double *wanted) {
    tp_tensor_t *y = NULL;
    tp_status_t *status = reductions[r].fn(c, x, axes, num_axes, keep_dims, &y);
    describe("%s of %s over %zu axes, keep_dims=%d", reductions[r].name,
             tp_dtype_name(tp_tensor_dtype(x)), num_axes, keep_dims);
    assert_ok_labelled(status);
    expect_values(y, tp_tensor_dtype(x), shape, wanted, (size_t)element_count(shape), 0);
}

static void reductions_of_a_matrix_over_each_axis(void **state) {
    tp_context_t *c = *state;
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    /* x = [[1, 2, 3], [4, 5, 6]]; rows: Sum, Mean, Max. */
    const double all[3][1] = {{21}, {3.5}, {6}};
    const double axis0[3][3] = {{5, 7, 9}, {2.5, 3.5, 4.5}, {4, 5, 6}};
    const double axis1[3][2] = {{6, 15}, {2, 5}, {3, 6}};
    const int64_t zero = 0, one = 1, minus_one = -1;
    for (size_t d = 0; d < COUNT_OF(dtypes); d++) {
        tp_tensor_t *x = tensor_of_doubles(c, dtypes[d], TP_SHAPE(2, 3), DOUBLES(1, 2, 3, 4, 5, 6));
        for (size_t r = 0; r < COUNT_OF(reductions); r++) {
            check_reduction(c, r, x, NULL, 0, false, TP_SCALAR_SHAPE, all[r]);
            check_reduction(c, r, x, NULL, 0, true, TP_SHAPE(1, 1), all[r]);
            check_reduction(c, r, x, &zero, 1, false, TP_SHAPE(3), axis0[r]);
            check_reduction(c, r, x, &zero, 1, true, TP_SHAPE(1, 3), axis0[r]);
            check_reduction(c, r, x, &one, 1, false, TP_SHAPE(2), axis1[r]);
            check_reduction(c, r, x, &minus_one, 1, false, TP_SHAPE(2), axis1[r]);
            check_reduction(c, r, x, &minus_one, 1, true, TP_SHAPE(2, 1), axis1[r]);
        }
        tp_tensor_release(x);
    }
}

static void reductions_over_two_axes_of_a_3d_tensor(void **state) {
    tp_context_t *c = *state;
    /* x[i][j][k] = 12i + 4j + k over (2, 3, 4). Reducing i and k leaves j:
     * Sum = 32j + 60, Mean = Sum / 8, Max = 15 + 4j. */
    double values[24];
    for (int i = 0; i < 24; i++) values[i] = i;
    tp_tensor_t *x = tensor_of_doubles(c, TP_FLOAT32, TP_SHAPE(2, 3, 4), values);
    const double wanted[3][3] = {{60, 92, 124}, {7.5, 11.5, 15.5}, {15, 19, 23}};
    const int64_t axes[] = {0, 2}, negative_axes[] = {-1, 0};
    for (size_t r = 0; r < COUNT_OF(reductions); r++) {
        check_reduction(c, r, x, axes, 2, false, TP_SHAPE(3), wanted[r]);
        check_reduction(c, r, x, negative_axes, 2, false, TP_SHAPE(3), wanted[r]);
        check_reduction(c, r, x, axes, 2, true, TP_SHAPE(1, 3, 1), wanted[r]);
    }
    /* Reducing j and k leaves i: Sum over 12 elements = 144i + 66. */
    const int64_t last_two[] = {1, 2};
    check_reduction(c, 0, x, last_two, 2, false, TP_SHAPE(2), DOUBLES(66, 210));
    tp_tensor_release(x);
}

static void integer_reductions_are_exact(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = I32(c, TP_SHAPE(2, 3), 1, 2, 3, 4, 5, 6), *y = NULL;
    const int64_t zero = 0, one = 1;
    assert_ok(tp_sum(c, x, &zero, 1, false, &y));
    expect_ints(y, TP_INT32, TP_SHAPE(3), 5, 7, 9);
    assert_ok(tp_sum(c, x, NULL, 0, false, &y));
    expect_ints(y, TP_INT32, TP_SCALAR_SHAPE, 21);
    assert_ok(tp_mean(c, x, &one, 1, false, &y));
    expect_ints(y, TP_INT32, TP_SHAPE(2), 2, 5);
    tp_tensor_release(x);

    /* Max starts from the smallest value, not from 0. */
    x = I32(c, TP_SHAPE(3), -5, -2, -9);
    assert_ok(tp_max(c, x, NULL, 0, false, &y));
    expect_ints(y, TP_INT32, TP_SCALAR_SHAPE, -2);
    tp_tensor_release(x);
    x = F32(c, TP_SHAPE(3), -5, -2, -9);
    assert_ok(tp_max(c, x, NULL, 0, false, &y));
    expect_exact(y, TP_FLOAT32, TP_SCALAR_SHAPE, -2);
    tp_tensor_release(x);

    /* int64 sums do not go through double. */
    x = I64(c, TP_SHAPE(2), INT64_MAX - 1, 1);
    assert_ok(tp_sum(c, x, NULL, 0, false, &y));
    expect_ints(y, TP_INT64, TP_SCALAR_SHAPE, INT64_MAX);
    tp_tensor_release(x);
}

static void reductions_refuse_bad_axes(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F32(c, TP_SHAPE(2, 3), 1, 2, 3, 4, 5, 6), *y;
    const int64_t two = 2, minus_three = -3, repeated[] = {1, 1}, aliased[] = {1, -1};
    assert_op_fails(y, tp_sum(c, x, &two, 1, false, &y), TP_INVALID_ARGUMENT,
                    "Sum: axis 2 is out of range for a tensor of rank 2");
    assert_op_fails(y, tp_mean(c, x, &minus_three, 1, false, &y), TP_INVALID_ARGUMENT,
                    "Mean: axis -3 is out of range for a tensor of rank 2");
    assert_op_fails(y, tp_max(c, x, repeated, 2, false, &y), TP_INVALID_ARGUMENT,
                    "Max: axis 1 is given twice");
    assert_op_fails(y, tp_sum(c, x, aliased, 2, true, &y), TP_INVALID_ARGUMENT,
                    "Sum: axis -1 is given twice");
    tp_tensor_t *b = BOOLS(c, TP_SHAPE(2), true, false);
    assert_op_fails(y, tp_sum(c, b, NULL, 0, false, &y), TP_INVALID_ARGUMENT,
                    "Sum does not support bool");
    tp_tensor_release(x);
    tp_tensor_release(b);
}

/* ---- Reshape and Transpose ------------------------------------------------------------------- */

static void reshape_keeps_the_values_in_row_major_order(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F32(c, TP_SHAPE(2, 3), 1, 2, 3, 4, 5, 6), *y = NULL;
    assert_ok(tp_reshape(c, x, TP_SHAPE(3, 2), &y));
    expect_exact(y, TP_FLOAT32, TP_SHAPE(3, 2), 1, 2, 3, 4, 5, 6);
    assert_ok(tp_reshape(c, x, TP_SHAPE(-1), &y));
    expect_exact(y, TP_FLOAT32, TP_SHAPE(6), 1, 2, 3, 4, 5, 6);
    assert_ok(tp_reshape(c, x, TP_SHAPE(3, -1), &y));
    expect_exact(y, TP_FLOAT32, TP_SHAPE(3, 2), 1, 2, 3, 4, 5, 6);
    assert_ok(tp_reshape(c, x, TP_SHAPE(1, -1, 2), &y));
    expect_exact(y, TP_FLOAT32, TP_SHAPE(1, 3, 2), 1, 2, 3, 4, 5, 6);
    tp_tensor_release(x);
    x = I64(c, TP_SHAPE(1, 1), INT64_MIN);
    assert_ok(tp_reshape(c, x, TP_SCALAR_SHAPE, &y));
    expect_ints(y, TP_INT64, TP_SCALAR_SHAPE, INT64_MIN);
    tp_tensor_release(x);
}

static void reshape_refuses_shapes_that_do_not_fit(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F32(c, TP_SHAPE(2, 3), 1, 2, 3, 4, 5, 6), *y;
    assert_op_fails(y, tp_reshape(c, x, TP_SHAPE(4), &y), TP_INVALID_ARGUMENT,
                    "Reshape: cannot reshape a tensor with 6 elements to shape [4] (4 elements); "
                    "the input is [2,3]");
    assert_op_fails(y, tp_reshape(c, x, TP_SHAPE(-1, -1), &y), TP_INVALID_ARGUMENT,
                    "Reshape: only one dimension may be -1");
    assert_op_fails(y, tp_reshape(c, x, TP_SHAPE(4, -1), &y), TP_INVALID_ARGUMENT,
                    "cannot infer the -1 dimension: 6 elements do not divide into blocks of 4");
    assert_op_fails(y, tp_reshape(c, x, TP_SHAPE(-2, -3), &y), TP_INVALID_ARGUMENT,
                    "Reshape: dimension 0 is -2");
    tp_tensor_release(x);
}

static void transpose_with_a_perm_moves_every_element(void **state) {
    tp_context_t *c = *state;
    /* x[i][j][k] = 12i + 4j + k over (2, 3, 4); perm (2, 0, 1) gives y[k][i][j] = x[i][j][k]. */
    double values[24];
    for (int i = 0; i < 24; i++) values[i] = i;
    tp_tensor_t *x = tensor_of_doubles(c, TP_INT32, TP_SHAPE(2, 3, 4), values), *y = NULL;
    const int64_t perm[] = {2, 0, 1};
    assert_ok(tp_transpose(c, x, perm, 3, &y));
    expect_ints(y, TP_INT32, TP_SHAPE(4, 2, 3),
                0, 4, 8, 12, 16, 20,  /* k = 0 */
                1, 5, 9, 13, 17, 21,  /* k = 1 */
                2, 6, 10, 14, 18, 22, /* k = 2 */
                3, 7, 11, 15, 19, 23  /* k = 3 */);
    /* No perm reverses the dimensions: y[k][j][i] = x[i][j][k]. */
    assert_ok(tp_transpose(c, x, NULL, 0, &y));
    expect_ints(y, TP_INT32, TP_SHAPE(4, 3, 2), 0, 12, 4, 16, 8, 20, 1, 13, 5, 17, 9, 21, 2, 14,
                6, 18, 10, 22, 3, 15, 7, 19, 11, 23);
    tp_tensor_release(x);

    tp_tensor_t *m = F64(c, TP_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    assert_ok(tp_transpose(c, m, NULL, 0, &y));
    expect_exact(y, TP_FLOAT64, TP_SHAPE(3, 2), 1, 4, 2, 5, 3, 6);
    const int64_t identity[] = {0, 1};
    assert_ok(tp_transpose(c, m, identity, 2, &y));
    expect_exact(y, TP_FLOAT64, TP_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tp_tensor_release(m);
}

/* Every permutation of ranks 1 to 4, on shapes with dimensions of 1, sizes past a 32-element
 * tile with a remainder and size 0, for each element size (1, 2, 4 and 8 bytes: the kernel
 * merges dimensions, copies rows and tiles, so each path is met), against an index walk. */
static void next_permutation(int64_t *perm, int rank, bool *done) {
    int i = rank - 2;
    while (i >= 0 && perm[i] > perm[i + 1]) i--;
    if (i < 0) {
        *done = true;
        return;
    }
    int j = rank - 1;
    while (perm[j] < perm[i]) j--;
    int64_t t = perm[i];
    perm[i] = perm[j], perm[j] = t;
    for (int a = i + 1, b = rank - 1; a < b; a++, b--)
        t = perm[a], perm[a] = perm[b], perm[b] = t;
}

static void transpose_matches_an_index_walk(void **state) {
    tp_context_t *c = *state;
    const tp_shape_t shapes[] = {
        TP_SHAPE(70),          TP_SHAPE(37, 70),     TP_SHAPE(1, 45),
        TP_SHAPE(3, 1, 40, 2), TP_SHAPE(2, 33, 34),  TP_SHAPE(5, 0, 3),
        TP_SHAPE(4, 3, 35, 6), TP_SHAPE(1, 1, 1, 1), TP_SHAPE(2, 65, 1, 3),
    };
    const tp_dtype_t dtypes[] = {TP_UINT8, TP_INT16, TP_FLOAT32, TP_INT64};
    for (size_t s = 0; s < COUNT_OF(shapes); s++) {
        tp_shape_t shape = shapes[s];
        int rank = shape.rank;
        int64_t count = element_count(shape), strides[TP_MAX_RANK], stride = 1;
        for (int d = rank - 1; d >= 0; d--) strides[d] = stride, stride *= shape.dims[d];
        for (size_t t = 0; t < COUNT_OF(dtypes); t++) {
            size_t size = tp_dtype_size(dtypes[t]);
            unsigned char *bytes = malloc((size_t)(count > 0 ? count : 1) * size);
            unsigned char *want = malloc((size_t)(count > 0 ? count : 1) * size);
            assert_non_null(bytes);
            assert_non_null(want);
            for (size_t b = 0; b < (size_t)count * size; b++) bytes[b] = (unsigned char)(b * 7 + 3);
            tp_tensor_t *x = tensor_of_bytes(c, dtypes[t], shape, bytes, (size_t)count * size);
            int64_t perm[TP_MAX_RANK];
            for (int d = 0; d < rank; d++) perm[d] = d;
            for (bool done = false; !done; next_permutation(perm, rank, &done)) {
                tp_shape_t out_shape = {.rank = rank};
                for (int d = 0; d < rank; d++) out_shape.dims[d] = shape.dims[perm[d]];
                for (int64_t i = 0; i < count; i++) {
                    int64_t rest = i, source = 0;
                    for (int d = rank - 1; d >= 0; d--) {
                        source += rest % out_shape.dims[d] * strides[perm[d]];
                        rest /= out_shape.dims[d];
                    }
                    memcpy(want + (size_t)i * size, bytes + (size_t)source * size, size);
                }
                tp_tensor_t *y = NULL;
                assert_ok(tp_transpose(c, x, perm, (size_t)rank, &y));
                assert_tensor_shape(y, out_shape);
                unsigned char *got = malloc((size_t)(count > 0 ? count : 1) * size);
                assert_non_null(got);
                assert_ok(tp_tensor_read(y, got, (size_t)count * size));
                if (count > 0 && memcmp(got, want, (size_t)count * size) != 0)
                    fail_msg("Transpose of shape %zu, dtype %s, perm %d%d%d%d: wrong elements", s,
                             tp_dtype_name(dtypes[t]), (int)perm[0], rank > 1 ? (int)perm[1] : 0,
                             rank > 2 ? (int)perm[2] : 0, rank > 3 ? (int)perm[3] : 0);
                free(got);
                tp_tensor_release(y);
            }
            tp_tensor_release(x);
            free(bytes);
            free(want);
        }
    }
}

static void transpose_refuses_a_bad_perm(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F32(c, TP_SHAPE(1, 2, 3), 1, 2, 3, 4, 5, 6), *y;
    const int64_t repeated[] = {0, 0, 1}, too_large[] = {0, 1, 3}, negative[] = {-1, 0, 1};
    const int64_t short_perm[] = {1, 0};
    assert_op_fails(y, tp_transpose(c, x, repeated, 3, &y), TP_INVALID_ARGUMENT,
                    "Transpose: perm is not a permutation of 0..2");
    assert_op_fails(y, tp_transpose(c, x, too_large, 3, &y), TP_INVALID_ARGUMENT,
                    "Transpose: perm is not a permutation of 0..2");
    assert_op_fails(y, tp_transpose(c, x, negative, 3, &y), TP_INVALID_ARGUMENT,
                    "Transpose: perm is not a permutation of 0..2");
    assert_op_fails(y, tp_transpose(c, x, short_perm, 2, &y), TP_INVALID_ARGUMENT,
                    "Transpose: perm has 2 entries for a tensor of rank 3");
    tp_tensor_release(x);
}

/* ---- Softmax --------------------------------------------------------------------------------- */

static void softmax_normalizes_each_row(void **state) {
    tp_context_t *c = *state;
    /* Row 0: e^(x - 3) / (e^-2 + e^-1 + 1); row 1: equal logits; row 2: only differences
     * matter, so (1000, 1001, 1002) is row 0 again and must not overflow. */
    const double logits[] = {1, 2, 3, 5, 5, 5, 1000, 1001, 1002};
    const double row0[] = {0.09003057317038046, 0.24472847105479764, 0.6652409557748218};
    const double wanted[] = {row0[0], row0[1], row0[2], 1.0 / 3, 1.0 / 3, 1.0 / 3,
                             row0[0], row0[1], row0[2]};
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t d = 0; d < COUNT_OF(dtypes); d++) {
        tp_tensor_t *x = tensor_of_doubles(c, dtypes[d], TP_SHAPE(3, 3), logits), *y = NULL;
        assert_ok(tp_softmax(c, x, &y));
        tp_tensor_release(x);
        snapshot_t got;
        take_snapshot(y, &got);
        assert_header(&got, dtypes[d], TP_SHAPE(3, 3), 9);
        assert_doubles(got.values, wanted, 9, dtypes[d] == TP_FLOAT32 ? F32_TOL : F64_TOL);
        for (int r = 0; r < 3; r++) {
            double total = got.values[3 * r] + got.values[3 * r + 1] + got.values[3 * r + 2];
            assert_true(fabs(total - 1) < 1e-6);
        }
    }
    /* The pair from the brief: (1000, 1001) is 1 / (1 + e) and e / (1 + e). */
    tp_tensor_t *x = F32(c, TP_SHAPE(2), 1000, 1001), *y = NULL;
    assert_ok(tp_softmax(c, x, &y));
    expect_near(y, TP_FLOAT32, TP_SHAPE(2), F32_TOL, 0.2689414213699951, 0.7310585786300049);
    tp_tensor_release(x);
}

static void softmax_needs_at_least_one_dimension(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F32(c, TP_SCALAR_SHAPE, 1), *y;
    assert_op_fails(y, tp_softmax(c, x, &y), TP_INVALID_ARGUMENT,
                    "Softmax: logits must have rank >= 1");
    tp_tensor_release(x);
}

/* ---- Random ops ------------------------------------------------------------------------------ */

typedef tp_status_t *(*random_fn)(tp_context_t *, tp_dtype_t, tp_shape_t, int64_t,
                                  tp_tensor_t **);

static double *random_values(tp_context_t *c, random_fn fn, tp_dtype_t dtype, int64_t count,
                             int64_t seed) {
    tp_tensor_t *t = NULL;
    assert_ok(fn(c, dtype, TP_SHAPE(count), seed, &t));
    assert_int_equal(tp_tensor_dtype(t), dtype);
    assert_shape(tp_tensor_shape(t), TP_SHAPE(count));
    size_t n = 0;
    double *values = read_doubles(t, &n);
    tp_tensor_release(t);
    return values;
}

static size_t count_equal(const double *a, const double *b, size_t n) {
    size_t equal = 0;
    for (size_t i = 0; i < n; i++) equal += a[i] == b[i];
    return equal;
}

static void random_ops_repeat_for_a_seed_and_differ_between_seeds(void **state) {
    tp_context_t *c = *state;
    const random_fn fns[] = {tp_random_normal, tp_random_uniform};
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    enum { N = 1000 };
    for (size_t f = 0; f < COUNT_OF(fns); f++) {
        for (size_t d = 0; d < COUNT_OF(dtypes); d++) {
            double *first = random_values(c, fns[f], dtypes[d], N, 7);
            double *again = random_values(c, fns[f], dtypes[d], N, 7);
            double *other = random_values(c, fns[f], dtypes[d], N, 8);
            size_t same = count_equal(first, again, N), collisions = count_equal(first, other, N);
            free(first);
            free(again);
            free(other);
            if (same != N || collisions >= 5)
                fail_msg("%s of %s: %zu of %d equal for one seed, %zu for two", fns[f] ==
                         tp_random_normal ? "RandomStandardNormal" : "RandomUniform",
                         tp_dtype_name(dtypes[d]), same, (int)N, collisions);
        }
    }
}

static void random_uniform_lies_in_the_unit_interval_with_mean_one_half(void **state) {
    tp_context_t *c = *state;
    enum { N = 100000 };
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    for (size_t d = 0; d < COUNT_OF(dtypes); d++) {
        double *values = random_values(c, tp_random_uniform, dtypes[d], N, 12345);
        double sum = 0, low = 1, high = 0;
        for (size_t i = 0; i < N; i++) {
            sum += values[i];
            low = fmin(low, values[i]);
            high = fmax(high, values[i]);
        }
        free(values);
        if (low < 0 || high >= 1 || fabs(sum / N - 0.5) >= 0.01)
            fail_msg("%s: values in [%.17g, %.17g], mean %g", tp_dtype_name(dtypes[d]), low, high,
                     sum / N);
    }
}

static void random_normal_has_mean_zero_and_unit_deviation(void **state) {
    tp_context_t *c = *state;
    enum { N = 100000 };
    double *values = random_values(c, tp_random_normal, TP_FLOAT64, N, 2024);
    double sum = 0, squares = 0;
    for (size_t i = 0; i < N; i++) sum += values[i];
    double mean = sum / N;
    for (size_t i = 0; i < N; i++) squares += (values[i] - mean) * (values[i] - mean);
    free(values);
    double deviation = sqrt(squares / (N - 1));
    if (fabs(mean) >= 0.02 || fabs(deviation - 1) >= 0.02)
        fail_msg("mean %g, standard deviation %g", mean, deviation);
}

static void random_ops_make_only_floats(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *y;
    assert_op_fails(y, tp_random_uniform(c, TP_INT32, TP_SHAPE(2), 1, &y), TP_INVALID_ARGUMENT,
                    "RandomUniform does not support int32 for 'dtype'");
    assert_op_fails(y, tp_random_normal(c, TP_BOOL, TP_SHAPE(2), 1, &y), TP_INVALID_ARGUMENT,
                    "RandomStandardNormal does not support bool");
}

/* ---- Bad calls through tp_execute ------------------------------------------------------------ */

static void unknown_ops_and_attributes_are_refused(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F32(c, TP_SHAPE(2), 1, 2), *y;
    assert_op_fails(y, tp_execute(c, "Frobnicate", &x, 1, NULL, 0, &y, 1), TP_NOT_FOUND,
                    "unknown op 'Frobnicate'");
    tp_attr_t alpha = TP_ATTR_FLOAT_VALUE("alpha", 0.2);
    assert_op_fails(y, tp_execute(c, "Relu", &x, 1, &alpha, 1, &y, 1), TP_INVALID_ARGUMENT,
                    "Relu has no attribute 'alpha'");
    tp_tensor_t *pair[] = {x, x};
    tp_attr_t as_int = TP_ATTR_INT_VALUE("transpose_a", 1);
    tp_tensor_t *m = F32(c, TP_SHAPE(1, 1), 3);
    tp_tensor_t *matrices[] = {m, m};
    assert_op_fails(y, tp_execute(c, "MatMul", matrices, 2, &as_int, 1, &y, 1),
                    TP_INVALID_ARGUMENT,
                    "MatMul: attribute 'transpose_a' is a bool, but a int was given");
    tp_attr_t twice[] = {TP_ATTR_BOOL_VALUE("transpose_a", true),
                         TP_ATTR_BOOL_VALUE("transpose_a", false)};
    assert_op_fails(y, tp_execute(c, "MatMul", matrices, 2, twice, 2, &y, 1),
                    TP_INVALID_ARGUMENT, "MatMul: attribute 'transpose_a' is given twice");
    tp_attr_t nameless = {.type = TP_ATTR_INT};
    assert_op_fails(y, tp_execute(c, "Add", pair, 2, &nameless, 1, &y, 1), TP_INVALID_ARGUMENT,
                    "Add: attribute 0 has no name");
    tp_attr_t wrong_t = TP_ATTR_DTYPE_VALUE("T", TP_INT32);
    assert_op_fails(y, tp_execute(c, "Relu", &x, 1, &wrong_t, 1, &y, 1), TP_INVALID_ARGUMENT,
                    "Relu: input 0 ('x') is float32, but T is int32");
    tp_tensor_release(x);
    tp_tensor_release(m);
}

/* A dtype attribute must be a dtype exactly: not one whose binding message would print
 * "(null)" for its name, nor one that a cast to tp_dtype_t would cut down to float32 (both
 * found by the fuzz targets shape_inference and attributes). */
static void dtype_attributes_that_are_not_dtypes_are_refused(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F32(c, TP_SHAPE(2), 1, 2), *y;
    tp_attr_t unknown = TP_ATTR_DTYPE_VALUE("T", 99);
    assert_op_fails(y, tp_execute(c, "Relu", &x, 1, &unknown, 1, &y, 1), TP_INVALID_ARGUMENT,
                    "Relu: attribute 'T' is not a dtype (99)");
    tp_attr_t wide = TP_ATTR_DTYPE_VALUE("T", ((int64_t)1 << 32) + TP_FLOAT32);
    assert_op_fails(y, tp_execute(c, "Relu", &x, 1, &wide, 1, &y, 1), TP_INVALID_ARGUMENT,
                    "Relu: attribute 'T' is not a dtype (4294967297)");
    tp_attr_t cast_to[] = {TP_ATTR_DTYPE_VALUE("DstT", ((int64_t)1 << 32) + TP_INT32)};
    assert_op_fails(y, tp_execute(c, "Cast", &x, 1, cast_to, 1, &y, 1), TP_INVALID_ARGUMENT,
                    "Cast: attribute 'DstT' is not a dtype");
    tp_tensor_release(x);
}

static void mismatched_and_unsupported_dtypes_are_refused(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *f = F32(c, TP_SHAPE(2), 1, 2), *i = I32(c, TP_SHAPE(2), 1, 2), *z;
    tp_tensor_t *b = BOOLS(c, TP_SHAPE(2), true, false);
    assert_op_fails(z, tp_add(c, f, i, &z), TP_INVALID_ARGUMENT,
                    "Add: input 1 ('y') is int32, but T is float32");
    assert_op_fails(z, tp_sigmoid(c, i, &z), TP_INVALID_ARGUMENT,
                    "Sigmoid does not support int32");
    assert_op_fails(z, tp_add(c, b, b, &z), TP_INVALID_ARGUMENT, "Add does not support bool");
    tp_tensor_release(f);
    tp_tensor_release(i);
    tp_tensor_release(b);
}

static void wrong_input_and_output_counts_and_null_inputs_are_refused(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = F32(c, TP_SHAPE(2), 1, 2), *y;
    tp_tensor_t *three[] = {x, x, x}, *with_null[] = {x, NULL};
    assert_op_fails(y, tp_execute(c, "Add", &x, 1, NULL, 0, &y, 1), TP_INVALID_ARGUMENT,
                    "Add takes 2 inputs, but 1 were given");
    assert_op_fails(y, tp_execute(c, "Add", three, 3, NULL, 0, &y, 1), TP_INVALID_ARGUMENT,
                    "Add takes 2 inputs, but 3 were given");
    assert_op_fails(y, tp_execute(c, "Relu", NULL, 0, NULL, 0, &y, 1), TP_INVALID_ARGUMENT,
                    "Relu takes 1 inputs, but 0 were given");
    assert_op_fails(y, tp_execute(c, "Add", with_null, 2, NULL, 0, &y, 1), TP_INVALID_ARGUMENT,
                    "Add: input 1 is NULL");
    assert_op_fails(y, tp_relu(c, NULL, &y), TP_INVALID_ARGUMENT, "Relu: input 0 is NULL");
    assert_op_fails(y, tp_add(c, NULL, x, &y), TP_INVALID_ARGUMENT, "Add: input 0 is NULL");
    assert_op_fails(y, tp_execute(c, "Relu", NULL, 1, NULL, 0, &y, 1), TP_INVALID_ARGUMENT,
                    "Relu: 1 inputs but the array is NULL");
    tp_tensor_t *outputs[2] = {NULL, NULL};
    assert_error(tp_execute(c, "Relu", &x, 1, NULL, 0, outputs, 2), TP_INVALID_ARGUMENT,
                 "Relu gives 1 outputs, but room for 2 was given");
    assert_null(outputs[0]);
    assert_null(outputs[1]);
    assert_error(tp_execute(c, "Relu", &x, 1, NULL, 0, NULL, 1), TP_INVALID_ARGUMENT,
                 "tp_execute: argument 'outputs' is NULL");
    assert_op_fails(y, tp_execute(NULL, "Relu", &x, 1, NULL, 0, &y, 1), TP_INVALID_ARGUMENT,
                    "argument 'context' is NULL");
    assert_op_fails(y, tp_execute(c, NULL, &x, 1, NULL, 0, &y, 1), TP_INVALID_ARGUMENT,
                    "argument 'op_name' is NULL");
    tp_tensor_release(x);
}

static void inputs_from_another_context_are_refused(void **state) {
    tp_context_t *c = *state;
    tp_context_options_t options = TP_CONTEXT_OPTIONS_INIT;
    options.no_plugins = true;
    tp_context_t *other = NULL;
    assert_ok(tp_context_create(&options, &other));
    tp_tensor_t *foreign = F32(other, TP_SHAPE(2), 1, 2), *mine = F32(c, TP_SHAPE(2), 3, 4);
    tp_tensor_t *y = NULL;
    tp_status_t *status = tp_add(c, mine, foreign, &y);
    tp_tensor_release(foreign);
    tp_tensor_release(mine);
    tp_context_destroy(other);
    assert_error(status, TP_INVALID_ARGUMENT, "Add: input 1 belongs to another context");
    assert_null(y);
}

/* ---- The multi-threaded paths ---------------------------------------------------------------- */

enum { LARGE = 1000000 };

/* A float32 tensor of LARGE elements, element i being value(i). */
static tp_tensor_t *large_f32(tp_context_t *c, float (*value)(int64_t)) {
    float *data = malloc(LARGE * sizeof *data);
    assert_non_null(data);
    for (int64_t i = 0; i < LARGE; i++) data[i] = value(i);
    tp_tensor_t *t = NULL;
    tp_status_t *status = tp_tensor_create(c, TP_FLOAT32, TP_SHAPE(LARGE), data,
                                           LARGE * sizeof *data, &t);
    free(data);
    assert_ok(status);
    return t;
}

static float residue(int64_t i) { return (float)(i % 1000); }
static float one(int64_t i) {
    (void)i;
    return 1.0f;
}
static float alternating(int64_t i) { return (float)(i % 1000) * (i % 2 == 0 ? 1.0f : -1.0f); }

/* Reads a large output, releases it, and checks every element against wanted(i). */
static void expect_large(tp_tensor_t *t, tp_shape_t shape, double (*wanted)(int64_t),
                         double expected_sum) {
    assert_shape(tp_tensor_shape(t), shape);
    size_t n = 0;
    double *values = read_doubles(t, &n);
    tp_tensor_release(t);
    double sum = 0;
    size_t wrong = 0, first_wrong = 0;
    for (size_t i = 0; i < n; i++) {
        sum += values[i];
        if (values[i] != wanted((int64_t)i) && wrong++ == 0) first_wrong = i;
    }
    double first_value = wrong > 0 ? values[first_wrong] : 0;
    free(values);
    if (wrong > 0)
        fail_msg("%zu elements are wrong; element %zu is %g, wanted %g", wrong, first_wrong,
                 first_value, wanted((int64_t)first_wrong));
    assert_true(sum == expected_sum);
}

static double residue_plus_one(int64_t i) { return (double)(i % 1000) + 1; }
static double relu_of_alternating(int64_t i) { return i % 2 == 0 ? (double)(i % 1000) : 0; }
static double row_plus_thousand_column(int64_t i) { return (double)(i / 1000 + 1000 * (i % 1000)); }
static double three_times_residue(int64_t i) { return 3.0 * (double)(i % 1000); }

static void large_add_and_relu_take_the_threaded_path(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = large_f32(c, residue), *ones = large_f32(c, one), *z = NULL;
    assert_ok(tp_add(c, x, ones, &z));
    /* Each block of 1000 sums to 0 + 1 + ... + 999 + 1000 = 500500. */
    expect_large(z, TP_SHAPE(LARGE), residue_plus_one, 500500.0 * 1000);
    tp_tensor_t *three[] = {x, x, x};
    assert_ok(tp_add_n(c, three, 3, &z));
    expect_large(z, TP_SHAPE(LARGE), three_times_residue, 3.0 * 499500 * 1000);
    tp_tensor_release(x);
    tp_tensor_release(ones);

    x = large_f32(c, alternating);
    assert_ok(tp_relu(c, x, &z));
    /* The even residues 0, 2, ..., 998 of each block survive: 249500 per block. */
    expect_large(z, TP_SHAPE(LARGE), relu_of_alternating, 249500.0 * 1000);
    tp_tensor_release(x);
}

static void large_broadcast_takes_the_threaded_path(void **state) {
    tp_context_t *c = *state;
    /* x[i][j] = i over (1000, 1000) plus y[j] = 1000 j: z[i][j] = i + 1000 j. */
    float *rows = malloc(LARGE * sizeof *rows), columns[1000];
    assert_non_null(rows);
    for (int64_t i = 0; i < LARGE; i++) rows[i] = (float)(i / 1000);
    for (int j = 0; j < 1000; j++) columns[j] = 1000.0f * (float)j;
    tp_tensor_t *x = NULL;
    tp_status_t *status = tp_tensor_create(c, TP_FLOAT32, TP_SHAPE(1000, 1000), rows,
                                           LARGE * sizeof *rows, &x);
    free(rows);
    assert_ok(status);
    tp_tensor_t *y = tensor_of_bytes(c, TP_FLOAT32, TP_SHAPE(1000), columns, sizeof columns);
    tp_tensor_t *z = NULL;
    assert_ok(tp_add(c, x, y, &z));
    /* Sum of i over the rows and 1000 j over the columns, each 1000 times. */
    expect_large(z, TP_SHAPE(1000, 1000), row_plus_thousand_column,
                 1000.0 * 499500 + 1000.0 * 1000 * 499500);
    tp_tensor_release(x);
    tp_tensor_release(y);
}

/* NumPy's answers where IEEE arithmetic decides: relu(nan) is nan, the mean of nothing is nan. */
static void nan_passes_through_relu_and_an_empty_mean_is_nan(void **state) {
    tp_context_t *c = *state;
    const double values[3] = {NAN, -1.0, 2.0};
    for (int k = 0; k < 2; k++) {
        tp_dtype_t dtype = k == 0 ? TP_FLOAT32 : TP_FLOAT64;
        tp_tensor_t *x = tensor_of_doubles(c, dtype, TP_SHAPE(3), values), *y = NULL;
        assert_ok(tp_relu(c, x, &y));
        size_t count;
        double *got = read_doubles(y, &count);
        bool ok = isnan(got[0]) && got[1] == 0.0 && got[2] == 2.0;
        free(got);
        tp_tensor_release(y);
        tp_tensor_release(x);
        assert_true(ok);
    }
    tp_tensor_t *empty = tensor_of_doubles(c, TP_FLOAT32, TP_SHAPE(2, 0), NULL), *mean = NULL;
    const int64_t axis[1] = {1};
    assert_ok(tp_mean(c, empty, axis, 1, false, &mean));
    size_t count;
    double *got = read_doubles(mean, &count);
    bool ok = count == 2 && isnan(got[0]) && isnan(got[1]);
    free(got);
    tp_tensor_release(mean);
    tp_tensor_release(empty);
    assert_true(ok);
}

/* The families of ops_*.c fit the index, and no two declare one name: a duplicate would make
 * which definition tp_builtin_op_find returns depend on the sort. */
static void every_declared_op_is_indexed_once(void **state) {
    (void)state;
    size_t count;
    const tp_op_t *ops = tp_builtin_ops(&count);
    assert_int_equal(count, tp_builtin_ops_declared());
    for (size_t i = 0; i < count; i++) {
        assert_ptr_equal(tp_builtin_op_find(ops[i].def->name), &ops[i]);
        if (i > 0 && strcmp(ops[i - 1].def->name, ops[i].def->name) >= 0)
            fail_msg("op %s is declared twice or out of order", ops[i].def->name);
    }
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, setup, cpu_context_teardown)
    const struct CMUnitTest tests[] = {
        TEST(every_declared_op_is_indexed_once),
        TEST(unary_ops_on_floats_match_hand_computed_values),
        TEST(unary_ops_keep_the_shape_of_a_matrix),
        TEST(unary_ops_on_integers_wrap_like_the_hardware),
        TEST(neg_and_abs_of_int32_min_wrap_to_int32_min),
        TEST(float_only_unary_ops_refuse_integers),
        TEST(identity_copies_values_of_every_dtype),
        TEST(zeros_like_and_ones_like_keep_dtype_and_shape),
        TEST(fill_repeats_a_scalar_over_the_shape_attribute),
        TEST(fill_refuses_a_non_scalar_value_and_a_negative_dimension),
        TEST(cast_float32_to_int32_truncates_toward_zero_and_saturates),
        TEST(cast_int32_to_float64_is_exact),
        TEST(cast_to_and_from_bool),
        TEST(cast_int64_to_uint8_wraps_mod_256),
        TEST(cast_float_to_uint8_saturates),
        TEST(cast_float64_to_int64_saturates_at_int64_max),
        TEST(cast_int64_to_float32_rounds_once),
        TEST(cast_needs_its_dst_type),
        TEST(add_sub_mul_div_broadcast_like_numpy),
        TEST(broadcasting_puts_the_smaller_rank_first_too),
        TEST(incompatible_shapes_are_refused_by_every_binary_op),
        TEST(float_division_by_zero_gives_infinities_and_nan),
        TEST(integer_add_sub_mul_wrap),
        TEST(integer_division_truncates_toward_zero),
        TEST(integer_division_by_zero_fails_in_tp_div),
        TEST(add_n_sums_its_inputs),
        TEST(add_n_refuses_mismatched_or_missing_inputs),
        TEST(bias_add_adds_along_the_last_dimension),
        TEST(bias_add_refuses_a_bias_of_the_wrong_length),
        TEST(matmul_with_every_transpose_combination),
        TEST(matmul_transpose_flags_change_square_products),
        TEST(matmul_transposed_operands_give_the_outer_shape),
        TEST(matmul_with_an_empty_inner_dimension_gives_zeros),
        TEST(matmul_refuses_mismatched_and_non_matrix_inputs),
        TEST(reductions_of_a_matrix_over_each_axis),
        TEST(reductions_over_two_axes_of_a_3d_tensor),
        TEST(integer_reductions_are_exact),
        TEST(reductions_refuse_bad_axes),
        TEST(reshape_keeps_the_values_in_row_major_order),
        TEST(reshape_refuses_shapes_that_do_not_fit),
        TEST(transpose_with_a_perm_moves_every_element),
        TEST(transpose_matches_an_index_walk),
        TEST(transpose_refuses_a_bad_perm),
        TEST(softmax_normalizes_each_row),
        TEST(softmax_needs_at_least_one_dimension),
        TEST(random_ops_repeat_for_a_seed_and_differ_between_seeds),
        TEST(random_uniform_lies_in_the_unit_interval_with_mean_one_half),
        TEST(random_normal_has_mean_zero_and_unit_deviation),
        TEST(random_ops_make_only_floats),
        TEST(unknown_ops_and_attributes_are_refused),
        TEST(dtype_attributes_that_are_not_dtypes_are_refused),
        TEST(mismatched_and_unsupported_dtypes_are_refused),
        TEST(wrong_input_and_output_counts_and_null_inputs_are_refused),
        TEST(inputs_from_another_context_are_refused),
        TEST(large_add_and_relu_take_the_threaded_path),
        TEST(large_broadcast_takes_the_threaded_path),
        TEST(nan_passes_through_relu_and_an_empty_mean_is_nan),
    };
#undef TEST
    return cmocka_run_group_tests(tests, NULL, NULL);
}
