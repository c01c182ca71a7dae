/* SPDX-License-Identifier: Apache-2.0 */
/* The dtypes of ABI 1.7 (float16, bfloat16, int8, int16, uint16, uint32, uint64) through the
 * CPU's kernels: Cast between every pair, element-wise ops, reductions, MatMul, the value-making
 * ops and the bad calls. Expected values are worked out by hand (the comments say how) or are
 * bit patterns of the formats' definitions; the 16-bit conversions themselves are tested
 * exhaustively in test_float16.c. */
#include "cpu_fixture.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "base/dtype.h"
#include "tensorplug/float16.h"

static const tp_dtype_t every_dtype[] = {TP_FLOAT32, TP_FLOAT64, TP_INT32,    TP_INT64,
                                         TP_UINT8,   TP_BOOL,    TP_FLOAT16,  TP_BFLOAT16,
                                         TP_INT8,    TP_INT16,   TP_UINT16,   TP_UINT32,
                                         TP_UINT64};
static const tp_dtype_t number_dtypes[] = {TP_FLOAT32, TP_FLOAT64, TP_FLOAT16, TP_BFLOAT16,
                                           TP_INT8,    TP_INT16,   TP_INT32,   TP_INT64,
                                           TP_UINT8,   TP_UINT16,  TP_UINT32,  TP_UINT64};

/* ---- Tensors from and to doubles ------------------------------------------------------------- */

static bool is_float(tp_dtype_t dtype) {
    return dtype == TP_FLOAT32 || dtype == TP_FLOAT64 || dtype == TP_FLOAT16 ||
           dtype == TP_BFLOAT16;
}

static bool is_unsigned(tp_dtype_t dtype) {
    return dtype == TP_UINT8 || dtype == TP_UINT16 || dtype == TP_UINT32 || dtype == TP_UINT64;
}

/* Reads a small tensor and releases it; fails on another dtype or element count. */
enum { MAX_READ = 64 };
typedef struct {
    unsigned char bytes[MAX_READ * 8];
    size_t count;
} read_t;

static void take(tp_tensor_t *t, tp_dtype_t dtype, size_t count, read_t *out) {
    assert_non_null(t);
    tp_dtype_t got = tp_tensor_dtype(t);
    size_t size = tp_tensor_byte_size(t);
    out->count = (size_t)tp_tensor_num_elements(t);
    tp_status_t *status = size <= sizeof out->bytes ? tp_tensor_read(t, out->bytes, size) : NULL;
    tp_tensor_release(t);
    assert_ok(status);
    if (got != dtype) fail_msg("dtype %s, wanted %s", tp_dtype_name(got), tp_dtype_name(dtype));
    assert_int_equal(out->count, count);
}

/* The values, exactly (NaN as NaN, -0 as 0); releases t. */
static void expect_doubles(tp_tensor_t *t, tp_dtype_t dtype, const double *want, size_t count) {
    read_t got;
    take(t, dtype, count, &got);
    for (size_t i = 0; i < count; i++) {
        double g = tp_dtype_load_double(got.bytes, dtype, (int64_t)i);
        if (isnan(want[i]) ? !isnan(g) : g != want[i])
            fail_msg("%s element %zu is %.17g, wanted %.17g", tp_dtype_name(dtype), i, g,
                     want[i]);
    }
}
#define EXPECT(t, dtype, ...)                                                                  \
    expect_doubles((t), (dtype), (const double[]){__VA_ARGS__},                                \
                   COUNT_OF(((const double[]){__VA_ARGS__})))

/* The bytes, exactly; releases t. */
static void expect_bytes(tp_tensor_t *t, tp_dtype_t dtype, const void *want, size_t size) {
    read_t got;
    size_t element = tp_dtype_size(dtype);
    take(t, dtype, size / element, &got);
    for (size_t i = 0; i < size / element; i++)
        if (memcmp(got.bytes + i * element, (const char *)want + i * element, element) != 0) {
            unsigned long long g = 0, w = 0;
            memcpy(&g, got.bytes + i * element, element);
            memcpy(&w, (const char *)want + i * element, element);
            fail_msg("%s element %zu has bits 0x%llx, wanted 0x%llx", tp_dtype_name(dtype), i, g,
                     w);
        }
}
#define EXPECT_TYPED(t, dtype, ctype, ...)                                                     \
    expect_bytes((t), (dtype), (const ctype[]){__VA_ARGS__},                                   \
                 sizeof((const ctype[]){__VA_ARGS__}))

/* A refused call: its status, and its output left as it was, NULL. */
static void expect_refusal(tp_status_t *status, tp_tensor_t *const *out, tp_code_t code,
                           const char *fragment) {
    assert_error(status, code, fragment);
    assert_null(*out);
}

/* ---- Cast ------------------------------------------------------------------------------------ */

/* Small whole numbers are exact in every dtype: every one of the 169 pairs carries them over,
 * and a bool takes 1 for each that is not 0. */
static void cast_every_pair_carries_small_numbers(void **state) {
    tp_context_t *c = *state;
    const double values[] = {0, 1, 2, 3, 100, 127};
    for (size_t f = 0; f < COUNT_OF(every_dtype); f++) {
        tp_dtype_t from = every_dtype[f];
        tp_tensor_t *x = tensor_of_doubles(c, from, TP_SHAPE(6), values);
        for (size_t t = 0; t < COUNT_OF(every_dtype); t++) {
            tp_dtype_t to = every_dtype[t];
            double want[6];
            for (size_t i = 0; i < 6; i++)
                want[i] = from == TP_BOOL || to == TP_BOOL ? values[i] != 0 : values[i];
            tp_tensor_t *y;
            assert_ok(tp_cast(c, x, to, &y));
            expect_doubles(y, to, want, 6);
        }
        tp_tensor_release(x);
    }
}

/* Floats to integers saturate at the dtype's limits and take NaN to 0; in between they
 * truncate towards zero. */
