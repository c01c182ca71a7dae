/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU's vectorised element-wise loops (cpu_elementwise.c, cpu_compare.c) against a scalar
 * reference written here: every dtype each op takes, odd sizes above and below the size at
 * which loops go parallel, size 0, each broadcasting form (Maximum and Minimum too), and NaN,
 * infinities and -0. */
#include "cpu_fixture.h"

#include <math.h>
#include <stdlib.h>

#include "base/dtype.h"

enum { ROWS = 257, COLUMNS = 391, BIG = ROWS * COLUMNS }; /* BIG runs on the worker pool */

static const int64_t sizes[] = {0, 1, 7, 1001, BIG};

/* Exactly representable values, and in a float every 17th element from 0 is NaN, inf, -inf
 * or -0. `salt` varies them between operands; `no_zero` keeps them off 0 (divisors). */
static double value_at(tp_dtype_t dtype, int64_t i, int salt, bool no_zero) {
    bool is_float = dtype == TP_FLOAT32 || dtype == TP_FLOAT64;
    if (is_float && !no_zero) {
        switch ((i + salt) % 17) {
        case 0: return NAN;
        case 1: return INFINITY;
        case 2: return -INFINITY;
        case 3: return -0.0;
        default: break;
        }
    }
    int64_t v = (i * 7919 + salt * 31) % 201;
    if (dtype != TP_UINT8 && dtype != TP_UINT32 && dtype != TP_UINT64) v -= 100;
    if (no_zero && v == 0) v = 3;
    return is_float ? (double)v / 8 : (double)v;
}

static tp_tensor_t *make(tp_context_t *c, tp_dtype_t dtype, tp_shape_t shape, int salt,
                         bool no_zero) {
    int64_t n = element_count(shape);
    double *values = malloc((size_t)(n > 0 ? n : 1) * sizeof *values);
    assert_non_null(values);
    for (int64_t i = 0; i < n; i++) values[i] = value_at(dtype, i, salt, no_zero);
    tp_tensor_t *t = tensor_of_doubles(c, dtype, shape, values);
    free(values);
    return t;
}

/* A double as the dtype holds it: rounded to float32, or wrapped to the integer's width. */
static double as_dtype(tp_dtype_t dtype, double v) {
    unsigned char cell[8];
    tp_dtype_store_double(cell, dtype, 0, v);
    return tp_dtype_load_double(cell, dtype, 0);
}

static bool same(double got, double want) {
    if (isnan(want)) return isnan(got);
    return got == want && signbit(got) == signbit(want);
}

static void expect(tp_tensor_t *out, const double *want, int64_t n, const char *what) {
    size_t count = 0;
    double *got = read_doubles(out, &count);
    assert_int_equal(count, (size_t)n);
    for (int64_t i = 0; i < n; i++)
        if (!same(got[i], want[i]))
            fail_msg("%s: element %lld is %g, wanted %g", what, (long long)i, got[i], want[i]);
    free(got);
}

/* ---- Unary ----------------------------------------------------------------------------------- */

typedef enum { RELU, NEG, ABS, SQUARE, SIGN } unary_t;

/* An integer result as the dtype keeps it: its low bits (int8's, uint32's...). */
static double wrap(tp_dtype_t dtype, int64_t v) {
    uint64_t bits = (uint64_t)v;
    switch (dtype) {
    case TP_INT8: return (int8_t)(uint8_t)bits;
    case TP_INT16: return (int16_t)(uint16_t)bits;
    case TP_INT32: return (int32_t)(uint32_t)bits;
    case TP_UINT8: return (uint8_t)bits;
    case TP_UINT32: return (uint32_t)bits;
    default: return (double)v; /* int64: the values here never overflow it */
    }
}

static double unary_reference(unary_t op, tp_dtype_t dtype, double v) {
    bool is_float = dtype == TP_FLOAT32 || dtype == TP_FLOAT64;
    if (!is_float) {
        int64_t i = (int64_t)v;
        switch (op) {
        case RELU: return i < 0 ? 0 : (double)i;
        case NEG: return wrap(dtype, -i);
        case ABS: return wrap(dtype, i < 0 ? -i : i);
        case SQUARE: return wrap(dtype, i * i);
        case SIGN: return i > 0 ? 1 : i < 0 ? -1 : 0;
        }
    }
    switch (op) {
    case RELU: return v < 0 ? 0 : v;
    case NEG: return -v;
    case ABS: return fabs(v);
    case SQUARE: return dtype == TP_FLOAT32 ? (double)((float)v * (float)v) : v * v;
    case SIGN: return v > 0 ? 1 : v < 0 ? -1 : v;
    }
    return v;
}

