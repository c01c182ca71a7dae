/* Tensor values as NumPy prints them; every expected string is NumPy's own output. */
#include "test_support.h"

#include <math.h>
#include <stdlib.h>

#include "base/strbuf.h"
#include "tensor/tensor_format.h"

static void check(tp_dtype_t dtype, tp_shape_t shape, const void *values, const char *expected) {
    tp_strbuf_t out = TP_STRBUF_INIT;
    tp_format_values(&out, dtype, &shape, values);
    assert_false(tp_strbuf_failed(&out));
    assert_string_equal(tp_strbuf_text(&out), expected);
    tp_strbuf_free(&out);
}

static void reference_documents(void **state) {
    (void)state;
    const float product[] = {22, 28, 49, 64}, sum[] = {44, 56, 98, 128};
    check(TP_FLOAT32, TP_SHAPE(2, 2), product, "[[22. 28.]\n [49. 64.]]");
    check(TP_FLOAT32, TP_SHAPE(2, 2), sum, "[[ 44.  56.]\n [ 98. 128.]]");
}

static void floats_align_their_points(void **state) {
    (void)state;
    const float fractions[] = {0.1f, 0.25f, 1.5f};
    check(TP_FLOAT32, TP_SHAPE(3), fractions, "[0.1  0.25 1.5 ]");
    const float signs[] = {-1, 2};
    check(TP_FLOAT32, TP_SHAPE(2), signs, "[-1.  2.]");
    const double sum = 0.1 + 0.2;
    check(TP_FLOAT64, TP_SHAPE(1), &sum, "[0.3]");
    check(TP_FLOAT64, TP_SCALAR_SHAPE, &sum, "0.30000000000000004");
}

static void wide_ranges_use_scientific_notation(void **state) {
    (void)state;
    const float tiny[] = {1e-5f, 1.0f};
    check(TP_FLOAT32, TP_SHAPE(2), tiny, "[1.e-05 1.e+00]");
    const double mixed[] = {1.5e-5, 1.0};
    check(TP_FLOAT64, TP_SHAPE(2), mixed, "[1.5e-05 1.0e+00]");
}

static void non_finite_values(void **state) {
    (void)state;
    const double values[] = {NAN, 1.0, -INFINITY};
    check(TP_FLOAT64, TP_SHAPE(3), values, "[ nan   1. -inf]");
}

static void integers_and_bools(void **state) {
    (void)state;
    const int32_t small[] = {1, 2, 3};
    check(TP_INT32, TP_SHAPE(3), small, "[1 2 3]");
    const int64_t wide[] = {-1, 10, 100};
    check(TP_INT64, TP_SHAPE(3), wide, "[ -1  10 100]");
    const uint8_t bytes[] = {0, 255};
    check(TP_UINT8, TP_SHAPE(2), bytes, "[  0 255]");
    const bool flags[] = {true, false}, all_true[] = {true, true};
    check(TP_BOOL, TP_SHAPE(2), flags, "[ True False]");
    check(TP_BOOL, TP_SHAPE(2), all_true, "[ True  True]");
}

static void scalars_print_like_python(void **state) {
    (void)state;
    const float three = 3.0f, tenth = 0.1f, tiny = 1e-5f;
    check(TP_FLOAT32, TP_SCALAR_SHAPE, &three, "3.0");
    check(TP_FLOAT32, TP_SCALAR_SHAPE, &tenth, "0.1");
    check(TP_FLOAT32, TP_SCALAR_SHAPE, &tiny, "1e-05");
    const int32_t seven = 7;
    check(TP_INT32, TP_SCALAR_SHAPE, &seven, "7");
    const bool yes = true;
    check(TP_BOOL, TP_SCALAR_SHAPE, &yes, "True");
}

static void empty_and_nested(void **state) {
    (void)state;
    check(TP_FLOAT32, TP_SHAPE(0), NULL, "[]");
    check(TP_INT32, TP_SHAPE(2, 0), NULL, "[]");
    const int32_t cube[] = {0, 1, 2, 3, 4, 5, 6, 7};
    check(TP_INT32, TP_SHAPE(2, 2, 2), cube, "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]");
}

static void long_rows_wrap_at_75_columns(void **state) {
    (void)state;
    float values[30];
    for (int i = 0; i < 30; i++) values[i] = (float)i;
    check(TP_FLOAT32, TP_SHAPE(30), values,
          "[ 0.  1.  2.  3.  4.  5.  6.  7.  8.  9. 10. 11. 12. 13. 14. 15. 16. 17.\n"
          " 18. 19. 20. 21. 22. 23. 24. 25. 26. 27. 28. 29.]");
}

static void large_arrays_are_summarised(void **state) {
    (void)state;
    int32_t *values = malloc(2000 * sizeof *values);
    assert_non_null(values);
    for (int i = 0; i < 2000; i++) values[i] = i;
    check(TP_INT32, TP_SHAPE(2000), values, "[   0    1    2 ... 1997 1998 1999]");
    check(TP_INT32, TP_SHAPE(100, 20), values,
          "[[   0    1    2 ...   17   18   19]\n"
          " [  20   21   22 ...   37   38   39]\n"
          " [  40   41   42 ...   57   58   59]\n"
          " ...\n"
          " [1940 1941 1942 ... 1957 1958 1959]\n"
          " [1960 1961 1962 ... 1977 1978 1979]\n"
          " [1980 1981 1982 ... 1997 1998 1999]]");
    /* 1000 elements is not more than the threshold: all are shown. */
    tp_strbuf_t out = TP_STRBUF_INIT;
    tp_shape_t thousand = TP_SHAPE(1000);
    tp_format_values(&out, TP_INT32, &thousand, values);
    assert_null(strstr(tp_strbuf_text(&out), "..."));
    assert_non_null(strstr(tp_strbuf_text(&out), " 500 "));
    tp_strbuf_free(&out);
    free(values);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reference_documents),
        cmocka_unit_test(floats_align_their_points),
        cmocka_unit_test(wide_ranges_use_scientific_notation),
        cmocka_unit_test(non_finite_values),
        cmocka_unit_test(integers_and_bools),
        cmocka_unit_test(scalars_print_like_python),
        cmocka_unit_test(empty_and_nested),
        cmocka_unit_test(long_rows_wrap_at_75_columns),
        cmocka_unit_test(large_arrays_are_summarised),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