static void cast_floats_to_integers_saturates(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x =
        TENSOR_OF(c, TP_FLOAT32, float, TP_SHAPE(12), NAN, -INFINITY, -1e30f, -129.5f, -128.75f,
                  -0.875f, 0.875f, 127.875f, 128.0f, 300.0f, 1e30f, INFINITY);
    tp_tensor_t *y;
    assert_ok(tp_cast(c, x, TP_INT8, &y));
    EXPECT_TYPED(y, TP_INT8, int8_t, 0, -128, -128, -128, -128, 0, 0, 127, 127, 127, 127, 127);
    assert_ok(tp_cast(c, x, TP_INT16, &y));
    EXPECT_TYPED(y, TP_INT16, int16_t, 0, -32768, -32768, -129, -128, 0, 0, 127, 128, 300,
                 32767, 32767);
    assert_ok(tp_cast(c, x, TP_UINT16, &y));
    EXPECT_TYPED(y, TP_UINT16, uint16_t, 0, 0, 0, 0, 0, 0, 0, 127, 128, 300, 65535, 65535);
    assert_ok(tp_cast(c, x, TP_UINT32, &y));
    EXPECT_TYPED(y, TP_UINT32, uint32_t, 0, 0, 0, 0, 0, 0, 0, 127, 128, 300, UINT32_MAX,
                 UINT32_MAX);
    tp_tensor_release(x);
    /* 2^64 is past uint64's range; the largest double below it, 2^64 - 2048, is not. */
    x = TENSOR_OF(c, TP_FLOAT64, double, TP_SHAPE(4), 18446744073709551616.0,
                  18446744073709549568.0, 9.3e18, -1.0);
    assert_ok(tp_cast(c, x, TP_UINT64, &y));
    EXPECT_TYPED(y, TP_UINT64, uint64_t, UINT64_MAX, 18446744073709549568u,
                 9300000000000000000u, 0);
    tp_tensor_release(x);
    /* The 16-bit floats saturate the same way: float16's extremes against int16. */
    x = TENSOR_OF(c, TP_FLOAT16, uint16_t, TP_SHAPE(4), 0x7bff /* 65504 */, 0xfbff /* -65504 */,
                  0x7e00 /* NaN */, 0xc500 /* -5 */);
    assert_ok(tp_cast(c, x, TP_INT16, &y));
    EXPECT_TYPED(y, TP_INT16, int16_t, 32767, -32768, 0, -5);
    assert_ok(tp_cast(c, x, TP_UINT16, &y));
    EXPECT_TYPED(y, TP_UINT16, uint16_t, 65504, 0, 0, 0);
    tp_tensor_release(x);
}

/* Integers to narrower integers keep the low bits; a signed value is sign-extended into a
 * wider unsigned one and an unsigned one zero-extended, as C and NumPy convert. */
static void cast_integers_keep_the_low_bits(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = TENSOR_OF(c, TP_INT64, int64_t, TP_SHAPE(5), -1, 256, 65537, -32769,
                               INT64_C(4294967303) /* 2^32 + 7 */);
    tp_tensor_t *y;
    assert_ok(tp_cast(c, x, TP_INT8, &y));
    EXPECT_TYPED(y, TP_INT8, int8_t, -1, 0, 1, -1, 7);
    assert_ok(tp_cast(c, x, TP_INT16, &y));
    EXPECT_TYPED(y, TP_INT16, int16_t, -1, 256, 1, 32767, 7);
    assert_ok(tp_cast(c, x, TP_UINT16, &y));
    EXPECT_TYPED(y, TP_UINT16, uint16_t, 65535, 256, 1, 32767, 7);
    assert_ok(tp_cast(c, x, TP_UINT32, &y));
    EXPECT_TYPED(y, TP_UINT32, uint32_t, UINT32_MAX, 256, 65537, 4294934527u, 7);
    assert_ok(tp_cast(c, x, TP_UINT64, &y));
    EXPECT_TYPED(y, TP_UINT64, uint64_t, UINT64_MAX, 256, 65537, 18446744073709518847u,
                 4294967303u);
    tp_tensor_release(x);
    x = TENSOR_OF(c, TP_UINT32, uint32_t, TP_SHAPE(2), UINT32_MAX, 5);
    assert_ok(tp_cast(c, x, TP_INT64, &y));
    EXPECT_TYPED(y, TP_INT64, int64_t, 4294967295, 5);
    tp_tensor_release(x);
    x = TENSOR_OF(c, TP_UINT64, uint64_t, TP_SHAPE(2), UINT64_MAX, UINT64_C(9223372036854775813));
    assert_ok(tp_cast(c, x, TP_INT64, &y));
    EXPECT_TYPED(y, TP_INT64, int64_t, -1, INT64_MIN + 5);
    /* Correctly rounded: 2^64 - 1 is 2^64 in float32 and float64, 2^63 + 5 is 2^63. */
    assert_ok(tp_cast(c, x, TP_FLOAT64, &y));
    EXPECT(y, TP_FLOAT64, 18446744073709551616.0, 9223372036854775808.0);
    assert_ok(tp_cast(c, x, TP_FLOAT32, &y));
    EXPECT(y, TP_FLOAT32, 18446744073709551616.0, 9223372036854775808.0);
    tp_tensor_release(x);
    x = TENSOR_OF(c, TP_INT8, int8_t, TP_SHAPE(2), -1, -128);
    assert_ok(tp_cast(c, x, TP_UINT64, &y));
    EXPECT_TYPED(y, TP_UINT64, uint64_t, UINT64_MAX, UINT64_MAX - 127);
    tp_tensor_release(x);
}

/* To the 16-bit floats everything rounds once, to nearest even: integers straight from their
 * own value (not through a double, which rounds first above 2^53), float64 straight from its
 * own (not through a float32). */
static void cast_to_16_bit_floats_rounds_once(void **state) {
    tp_context_t *c = *state;
    /* float16 holds every integer to 2048, then every second one: 2049 and 2051 are ties. */
    tp_tensor_t *x =
        TENSOR_OF(c, TP_INT32, int32_t, TP_SHAPE(6), 2049, 2051, 65519, 65520, 70000, -2049);
    tp_tensor_t *y;
    assert_ok(tp_cast(c, x, TP_FLOAT16, &y));
    EXPECT(y, TP_FLOAT16, 2048, 2052, 65504, INFINITY, INFINITY, -2048);
    tp_tensor_release(x);
    /* bfloat16 steps by 2^53 at 2^60: 2^60 + 2^52 is a tie (to even, 2^60), one more is past it
     * (up). Through a double, 2^60 + 2^52 + 1 would first round to the tie. */
    x = TENSOR_OF(c, TP_INT64, int64_t, TP_SHAPE(3), (INT64_C(1) << 60) + (INT64_C(1) << 52),
                  (INT64_C(1) << 60) + (INT64_C(1) << 52) + 1, INT64_MIN);
    assert_ok(tp_cast(c, x, TP_BFLOAT16, &y));
    EXPECT_TYPED(y, TP_BFLOAT16, uint16_t, 0x5d80, 0x5d81, 0xdf00 /* -2^63 */);
    tp_tensor_release(x);
    x = TENSOR_OF(c, TP_UINT64, uint64_t, TP_SHAPE(1), UINT64_MAX);
    assert_ok(tp_cast(c, x, TP_BFLOAT16, &y));
    EXPECT_TYPED(y, TP_BFLOAT16, uint16_t, 0x5f80 /* 2^64 */);
    tp_tensor_release(x);
    /* 1 + 2^-11 + 2^-40 is above float16's tie at 1 + 2^-11, but float32 rounds it onto the tie,
     * which would then go to even, 1. The same for bfloat16 at 1 + 2^-8 + 2^-30. */
    x = TENSOR_OF(c, TP_FLOAT64, double, TP_SHAPE(2), 1 + ldexp(1, -11) + ldexp(1, -40),
                  1 + ldexp(1, -8) + ldexp(1, -30));
    assert_ok(tp_cast(c, x, TP_FLOAT16, &y));
    EXPECT_TYPED(y, TP_FLOAT16, uint16_t, 0x3c01, 0x3c04);
    assert_ok(tp_cast(c, x, TP_BFLOAT16, &y));
    EXPECT_TYPED(y, TP_BFLOAT16, uint16_t, 0x3f80, 0x3f81);
    tp_tensor_release(x);
    /* Between the two 16-bit floats: exact where the other holds the value, rounded where not,
     * infinite past float16's range. */
    x = TENSOR_OF(c, TP_BFLOAT16, uint16_t, TP_SHAPE(4), 0x3f81 /* 1 + 2^-7 */, 0x7f7f /* 3.4e38 */,
                  0x3380 /* 2^-24 */, 0x3f8f /* 1.1171875 */);
    assert_ok(tp_cast(c, x, TP_FLOAT16, &y));
    EXPECT_TYPED(y, TP_FLOAT16, uint16_t, 0x3c08, 0x7c00, 0x0001, 0x3c78);
    tp_tensor_release(x);
    x = TENSOR_OF(c, TP_FLOAT16, uint16_t, TP_SHAPE(3), 0x0001, 0x3555 /* 0.33325 */, 0x7c00);
    assert_ok(tp_cast(c, x, TP_BFLOAT16, &y));
    /* 0.33325195 is 1.0101010101 x 2^-2; to 7 fraction bits, 1.0101011 (past the half). */
    EXPECT_TYPED(y, TP_BFLOAT16, uint16_t, 0x3380, 0x3eab, 0x7f80);
    assert_ok(tp_cast(c, x, TP_INT32, &y));
    EXPECT_TYPED(y, TP_INT32, int32_t, 0, 0, INT32_MAX);
    tp_tensor_release(x);
    x = TENSOR_OF(c, TP_BOOL, bool, TP_SHAPE(2), true, false);
    assert_ok(tp_cast(c, x, TP_FLOAT16, &y));
    EXPECT_TYPED(y, TP_FLOAT16, uint16_t, 0x3c00, 0x0000);
    tp_tensor_release(x);
}