static tp_status_t *run_unary(tp_context_t *c, unary_t op, tp_tensor_t *x, tp_tensor_t **y) {
    switch (op) {
    case RELU: return tp_relu(c, x, y);
    case NEG: return tp_neg(c, x, y);
    case ABS: return tp_abs(c, x, y);
    case SQUARE: return tp_square(c, x, y);
    case SIGN: return tp_sign(c, x, y);
    }
    return NULL;
}

static const tp_dtype_t number_dtypes[] = {TP_FLOAT32, TP_FLOAT64, TP_INT8, TP_INT16, TP_INT32,
                                           TP_INT64, TP_UINT8, TP_UINT32};

static void unary_ops_match_the_reference(void **state) {
    tp_context_t *c = *state;
    static const char *const names[] = {"Relu", "Neg", "Abs", "Square", "Sign"};
    for (int op = RELU; op <= SIGN; op++)
        for (size_t d = 0; d < COUNT_OF(number_dtypes); d++)
            for (size_t s = 0; s < COUNT_OF(sizes); s++) {
                tp_dtype_t dtype = number_dtypes[d];
                int64_t n = sizes[s];
                tp_tensor_t *x = make(c, dtype, TP_SHAPE(n), 0, false), *y = NULL;
                assert_ok(run_unary(c, (unary_t)op, x, &y));
                double *want = malloc((size_t)(n + 1) * sizeof *want);
                assert_non_null(want);
                for (int64_t i = 0; i < n; i++)
                    want[i] = unary_reference((unary_t)op, dtype,
                                              as_dtype(dtype, value_at(dtype, i, 0, false)));
                char what[64];
                snprintf(what, sizeof what, "%s %s [%lld]", names[op], tp_dtype_name(dtype),
                         (long long)n);
                expect(y, want, n, what);
                free(want);
                tp_tensor_release(x);
                tp_tensor_release(y);
            }
}

/* ---- Broadcasting binary ops, comparisons and Select -------------------------------------- */

typedef struct {
    tp_shape_t x, y, out;
} shapes_t;

/* Same shape, a row, a column, a scalar on either side, and empty. */
static const shapes_t broadcasts[] = {
    {TP_SHAPE(BIG), TP_SHAPE(BIG), TP_SHAPE(BIG)},
    {TP_SHAPE(13), TP_SHAPE(13), TP_SHAPE(13)},
    {TP_SHAPE(ROWS, COLUMNS), TP_SHAPE(COLUMNS), TP_SHAPE(ROWS, COLUMNS)},
    {TP_SHAPE(COLUMNS), TP_SHAPE(ROWS, COLUMNS), TP_SHAPE(ROWS, COLUMNS)},
    {TP_SHAPE(ROWS, COLUMNS), TP_SHAPE(ROWS, 1), TP_SHAPE(ROWS, COLUMNS)},
    {TP_SHAPE(ROWS, 1), TP_SHAPE(1, COLUMNS), TP_SHAPE(ROWS, COLUMNS)},
    {TP_SHAPE(ROWS, COLUMNS), TP_SCALAR_SHAPE, TP_SHAPE(ROWS, COLUMNS)},
    {TP_SCALAR_SHAPE, TP_SHAPE(ROWS, COLUMNS), TP_SHAPE(ROWS, COLUMNS)},
    {TP_SHAPE(0, COLUMNS), TP_SHAPE(COLUMNS), TP_SHAPE(0, COLUMNS)},
};

typedef enum { ADD, SUB, MUL, DIV, GREATER, LESS, EQUAL, MAXIMUM, MINIMUM } binary_t;

