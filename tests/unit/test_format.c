/* SPDX-License-Identifier: Apache-2.0 */
/* tp_format_values against NumPy's printing. Every expected string is what str() of the same
 * NumPy array prints with the default print options (numpy 2.0 to 2.2); cases where NumPy
 * versions differ are left out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "tensor/tensor_format.h"

static void check(tp_dtype_t dtype, tp_shape_t shape, const void *values, const char *expected) {
    tp_strbuf_t out = TP_STRBUF_INIT;
    tp_format_values(&out, dtype, &shape, values);
    assert_false(tp_strbuf_failed(&out));
    assert_string_equal(tp_strbuf_text(&out), expected);
    tp_strbuf_free(&out);
}

/* ---- Floats ------------------------------------------------------------------------------- */

static void reference_matrices(void **state) {
    (void)state;
    const float product[] = {22, 28, 49, 64}, sum[] = {44, 56, 98, 128};
    check(TP_FLOAT32, TP_SHAPE(2, 2), product, "[[22. 28.]\n [49. 64.]]");
    check(TP_FLOAT32, TP_SHAPE(2, 2), sum, "[[ 44.  56.]\n [ 98. 128.]]");
}

static void fractions_align_their_points(void **state) {
    (void)state;
    const float fractions[] = {0.1f, 0.25f, 1.5f};
    check(TP_FLOAT32, TP_SHAPE(3), fractions, "[0.1  0.25 1.5 ]");
    const double halves[] = {1.0, 0.5};
    check(TP_FLOAT64, TP_SHAPE(2), halves, "[1.  0.5]");
}

static void negatives_pad_positives(void **state) {
    (void)state;
    const float signs[] = {-1, 2};
    check(TP_FLOAT32, TP_SHAPE(2), signs, "[-1.  2.]");
    const double negative_zero[] = {-0.0, 1.0};
    check(TP_FLOAT64, TP_SHAPE(2), negative_zero, "[-0.  1.]");
}

static void precision_caps_fraction_digits(void **state) {
    (void)state;
    /* Beyond 2^24, float32's shortest digits stop before the point and zeros follow. */
    const float large[] = {67012472.0f};
    check(TP_FLOAT32, TP_SHAPE(1), large, "[67012470.]");
    const float large_scalar = 123456792.0f;
    check(TP_FLOAT32, TP_SCALAR_SHAPE, &large_scalar, "123456790.0");
    const double sum = 0.1 + 0.2;
    check(TP_FLOAT64, TP_SHAPE(1), &sum, "[0.3]");
    const double long_fraction = 0.123456789;
    check(TP_FLOAT64, TP_SHAPE(1), &long_fraction, "[0.12345679]");
}

static void wide_ranges_use_scientific_notation(void **state) {
    (void)state;
    const double tiny[] = {1e-5, 1.0};
    check(TP_FLOAT64, TP_SHAPE(2), tiny, "[1.e-05 1.e+00]");
    const double mixed[] = {1.5e-5, 1.0};
    check(TP_FLOAT64, TP_SHAPE(2), mixed, "[1.5e-05 1.0e+00]");
    const double negative[] = {-1e-5, 1.0};
    check(TP_FLOAT64, TP_SHAPE(2), negative, "[-1.e-05  1.e+00]");
    const double large = 1e8;
    check(TP_FLOAT64, TP_SHAPE(1), &large, "[1.e+08]");
    const float ratio[] = {0.001f, 10.0f};
    check(TP_FLOAT32, TP_SHAPE(2), ratio, "[1.e-03 1.e+01]");
    const double three_digit_exponent[] = {1e-100, 1.0};
    check(TP_FLOAT64, TP_SHAPE(2), three_digit_exponent, "[1.e-100 1.e+000]");
    const double with_zero[] = {0.0, 1e-5};
    check(TP_FLOAT64, TP_SHAPE(2), with_zero, "[0.e+00 1.e-05]");
}