/* ---- Element-wise ops on every number dtype -------------------------------------------------- */

/* Values whose results every number dtype holds exactly: each op gives the same numbers in
 * all twelve (Div truncates for integers: 11 / 4 is 2, or 2.75). */
static void arithmetic_on_every_number_dtype(void **state) {
    tp_context_t *c = *state;
    for (size_t d = 0; d < COUNT_OF(number_dtypes); d++) {
        tp_dtype_t dtype = number_dtypes[d];
        tp_tensor_t *x = tensor_of_doubles(c, dtype, TP_SHAPE(4), (const double[]){6, 3, 0, 11});
        tp_tensor_t *y = tensor_of_doubles(c, dtype, TP_SHAPE(4), (const double[]){2, 3, 5, 4});
        tp_tensor_t *z = tensor_of_doubles(c, dtype, TP_SHAPE(4), (const double[]){2, 3, 0, 4});
        tp_tensor_t *out;
        assert_ok(tp_add(c, x, y, &out));
        EXPECT(out, dtype, 8, 6, 5, 15);
        assert_ok(tp_sub(c, x, z, &out));
        EXPECT(out, dtype, 4, 0, 0, 7);
        assert_ok(tp_mul(c, x, y, &out));
        EXPECT(out, dtype, 12, 9, 0, 44);
        assert_ok(tp_div(c, x, y, &out));
        EXPECT(out, dtype, 3, 1, 0, is_float(dtype) ? 2.75 : 2);
        assert_ok(tp_square(c, x, &out));
        EXPECT(out, dtype, 36, 9, 0, 121);
        assert_ok(tp_abs(c, x, &out));
        EXPECT(out, dtype, 6, 3, 0, 11);
        assert_ok(tp_relu(c, x, &out));
        EXPECT(out, dtype, 6, 3, 0, 11);
        /* Neg of an unsigned value wraps: 2^bits - v. */
        double wrap = is_unsigned(dtype) ? ldexp(1, 8 * (int)tp_dtype_size(dtype)) : 0;
        assert_ok(tp_neg(c, y, &out));
        EXPECT(out, dtype, wrap - 2, wrap - 3, wrap - 5, wrap - 4);
        tp_tensor_t *pair[2] = {x, y};
        assert_ok(tp_add_n(c, pair, 2, &out));
        EXPECT(out, dtype, 8, 6, 5, 15);
        /* Broadcasting a row over a matrix. */
        tp_tensor_t *matrix =
            tensor_of_doubles(c, dtype, TP_SHAPE(2, 2), (const double[]){1, 2, 3, 4});
        tp_tensor_t *row = tensor_of_doubles(c, dtype, TP_SHAPE(2), (const double[]){10, 20});
        assert_ok(tp_add(c, matrix, row, &out));
        EXPECT(out, dtype, 11, 22, 13, 24);
        assert_ok(tp_bias_add(c, matrix, row, &out));
        EXPECT(out, dtype, 11, 22, 13, 24);
        tp_tensor_release(matrix);
        tp_tensor_release(row);
        tp_tensor_release(x);
        tp_tensor_release(y);
        tp_tensor_release(z);
    }
}

/* Integer arithmetic wraps modulo 2^bits, in every width, and never traps. */
static void integer_arithmetic_wraps(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *a = TENSOR_OF(c, TP_INT8, int8_t, TP_SHAPE(3), 127, -128, -128);
    tp_tensor_t *b = TENSOR_OF(c, TP_INT8, int8_t, TP_SHAPE(3), 1, 1, -1);
    tp_tensor_t *y;
    assert_ok(tp_add(c, a, b, &y));
    EXPECT_TYPED(y, TP_INT8, int8_t, -128, -127, 127);
    assert_ok(tp_sub(c, a, b, &y));
    EXPECT_TYPED(y, TP_INT8, int8_t, 126, 127, -127);
    assert_ok(tp_div(c, a, b, &y)); /* -128 / -1 wraps to itself */
    EXPECT_TYPED(y, TP_INT8, int8_t, 127, -128, -128);
    assert_ok(tp_neg(c, a, &y));
    EXPECT_TYPED(y, TP_INT8, int8_t, -127, -128, -128);
    assert_ok(tp_abs(c, a, &y));
    EXPECT_TYPED(y, TP_INT8, int8_t, 127, -128, -128);
    tp_tensor_t *three[3] = {a, a, b};
    assert_ok(tp_add_n(c, three, 3, &y)); /* 255, -255, -257 modulo 256 */
    EXPECT_TYPED(y, TP_INT8, int8_t, -1, 1, -1);
    tp_tensor_release(a);
    tp_tensor_release(b);
    /* 300 * 300 = 90000, which is 24464 modulo 65536 (and overflows int, which uint16_t
     * operands would be promoted to). */
    a = TENSOR_OF(c, TP_UINT16, uint16_t, TP_SHAPE(3), 300, 0, 65535);
    b = TENSOR_OF(c, TP_UINT16, uint16_t, TP_SHAPE(3), 300, 1, 65535);
    assert_ok(tp_mul(c, a, b, &y));
    EXPECT_TYPED(y, TP_UINT16, uint16_t, 24464, 0, 1);
    assert_ok(tp_sub(c, a, b, &y));
    EXPECT_TYPED(y, TP_UINT16, uint16_t, 0, 65535, 0);
    assert_ok(tp_square(c, a, &y));
    EXPECT_TYPED(y, TP_UINT16, uint16_t, 24464, 0, 1);
    tp_tensor_release(a);
    tp_tensor_release(b);
    a = TENSOR_OF(c, TP_UINT64, uint64_t, TP_SHAPE(2), UINT64_MAX, UINT64_C(1) << 63);
    b = TENSOR_OF(c, TP_UINT64, uint64_t, TP_SHAPE(2), 3, 2);
    assert_ok(tp_div(c, a, b, &y)); /* unsigned division, no sign in sight */
    EXPECT_TYPED(y, TP_UINT64, uint64_t, 6148914691236517205u, UINT64_C(1) << 62);
    assert_ok(tp_add(c, a, b, &y));
    EXPECT_TYPED(y, TP_UINT64, uint64_t, 2, (UINT64_C(1) << 63) + 2);
    assert_ok(tp_relu(c, a, &y)); /* unsigned: nothing is negative */
    EXPECT_TYPED(y, TP_UINT64, uint64_t, UINT64_MAX, UINT64_C(1) << 63);
    tp_tensor_release(a);
    tp_tensor_release(b);
    a = TENSOR_OF(c, TP_INT16, int16_t, TP_SHAPE(4), -5, 5, -32768, 0);
    assert_ok(tp_relu(c, a, &y));
    EXPECT_TYPED(y, TP_INT16, int16_t, 0, 5, 0, 0);
    assert_ok(tp_abs(c, a, &y));
    EXPECT_TYPED(y, TP_INT16, int16_t, 5, 5, -32768, 0);
    tp_tensor_release(a);
    a = TENSOR_OF(c, TP_UINT32, uint32_t, TP_SHAPE(2), 1, 0);
    assert_ok(tp_neg(c, a, &y));
    EXPECT_TYPED(y, TP_UINT32, uint32_t, UINT32_MAX, 0);
    tp_tensor_release(a);
}