static double binary_reference(binary_t op, tp_dtype_t dtype, double u, double v) {
    switch (op) {
    case GREATER: return u > v;
    case LESS: return u < v;
    case EQUAL: return u == v;
    /* NaN wins; of equal values (0 and -0) y's is kept. */
    case MAXIMUM: return isnan(u) || isnan(v) ? NAN : u > v ? u : v;
    case MINIMUM: return isnan(u) || isnan(v) ? NAN : u < v ? u : v;
    default: break;
    }
    if (dtype == TP_FLOAT32) {
        float a = (float)u, b = (float)v;
        return op == ADD ? a + b : op == SUB ? a - b : op == MUL ? a * b : a / b;
    }
    if (dtype == TP_FLOAT64) return op == ADD ? u + v : op == SUB ? u - v : op == MUL ? u * v : u / v;
    int64_t a = (int64_t)u, b = (int64_t)v;
    return wrap(dtype, op == ADD ? a + b : op == SUB ? a - b : op == MUL ? a * b : a / b);
}

static tp_status_t *run_binary(tp_context_t *c, binary_t op, tp_tensor_t *x, tp_tensor_t *y,
                               tp_tensor_t **z) {
    switch (op) {
    case ADD: return tp_add(c, x, y, z);
    case SUB: return tp_sub(c, x, y, z);
    case MUL: return tp_mul(c, x, y, z);
    case DIV: return tp_div(c, x, y, z);
    case GREATER: return tp_greater(c, x, y, z);
    case LESS: return tp_less(c, x, y, z);
    case EQUAL: return tp_equal(c, x, y, z);
    case MAXIMUM: return tp_maximum(c, x, y, z);
    case MINIMUM: return tp_minimum(c, x, y, z);
    }
    return NULL;
}

static void binary_ops_match_the_reference(void **state) {
    tp_context_t *c = *state;
    static const char *const names[] = {"Add",  "Sub",   "Mul",     "Div",    "Greater",
                                        "Less", "Equal", "Maximum", "Minimum"};
    static const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64, TP_INT32, TP_INT8, TP_UINT8};
    for (int op = ADD; op <= MINIMUM; op++)
        for (size_t d = 0; d < COUNT_OF(dtypes); d++)
            for (size_t b = 0; b < COUNT_OF(broadcasts); b++) {
                tp_dtype_t dtype = dtypes[d];
                const shapes_t *s = &broadcasts[b];
                /* Integer division by zero is an error, tested elsewhere. */
                bool no_zero = op == DIV && dtype != TP_FLOAT32 && dtype != TP_FLOAT64;
                tp_tensor_t *x = make(c, dtype, s->x, 0, false);
                tp_tensor_t *y = make(c, dtype, s->y, 5, no_zero), *z = NULL;
                assert_ok(run_binary(c, (binary_t)op, x, y, &z));
                assert_tensor_shape(z, s->out);
                int64_t n = element_count(s->out);
                double *want = malloc((size_t)(n + 1) * sizeof *want);
                assert_non_null(want);
                for (int64_t i = 0; i < n; i++) {
                    int64_t xi = broadcast_source_index(s->x, s->out, i);
                    int64_t yi = broadcast_source_index(s->y, s->out, i);
                    double u = as_dtype(dtype, value_at(dtype, xi, 0, false));
                    double v = as_dtype(dtype, value_at(dtype, yi, 5, no_zero));
                    want[i] = binary_reference((binary_t)op, dtype, u, v);
                }
                char what[80];
                snprintf(what, sizeof what, "%s %s, broadcast %zu", names[op],
                         tp_dtype_name(dtype), b);
                expect(z, want, n, what);
                free(want);
                tp_tensor_release(x);
                tp_tensor_release(y);
                tp_tensor_release(z);
            }
}

