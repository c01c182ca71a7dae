/* SPDX-License-Identifier: Apache-2.0 */
/* NumPy's .npy files: every dtype saved and loaded back bit for bit, the header numpy.save
 * writes, files as other writers make them (big-endian, Fortran order, versions 2.0 and 3.0),
 * and every malformed or truncated file refused with a message that names the file and the
 * fault. (tests/unit/npy_numpy.sh checks the same files against NumPy itself.) */
#include "test_support.h"

#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpu_fixture.h"
#include "queued_support.h"

static int make_folder(void **state) {
    (void)state;
    return scratch_folder_make("/tmp/tp_test_npy.XXXXXX");
}

static int remove_folder(void **state) {
    (void)state;
    return scratch_folder_remove();
}

/* The whole file, in a buffer the caller frees. */
static unsigned char *read_file(const char *path, size_t *out_size) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char *bytes = malloc(1 << 20);
    assert_non_null(bytes);
    *out_size = fread(bytes, 1, 1 << 20, f);
    fclose(f);
    return bytes;
}

/* A .npy file as any writer might make one: `header` as given (no padding added), then
 * `data`. Version 1.0 has a 2-byte length, 2.0 and 3.0 a 4-byte one. */
static size_t make_npy(unsigned char *out, unsigned major, unsigned minor, const char *header,
                       const void *data, size_t data_size) {
    size_t length = strlen(header), at = 0;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (unsigned char)major;
    out[7] = (unsigned char)minor;
    at = 8;
    size_t length_bytes = major == 1 ? 2 : 4;
    for (size_t i = 0; i < length_bytes; i++) out[at++] = (unsigned char)(length >> (8 * i));
    memcpy(out + at, header, length);
    at += length;
    if (data_size > 0) memcpy(out + at, data, data_size);
    return at + data_size;
}

static bool contains(const void *bytes, size_t size, const char *text) {
    size_t length = strlen(text);
    for (size_t at = 0; at + length <= size; at++)
        if (memcmp((const char *)bytes + at, text, length) == 0) return true;
    return false;
}