/* Division by zero is an error for every integer dtype, naming the op; floats give
 * infinities. */
static void integer_division_by_zero_is_an_error(void **state) {
    tp_context_t *c = *state;
    const tp_dtype_t integers[] = {TP_INT8, TP_INT16, TP_UINT8, TP_UINT16, TP_UINT32, TP_UINT64};
    for (size_t d = 0; d < COUNT_OF(integers); d++) {
        tp_tensor_t *x = tensor_of_doubles(c, integers[d], TP_SHAPE(2), (const double[]){4, 1});
        tp_tensor_t *zero = tensor_of_doubles(c, integers[d], TP_SHAPE(2), (const double[]){2, 0});
        tp_tensor_t *y = NULL;
        expect_refusal(tp_div(c, x, zero, &y), &y, TP_INVALID_ARGUMENT,
                       "Div: integer division by zero");
        tp_tensor_release(x);
        tp_tensor_release(zero);
    }
    tp_tensor_t *x = TENSOR_OF(c, TP_FLOAT16, uint16_t, TP_SHAPE(2), 0x3c00, 0xbc00);
    tp_tensor_t *zero = TENSOR_OF(c, TP_FLOAT16, uint16_t, TP_SHAPE(2), 0x0000, 0x0000);
    tp_tensor_t *y;
    assert_ok(tp_div(c, x, zero, &y));
    EXPECT(y, TP_FLOAT16, INFINITY, -INFINITY);
    tp_tensor_release(x);
    tp_tensor_release(zero);
}

/* The 16-bit floats compute in float32 and round the result once, to nearest even: ties go
 * to the even neighbour, results past the largest finite value overflow, tiny ones are kept as
 * subnormals. */
static void half_arithmetic_rounds_once_to_nearest_even(void **state) {
    tp_context_t *c = *state;
    /* float16 steps by 2 from 2048 and by 32 from 32768; its largest value is 65504. */
    tp_tensor_t *a = TENSOR_OF(c, TP_FLOAT16, uint16_t, TP_SHAPE(6), 0x6800 /* 2048 */, 0x6800,
                               0x7bff /* 65504 */, 0x7bff, 0x3c00 /* 1 */, 0x0400 /* 2^-14 */);
    tp_tensor_t *b =
        TENSOR_OF(c, TP_FLOAT16, uint16_t, TP_SHAPE(6), 0x3c00 /* 1 */, 0x4200 /* 3 */,
                  0x4b80 /* 15 */, 0x4c00 /* 16 */, 0x1000 /* 2^-11 */, 0x3800 /* 0.5 */);
    tp_tensor_t *y;
    /* 2049 and 2051 are ties; 65519 stays, 65520 overflows; 1 + 2^-11 is a tie, and
     * 0.5 + 2^-14 is nearer to 0.5 than to 0.5 + 2^-11. */
    assert_ok(tp_add(c, a, b, &y));
    EXPECT(y, TP_FLOAT16, 2048, 2052, 65504, INFINITY, 1, 0.5);
    assert_ok(tp_mul(c, a, b, &y)); /* 2^-14 * 0.5 is float16's subnormal 2^-15 */
    EXPECT(y, TP_FLOAT16, 2048, 6144, INFINITY, INFINITY, ldexp(1, -11), ldexp(1, -15));
    tp_tensor_release(a);
    tp_tensor_release(b);
    /* bfloat16 steps by 2 from 256. */
    a = TENSOR_OF(c, TP_BFLOAT16, uint16_t, TP_SHAPE(3), 0x4380 /* 256 */, 0x4380, 0x3f80 /* 1 */);
    b = TENSOR_OF(c, TP_BFLOAT16, uint16_t, TP_SHAPE(3), 0x3f80 /* 1 */, 0x4040 /* 3 */,
                  0x3b80 /* 2^-8 */);
    assert_ok(tp_add(c, a, b, &y));
    EXPECT(y, TP_BFLOAT16, 256, 260, 1);
    tp_tensor_release(a);
    tp_tensor_release(b);
}