static void nan_and_infinities(void **state) {
    (void)state;
    const float all[] = {NAN, INFINITY, -INFINITY};
    check(TP_FLOAT32, TP_SHAPE(3), all, "[ nan  inf -inf]");
    const double one_nan[] = {1.0, NAN};
    check(TP_FLOAT64, TP_SHAPE(2), one_nan, "[ 1. nan]");
    const double mixed[] = {NAN, 1.0, -INFINITY};
    check(TP_FLOAT64, TP_SHAPE(3), mixed, "[ nan   1. -inf]");
    const double fraction[] = {1.5, -INFINITY};
    check(TP_FLOAT64, TP_SHAPE(2), fraction, "[ 1.5 -inf]");
    const double scientific[] = {1e-5, NAN};
    check(TP_FLOAT64, TP_SHAPE(2), scientific, "[1.e-05    nan]");
}

/* ---- Integers and bools -------------------------------------------------------------------- */

static void integers_right_align(void **state) {
    (void)state;
    const int32_t small[] = {1, 2, 3};
    check(TP_INT32, TP_SHAPE(3), small, "[1 2 3]");
    const int32_t mixed[] = {-1, 10, 100};
    check(TP_INT32, TP_SHAPE(3), mixed, "[ -1  10 100]");
    const int64_t wide[] = {-9000000000LL, 5};
    check(TP_INT64, TP_SHAPE(2), wide, "[-9000000000           5]");
    const uint8_t bytes[] = {0, 255, 7};
    check(TP_UINT8, TP_SHAPE(3), bytes, "[  0 255   7]");
}

static void bools_take_five_columns(void **state) {
    (void)state;
    const bool flags[] = {true, false}, all_true[] = {true, true};
    check(TP_BOOL, TP_SHAPE(2), flags, "[ True False]");
    check(TP_BOOL, TP_SHAPE(2), all_true, "[ True  True]");
}

/* tp_tensor_create refuses bool bytes other than 0 and 1, but a plug-in's kernel may still
 * write them: any nonzero byte prints as True, and none is read as a bool it is not (UBSan's
 * check, which the fuzz target tensor_format tripped). */
static void bool_bytes_other_than_0_and_1_are_true(void **state) {
    (void)state;
    const uint8_t bytes[] = {0, 1, 2, 255};
    check(TP_BOOL, TP_SHAPE(4), bytes, "[False  True  True  True]");
    const uint8_t seven = 7;
    check(TP_BOOL, TP_SCALAR_SHAPE, &seven, "True");
}

/* ---- The dtypes of ABI 1.7 ----------------------------------------------------------------- */

/* float16's digits are the shortest that read back in float16: 65504 is 6.55e+04 and 65500,
 * 3.140625 (from 3.14159) is 3.14. Expected strings from NumPy as above. */
static void float16_prints_like_numpy(void **state) {
    (void)state;
    const uint16_t mixed[] = {0x2e66 /* 0.1 */, 0x3e00 /* 1.5 */, 0x7bff /* 65504 */,
                              0xc000 /* -2 */};
    check(TP_FLOAT16, TP_SHAPE(4), mixed, "[ 1.00e-01  1.50e+00  6.55e+04 -2.00e+00]");
    const uint16_t fractions[] = {0x2e66, 0x3400 /* 0.25 */, 0x3e00};
    check(TP_FLOAT16, TP_SHAPE(3), fractions, "[0.1  0.25 1.5 ]");
    const uint16_t specials[] = {0x6800 /* 2048 */, 0x4248 /* 3.140625 */, 0x7e00 /* NaN */,
                                 0xfc00 /* -inf */};
    check(TP_FLOAT16, TP_SHAPE(4), specials, "[2048.      3.14     nan    -inf]");
    const uint16_t matrix[] = {0x3800, 0x3c00, 0x3e00, 0x4000};
    check(TP_FLOAT16, TP_SHAPE(2, 2), matrix, "[[0.5 1. ]\n [1.5 2. ]]");
}

/* 0-d 16-bit floats, as Python prints them: every digit needed, and no more. */
static void scalar_16_bit_floats(void **state) {
    (void)state;
    const struct {
        tp_dtype_t dtype;
        uint16_t bits;
        const char *text;
    } scalars[] = {
        {TP_FLOAT16, 0x7bff, "65500.0"}, {TP_FLOAT16, 0x2e66, "0.1"},
        {TP_FLOAT16, 0x0001, "6e-08"},   {TP_FLOAT16, 0x4248, "3.14"},
        /* bfloat16: 3.140625, and 1.0078125, which 1.01 reads back as and 1.0 does not. */
        {TP_BFLOAT16, 0x4049, "3.14"},   {TP_BFLOAT16, 0x3f81, "1.01"},
        {TP_BFLOAT16, 0xffc0, "nan"},
    };
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
        check(scalars[i].dtype, TP_SCALAR_SHAPE, &scalars[i].bits, scalars[i].text);
}