static void values_of_every_dtype_round_trip_bit_for_bit(void **state) {
    tp_context_t *context = *state;
    const float f32[] = {1.5f, -0.0f, NAN, INFINITY, -INFINITY, 1e-45f, 3.4028235e38f, -2.25f};
    const double f64[] = {0.1, -0.0, -NAN, INFINITY, 5e-324, 1.7976931348623157e308, -1, 2};
    const int32_t i32[] = {INT32_MIN, INT32_MAX, 0, -1, 1, 123456789, -7, 8};
    const int64_t i64[] = {INT64_MIN, INT64_MAX, 0, -1, 1, INT64_C(1) << 40, -7, 8};
    const uint8_t u8[] = {0, 255, 1, 127, 128, 254, 7, 8};
    const bool b[] = {true, false, false, true, true, true, false, true};
    /* float16: 1.5, -0, NaN, inf, 65504, the smallest subnormal, -2, 0.1; bfloat16 likewise. */
    const uint16_t f16[] = {0x3e00, 0x8000, 0x7e00, 0x7c00, 0x7bff, 0x0001, 0xc000, 0x2e66};
    const uint16_t bf16[] = {0x3fc0, 0x8000, 0x7fc0, 0x7f80, 0x7f7f, 0x0001, 0xc000, 0x3dcd};
    const int8_t i8[] = {INT8_MIN, INT8_MAX, 0, -1, 1, 100, -7, 8};
    const int16_t i16[] = {INT16_MIN, INT16_MAX, 0, -1, 1, 12345, -7, 8};
    const uint16_t u16[] = {0, UINT16_MAX, 1, 32767, 32768, 54321, 7, 8};
    const uint32_t u32[] = {0, UINT32_MAX, 1, 2147483647u, 2147483648u, 123456789, 7, 8};
    const uint64_t u64[] = {0, UINT64_MAX, 1, UINT64_C(1) << 63, 9, 123456789, 7, 8};
    const struct {
        tp_dtype_t dtype;
        const void *data;
        size_t size;
        const char *descr;
    } cases[] = {{TP_FLOAT32, f32, sizeof f32, "'<f4'"}, {TP_FLOAT64, f64, sizeof f64, "'<f8'"},
                 {TP_INT32, i32, sizeof i32, "'<i4'"},   {TP_INT64, i64, sizeof i64, "'<i8'"},
                 {TP_UINT8, u8, sizeof u8, "'|u1'"},     {TP_BOOL, b, sizeof b, "'|b1'"},
                 {TP_FLOAT16, f16, sizeof f16, "'<f2'"}, {TP_INT8, i8, sizeof i8, "'|i1'"},
                 {TP_INT16, i16, sizeof i16, "'<i2'"},   {TP_UINT16, u16, sizeof u16, "'<u2'"},
                 {TP_UINT32, u32, sizeof u32, "'<u4'"},  {TP_UINT64, u64, sizeof u64, "'<u8'"},
                 {TP_BFLOAT16, bf16, sizeof bf16, "'descr': [('bfloat16', '<u2')],"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tp_tensor_t *tensor, *loaded;
        assert_ok(tp_tensor_create(context, cases[i].dtype, TP_SHAPE(2, 4), cases[i].data,
                                   cases[i].size, &tensor));
        const char *path = path_of(tp_dtype_name(cases[i].dtype));
        assert_ok(tp_tensor_save_npy(tensor, path));
        size_t size;
        unsigned char *file = read_file(path, &size);
        assert_true(contains(file, size, cases[i].descr));
        free(file);
        assert_ok(tp_tensor_load_npy(context, path, &loaded));
        assert_int_equal(tp_tensor_dtype(loaded), cases[i].dtype);
        assert_tensor_shape(loaded, TP_SHAPE(2, 4));
        assert_string_equal(tp_tensor_device(loaded),
                            "/job:localhost/replica:0/task:0/device:CPU:0");
        unsigned char back[64];
        assert_ok(tp_tensor_read(loaded, back, cases[i].size));
        assert_memory_equal(back, cases[i].data, cases[i].size);
        tp_tensor_release(tensor);
        tp_tensor_release(loaded);
    }
}

/* The header numpy.save writes, byte for byte: version 1.0, the dict with its keys sorted and
 * a trailing ", ", spaces and a newline so that the values start at 64 bytes. */
static void the_file_is_what_numpy_save_writes(void **state) {
    tp_context_t *context = *state;
    const float values[6] = {1, 2, 3, 4, 5, 6};
    tp_tensor_t *tensor = floats(context, TP_SHAPE(2, 3), values);
    assert_ok(tp_tensor_save_npy(tensor, path_of("numpy_header.npy")));
    size_t size;
    unsigned char *file = read_file(path_of("numpy_header.npy"), &size);
    const char dict[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    assert_int_equal(size, 128 + sizeof values);
    assert_memory_equal(file, "\x93NUMPY\x01\x00\x76\x00", 10);
    assert_memory_equal(file + 10, dict, strlen(dict));
    for (size_t i = 10 + strlen(dict); i < 127; i++) assert_int_equal(file[i], ' ');
    assert_int_equal(file[127], '\n');
    assert_memory_equal(file + 128, values, sizeof values);
    free(file);
    tp_tensor_release(tensor);

    /* One dimension is written (n,), none (). */
    const struct {
        tp_shape_t shape;
        const char *text;
    } shapes[] = {{TP_SHAPE(5), "'shape': (5,), }"}, {TP_SCALAR_SHAPE, "'shape': (), }"}};
    for (size_t i = 0; i < 2; i++) {
        const float zeros[5] = {0};
        tp_tensor_t *t;
        int64_t count;
        assert_ok(tp_shape_num_elements(&shapes[i].shape, &count));
        assert_ok(tp_tensor_create(context, TP_FLOAT32, shapes[i].shape, zeros,
                                   (size_t)count * sizeof(float), &t));
        void *bytes;
        size_t encoded;
        assert_ok(tp_tensor_encode_npy(t, &bytes, &encoded));
        assert_int_equal(encoded, 128 + (size_t)count * sizeof(float));
        assert_true(contains(bytes, encoded, shapes[i].text));
        free(bytes);
        tp_tensor_release(t);
    }
}

static void round_trip(tp_context_t *context, tp_dtype_t dtype, tp_shape_t shape,
                       const char *name) {
    int64_t count;
    assert_ok(tp_shape_num_elements(&shape, &count));
    size_t size = (size_t)count * tp_dtype_size(dtype);
    unsigned char *values = malloc(size + 1), *back = malloc(size + 1);
    for (size_t i = 0; i < size; i++) values[i] = (unsigned char)(dtype == TP_BOOL ? i % 2 : i * 7);
    tp_tensor_t *tensor, *loaded;
    assert_ok(tp_tensor_create(context, dtype, shape, values, size, &tensor));
    assert_ok(tp_tensor_save_npy(tensor, path_of(name)));
    assert_ok(tp_tensor_load_npy(context, path_of(name), &loaded));
    assert_tensor_shape(loaded, shape);
    assert_ok(tp_tensor_read(loaded, back, size));
    if (size > 0) assert_memory_equal(back, values, size);
    tp_tensor_release(tensor);
    tp_tensor_release(loaded);
    free(values);
    free(back);
}

static void empty_scalar_deep_and_large_tensors_round_trip(void **state) {
    tp_context_t *context = *state;
    round_trip(context, TP_FLOAT32, TP_SHAPE(0, 3), "empty.npy");
    round_trip(context, TP_INT64, TP_SHAPE(0), "empty_vector.npy");
    round_trip(context, TP_FLOAT64, TP_SCALAR_SHAPE, "scalar.npy");
    round_trip(context, TP_BOOL, TP_SCALAR_SHAPE, "scalar_bool.npy");
    round_trip(context, TP_UINT8, TP_SHAPE(2, 1, 3, 1, 2, 1, 2, 3), "rank8.npy");
    round_trip(context, TP_FLOAT32, TP_SHAPE(513, 1031), "large.npy");
    round_trip(context, TP_BFLOAT16, TP_SCALAR_SHAPE, "scalar_bfloat16.npy");
    round_trip(context, TP_UINT64, TP_SHAPE(0, 2), "empty_uint64.npy");
}

/* Files other writers make: the dict's keys in any order, double quotes, no trailing comma,
 * spaces anywhere, no padding; versions 2.0 and 3.0. */
static void headers_from_other_writers_are_read(void **state) {
    tp_context_t *context = *state;
    const int32_t values[3] = {7, -8, 9};
    const struct {
        unsigned major;
        const char *header;
    } cases[] = {
        {1, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }"},
        {1, "{\"shape\":(3,),\"descr\":\"<i4\",\"fortran_order\":False}"},
        {1, " {\n 'fortran_order' : False ,\n 'shape' : ( 3 , ) ,'descr':'=i4'}  \n"},
        {2, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }\n"},
        {3, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned char file[256];
        size_t size = make_npy(file, cases[i].major, 0, cases[i].header, values, sizeof values);
        write_file(path_of("other.npy"), file, size);
        tp_tensor_t *tensor;
        assert_ok(tp_tensor_load_npy(context, path_of("other.npy"), &tensor));
        int32_t back[3];
        assert_ok(tp_tensor_read(tensor, back, sizeof back));
        assert_memory_equal(back, values, sizeof back);
        tp_tensor_release(tensor);
        /* The same bytes in memory. */
        assert_ok(tp_tensor_decode_npy(context, file, size, &tensor));
        assert_int_equal(tp_tensor_num_elements(tensor), 3);
        tp_tensor_release(tensor);
    }
}

static void big_endian_values_are_swapped(void **state) {
    tp_context_t *context = *state;
    /* 1.5f, -2.0f as big-endian float32; 1 and -2 as big-endian int64. */
    const unsigned char f32[8] = {0x3f, 0xc0, 0, 0, 0xc0, 0, 0, 0};
    const unsigned char i64[16] = {0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0xff, 0xff, 0xfe};
    unsigned char file[256];
    size_t size = make_npy(file, 1, 0, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",
                           f32, sizeof f32);
    tp_tensor_t *tensor;
    assert_ok(tp_tensor_decode_npy(context, file, size, &tensor));
    float fs[2];
    assert_ok(tp_tensor_read(tensor, fs, sizeof fs));
    assert_true(fs[0] == 1.5f && fs[1] == -2.0f);
    tp_tensor_release(tensor);
    size = make_npy(file, 1, 0, "{'descr': '>i8', 'fortran_order': False, 'shape': (2,), }", i64,
                    sizeof i64);
    write_file(path_of("big.npy"), file, size);
    assert_ok(tp_tensor_load_npy(context, path_of("big.npy"), &tensor));
    int64_t is[2];
    assert_ok(tp_tensor_read(tensor, is, sizeof is));
    assert_true(is[0] == 1 && is[1] == -2);
    tp_tensor_release(tensor);
}

/* The 2-byte dtypes in either byte order, and bfloat16's record as other writers may space it
 * (a trailing comma in the tuple or the list, double quotes, '>' or '=' for the order). */
static void two_byte_dtypes_in_either_order(void **state) {
    tp_context_t *context = *state;
    const unsigned char big[4] = {0x3e, 0x00, 0xc0, 0x00}; /* 0x3e00 and 0xc000 */
    const unsigned char little[4] = {0x00, 0x3e, 0x00, 0xc0};
    const struct {
        const char *header;
        const unsigned char *stored;
        tp_dtype_t dtype;
    } cases[] = {
        {"{'descr': '>f2', 'fortran_order': False, 'shape': (2,), }", big, TP_FLOAT16},
        {"{'descr': '>u2', 'fortran_order': False, 'shape': (2,), }", big, TP_UINT16},
        {"{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }", little, TP_INT16},
        {"{'descr': [('bfloat16', '>u2')], 'fortran_order': False, 'shape': (2,), }", big,
         TP_BFLOAT16},
        {"{'descr': [ ( \"bfloat16\" , '<u2' , ) , ] ,'fortran_order': False, 'shape': (2,)}",
         little, TP_BFLOAT16},
        {"{'shape': (2,), 'descr': [('bfloat16', '=u2')], 'fortran_order': False}", little,
         TP_BFLOAT16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned char file[256];
        size_t size = make_npy(file, 1, 0, cases[i].header, cases[i].stored, 4);
        tp_tensor_t *tensor;
        assert_ok(tp_tensor_decode_npy(context, file, size, &tensor));
        assert_int_equal(tp_tensor_dtype(tensor), cases[i].dtype);
        uint16_t values[2];
        assert_ok(tp_tensor_read(tensor, values, sizeof values));
        assert_int_equal(values[0], 0x3e00);
        assert_int_equal(values[1], 0xc000);
        tp_tensor_release(tensor);
    }
}

/* numpy.save writes a transposed array in Fortran order: the first index varies fastest.
 * Loading gives the array itself, in C order. */
static void fortran_order_is_turned_into_c_order(void **state) {
    tp_context_t *context = *state;
    /* The 2 x 3 array [[1, 2, 3], [4, 5, 6]], stored column by column. */
    const double columns[6] = {1, 4, 2, 5, 3, 6};
    unsigned char file[512];
    size_t size = make_npy(file, 1, 0, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }",
                           columns, sizeof columns);
    write_file(path_of("fortran.npy"), file, size);
    tp_tensor_t *tensor;
    assert_ok(tp_tensor_load_npy(context, path_of("fortran.npy"), &tensor));
    double back[6];
    assert_ok(tp_tensor_read(tensor, back, sizeof back));
    const double rows[6] = {1, 2, 3, 4, 5, 6};
    assert_memory_equal(back, rows, sizeof rows);
    tp_tensor_release(tensor);

    /* A 2 x 3 x 2 array whose element [i][j][k] is 100i + 10j + k, Fortran order, big-endian
     * int32. */
    unsigned char stored[12 * 4];
    size_t at = 0;
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < 3; j++)
            for (int i = 0; i < 2; i++) {
                int32_t v = 100 * i + 10 * j + k;
                for (int byte = 3; byte >= 0; byte--) stored[at++] = (unsigned char)(v >> (8 * byte));
            }
    size = make_npy(file, 1, 0, "{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3, 2), }",
                    stored, sizeof stored);
    assert_ok(tp_tensor_decode_npy(context, file, size, &tensor));
    int32_t cube[12];
    assert_ok(tp_tensor_read(tensor, cube, sizeof cube));
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 2; k++) assert_int_equal(cube[i * 6 + j * 2 + k], 100 * i + 10 * j + k);
    tp_tensor_release(tensor);
}

/* Each malformed file: the status, and a fragment of its message. */
static void malformed_files_are_refused_with_the_reason(void **state) {
    tp_context_t *context = *state;
    const unsigned char six_floats[24] = {0};
    const struct {
        unsigned major, minor;
        const char *header;
        size_t data_size;
        const char *fragment;
    } cases[] = {
        {4, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", 24,
         "its format version 4.0 is unknown (tensorplug reads 1.0, 2.0 and 3.0)"},
        {1, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", 24,
         "format version 1.1 is unknown"},
        {1, 0, "[1, 2]", 0, "at byte 0 of it, expected '{' but found '[1, 2]'"},
        {1, 0, "{'descr': '<f4', 'fortran_order': False}", 0, "its header has no 'shape' key"},
        {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'extra': 1}", 24,
         "its header has the key 'extra'"},
        {1, 0, "{'descr': '<f4', 'descr': '<f4', 'shape': (6,), }", 24,
         "its header has the key 'descr' twice"},
        {1, 0, "{'descr': '|O', 'fortran_order': False, 'shape': (6,), }", 48,
         "its dtype '|O' holds pickled Python objects"},
        {1, 0, "{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", 24,
         "its dtype '<c8' is not one tensorplug holds"},
        {1, 0, "{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }", 24,
         "its dtype '<U3' is not one tensorplug holds"},
        {1, 0, "{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': (6,), }", 24,
         "its dtype is structured"},
        {1, 0, "{'descr': '|f4', 'fortran_order': False, 'shape': (6,), }", 24,
         "its dtype '|f4' gives no byte order"},
        {1, 0, "{'descr': '<f4', 'fortran_order': 0, 'shape': (6,), }", 24,
         "expected True or False as 'fortran_order' but found '0"},
        {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3), }", 0,
         "its shape has a negative dimension, -1"},
        {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
         0, "its shape has a dimension too large for int64, 99999999999999999999"},
        {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (3037000500, 3037000500), }",
         0, "its shape (3037000500, 3037000500): "},
        {1, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,), }",
         0, "its shape (2305843009213693952,) holds more float64 values than memory can"},
        {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,6), }", 24,
         "its shape has more than 8 dimensions"},
        {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (6), }", 24,
         "its shape is an integer in parentheses, not a tuple"},
        {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': [6], }", 24,
         "expected a tuple as 'shape' but found '[6]"},
        {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", 20,
         "truncated: dtype float32 and shape (6,) need 24 bytes of values, but only 20 follow "
         "the header"},
        {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", 20,
         "dtype float32 and shape (2, 2) need 16 bytes of values, but 20 follow the header"},
        {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), } x", 24,
         "expected nothing but spaces after the dict but found 'x'"},
        {1, 0, "{'descr' '<f4', 'fortran_order': False, 'shape': (6,), }", 24,
         "at byte 9 of it, expected ':' after a key but found ''<f4', 'fort'"},
        {1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), ", 24,
         "expected a string key or '}' but found the end of the header"},
        {1, 0, "{'descr\\x': '<f4'}", 0, "a string without escape sequences"},
        {1, 0, "{'\x1b[2J': 1}", 0, "its header has the key '\\x1B[2J'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned char file[512];
        size_t size = make_npy(file, cases[i].major, cases[i].minor, cases[i].header, six_floats,
                               cases[i].data_size > 24 ? 24 : cases[i].data_size);
        if (cases[i].data_size > 24) {
            memset(file + size, 0, cases[i].data_size - 24);
            size += cases[i].data_size - 24;
        }
        const char *path = path_of("bad.npy");
        write_file(path, file, size);
        tp_tensor_t *tensor = NULL;
        char fragment[600];
        snprintf(fragment, sizeof fragment, "tp_tensor_load_npy: '%s': ", path);
        tp_status_t *status = tp_tensor_load_npy(context, path, &tensor);
        assert_null(tensor);
        assert_non_null(status);
        if (strstr(tp_status_message(status), fragment) == NULL ||
            strstr(tp_status_message(status), cases[i].fragment) == NULL)
            print_error("case %zu: %s\n", i, tp_status_message(status));
        assert_int_equal(tp_status_code(status), TP_INVALID_ARGUMENT);
        assert_non_null(strstr(tp_status_message(status), fragment));
        assert_non_null(strstr(tp_status_message(status), cases[i].fragment));
        tp_status_free(status);
        assert_error(tp_tensor_decode_npy(context, file, size, &tensor), TP_INVALID_ARGUMENT,
                     cases[i].fragment);
    }
}