/* The float-only functions on the 16-bit floats: float32's result rounded once. */
static void half_functions(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = TENSOR_OF(c, TP_FLOAT16, uint16_t, TP_SHAPE(4), 0x0000 /* 0 */, 0x3c00 /* 1 */,
                               0x4000 /* 2 */, 0x4a00 /* 12 */);
    tp_tensor_t *y;
    /* e = 2.71828 lies between 2.7167969 and 2.71875 (float16 steps by 2^-9 there): the
     * nearer is 2.71875. e^2 = 7.389 rounds to 7.390625 (steps of 2^-8). e^12 = 162755 is
     * past 65504. */
    assert_ok(tp_exp(c, x, &y));
    EXPECT(y, TP_FLOAT16, 1, 2.71875, 7.390625, INFINITY);
    /* sqrt(2) = 1.41421 between 1.4140625 and 1.4150391 (steps of 2^-10): 1.4140625;
     * sqrt(12) = 3.4641016 -> 3.46484375 (steps of 2^-9). */
    assert_ok(tp_sqrt(c, x, &y));
    EXPECT(y, TP_FLOAT16, 0, 1, 1.4140625, 3.46484375);
    /* ln 2 = 0.693147 -> 0.693359375 (steps of 2^-11); ln 12 = 2.4849 -> 2.484375. */
    assert_ok(tp_log(c, x, &y));
    EXPECT(y, TP_FLOAT16, -INFINITY, 0, 0.693359375, 2.484375);
    tp_tensor_release(x);
    x = TENSOR_OF(c, TP_BFLOAT16, uint16_t, TP_SHAPE(3), 0x0000, 0xbf80 /* -1 */, 0x4120 /* 10 */);
    /* sigmoid(-1) = 0.268941 -> 0.26953125 (steps of 2^-9); sigmoid(10) = 0.9999546 -> 1. */
    assert_ok(tp_sigmoid(c, x, &y));
    EXPECT(y, TP_BFLOAT16, 0.5, 0.26953125, 1);
    assert_ok(tp_tanh(c, x, &y)); /* tanh(-1) = -0.761594 -> -0.76171875 */
    EXPECT(y, TP_BFLOAT16, 0, -0.76171875, 1);
    tp_tensor_release(x);
    x = TENSOR_OF(c, TP_FLOAT16, uint16_t, TP_SHAPE(2, 2), 0x0000, 0x0000, 0x0000, 0x398c);
    /* Second row: 0 and 0.693359375 (ln 2 in float16): 1 / (1 + e^0.693359375) = 0.3332862
     * -> 0.333251953125 (steps of 2^-12), and 0.6667138 -> 0.66650390625 (steps of 2^-11). */
    assert_ok(tp_softmax(c, x, &y));
    EXPECT(y, TP_FLOAT16, 0.5, 0.5, 0.333251953125, 0.66650390625);
    tp_tensor_release(x);
}

/* Each thread stages its own calls, and keeps its own buffers: four threads adding float16
 * tensors of different sizes at once all get their own sums (and, under LeakSanitizer, each
 * thread's kept buffers are freed when it ends). */
struct half_sum_job {
    tp_context_t *context;
    int64_t count;
    bool ok;
};

static void *half_sums(void *arg) {
    struct half_sum_job *job = arg;
    enum { MAX = 1 << 16 };
    static _Thread_local uint16_t ones[MAX], got[MAX];
    for (int64_t i = 0; i < job->count; i++) ones[i] = 0x3c00;
    job->ok = true;
    for (int round = 0; round < 20 && job->ok; round++) {
        tp_tensor_t *x, *y;
        job->ok = tp_tensor_create(job->context, TP_FLOAT16, TP_SHAPE(job->count), ones,
                                   (size_t)job->count * 2, &x) == NULL;
        if (!job->ok) break;
        job->ok = tp_add(job->context, x, x, &y) == NULL;
        if (job->ok) {
            job->ok = tp_tensor_read(y, got, (size_t)job->count * 2) == NULL;
            for (int64_t i = 0; i < job->count && job->ok; i++) job->ok = got[i] == 0x4000;
            tp_tensor_release(y);
        }
        tp_tensor_release(x);
    }
    return NULL;
}

static void staging_is_per_thread(void **state) {
    struct half_sum_job jobs[4];
    pthread_t threads[4];
    for (int t = 0; t < 4; t++) {
        jobs[t] = (struct half_sum_job){*state, (int64_t)1000 << (2 * t), false}; /* to 64000 */
        assert_int_equal(pthread_create(&threads[t], NULL, half_sums, &jobs[t]), 0);
    }
    for (int t = 0; t < 4; t++) {
        assert_int_equal(pthread_join(threads[t], NULL), 0);
        assert_true(jobs[t].ok);
    }
}

/* ---- Reductions ------------------------------------------------------------------------------ */

static void reductions_on_every_number_dtype(void **state) {
    tp_context_t *c = *state;
    const int64_t rows[] = {1};
    for (size_t d = 0; d < COUNT_OF(number_dtypes); d++) {
        tp_dtype_t dtype = number_dtypes[d];
        tp_tensor_t *x =
            tensor_of_doubles(c, dtype, TP_SHAPE(2, 3), (const double[]){1, 2, 3, 4, 5, 9});
        tp_tensor_t *y;
        assert_ok(tp_sum(c, x, rows, 1, false, &y));
        EXPECT(y, dtype, 6, 18);
        assert_ok(tp_mean(c, x, rows, 1, false, &y));
        EXPECT(y, dtype, 2, 6);
        assert_ok(tp_max(c, x, NULL, 0, false, &y));
        EXPECT(y, dtype, 9);
        const int64_t columns[] = {0};
        assert_ok(tp_sum(c, x, columns, 1, true, &y));
        EXPECT(y, dtype, 5, 7, 12);
        tp_tensor_release(x);
    }
}

/* Integer means divide the exact 64-bit sum, whatever the dtype; sums wrap in the dtype. */
static void integer_reductions(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = TENSOR_OF(c, TP_INT8, int8_t, TP_SHAPE(3), 100, 100, 100), *y;
    assert_ok(tp_sum(c, x, NULL, 0, false, &y)); /* 300 modulo 256 = 44 */
    EXPECT_TYPED(y, TP_INT8, int8_t, 44);
    assert_ok(tp_mean(c, x, NULL, 0, false, &y));
    EXPECT_TYPED(y, TP_INT8, int8_t, 100);
    tp_tensor_release(x);
    x = TENSOR_OF(c, TP_INT32, int32_t, TP_SHAPE(3), 1 << 30, 1 << 30, 1 << 30);
    assert_ok(tp_mean(c, x, NULL, 0, false, &y));
    EXPECT_TYPED(y, TP_INT32, int32_t, 1 << 30);
    tp_tensor_release(x);
    x = TENSOR_OF(c, TP_INT16, int16_t, TP_SHAPE(2, 2), -5, -3, -100, -32768);
    const int64_t last[] = {-1};
    assert_ok(tp_max(c, x, last, 1, false, &y));
    EXPECT_TYPED(y, TP_INT16, int16_t, -3, -100);
    assert_ok(tp_mean(c, x, last, 1, false, &y)); /* truncated towards zero */
    EXPECT_TYPED(y, TP_INT16, int16_t, -4, -16434);
    tp_tensor_release(x);
    x = TENSOR_OF(c, TP_UINT64, uint64_t, TP_SHAPE(3), (UINT64_C(1) << 63) + 5, 7, 1);
    assert_ok(tp_max(c, x, NULL, 0, false, &y)); /* unsigned comparison */
    EXPECT_TYPED(y, TP_UINT64, uint64_t, (UINT64_C(1) << 63) + 5);
    assert_ok(tp_sum(c, x, NULL, 0, false, &y));
    EXPECT_TYPED(y, TP_UINT64, uint64_t, (UINT64_C(1) << 63) + 13);
    tp_tensor_release(x);
    x = TENSOR_OF(c, TP_UINT32, uint32_t, TP_SHAPE(2), UINT32_MAX, UINT32_MAX - 2);
    assert_ok(tp_mean(c, x, NULL, 0, false, &y)); /* the sum needs 33 bits */
    EXPECT_TYPED(y, TP_UINT32, uint32_t, UINT32_MAX - 1);
    tp_tensor_release(x);
    /* Of nothing: Max gives the dtype's smallest value, Sum and Mean 0. */
    const tp_dtype_t empty_dtypes[] = {TP_INT16, TP_UINT32};
    for (size_t d = 0; d < 2; d++) {
        x = tensor_of_doubles(c, empty_dtypes[d], TP_SHAPE(2, 0), NULL);
        assert_ok(tp_max(c, x, last, 1, false, &y));
        EXPECT(y, empty_dtypes[d], d == 0 ? -32768 : 0, d == 0 ? -32768 : 0);
        assert_ok(tp_mean(c, x, last, 1, false, &y));
        EXPECT(y, empty_dtypes[d], 0, 0);
        tp_tensor_release(x);
    }
}