/* NumPy has no bfloat16; it prints by the same rule at its own precision (8 bits): 1.0078125
 * is 1.01, since 1.01 reads back as it and 1.0 does not. */
static void bfloat16_prints_its_own_shortest_digits(void **state) {
    (void)state;
    const uint16_t fractions[] = {0x3dcd /* 0.10009765625 */, 0x3e80 /* 0.25 */,
                                  0x3fc0 /* 1.5 */};
    check(TP_BFLOAT16, TP_SHAPE(3), fractions, "[0.1  0.25 1.5 ]");
    const uint16_t near_one[] = {0x3f81 /* 1.0078125 */, 0x4000 /* 2 */};
    check(TP_BFLOAT16, TP_SHAPE(2), near_one, "[1.01 2.  ]");
}

/* Expected strings from NumPy: every width, uint64 beyond int64's range included. */
static void narrow_and_unsigned_integers(void **state) {
    (void)state;
    const int8_t bytes[] = {-128, 127, 0};
    check(TP_INT8, TP_SHAPE(3), bytes, "[-128  127    0]");
    const uint16_t shorts[] = {0, 65535};
    check(TP_UINT16, TP_SHAPE(2), shorts, "[    0 65535]");
    const int16_t signed_shorts[] = {-32768, 5};
    check(TP_INT16, TP_SHAPE(2), signed_shorts, "[-32768      5]");
    const uint32_t words[] = {4294967295u, 1};
    check(TP_UINT32, TP_SHAPE(2), words, "[4294967295          1]");
    const uint64_t longs[] = {UINT64_MAX, 7};
    check(TP_UINT64, TP_SHAPE(2), longs, "[18446744073709551615                    7]");
    check(TP_UINT64, TP_SCALAR_SHAPE, &longs[0], "18446744073709551615");
    check(TP_INT8, TP_SCALAR_SHAPE, &bytes[0], "-128");
}

/* ---- Scalars ------------------------------------------------------------------------------ */

static void scalar_floats_print_like_python(void **state) {
    (void)state;
    const float three = 3.0f, tenth = 0.1f, tiny = 1e-5f, negative = -2.5f;
    check(TP_FLOAT32, TP_SCALAR_SHAPE, &three, "3.0");
    check(TP_FLOAT32, TP_SCALAR_SHAPE, &tenth, "0.1");
    check(TP_FLOAT32, TP_SCALAR_SHAPE, &tiny, "1e-05");
    check(TP_FLOAT32, TP_SCALAR_SHAPE, &negative, "-2.5");
    const float nan32 = NAN, minus_inf = -INFINITY;
    check(TP_FLOAT32, TP_SCALAR_SHAPE, &nan32, "nan");
    check(TP_FLOAT32, TP_SCALAR_SHAPE, &minus_inf, "-inf");
    const double sum = 0.1 + 0.2, small = 1.5e-7, huge = 1e16, big = 1e100, whole = 123456.0,
                 negative_zero = -0.0, inf = INFINITY;
    check(TP_FLOAT64, TP_SCALAR_SHAPE, &sum, "0.30000000000000004");
    check(TP_FLOAT64, TP_SCALAR_SHAPE, &small, "1.5e-07");
    check(TP_FLOAT64, TP_SCALAR_SHAPE, &huge, "1e+16");
    check(TP_FLOAT64, TP_SCALAR_SHAPE, &big, "1e+100");
    check(TP_FLOAT64, TP_SCALAR_SHAPE, &whole, "123456.0");
    check(TP_FLOAT64, TP_SCALAR_SHAPE, &negative_zero, "-0.0");
    check(TP_FLOAT64, TP_SCALAR_SHAPE, &inf, "inf");
}

