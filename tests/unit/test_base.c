/* SPDX-License-Identifier: Apache-2.0 */
/* Statuses, dtypes, shapes and the string buffer. */
#include "test_support.h"

#include <stdlib.h>

#include "base/arena.h"
#include "base/dtype.h"
#include "base/status.h"
#include "base/strbuf.h"

static void status_carries_code_and_message(void **state) {
    (void)state;
    tp_status_t *status = tp_status_make(TP_NOT_FOUND, "device %s:%d", "GPU", 2);
    assert_int_equal(tp_status_code(status), TP_NOT_FOUND);
    assert_string_equal(tp_status_message(status), "device GPU:2");
    status = tp_status_annotate(status, "placing %s", "MatMul");
    assert_string_equal(tp_status_message(status), "placing MatMul: device GPU:2");
    tp_status_free(status);
    assert_null(tp_status_make(TP_OK, "ignored"));
    assert_int_equal(tp_status_code(NULL), TP_OK);
    assert_string_equal(tp_status_message(NULL), "");
    assert_null(tp_status_annotate(NULL, "x"));
    tp_status_free(NULL);
    status = tp_status_create(TP_ABORTED, "body raised %d");
    assert_int_equal(tp_status_code(status), TP_ABORTED);
    assert_string_equal(tp_status_message(status), "body raised %d"); /* not a format */
    tp_status_free(status);
    assert_null(tp_status_create(TP_OK, "fine"));
}