/* The 16-bit floats accumulate in float32: a sum in float16 itself would stop growing at 2048
 * (2048 + 1 rounds back to 2048), and one in bfloat16 at 256. */
static void half_reductions_accumulate_in_float32(void **state) {
    tp_context_t *c = *state;
    uint16_t ones[4096];
    for (size_t i = 0; i < 4096; i++) ones[i] = 0x3c00;
    tp_tensor_t *x = tensor_of_bytes(c, TP_FLOAT16, TP_SHAPE(4096), ones, sizeof ones), *y;
    assert_ok(tp_sum(c, x, NULL, 0, false, &y));
    EXPECT(y, TP_FLOAT16, 4096);
    tp_tensor_release(x);
    for (size_t i = 0; i < 512; i++) ones[i] = 0x3f80;
    x = tensor_of_bytes(c, TP_BFLOAT16, TP_SHAPE(512), ones, 512 * sizeof *ones);
    assert_ok(tp_sum(c, x, NULL, 0, false, &y));
    EXPECT(y, TP_BFLOAT16, 512);
    tp_tensor_release(x);
    /* The mean of two 65504s is 65504, though their sum is no float16. */
    x = TENSOR_OF(c, TP_FLOAT16, uint16_t, TP_SHAPE(2), 0x7bff, 0x7bff);
    assert_ok(tp_mean(c, x, NULL, 0, false, &y));
    EXPECT(y, TP_FLOAT16, 65504);
    assert_ok(tp_sum(c, x, NULL, 0, false, &y));
    EXPECT(y, TP_FLOAT16, INFINITY);
    tp_tensor_release(x);
    x = TENSOR_OF(c, TP_FLOAT16, uint16_t, TP_SHAPE(3), 0x3c00, 0x7e00 /* NaN */, 0x4000);
    assert_ok(tp_max(c, x, NULL, 0, false, &y));
    EXPECT(y, TP_FLOAT16, NAN);
    tp_tensor_release(x);
}

/* ---- MatMul ---------------------------------------------------------------------------------- */

static void half_matmul_accumulates_in_float32(void **state) {
    tp_context_t *c = *state;
    const double a_values[] = {1, 2, 3, 4}, b_values[] = {5, 6, 7, 8};
    const tp_dtype_t halves[] = {TP_FLOAT16, TP_BFLOAT16};
    for (size_t d = 0; d < 2; d++) {
        tp_tensor_t *a = tensor_of_doubles(c, halves[d], TP_SHAPE(2, 2), a_values);
        tp_tensor_t *b = tensor_of_doubles(c, halves[d], TP_SHAPE(2, 2), b_values), *y;
        assert_ok(tp_matmul(c, a, b, false, false, &y));
        EXPECT(y, halves[d], 19, 22, 43, 50);
        assert_ok(tp_matmul(c, a, b, true, true, &y)); /* a^T b^T = (b a)^T */
        EXPECT(y, halves[d], 23, 31, 34, 46);
        tp_tensor_release(a);
        tp_tensor_release(b);
    }
    /* 256 + 1 + 1: 258 in float32, which bfloat16 holds; summed in bfloat16, each + 1 would
     * round back to 256. */
    tp_tensor_t *a = TENSOR_OF(c, TP_BFLOAT16, uint16_t, TP_SHAPE(1, 3), 0x4380, 0x3f80, 0x3f80);
    tp_tensor_t *b = TENSOR_OF(c, TP_BFLOAT16, uint16_t, TP_SHAPE(3, 1), 0x3f80, 0x3f80, 0x3f80);
    tp_tensor_t *y;
    assert_ok(tp_matmul(c, a, b, false, false, &y));
    EXPECT(y, TP_BFLOAT16, 258);
    tp_tensor_release(a);
    tp_tensor_release(b);
    uint16_t ones[4096];
    for (size_t i = 0; i < 4096; i++) ones[i] = 0x3c00;
    a = tensor_of_bytes(c, TP_FLOAT16, TP_SHAPE(1, 4096), ones, sizeof ones);
    b = tensor_of_bytes(c, TP_FLOAT16, TP_SHAPE(4096, 1), ones, sizeof ones);
    assert_ok(tp_matmul(c, a, b, false, false, &y));
    EXPECT(y, TP_FLOAT16, 4096);
    tp_tensor_release(a);
    tp_tensor_release(b);
}

/* ---- Values made by ops ---------------------------------------------------------------------- */

static void fills_and_copies_of_new_dtypes(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *x = TENSOR_OF(c, TP_FLOAT16, uint16_t, TP_SHAPE(3), 0x7d01 /* a signalling NaN */,
                               0x8000, 0x0001);
    tp_tensor_t *y;
    assert_ok(tp_ones_like(c, x, &y));
    EXPECT_TYPED(y, TP_FLOAT16, uint16_t, 0x3c00, 0x3c00, 0x3c00);
    assert_ok(tp_zeros_like(c, x, &y));
    EXPECT_TYPED(y, TP_FLOAT16, uint16_t, 0, 0, 0);
    assert_ok(tp_identity(c, x, &y)); /* bytes moved, not converted: the payload survives */
    EXPECT_TYPED(y, TP_FLOAT16, uint16_t, 0x7d01, 0x8000, 0x0001);
    tp_tensor_release(x);
    x = TENSOR_OF(c, TP_BFLOAT16, uint16_t, TP_SHAPE(2), 0x1234, 0x4321);
    assert_ok(tp_ones_like(c, x, &y));
    EXPECT_TYPED(y, TP_BFLOAT16, uint16_t, 0x3f80, 0x3f80);
    tp_tensor_release(x);
    x = TENSOR_OF(c, TP_UINT64, uint64_t, TP_SHAPE(5), 1, 2, 3, 4, 5);
    assert_ok(tp_ones_like(c, x, &y));
    EXPECT_TYPED(y, TP_UINT64, uint64_t, 1, 1, 1, 1, 1);
    tp_tensor_release(x);
    tp_tensor_t *seven = TENSOR_OF(c, TP_UINT16, uint16_t, TP_SCALAR_SHAPE, 65535);
    assert_ok(tp_fill(c, TP_SHAPE(3), seven, &y));
    EXPECT_TYPED(y, TP_UINT16, uint16_t, 65535, 65535, 65535);
    tp_tensor_release(seven);
    x = TENSOR_OF(c, TP_INT16, int16_t, TP_SHAPE(2, 3), 1, 2, 3, 4, 5, -6);
    assert_ok(tp_transpose(c, x, NULL, 0, &y));
    EXPECT_TYPED(y, TP_INT16, int16_t, 1, 4, 2, 5, 3, -6);
    assert_ok(tp_reshape(c, x, TP_SHAPE(3, 2), &y));
    EXPECT_TYPED(y, TP_INT16, int16_t, 1, 2, 3, 4, 5, -6);
    tp_tensor_release(x);
}