static void bias_add_matches_the_reference(void **state) {
    tp_context_t *c = *state;
    static const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64, TP_INT32, TP_INT8};
    static const tp_shape_t shapes[] = {TP_SHAPE(3, 83, COLUMNS), TP_SHAPE(5, 7),
                                        TP_SHAPE(0, 7)};
    for (size_t d = 0; d < COUNT_OF(dtypes); d++)
        for (size_t k = 0; k < COUNT_OF(shapes); k++) {
            tp_dtype_t dtype = dtypes[d];
            tp_shape_t shape = shapes[k];
            int64_t channels = shape.dims[shape.rank - 1], n = element_count(shape);
            tp_tensor_t *x = make(c, dtype, shape, 0, false);
            tp_tensor_t *bias = make(c, dtype, TP_SHAPE(channels), 9, false), *z = NULL;
            assert_ok(tp_bias_add(c, x, bias, &z));
            double *want = malloc((size_t)(n + 1) * sizeof *want);
            assert_non_null(want);
            for (int64_t i = 0; i < n; i++)
                want[i] = binary_reference(ADD, dtype, as_dtype(dtype, value_at(dtype, i, 0, false)),
                                           as_dtype(dtype, value_at(dtype, i % channels, 9, false)));
            expect(z, want, n, tp_dtype_name(dtype));
            free(want);
            tp_tensor_release(x);
            tp_tensor_release(bias);
            tp_tensor_release(z);
        }
}

/* Select with a dense condition (the blend loops, one per element size) and a broadcast one. */
static void select_matches_the_reference(void **state) {
    tp_context_t *c = *state;
    static const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64, TP_INT8, TP_INT16, TP_INT64};
    static const shapes_t forms[] = {
        {TP_SHAPE(ROWS, COLUMNS), TP_SHAPE(ROWS, COLUMNS), TP_SHAPE(ROWS, COLUMNS)},
        {TP_SHAPE(COLUMNS), TP_SHAPE(ROWS, COLUMNS), TP_SHAPE(ROWS, COLUMNS)},
        {TP_SHAPE(ROWS, COLUMNS), TP_SHAPE(COLUMNS), TP_SHAPE(ROWS, COLUMNS)},
        {TP_SHAPE(0), TP_SHAPE(0), TP_SHAPE(0)},
        {TP_SHAPE(7), TP_SHAPE(7), TP_SHAPE(7)},
    };
    for (size_t d = 0; d < COUNT_OF(dtypes); d++)
        for (size_t f = 0; f < COUNT_OF(forms); f++) {
            tp_dtype_t dtype = dtypes[d];
            const shapes_t *s = &forms[f]; /* x: the condition's shape, y: t's, e: out's */
            int64_t nc = element_count(s->x), n = element_count(s->out);
            bool *flags = malloc((size_t)(nc + 1));
            assert_non_null(flags);
            for (int64_t i = 0; i < nc; i++) flags[i] = (i * 7) % 3 == 0;
            tp_tensor_t *condition = tensor_of_bytes(c, TP_BOOL, s->x, flags, (size_t)nc);
            tp_tensor_t *t = make(c, dtype, s->y, 0, false);
            tp_tensor_t *e = make(c, dtype, s->out, 4, false), *z = NULL;
            assert_ok(tp_select(c, condition, t, e, &z));
            double *want = malloc((size_t)(n + 1) * sizeof *want);
            assert_non_null(want);
            for (int64_t i = 0; i < n; i++) {
                int64_t yi = broadcast_source_index(s->y, s->out, i);
                want[i] = flags[broadcast_source_index(s->x, s->out, i)]
                              ? as_dtype(dtype, value_at(dtype, yi, 0, false))
                              : as_dtype(dtype, value_at(dtype, i, 4, false));
            }
            char what[64];
            snprintf(what, sizeof what, "Select %s, form %zu", tp_dtype_name(dtype), f);
            expect(z, want, n, what);
            free(want);
            free(flags);
            tp_tensor_release(condition);
            tp_tensor_release(t);
            tp_tensor_release(e);
            tp_tensor_release(z);
        }
}

/* ---- Cast ------------------------------------------------------------------------------------ */

/* Values that test each rule: fractions (truncated), beyond int32 and int64 (saturated), NaN
 * (0), infinities, -0; integers at their limits. */
static const double float_sources[] = {0.75, -0.75, 2.5, -3.5, 2147483647.0, 2147483648.0,
                                       -2147483649.0, 3e9, -3e9, 1e19, -1e19, NAN, INFINITY,
                                       -INFINITY, -0.0, 16777217.0, 1e-40, 2147483520.0,
                                       -2147483520.0, -2147483648.0, -NAN, 3e38, -3e38};
static const double integer_sources[] = {0, 1, -1, 2147483647.0, -2147483648.0, 16777217.0,
                                         123456789.0, -7};