static void code_names(void **state) {
    (void)state;
    assert_string_equal(tp_code_name(TP_OK), "OK");
    assert_string_equal(tp_code_name(TP_INVALID_ARGUMENT), "INVALID_ARGUMENT");
    assert_string_equal(tp_code_name(TP_RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
    assert_string_equal(tp_code_name(TP_DATA_LOSS), "DATA_LOSS");
    assert_string_equal(tp_code_name((tp_code_t)99), "UNKNOWN_CODE");
    assert_string_equal(tp_code_name((tp_code_t)-1), "UNKNOWN_CODE");
}

static void dtypes_have_names_and_sizes(void **state) {
    (void)state;
    const struct {
        tp_dtype_t dtype;
        const char *name;
        size_t size;
    } expected[] = {{TP_FLOAT32, "float32", 4}, {TP_FLOAT64, "float64", 8},
                    {TP_INT32, "int32", 4},     {TP_INT64, "int64", 8},
                    {TP_UINT8, "uint8", 1},     {TP_BOOL, "bool", 1},
                    {TP_FLOAT16, "float16", 2}, {TP_BFLOAT16, "bfloat16", 2},
                    {TP_INT8, "int8", 1},       {TP_INT16, "int16", 2},
                    {TP_UINT16, "uint16", 2},   {TP_UINT32, "uint32", 4},
                    {TP_UINT64, "uint64", 8}};
    /* The numbers are the ABI's, appended in this order. */
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        assert_int_equal(expected[i].dtype, (tp_dtype_t)(i + 1));
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        assert_string_equal(tp_dtype_name(expected[i].dtype), expected[i].name);
        assert_int_equal(tp_dtype_size(expected[i].dtype), expected[i].size);
        tp_dtype_t parsed = TP_DTYPE_INVALID;
        assert_ok(tp_dtype_from_name(expected[i].name, &parsed));
        assert_int_equal(parsed, expected[i].dtype);
    }
    assert_null(tp_dtype_name(TP_DTYPE_INVALID));
    assert_null(tp_dtype_name((tp_dtype_t)42));
    assert_int_equal(tp_dtype_size((tp_dtype_t)42), 0);
    tp_dtype_t untouched = TP_INT32;
    assert_error(tp_dtype_from_name("float8", &untouched), TP_INVALID_ARGUMENT,
                 "unknown dtype 'float8' (known: float32, float64, int32, int64, uint8, bool, "
                 "float16, bfloat16, int8, int16, uint16, uint32, uint64)");
    assert_error(tp_dtype_from_name("Float16", &untouched), TP_INVALID_ARGUMENT,
                 "unknown dtype 'Float16'");
    assert_int_equal(untouched, TP_INT32);
    assert_error(tp_dtype_from_name(NULL, &untouched), TP_INVALID_ARGUMENT, "'name' is NULL");
}

/* Elements written from doubles and read back, against their bytes worked out by hand. */
static void dtype_elements_from_and_to_doubles(void **state) {
    (void)state;
    const struct {
        tp_dtype_t dtype;
        double value;
        uint64_t bits; /* the element's bytes, read as a little-endian number */
    } cases[] = {
        {TP_FLOAT32, 1.5, 0x3fc00000},        {TP_FLOAT64, -2, 0xc000000000000000},
        {TP_FLOAT16, 1.5, 0x3e00},            {TP_BFLOAT16, -2, 0xc000},
        {TP_INT8, -2, 0xfe},                  {TP_INT16, -2, 0xfffe},
        {TP_INT32, 100000, 0x186a0},          {TP_INT64, -1, UINT64_MAX},
        {TP_UINT8, 255, 0xff},                {TP_UINT16, 65535, 0xffff},
        {TP_UINT32, 4294967295.0, 0xffffffff}, {TP_UINT64, 9223372036854775808.0, 1ull << 63},
        {TP_BOOL, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned char bytes[16] = {0};
        tp_dtype_store_double(bytes, cases[i].dtype, 1, cases[i].value);
        size_t size = tp_dtype_size(cases[i].dtype);
        uint64_t bits = 0;
        for (size_t b = 0; b < size; b++) bits |= (uint64_t)bytes[size + b] << (8 * b);
        assert_int_equal(bits, cases[i].bits);
        assert_true(tp_dtype_load_double(bytes, cases[i].dtype, 1) == cases[i].value);
    }
    /* No dtype: nothing written, 0 read. */
    unsigned char untouched[8] = {7};
    tp_dtype_store_double(untouched, (tp_dtype_t)42, 0, 1.0);
    assert_int_equal(untouched[0], 7);
    assert_true(tp_dtype_load_double(untouched, (tp_dtype_t)42, 0) == 0);
}

static void shape_macro_and_count(void **state) {
    (void)state;
    tp_shape_t shape = TP_SHAPE(2, 3, 4);
    assert_int_equal(shape.rank, 3);
    assert_int_equal(shape.dims[2], 4);
    int64_t count = -1;
    assert_ok(tp_shape_num_elements(&shape, &count));
    assert_int_equal(count, 24);
    tp_shape_t scalar = TP_SCALAR_SHAPE;
    assert_ok(tp_shape_num_elements(&scalar, &count));
    assert_int_equal(count, 1);
    tp_shape_t empty = TP_SHAPE(3, 0);
    assert_ok(tp_shape_num_elements(&empty, &count));
    assert_int_equal(count, 0);
    assert_int_equal(TP_SHAPE(1, 2, 3, 4, 5, 6, 7, 8).rank, 8);
}

static void shape_rejects_bad_input(void **state) {
    (void)state;
    int64_t count = 7;
    tp_shape_t negative = TP_SHAPE(2, -1);
    assert_error(tp_shape_num_elements(&negative, &count), TP_INVALID_ARGUMENT,
                 "dimension 1 is negative (-1)");
    tp_shape_t huge = TP_SHAPE(INT64_C(1) << 32, INT64_C(1) << 32);
    assert_error(tp_shape_num_elements(&huge, &count), TP_INVALID_ARGUMENT,
                 "shape (4294967296, 4294967296) has more elements than fit in 64 bits");
    tp_shape_t too_deep = {9, {1}};
    assert_error(tp_shape_num_elements(&too_deep, &count), TP_INVALID_ARGUMENT,
                 "rank 9 is outside 0..8");
    assert_error(tp_shape_num_elements(NULL, &count), TP_INVALID_ARGUMENT, "'shape' is NULL");
    assert_int_equal(count, 7);
}

static void shape_format(void **state) {
    (void)state;
    char text[64];
    tp_shape_t matrix = TP_SHAPE(2, 2), vector = TP_SHAPE(5), scalar = TP_SCALAR_SHAPE;
    assert_int_equal(tp_shape_format(&matrix, text, sizeof text), 6);
    assert_string_equal(text, "(2, 2)");
    tp_shape_format(&vector, text, sizeof text);
    assert_string_equal(text, "(5,)");
    tp_shape_format(&scalar, text, sizeof text);
    assert_string_equal(text, "()");
    /* Truncation behaves like snprintf: the needed length comes back. */
    assert_int_equal(tp_shape_format(&matrix, text, 3), 6);
    assert_string_equal(text, "(2");
    assert_int_equal(tp_shape_format(&matrix, NULL, 0), 6);
}

static void strbuf_grows_and_hands_over(void **state) {
    (void)state;
    tp_strbuf_t buffer = TP_STRBUF_INIT;
    assert_string_equal(tp_strbuf_text(&buffer), "");
    for (int i = 0; i < 1000; i++) tp_strbuf_printf(&buffer, "%d,", i % 10);
    tp_strbuf_repeat(&buffer, '-', 3);
    assert_int_equal(buffer.length, 2003);
    assert_false(tp_strbuf_failed(&buffer));
    char *text = tp_strbuf_take(&buffer);
    assert_memory_equal(text, "0,1,2,", 6);
    assert_string_equal(text + 2000, "---");
    free(text);
    assert_null(buffer.data);
}

static void arena_copies(void **state) {
    (void)state;
    tp_arena_t arena = TP_ARENA_INIT;
    char *copy = tp_arena_strdup(&arena, "XPU");
    assert_string_equal(copy, "XPU");
    assert_null(tp_arena_strdup(&arena, NULL));
    /* A request larger than a block gets a block of its own. */
    unsigned char *big = tp_arena_alloc(&arena, 10000);
    assert_non_null(big);
    assert_int_equal(big[9999], 0);
    tp_arena_free(&arena);
    assert_null(arena.blocks);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(status_carries_code_and_message),
        cmocka_unit_test(code_names),
        cmocka_unit_test(dtypes_have_names_and_sizes),
        cmocka_unit_test(dtype_elements_from_and_to_doubles),
        cmocka_unit_test(shape_macro_and_count),
        cmocka_unit_test(shape_rejects_bad_input),
        cmocka_unit_test(shape_format),
        cmocka_unit_test(strbuf_grows_and_hands_over),
        cmocka_unit_test(arena_copies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