/* Random 16-bit floats are the float32 draws of the same seed, rounded once; uniform ones
 * stay below 1, at the largest value below it where rounding would reach 1. */
static void random_16_bit_floats(void **state) {
    tp_context_t *c = *state;
    enum { N = 4096 };
    tp_tensor_t *wide, *narrow;
    float draws[N];
    uint16_t bits[N];
    int clamped = 0;
    for (int normal = 0; normal < 2; normal++) {
        tp_status_t *(*random)(tp_context_t *, tp_dtype_t, tp_shape_t, int64_t, tp_tensor_t **) =
            normal ? tp_random_normal : tp_random_uniform;
        assert_ok(random(c, TP_FLOAT32, TP_SHAPE(N), 42, &wide));
        assert_ok(tp_tensor_read(wide, draws, sizeof draws));
        tp_tensor_release(wide);
        for (int h = 0; h < 2; h++) {
            tp_dtype_t dtype = h == 0 ? TP_FLOAT16 : TP_BFLOAT16;
            assert_ok(random(c, dtype, TP_SHAPE(N), 42, &narrow));
            assert_ok(tp_tensor_read(narrow, bits, sizeof bits));
            tp_tensor_release(narrow);
            for (size_t i = 0; i < N; i++) {
                uint16_t want = h == 0 ? tp_float16_from_float(draws[i])
                                       : tp_bfloat16_from_float(draws[i]);
                uint16_t below_one = h == 0 ? 0x3bff : 0x3f7f;
                if (!normal && want > below_one) {
                    want = below_one;
                    clamped++;
                }
                if (bits[i] != want)
                    fail_msg("%s draw %zu: bits 0x%04x, wanted 0x%04x", tp_dtype_name(dtype), i,
                             bits[i], want);
            }
        }
    }
    /* bfloat16 rounds every draw from 1 - 2^-9 up to 1: some of 4096 are there. */
    assert_true(clamped > 0);
}

/* ---- Gradient kernels ------------------------------------------------------------------------ */

static void activation_gradients_of_new_dtypes(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *inputs[2] = {TENSOR_OF(c, TP_INT8, int8_t, TP_SHAPE(3), 5, -7, 9),
                              TENSOR_OF(c, TP_INT8, int8_t, TP_SHAPE(3), 1, -1, 0)};
    tp_tensor_t *y;
    assert_ok(tp_execute(c, "ReluGrad", inputs, 2, NULL, 0, &y, 1));
    EXPECT_TYPED(y, TP_INT8, int8_t, 5, 0, 0);
    tp_tensor_release(inputs[0]);
    tp_tensor_release(inputs[1]);
    /* SigmoidGrad(y, dy) = dy y (1 - y): 0.5 * 0.5 * 1 = 0.25. */
    inputs[0] = TENSOR_OF(c, TP_FLOAT16, uint16_t, TP_SHAPE(1), 0x3800);
    inputs[1] = TENSOR_OF(c, TP_FLOAT16, uint16_t, TP_SHAPE(1), 0x3c00);
    assert_ok(tp_execute(c, "SigmoidGrad", inputs, 2, NULL, 0, &y, 1));
    EXPECT(y, TP_FLOAT16, 0.25);
    tp_tensor_release(inputs[0]);
    tp_tensor_release(inputs[1]);
}

/* ---- The other families' ops ----------------------------------------------------------------- */

/* Comparisons, ArgMax/ArgMin, Min, Sign and the array ops on the new dtypes: integers
 * compared and ordered as their own type (unsigned beyond the signed range), the 16-bit floats
 * as their float32 values, NaN unequal to everything. */
static void comparisons_and_selections(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *a = TENSOR_OF(c, TP_UINT64, uint64_t, TP_SHAPE(3), UINT64_MAX, 5, 7);
    tp_tensor_t *b = TENSOR_OF(c, TP_UINT64, uint64_t, TP_SHAPE(3), 1, 5, 9), *y;
    assert_ok(tp_greater(c, a, b, &y));
    EXPECT_TYPED(y, TP_BOOL, bool, true, false, false);
    assert_ok(tp_argmax(c, a, 0, TP_INT64, &y));
    EXPECT_TYPED(y, TP_INT64, int64_t, 0);
    assert_ok(tp_min(c, a, NULL, 0, false, &y));
    EXPECT_TYPED(y, TP_UINT64, uint64_t, 5);
    tp_tensor_release(a);
    tp_tensor_release(b);
    a = TENSOR_OF(c, TP_INT8, int8_t, TP_SHAPE(4), -128, 0, 3, -1);
    assert_ok(tp_sign(c, a, &y));
    EXPECT_TYPED(y, TP_INT8, int8_t, -1, 0, 1, -1);
    assert_ok(tp_argmin(c, a, 0, TP_INT32, &y));
    EXPECT_TYPED(y, TP_INT32, int32_t, 0);
    assert_ok(tp_min(c, a, NULL, 0, false, &y));
    EXPECT_TYPED(y, TP_INT8, int8_t, -128);
    tp_tensor_release(a);
    a = TENSOR_OF(c, TP_FLOAT16, uint16_t, TP_SHAPE(3), 0x3c00, 0x7e00 /* NaN */, 0xc000);
    b = TENSOR_OF(c, TP_FLOAT16, uint16_t, TP_SHAPE(3), 0x3c00, 0x7e00, 0x3c00);
    assert_ok(tp_equal(c, a, b, &y));
    EXPECT_TYPED(y, TP_BOOL, bool, true, false, false);
    assert_ok(tp_less(c, a, b, &y));
    EXPECT_TYPED(y, TP_BOOL, bool, false, false, true);
    assert_ok(tp_argmax(c, a, 0, TP_INT32, &y)); /* the first NaN wins */
    EXPECT_TYPED(y, TP_INT32, int32_t, 1);
    assert_ok(tp_sign(c, a, &y));
    EXPECT(y, TP_FLOAT16, 1, NAN, -1);
    tp_tensor_release(b);
    /* Rsqrt(4) = 0.5 exactly; Rsqrt(2) = 0.70710678 -> 0.70703125 (bfloat16, steps of 2^-8). */
    b = TENSOR_OF(c, TP_BFLOAT16, uint16_t, TP_SHAPE(2), 0x4080 /* 4 */, 0x4000 /* 2 */);
    assert_ok(tp_rsqrt(c, b, &y));
    EXPECT(y, TP_BFLOAT16, 0.5, 0.70703125);
    tp_tensor_t *condition = TENSOR_OF(c, TP_BOOL, bool, TP_SHAPE(3), true, false, true);
    tp_tensor_t *zeros;
    assert_ok(tp_zeros_like(c, a, &zeros));
    assert_ok(tp_select(c, condition, a, zeros, &y));
    EXPECT_TYPED(y, TP_FLOAT16, uint16_t, 0x3c00, 0x0000, 0xc000);
    tp_tensor_release(zeros);
    tp_tensor_release(condition);
    tp_tensor_release(a);
    tp_tensor_release(b);
}

