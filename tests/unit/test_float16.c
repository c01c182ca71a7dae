/* SPDX-License-Identifier: Apache-2.0 */
/* include/tensorplug/float16.h against second methods: every one of the 65536 bit patterns of
 * float16 and of bfloat16 widened and compared with its value computed in double arithmetic
 * from the format's definition (and, where the compiler has _Float16, with its conversion);
 * every rounding boundary between two neighbouring values narrowed from its midpoint and from
 * the floats and doubles on either side of it; the fast bfloat16 path against the general one;
 * and a few values known by heart. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tensorplug/float16.h"

/* A narrow format: float16 (10 stored fraction bits, bias 15) or bfloat16 (7, 127). */
typedef struct {
    const char *name;
    int mantissa_bits, bias;
    float (*widen)(uint16_t);
    uint16_t (*from_float)(float);
    uint16_t (*from_double)(double);
} format_t;

static const format_t float16 = {"float16", 10, 15, tp_float16_to_float, tp_float16_from_float,
                                 tp_float16_from_double};
static const format_t bfloat16 = {"bfloat16", 7, 127, tp_bfloat16_to_float,
                                  tp_bfloat16_from_float, tp_bfloat16_from_double};

static uint32_t float_bits(float value) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

static float float_of_bits(uint32_t bits) {
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

static uint16_t exponent_mask(const format_t *f) {
    return (uint16_t)(((1u << (15 - f->mantissa_bits)) - 1) << f->mantissa_bits);
}

static bool is_nan_bits(const format_t *f, uint16_t bits) {
    return (bits & exponent_mask(f)) == exponent_mask(f) &&
           (bits & ((1u << f->mantissa_bits) - 1)) != 0;
}

/* The value of `bits` from the format's definition, in double arithmetic: (-1)^s 2^(e-bias)
 * (1 + m/2^p) for normal numbers, (-1)^s 2^(1-bias) m/2^p for subnormals. NaN for NaN. */
static double reference_value(const format_t *f, uint16_t bits) {
    int p = f->mantissa_bits;
    int field = (bits >> p) & ((1 << (15 - p)) - 1);
    double fraction = (double)(bits & ((1u << p) - 1));
    double sign = (bits & 0x8000) != 0 ? -1.0 : 1.0;
    if (field == (1 << (15 - p)) - 1) return fraction != 0 ? NAN : sign * INFINITY;
    if (field == 0) return sign * ldexp(fraction, 1 - f->bias - p);
    return sign * ldexp(ldexp(1.0, p) + fraction, field - f->bias - p);
}

/* Every bit pattern widens to its defined value, NaN to a NaN of its sign that keeps its
 * payload, and narrows back to itself (a NaN to a quiet NaN of the same sign and payload). */
static void every_pattern(void **state) {
    const format_t *f = *state;
    for (uint32_t b = 0; b <= 0xffff; b++) {
        uint16_t bits = (uint16_t)b;
        float wide = f->widen(bits);
        double want = reference_value(f, bits);
        if (is_nan_bits(f, bits)) {
            assert_true(isnan(wide));
            assert_int_equal(float_bits(wide) >> 31, bits >> 15);
            /* The payload sits at the top of float's fraction. */
            uint32_t payload = (float_bits(wide) >> (23 - f->mantissa_bits)) &
                               ((1u << f->mantissa_bits) - 1);
            assert_int_equal(payload, bits & ((1u << f->mantissa_bits) - 1));
            uint16_t quiet = (uint16_t)(bits | (1u << (f->mantissa_bits - 1)));
            assert_int_equal(f->from_float(wide), quiet);
            assert_int_equal(f->from_double((double)wide), quiet);
            continue;
        }
        if ((double)wide != want || !signbit(wide) != !signbit(want)) {
            print_error("%s 0x%04x widens to %.17g; its value is %.17g\n", f->name, b,
                        (double)wide, want);
            fail();
        }
        assert_int_equal(f->from_float(wide), bits);
        assert_int_equal(f->from_double(want), bits);
    }
}

/* Narrowing `value` gives `want`, from a double and, where the double is a float, from that
 * float too. */
static void expect_narrowed(const format_t *f, double value, uint16_t want) {
    uint16_t got = f->from_double(value);
    if (got != want) {
        print_error("%s of the double %.17g is 0x%04x, not 0x%04x\n", f->name, value, got, want);
        fail();
    }
    if ((double)(float)value == value) {
        got = f->from_float((float)value);
        if (got != want) {
            print_error("%s of the float %.9g is 0x%04x, not 0x%04x\n", f->name, value, got,
                        want);
            fail();
        }
    }
}

/* Between every two neighbouring non-negative patterns, the finite ones and the largest
 * finite with infinity: the exact midpoint goes to the one with an even last bit, anything
 * nearer to one (the next double or float towards it) goes to that one; the same holds
 * mirrored for negative values. Infinity's "value" here is where the next binade would start,
 * which is how IEEE 754 decides overflow. */
static void every_boundary(void **state) {
    const format_t *f = *state;
    uint16_t infinity = exponent_mask(f);
    for (uint16_t low = 0; low < infinity; low++) {
        uint16_t high = (uint16_t)(low + 1);
        double a = reference_value(f, low);
        double b = high == infinity ? ldexp(1.0, f->bias + 1) : reference_value(f, high);
        double middle = (a + b) / 2; /* exact: both have few bits */
        uint16_t even = (low & 1) == 0 ? low : high;
        for (int sign = 0; sign < 2; sign++) {
            double s = sign == 0 ? 1.0 : -1.0;
            uint16_t sign_bit = (uint16_t)(sign << 15);
            expect_narrowed(f, s * middle, (uint16_t)(even | sign_bit));
            expect_narrowed(f, s * nextafter(middle, 0), (uint16_t)(low | sign_bit));
            expect_narrowed(f, s * nextafter(middle, INFINITY), (uint16_t)(high | sign_bit));
            float middle_float = (float)middle; /* exact too: 12 bits at most, 2^-134 at least */
            assert_true((double)middle_float == middle);
            uint16_t below = f->from_float(s * nextafterf(middle_float, 0));
            uint16_t above = f->from_float(s * nextafterf(middle_float, INFINITY));
            assert_int_equal(below, low | sign_bit);
            assert_int_equal(above, high | sign_bit);
        }
    }
}

/* Values far outside the format: huge ones overflow, tiny ones (double subnormals included)
 * underflow to a zero of their sign, and infinities and NaN keep their kind. */
static void extremes(void **state) {
    (void)state;
    const format_t *formats[] = {&float16, &bfloat16};
    for (int i = 0; i < 2; i++) {
        const format_t *f = formats[i];
        uint16_t infinity = exponent_mask(f);
        expect_narrowed(f, DBL_MAX, infinity);
        expect_narrowed(f, -DBL_MAX, (uint16_t)(infinity | 0x8000));
        expect_narrowed(f, INFINITY, infinity);
        expect_narrowed(f, -INFINITY, (uint16_t)(infinity | 0x8000));
        expect_narrowed(f, DBL_TRUE_MIN, 0);
        expect_narrowed(f, -DBL_MIN, 0x8000);
        expect_narrowed(f, -0.0, 0x8000);
        expect_narrowed(f, FLT_TRUE_MIN, 0); /* below half of either's smallest subnormal */
        assert_true(is_nan_bits(f, f->from_double(NAN)));
        assert_true(is_nan_bits(f, f->from_float(-NAN)));
        assert_int_equal(f->from_float(-NAN) >> 15, 1);
    }
    /* bfloat16 has float's range: float's subnormals round to its own. */
    expect_narrowed(&bfloat16, FLT_TRUE_MIN * 65536.0, 0x0001);
    expect_narrowed(&bfloat16, FLT_MIN, 0x0080);
    expect_narrowed(&bfloat16, FLT_MAX, 0x7f80); /* past 0x7f7f's half unit: infinity */
}

/* Values one can check on paper. */
static void known_values(void **state) {
    (void)state;
    expect_narrowed(&float16, 1.0, 0x3c00);
    expect_narrowed(&float16, -2.0, 0xc000);
    expect_narrowed(&float16, 65504.0, 0x7bff);   /* the largest finite float16 */
    expect_narrowed(&float16, 65519.99, 0x7bff);  /* below the overflow midpoint */
    expect_narrowed(&float16, 65520.0, 0x7c00);   /* the midpoint ties to "even" infinity */
    expect_narrowed(&float16, ldexp(1, -14), 0x0400); /* the smallest normal */
    expect_narrowed(&float16, ldexp(1, -24), 0x0001); /* the smallest subnormal */
    expect_narrowed(&float16, ldexp(1, -25), 0x0000); /* half of it ties to zero */
    expect_narrowed(&float16, ldexp(3, -26), 0x0001); /* three quarters rounds up */
    expect_narrowed(&float16, 0.1, 0x2e66);
    expect_narrowed(&float16, 1.0 + ldexp(1, -11), 0x3c00);     /* tie: stays even */
    expect_narrowed(&float16, 1.0 + 3 * ldexp(1, -11), 0x3c02); /* tie: up to even */
    expect_narrowed(&bfloat16, 1.0, 0x3f80);
    expect_narrowed(&bfloat16, 3.14159265358979, 0x4049);
    expect_narrowed(&bfloat16, 1.0 + ldexp(1, -8), 0x3f80);
    expect_narrowed(&bfloat16, 1.0 + 3 * ldexp(1, -8), 0x3f82);
    expect_narrowed(&bfloat16, -65504.0, 0xc780); /* bfloat16 rounds float16's largest up */
    assert_true(tp_float16_to_float(0x7bff) == 65504.0f);
    assert_true(tp_float16_to_float(0x0001) == ldexpf(1, -24));
    assert_true(tp_bfloat16_to_float(0x4049) == 3.140625f);
}

/* A reproducible stream of bit patterns. */
static uint64_t next_random(uint64_t *state) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return *state >> 11 ^ *state;
}