/* Dtypes tensorplug does not hold, each refused saying what it reads instead: raw bytes,
 * records other than bfloat16's, 2-byte numbers without a byte order. Each descr heads a
 * file of 12 two-byte elements. */
static void descrs_other_than_tensorplug_s_are_refused(void **state) {
    tp_context_t *context = *state;
    const unsigned char values[24] = {0};
    const struct {
        const char *descr, *fragment;
    } cases[] = {
        {"'<m8'", "its dtype '<m8' is not one tensorplug holds (it reads '<f2', '<f4', '<f8', "
                  "'|i1', '<i2', '<i4', '<i8', '|u1', '<u2', '<u4', '<u8', '|b1' and bfloat16's "
                  "[('bfloat16', '<u2')], and '>' for big-endian)"},
        {"'|u2'", "its dtype '|u2' gives no byte order"},
        {"'<V2'", "its dtype '<V2' is raw bytes, which say nothing of what they hold (tensorplug "
                  "writes bfloat16 as [('bfloat16', '<u2')] and reads that back)"},
        {"[('bfloat16', '<f2')]", "its dtype is structured (a list of fields as 'descr'), which "
                                  "tensorplug does not hold (the one record it reads is "
                                  "bfloat16's, [('bfloat16', '<u2')])"},
        {"[('bfloat16', '|u2')]", "its dtype is structured"},
        {"[('half', '<u2')]", "its dtype is structured"},
        {"[('bfloat16', '<u2'), ('x', '<u2')]", "its dtype is structured"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char header[200];
        snprintf(header, sizeof header, "{'descr': %s, 'fortran_order': False, 'shape': (12,), }",
                 cases[i].descr);
        unsigned char file[512];
        size_t size = make_npy(file, 1, 0, header, values, sizeof values);
        tp_tensor_t *tensor = NULL;
        assert_error(tp_tensor_decode_npy(context, file, size, &tensor), TP_INVALID_ARGUMENT,
                     cases[i].fragment);
        assert_null(tensor);
    }
}

static void truncated_and_foreign_files_are_refused(void **state) {
    tp_context_t *context = *state;
    const float six[6] = {1, 2, 3, 4, 5, 6};
    tp_tensor_t *tensor = floats(context, TP_SHAPE(6), six), *loaded = NULL;
    void *bytes;
    size_t size;
    assert_ok(tp_tensor_encode_npy(tensor, &bytes, &size));
    tp_tensor_release(tensor);
    const char *path = path_of("cut.npy");
    /* Every length short of the whole file is refused, none read as an array. */
    for (size_t cut = 0; cut < size; cut++) {
        write_file(path, bytes, cut);
        tp_status_t *status = tp_tensor_load_npy(context, path, &loaded);
        assert_null(loaded);
        assert_non_null(status);
        assert_int_equal(tp_status_code(status), TP_INVALID_ARGUMENT);
        const char *message = tp_status_message(status);
        const char *wanted = cut == 0 ? "not a .npy file"
                             : cut < 10 ? "truncated: the file ends after"
                             : cut < 128 ? "truncated: its header claims 118 bytes"
                                         : "truncated: dtype float32 and shape (6,) need 24 bytes";
        if (strstr(message, wanted) == NULL) print_error("cut at %zu: %s\n", cut, message);
        assert_non_null(strstr(message, wanted));
        tp_status_free(status);
    }
    free(bytes);
    static const char zip_start[] = "PK\x03\x04 not an npy";
    write_file(path, zip_start, sizeof zip_start - 1);
    assert_error(tp_tensor_load_npy(context, path, &loaded), TP_INVALID_ARGUMENT,
                 "not a .npy file: it does not begin with NumPy's magic string \\x93NUMPY");
    /* A bool other than 0 or 1 is refused, as tp_tensor_create refuses it. */
    unsigned char file[256];
    const unsigned char bools[3] = {1, 0, 2};
    size = make_npy(file, 1, 0, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                    bools, sizeof bools);
    write_file(path, file, size);
    assert_error(tp_tensor_load_npy(context, path, &loaded), TP_INVALID_ARGUMENT,
                 "its values: bool element 2 is the byte 2");
    /* A header longer than any NumPy writes, claimed by a version 2.0 length. */
    size = make_npy(file, 2, 0, "{}", NULL, 0);
    file[10] = 1; /* 0x0001007B bytes */
    write_file(path, file, size);
    assert_error(tp_tensor_load_npy(context, path, &loaded), TP_INVALID_ARGUMENT,
                 "its header claims 65538 bytes, more than the 65536 tensorplug reads");
}

static void missing_files_and_folders_are_named(void **state) {
    tp_context_t *context = *state;
    tp_tensor_t *tensor = NULL;
    char wanted[1200];
    snprintf(wanted, sizeof wanted,
             "tp_tensor_load_npy: cannot open '%s': No such file or directory",
             path_of("absent.npy"));
    assert_error(tp_tensor_load_npy(context, path_of("absent.npy"), &tensor), TP_NOT_FOUND,
                 wanted);
    snprintf(wanted, sizeof wanted, "cannot read '%s': it is not a regular file",
             scratch_folder());
    assert_error(tp_tensor_load_npy(context, scratch_folder(), &tensor), TP_INVALID_ARGUMENT, wanted);
    assert_null(tensor);
    assert_error(tp_tensor_load_npy(context, NULL, &tensor), TP_INVALID_ARGUMENT,
                 "argument 'path' is NULL");
}

/* Names the folder's entries whose name starts with `prefix`, so that a test sees what a save
 * left behind. */
static int count_entries(const char *prefix) {
    DIR *dir = opendir(scratch_folder());
    assert_non_null(dir);
    int count = 0;
    for (struct dirent *entry; (entry = readdir(dir)) != NULL;)
        if (strncmp(entry->d_name, prefix, strlen(prefix)) == 0) count++;
    closedir(dir);
    return count;
}

static void a_failed_save_leaves_no_file_behind(void **state) {
    tp_context_t *context = *state;
    const float one = 1;
    tp_tensor_t *tensor = floats(context, TP_SCALAR_SHAPE, &one);
    char wanted[1200];
    snprintf(wanted, sizeof wanted,
             "tp_tensor_save_npy: cannot create a file beside '%s/no/such/folder.npy': No such "
             "file or directory",
             scratch_folder());
    char path[600];
    snprintf(path, sizeof path, "%s/no/such/folder.npy", scratch_folder());
    assert_error(tp_tensor_save_npy(tensor, path), TP_NOT_FOUND, wanted);

    /* The name is a folder: the bytes are written beside it, the rename fails, and the new file
     * is removed. */
    assert_int_equal(mkdir(path_of("taken"), 0700), 0);
    snprintf(wanted, sizeof wanted, "tp_tensor_save_npy: cannot replace '%s': Is a directory",
             path_of("taken"));
    assert_error(tp_tensor_save_npy(tensor, path_of("taken")), TP_INVALID_ARGUMENT, wanted);
    assert_int_equal(count_entries("taken"), 1);

    /* A file saved over is replaced whole, with the permissions a new file gets. */
    assert_ok(tp_tensor_save_npy(tensor, path_of("replaced.npy")));
    const float two[4] = {2, 2, 2, 2};
    tp_tensor_t *bigger = floats(context, TP_SHAPE(4), two), *loaded;
    assert_ok(tp_tensor_save_npy(bigger, path_of("replaced.npy")));
    assert_int_equal(count_entries("replaced.npy"), 1);
    assert_ok(tp_tensor_load_npy(context, path_of("replaced.npy"), &loaded));
    assert_int_equal(tp_tensor_num_elements(loaded), 4);
    assert_new_file_mode(path_of("replaced.npy"));
    tp_tensor_release(loaded);
    tp_tensor_release(bigger);
    tp_tensor_release(tensor);
}

/* A tensor on a plug-in's device is read back to the host and saved; one whose values could
 * not be computed fails the save with that failure and leaves the old file as it was. The
 * queued test device fails its first kernel on each device, after the op returned. */
static void tensors_on_other_devices_save_and_failures_keep_the_old_file(void **state) {
    (void)state;
    tp_context_t *context = queued_context_failing_first_launches();
    const float in[3] = {1, -2, 3}, old[3] = {7, 8, 9};
    tp_tensor_t *x = floats(context, TP_SHAPE(3), in), *y, *loaded;
    tp_tensor_t *before = floats(context, TP_SHAPE(3), old);
    assert_ok(tp_tensor_save_npy(before, path_of("from_device.npy")));
    tp_tensor_release(before);

    tp_tensor_t *poisoned;
    assert_ok(tp_device_push(context, "/QDEV:0"));
    assert_ok(tp_relu(context, x, &poisoned));
    assert_ok(tp_device_pop(context));
    assert_error(tp_tensor_save_npy(poisoned, path_of("from_device.npy")), TP_INTERNAL,
                 "injected failure of kernel launch 1 (QDEV_FAIL_KERNEL)");
    tp_tensor_release(poisoned);
    float back[3];
    assert_ok(tp_tensor_load_npy(context, path_of("from_device.npy"), &loaded));
    assert_ok(tp_tensor_read(loaded, back, sizeof back));
    assert_memory_equal(back, old, sizeof old);
    assert_int_equal(count_entries("from_device.npy"), 1);
    tp_tensor_release(loaded);

    assert_ok(tp_device_push(context, "/QDEV:0"));
    assert_ok(tp_relu(context, x, &y));
    assert_ok(tp_device_pop(context));
    assert_string_equal(tp_tensor_device(y), "/job:localhost/replica:0/task:0/device:QDEV:0");
    assert_ok(tp_tensor_save_npy(y, path_of("from_device.npy")));
    assert_ok(tp_tensor_load_npy(context, path_of("from_device.npy"), &loaded));
    assert_ok(tp_tensor_read(loaded, back, sizeof back));
    assert_true(back[0] == 1 && back[1] == 0 && back[2] == 3);
    tp_tensor_release(loaded);
    tp_tensor_release(y);
    tp_tensor_release(x);
    assert_ok(tp_context_synchronize(context));
    tp_context_destroy(context);
}

int main(void) {
    tp_log_set_level(TP_LOG_ERROR);
#define TEST(name) cmocka_unit_test_setup_teardown(name, cpu_context_setup, cpu_context_teardown)
    const struct CMUnitTest tests[] = {
        TEST(values_of_every_dtype_round_trip_bit_for_bit),
        TEST(the_file_is_what_numpy_save_writes),
        TEST(empty_scalar_deep_and_large_tensors_round_trip),
        TEST(headers_from_other_writers_are_read),
        TEST(big_endian_values_are_swapped),
        TEST(two_byte_dtypes_in_either_order),
        TEST(fortran_order_is_turned_into_c_order),
        TEST(malformed_files_are_refused_with_the_reason),
        TEST(descrs_other_than_tensorplug_s_are_refused),
        TEST(truncated_and_foreign_files_are_refused),
        TEST(missing_files_and_folders_are_named),
        TEST(a_failed_save_leaves_no_file_behind),
        cmocka_unit_test(tensors_on_other_devices_save_and_failures_keep_the_old_file),
    };
#undef TEST
    return cmocka_run_group_tests(tests, make_folder, remove_folder);
}