static void array_ops_write_new_dtypes(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *indices = TENSOR_OF(c, TP_INT32, int32_t, TP_SHAPE(2), 1, 0), *y;
    /* on 0.1 in float16 is 0x2e66, off -2 is 0xc000. */
    assert_ok(tp_one_hot(c, indices, 2, 0.1, -2, -1, TP_FLOAT16, &y));
    EXPECT_TYPED(y, TP_FLOAT16, uint16_t, 0xc000, 0x2e66, 0x2e66, 0xc000);
    assert_ok(tp_one_hot(c, indices, 2, 65535, 7, -1, TP_UINT16, &y));
    EXPECT_TYPED(y, TP_UINT16, uint16_t, 7, 65535, 65535, 7);
    /* A value an integer dtype does not hold is refused, naming it. */
    y = NULL;
    expect_refusal(tp_one_hot(c, indices, 2, 128, 0, -1, TP_INT8, &y), &y, TP_INVALID_ARGUMENT,
                   "on_value 128 is not a value of int8");
    tp_tensor_t *x = TENSOR_OF(c, TP_BFLOAT16, uint16_t, TP_SHAPE(2), 0x3f80, 0x4000);
    const int64_t paddings[] = {1, 1};
    assert_ok(tp_pad(c, x, paddings, 1, 1.0 + 1.0 / 256, &y)); /* a tie: 1 */
    EXPECT_TYPED(y, TP_BFLOAT16, uint16_t, 0x3f80, 0x3f80, 0x4000, 0x3f80);
    tp_tensor_release(x);
    x = TENSOR_OF(c, TP_INT8, int8_t, TP_SHAPE(3, 2), 100, 1, 100, 2, -3, 3);
    tp_tensor_t *ids = TENSOR_OF(c, TP_INT32, int32_t, TP_SHAPE(3), 0, 0, 1);
    assert_ok(tp_unsorted_segment_sum(c, x, ids, 2, &y)); /* 200 wraps to -56 */
    EXPECT_TYPED(y, TP_INT8, int8_t, -56, 3, -3, 3);
    tp_tensor_release(ids);
    tp_tensor_release(x);
    tp_tensor_release(indices);
}

/* Convolution and pooling of 16-bit floats: float32's results, rounded once. A 1x1 image of
 * two channels against a 1x1 filter is a dot product: 1 * 0.5 + 3 * 0.25 = 1.25. */
static void convolution_and_pooling_of_halves(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *image = TENSOR_OF(c, TP_FLOAT16, uint16_t, TP_SHAPE(1, 1, 1, 2), 0x3c00, 0x4200);
    tp_tensor_t *filter = TENSOR_OF(c, TP_FLOAT16, uint16_t, TP_SHAPE(1, 1, 2, 1), 0x3800, 0x3400);
    tp_tensor_t *y;
    assert_ok(tp_conv2d(c, image, filter, NULL, &y));
    EXPECT(y, TP_FLOAT16, 1.25);
    tp_tensor_release(image);
    tp_tensor_release(filter);
    image = TENSOR_OF(c, TP_BFLOAT16, uint16_t, TP_SHAPE(1, 2, 2, 1), 0x3f80, 0xc000, 0x4040,
                      0x3f00 /* 1, -2, 3, 0.5 */);
    tp_pool_options_t window = {.window_height = 2, .window_width = 2};
    assert_ok(tp_max_pool(c, image, &window, &y));
    EXPECT(y, TP_BFLOAT16, 3);
    assert_ok(tp_avg_pool(c, image, &window, &y));
    EXPECT(y, TP_BFLOAT16, 0.625);
    tp_tensor_release(image);
}

/* ---- Bad calls ------------------------------------------------------------------------------- */

static void unsupported_dtypes_name_the_op_and_the_dtype(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *i8 = TENSOR_OF(c, TP_INT8, int8_t, TP_SHAPE(2, 2), 1, 2, 3, 4);
    tp_tensor_t *u16 = TENSOR_OF(c, TP_UINT16, uint16_t, TP_SHAPE(2, 2), 1, 2, 3, 4);
    tp_tensor_t *h = TENSOR_OF(c, TP_FLOAT16, uint16_t, TP_SHAPE(2, 2), 0, 0, 0, 0);
    tp_tensor_t *flags = TENSOR_OF(c, TP_BOOL, bool, TP_SHAPE(2), true, false);
    tp_tensor_t *y = NULL;
    expect_refusal(tp_exp(c, i8, &y), &y, TP_INVALID_ARGUMENT, "Exp does not support int8");
    expect_refusal(tp_matmul(c, u16, u16, false, false, &y), &y, TP_INVALID_ARGUMENT,
                   "MatMul does not support uint16");
    expect_refusal(tp_add(c, flags, flags, &y), &y, TP_INVALID_ARGUMENT,
                   "Add does not support bool");
    expect_refusal(tp_random_uniform(c, TP_INT16, TP_SHAPE(2), 1, &y), &y, TP_INVALID_ARGUMENT,
                   "RandomUniform does not support int16");
    /* Mixed dtypes are not converted: the message names both. */
    expect_refusal(tp_add(c, h, u16, &y), &y, TP_INVALID_ARGUMENT, "float16");
    expect_refusal(tp_add(c, h, u16, &y), &y, TP_INVALID_ARGUMENT, "uint16");
    tp_tensor_release(i8);
    tp_tensor_release(u16);
    tp_tensor_release(h);
    tp_tensor_release(flags);
    /* A name that is no dtype. */
    tp_dtype_t dtype;
    assert_error(tp_dtype_from_name("half", &dtype), TP_INVALID_ARGUMENT,
                 "unknown dtype 'half' (known: float32, float64, int32, int64, uint8, bool, "
                 "float16, bfloat16,");
}

#define TEST(name) cmocka_unit_test_setup_teardown(name, cpu_context_setup, cpu_context_teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        TEST(cast_every_pair_carries_small_numbers),
        TEST(cast_floats_to_integers_saturates),
        TEST(cast_integers_keep_the_low_bits),
        TEST(cast_to_16_bit_floats_rounds_once),
        TEST(arithmetic_on_every_number_dtype),
        TEST(integer_arithmetic_wraps),
        TEST(integer_division_by_zero_is_an_error),
        TEST(half_arithmetic_rounds_once_to_nearest_even),
        TEST(half_functions),
        TEST(staging_is_per_thread),
        TEST(reductions_on_every_number_dtype),
        TEST(integer_reductions),
        TEST(half_reductions_accumulate_in_float32),
        TEST(half_matmul_accumulates_in_float32),
        TEST(fills_and_copies_of_new_dtypes),
        TEST(random_16_bit_floats),
        TEST(activation_gradients_of_new_dtypes),
        TEST(comparisons_and_selections),
        TEST(array_ops_write_new_dtypes),
        TEST(convolution_and_pooling_of_halves),
        TEST(unsupported_dtypes_name_the_op_and_the_dtype),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