static void scalar_integers_and_bools(void **state) {
    (void)state;
    const int32_t seven = 7;
    check(TP_INT32, TP_SCALAR_SHAPE, &seven, "7");
    const int64_t negative = -9000000000LL;
    check(TP_INT64, TP_SCALAR_SHAPE, &negative, "-9000000000");
    const uint8_t byte = 200;
    check(TP_UINT8, TP_SCALAR_SHAPE, &byte, "200");
    const bool yes = true, no = false;
    check(TP_BOOL, TP_SCALAR_SHAPE, &yes, "True");
    check(TP_BOOL, TP_SCALAR_SHAPE, &no, "False");
}

/* ---- Shapes ------------------------------------------------------------------------------- */

static void empty_arrays(void **state) {
    (void)state;
    check(TP_FLOAT32, TP_SHAPE(0), NULL, "[]");
    check(TP_INT32, TP_SHAPE(2, 0), NULL, "[]");
    check(TP_BOOL, TP_SHAPE(0, 3), NULL, "[]");
}

static void higher_ranks_leave_blank_lines(void **state) {
    (void)state;
    const int32_t cube[] = {0, 1, 2, 3, 4, 5, 6, 7};
    check(TP_INT32, TP_SHAPE(2, 2, 2), cube, "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]");
    const int32_t four[] = {0, 1, 2, 3};
    check(TP_INT32, TP_SHAPE(1, 2, 1, 2), four, "[[[[0 1]]\n\n  [[2 3]]]]");
}

/* ---- Summaries ---------------------------------------------------------------------------- */

static void large_arrays_are_summarised(void **state) {
    (void)state;
    int32_t *values = malloc(2000 * sizeof *values);
    float *floats = malloc(2000 * sizeof *floats);
    assert_non_null(values);
    assert_non_null(floats);
    for (int i = 0; i < 2000; i++) {
        values[i] = i;
        floats[i] = (float)i;
    }
    check(TP_INT32, TP_SHAPE(2000), values, "[   0    1    2 ... 1997 1998 1999]");
    check(TP_INT32, TP_SHAPE(100, 20), values,
          "[[   0    1    2 ...   17   18   19]\n"
          " [  20   21   22 ...   37   38   39]\n"
          " [  40   41   42 ...   57   58   59]\n"
          " ...\n"
          " [1940 1941 1942 ... 1957 1958 1959]\n"
          " [1960 1961 1962 ... 1977 1978 1979]\n"
          " [1980 1981 1982 ... 1997 1998 1999]]");
    /* Only the shown elements count: 1 and 1999 make the range wide enough for exponents. */
    check(TP_FLOAT32, TP_SHAPE(2000), floats,
          "[0.000e+00 1.000e+00 2.000e+00 ... 1.997e+03 1.998e+03 1.999e+03]");
    check(TP_INT32, TP_SHAPE(7, 2, 80), values,
          "[[[   0    1    2 ...   77   78   79]\n"
          "  [  80   81   82 ...  157  158  159]]\n"
          "\n"
          " [[ 160  161  162 ...  237  238  239]\n"
          "  [ 240  241  242 ...  317  318  319]]\n"
          "\n"
          " [[ 320  321  322 ...  397  398  399]\n"
          "  [ 400  401  402 ...  477  478  479]]\n"
          "\n"
          " ...\n"
          "\n"
          " [[ 640  641  642 ...  717  718  719]\n"
          "  [ 720  721  722 ...  797  798  799]]\n"
          "\n"
          " [[ 800  801  802 ...  877  878  879]\n"
          "  [ 880  881  882 ...  957  958  959]]\n"
          "\n"
          " [[ 960  961  962 ... 1037 1038 1039]\n"
          "  [1040 1041 1042 ... 1117 1118 1119]]]");
    /* 1000 elements is not more than the threshold: all are shown. */
    tp_strbuf_t out = TP_STRBUF_INIT;
    tp_shape_t thousand = TP_SHAPE(1000);
    tp_format_values(&out, TP_INT32, &thousand, values);
    assert_null(strstr(tp_strbuf_text(&out), "..."));
    assert_non_null(strstr(tp_strbuf_text(&out), " 500 "));
    tp_strbuf_free(&out);
    free(values);
    free(floats);
}

/* ---- Line wrapping ------------------------------------------------------------------------ */

static void assert_lines_fit(const char *text, size_t first_line_indent) {
    size_t column = first_line_indent;
    for (const char *c = text; *c != '\0'; c++) {
        if (*c == '\n') {
            column = 0;
            continue;
        }
        column++;
        assert_true(column <= 75);
    }
}