/* The fast paths from float against the general one (from double), for both formats: on
 * every exponent of both signs with the fractions that decide rounding, and on a million
 * random floats. */
static void fast_paths_match_the_general_one(void **state) {
    const format_t *f = *state;
    uint64_t random = 19;
    /* Exact, a tie with the kept bit even and odd for bfloat16 (7 fraction bits kept) and
     * for float16 (10), and all ones. */
    static const uint32_t fractions[] = {0, 0x8000, 0x18000, 0x1000, 0x3000, 0x7fffff};
    for (uint32_t i = 0; i < (1u << 20); i++) {
        uint32_t bits = i < 3072 ? (i & 0x100) << 23 | (i & 0xff) << 23 | fractions[i >> 9]
                                 : (uint32_t)next_random(&random);
        float value = float_of_bits(bits);
        uint16_t fast = f->from_float(value);
        uint16_t general = f->from_double((double)value);
        if (isnan(value)) {
            assert_true(is_nan_bits(f, fast));
            continue;
        }
        if (fast != general) {
            print_error("%s of 0x%08x: 0x%04x by the fast path, 0x%04x otherwise\n", f->name,
                        bits, fast, general);
            fail();
        }
    }
}

/* Where the compiler has _Float16 (gcc on x86-64 does), its conversions are a third method. */
static void float16_matches_the_compiler(void **state) {
    (void)state;
#ifdef __FLT16_MAX__
    for (uint32_t b = 0; b <= 0xffff; b++) {
        uint16_t bits = (uint16_t)b;
        _Float16 half;
        memcpy(&half, &bits, sizeof half);
        float want = (float)half;
        float got = tp_float16_to_float(bits);
        if (isnan(want)) {
            assert_true(isnan(got));
            continue;
        }
        assert_int_equal(float_bits(got), float_bits(want));
    }
    uint64_t random = 7;
    for (uint32_t i = 0; i < (1u << 20); i++) {
        /* Floats of float16's range and a little beyond, where its rounding happens. */
        uint32_t bits = (uint32_t)next_random(&random);
        bits = (bits & 0x807fffffu) | ((0x60u + (bits >> 24) % 0x20u) << 23);
        float value = float_of_bits(bits);
        _Float16 from_float = (_Float16)value;
        uint16_t want;
        memcpy(&want, &from_float, sizeof want);
        assert_int_equal(tp_float16_from_float(value), want);
        /* Doubles from 2^-30 to 2^20 in magnitude: float16's range and a little beyond. */
        uint64_t double_bits = next_random(&random);
        double_bits = (double_bits & 0x800fffffffffffffull) |
                      (uint64_t)(1023 - 30 + (double_bits >> 52) % 51) << 52;
        double d;
        memcpy(&d, &double_bits, sizeof d);
        if (isnan(d)) continue;
        _Float16 from_double = (_Float16)d;
        memcpy(&want, &from_double, sizeof want);
        assert_int_equal(tp_float16_from_double(d), want);
    }
#else
    skip();
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        /* The format under test is the test's state. */
        cmocka_unit_test_prestate(every_pattern, (void *)&float16),
        cmocka_unit_test_prestate(every_pattern, (void *)&bfloat16),
        cmocka_unit_test_prestate(every_boundary, (void *)&float16),
        cmocka_unit_test_prestate(every_boundary, (void *)&bfloat16),
        cmocka_unit_test(extremes),
        cmocka_unit_test(known_values),
        cmocka_unit_test_prestate(fast_paths_match_the_general_one, (void *)&float16),
        cmocka_unit_test_prestate(fast_paths_match_the_general_one, (void *)&bfloat16),
        cmocka_unit_test(float16_matches_the_compiler),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