static double cast_reference(tp_dtype_t to, double v) {
    switch (to) {
    case TP_FLOAT32: return (double)(float)v;
    case TP_FLOAT64: return v;
    case TP_BOOL: return v != 0;
    /* Integers have no -0: trunc(-0.75) + 0 is +0. INT64_MAX reads back as 2^63. */
    case TP_INT32:
        return isnan(v)               ? 0
               : v <= -2147483648.0   ? -2147483648.0
               : v >= 2147483648.0    ? 2147483647.0
                                      : trunc(v) + 0.0;
    case TP_INT64:
        return isnan(v) ? 0 : v <= -0x1p63 ? -0x1p63 : v >= 0x1p63 ? 0x1p63 : trunc(v) + 0.0;
    default: return v;
    }
}

static void casts_match_the_reference(void **state) {
    tp_context_t *c = *state;
    static const tp_dtype_t pairs[][2] = {
        {TP_FLOAT32, TP_FLOAT64}, {TP_FLOAT64, TP_FLOAT32}, {TP_FLOAT32, TP_INT32},
        {TP_FLOAT64, TP_INT32},   {TP_FLOAT32, TP_INT64},   {TP_FLOAT64, TP_INT64},
        {TP_INT32, TP_FLOAT32},   {TP_INT32, TP_FLOAT64},   {TP_INT64, TP_FLOAT32},
        {TP_INT64, TP_FLOAT64},   {TP_INT32, TP_INT64},     {TP_INT64, TP_INT32},
        {TP_BOOL, TP_FLOAT32},    {TP_FLOAT32, TP_BOOL},    {TP_FLOAT32, TP_FLOAT32},
        {TP_INT8, TP_INT8},
    };
    for (size_t p = 0; p < COUNT_OF(pairs); p++)
        for (size_t s = 0; s < COUNT_OF(sizes); s++) {
            tp_dtype_t from = pairs[p][0], to = pairs[p][1];
            bool from_float = from == TP_FLOAT32 || from == TP_FLOAT64;
            const double *sources = from_float ? float_sources : integer_sources;
            size_t num_sources = from_float ? COUNT_OF(float_sources) : COUNT_OF(integer_sources);
            int64_t n = sizes[s];
            double *values = malloc((size_t)(n + 1) * sizeof *values);
            double *want = malloc((size_t)(n + 1) * sizeof *want);
            assert_non_null(values);
            assert_non_null(want);
            for (int64_t i = 0; i < n; i++) {
                double v = sources[(size_t)i % num_sources];
                if (from == TP_BOOL) v = i % 3 == 0;
                if (from == TP_INT8) v = (double)(i % 200 - 100);
                if (from == TP_INT64 && i % 5 == 4) v = -0x1p62 - 1024.0; /* above 2^53 */
                values[i] = as_dtype(from, v);
                /* int64 to int32 keeps the low bits. */
                want[i] = from == TP_INT64 && to == TP_INT32
                              ? wrap(TP_INT32, (int64_t)values[i])
                              : cast_reference(to, values[i]);
            }
            tp_tensor_t *x = tensor_of_doubles(c, from, TP_SHAPE(n), values), *y = NULL;
            assert_ok(tp_cast(c, x, to, &y));
            char what[64];
            snprintf(what, sizeof what, "Cast %s to %s [%lld]", tp_dtype_name(from),
                     tp_dtype_name(to), (long long)n);
            expect(y, want, n, what);
            free(values);
            free(want);
            tp_tensor_release(x);
            tp_tensor_release(y);
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(unary_ops_match_the_reference, cpu_context_setup,
                                        cpu_context_teardown),
        cmocka_unit_test_setup_teardown(binary_ops_match_the_reference, cpu_context_setup,
                                        cpu_context_teardown),
        cmocka_unit_test_setup_teardown(bias_add_matches_the_reference, cpu_context_setup,
                                        cpu_context_teardown),
        cmocka_unit_test_setup_teardown(select_matches_the_reference, cpu_context_setup,
                                        cpu_context_teardown),
        cmocka_unit_test_setup_teardown(casts_match_the_reference, cpu_context_setup,
                                        cpu_context_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