static void long_rows_wrap_at_75_columns(void **state) {
    (void)state;
    float values[100];
    for (int i = 0; i < 100; i++) values[i] = (float)i;
    check(TP_FLOAT32, TP_SHAPE(30), values,
          "[ 0.  1.  2.  3.  4.  5.  6.  7.  8.  9. 10. 11. 12. 13. 14. 15. 16. 17.\n"
          " 18. 19. 20. 21. 22. 23. 24. 25. 26. 27. 28. 29.]");
    double doubles[40];
    for (int i = 0; i < 40; i++) doubles[i] = i;
    check(TP_FLOAT64, TP_SHAPE(2, 20), doubles,
          "[[ 0.  1.  2.  3.  4.  5.  6.  7.  8.  9. 10. 11. 12. 13. 14. 15. 16. 17.\n"
          "  18. 19.]\n"
          " [20. 21. 22. 23. 24. 25. 26. 27. 28. 29. 30. 31. 32. 33. 34. 35. 36. 37.\n"
          "  38. 39.]]");
    int32_t integers[100];
    for (int i = 0; i < 100; i++) integers[i] = i;
    check(TP_INT32, TP_SHAPE(100), integers,
          "[ 0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18 19 20 21 22 23\n"
          " 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47\n"
          " 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71\n"
          " 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95\n"
          " 96 97 98 99]");

    tp_strbuf_t out = TP_STRBUF_INIT;
    tp_shape_t shape = TP_SHAPE(100);
    float fractions[100];
    for (int i = 0; i < 100; i++) fractions[i] = (float)i / 97.0f + 0.001f;
    tp_format_values(&out, TP_FLOAT32, &shape, fractions);
    assert_false(tp_strbuf_failed(&out));
    assert_non_null(strchr(tp_strbuf_text(&out), '\n'));
    assert_lines_fit(tp_strbuf_text(&out), 0);
    tp_strbuf_free(&out);
}

static void a_broken_line_loses_its_trailing_padding(void **state) {
    (void)state;
    float values[20];
    for (int i = 0; i < 20; i++) values[i] = i % 2 == 0 ? 0.25f : 1.5f;
    check(TP_FLOAT32, TP_SHAPE(20), values,
          "[0.25 1.5  0.25 1.5  0.25 1.5  0.25 1.5  0.25 1.5  0.25 1.5  0.25 1.5\n"
          " 0.25 1.5  0.25 1.5  0.25 1.5 ]");
}

/* np.array2string(a, prefix=" " * 6): the first line is six columns shorter and later lines
 * start under the first element. */
static void appends_to_existing_text(void **state) {
    (void)state;
    tp_strbuf_t out = TP_STRBUF_INIT;
    tp_strbuf_puts(&out, "x = ");
    const int32_t values[] = {1, 2};
    tp_shape_t shape = TP_SHAPE(2);
    tp_format_values(&out, TP_INT32, &shape, values);
    assert_string_equal(tp_strbuf_text(&out), "x = [1 2]");
    tp_strbuf_free(&out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reference_matrices),
        cmocka_unit_test(fractions_align_their_points),
        cmocka_unit_test(negatives_pad_positives),
        cmocka_unit_test(precision_caps_fraction_digits),
        cmocka_unit_test(wide_ranges_use_scientific_notation),
        cmocka_unit_test(nan_and_infinities),
        cmocka_unit_test(integers_right_align),
        cmocka_unit_test(bools_take_five_columns),
        cmocka_unit_test(bool_bytes_other_than_0_and_1_are_true),
        cmocka_unit_test(float16_prints_like_numpy),
        cmocka_unit_test(bfloat16_prints_its_own_shortest_digits),
        cmocka_unit_test(scalar_16_bit_floats),
        cmocka_unit_test(narrow_and_unsigned_integers),
        cmocka_unit_test(scalar_floats_print_like_python),
        cmocka_unit_test(scalar_integers_and_bools),
        cmocka_unit_test(empty_arrays),
        cmocka_unit_test(higher_ranks_leave_blank_lines),
        cmocka_unit_test(large_arrays_are_summarised),
        cmocka_unit_test(long_rows_wrap_at_75_columns),
        cmocka_unit_test(a_broken_line_loses_its_trailing_padding),
        cmocka_unit_test(appends_to_existing_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
