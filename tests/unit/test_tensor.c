/* SPDX-License-Identifier: Apache-2.0 */
/* Tensors: creation from host data, reading back, reference counts, printing, bad input. */
#include "test_support.h"

#include <stdbool.h>
#include <stdlib.h>

#include "context/context.h"
#include "device/physical_device.h"

#include "cpu_fixture.h"


static void values_round_trip_for_every_dtype(void **state) {
    tp_context_t *context = *state;
    const float f32[] = {1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, 7.0f};
    const double f64[] = {0.1, 0.2, 0.30000000000000004, -1e300, 4.0, 5.0};
    const int32_t i32[] = {1, -2, INT32_MAX, INT32_MIN, 0, 6};
    const int64_t i64[] = {INT64_MAX, INT64_MIN, 0, 1, -1, 42};
    const uint8_t u8[] = {0, 1, 127, 128, 254, 255};
    const bool b[] = {true, false, true, true, false, false};
    const struct {
        tp_dtype_t dtype;
        const void *data;
        size_t size;
    } cases[] = {{TP_FLOAT32, f32, sizeof f32}, {TP_FLOAT64, f64, sizeof f64},
                 {TP_INT32, i32, sizeof i32},   {TP_INT64, i64, sizeof i64},
                 {TP_UINT8, u8, sizeof u8},     {TP_BOOL, b, sizeof b}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tp_tensor_t *tensor;
        assert_ok(tp_tensor_create(context, cases[i].dtype, TP_SHAPE(2, 3), cases[i].data,
                                   cases[i].size, &tensor));
        assert_int_equal(tp_tensor_dtype(tensor), cases[i].dtype);
        tp_shape_t shape = tp_tensor_shape(tensor);
        assert_int_equal(shape.rank, 2);
        assert_int_equal(shape.dims[0], 2);
        assert_int_equal(shape.dims[1], 3);
        assert_int_equal(tp_tensor_num_elements(tensor), 6);
        assert_int_equal(tp_tensor_byte_size(tensor), cases[i].size);
        assert_string_equal(tp_tensor_device(tensor),
                            "/job:localhost/replica:0/task:0/device:CPU:0");
        unsigned char back[64];
        assert_ok(tp_tensor_read(tensor, back, cases[i].size));
        assert_memory_equal(back, cases[i].data, cases[i].size);
        tp_tensor_release(tensor);
    }
}

static void the_tensor_owns_a_copy(void **state) {
    tp_context_t *context = *state;
    int32_t data[] = {1, 2, 3};
    tp_tensor_t *tensor;
    assert_ok(tp_tensor_create(context, TP_INT32, TP_SHAPE(3), data, sizeof data, &tensor));
    data[0] = 99;
    int32_t back[3];
    assert_ok(tp_tensor_read(tensor, back, sizeof back));
    assert_int_equal(back[0], 1);
    tp_tensor_release(tensor);
}

static void references_keep_memory_until_the_last_release(void **state) {
    tp_context_t *context = *state;
    const float data[4] = {1, 2, 3, 4};
    tp_tensor_t *tensor;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(4), data, sizeof data, &tensor));
    tp_device_t *cpu = context->registry.host_device;
    assert_int_equal(device_bytes_in_use(cpu), 256);
    assert_ptr_equal(tp_tensor_retain(tensor), tensor);
    tp_tensor_release(tensor);
    assert_int_equal(device_bytes_in_use(cpu), 256);
    float back[4];
    assert_ok(tp_tensor_read(tensor, back, sizeof back));
    tp_tensor_release(tensor);
    assert_int_equal(device_bytes_in_use(cpu), 0);
    tp_tensor_release(NULL);
    assert_null(tp_tensor_retain(NULL));
}

static void a_tensor_may_outlive_its_context(void **state) {
    (void)state;
    tp_context_t *context;
    assert_ok(tp_context_create(NULL, &context));
    const double data[2] = {1, 2};
    tp_tensor_t *tensor;
    assert_ok(tp_tensor_create(context, TP_FLOAT64, TP_SHAPE(2), data, sizeof data, &tensor));
    tp_context_destroy(context);
    double back[2];
    assert_ok(tp_tensor_read(tensor, back, sizeof back));
    assert_true(back[1] == 2.0);
    tp_tensor_release(tensor); /* releases the context too; ASan reports a leak otherwise */
}

static void empty_and_scalar_tensors(void **state) {
    tp_context_t *context = *state;
    tp_tensor_t *empty, *scalar;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(0, 4), NULL, 0, &empty));
    assert_int_equal(tp_tensor_num_elements(empty), 0);
    assert_ok(tp_tensor_read(empty, NULL, 0));
    const int64_t value = -7;
    assert_ok(tp_tensor_create(context, TP_INT64, TP_SCALAR_SHAPE, &value, sizeof value, &scalar));
    assert_int_equal(tp_tensor_shape(scalar).rank, 0);
    int64_t back = 0;
    assert_ok(tp_tensor_read(scalar, &back, sizeof back));
    assert_int_equal(back, -7);
    tp_tensor_release(empty);
    tp_tensor_release(scalar);
}

static void bad_input_is_refused_and_leaves_nothing(void **state) {
    tp_context_t *context = *state;
    const float data[6] = {0};
    tp_tensor_t *tensor = NULL;
    assert_error(tp_tensor_create(NULL, TP_FLOAT32, TP_SHAPE(6), data, sizeof data, &tensor),
                 TP_INVALID_ARGUMENT, "tp_tensor_create: argument 'context' is NULL");
    assert_error(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(6), data, sizeof data, NULL),
                 TP_INVALID_ARGUMENT, "argument 'out_tensor' is NULL");
    assert_error(tp_tensor_create(context, (tp_dtype_t)42, TP_SHAPE(6), data, sizeof data,
                                  &tensor),
                 TP_INVALID_ARGUMENT, "tp_tensor_create: unknown dtype 42");
    assert_error(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(2, -3), data, sizeof data,
                                  &tensor),
                 TP_INVALID_ARGUMENT, "dimension 1 is negative (-3)");
    assert_error(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(INT64_C(1) << 62, 4), data,
                                  sizeof data, &tensor),
                 TP_INVALID_ARGUMENT, "has more elements than fit in 64 bits");
    assert_error(tp_tensor_create(context, TP_FLOAT64, TP_SHAPE(INT64_C(1) << 61, 2), data,
                                  sizeof data, &tensor),
                 TP_INVALID_ARGUMENT, "needs more bytes than fit in memory");
    tp_shape_t too_deep = {9, {1, 1, 1, 1, 1, 1, 1, 1}};
    assert_error(tp_tensor_create(context, TP_FLOAT32, too_deep, data, 4, &tensor),
                 TP_INVALID_ARGUMENT, "rank 9 is outside 0..8");
    assert_error(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(2, 2), data, sizeof data,
                                  &tensor),
                 TP_INVALID_ARGUMENT,
                 "a float32 tensor of shape (2, 2) needs 16 bytes of data, but 24 were given");
    assert_error(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(2), NULL, 8, &tensor),
                 TP_INVALID_ARGUMENT, "argument 'data' is NULL");
    assert_null(tensor);
    assert_int_equal(tensor_bytes_in_use(context), 0);

    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(6), data, sizeof data, &tensor));
    float small[2];
    assert_error(tp_tensor_read(tensor, small, sizeof small), TP_INVALID_ARGUMENT,
                 "the tensor holds 24 bytes, but the buffer is 8");
    assert_error(tp_tensor_read(tensor, NULL, sizeof data), TP_INVALID_ARGUMENT,
                 "argument 'data' is NULL");
    assert_error(tp_tensor_read(NULL, small, sizeof small), TP_INVALID_ARGUMENT,
                 "argument 'tensor' is NULL");
    assert_error(tp_tensor_print(tensor, NULL), TP_INVALID_ARGUMENT, "argument 'out' is NULL");
    tp_tensor_release(tensor);
}

static char *format(tp_context_t *context, tp_dtype_t dtype, tp_shape_t shape, const void *data,
                    size_t size) {
    tp_tensor_t *tensor;
    assert_ok(tp_tensor_create(context, dtype, shape, data, size, &tensor));
    char *text = NULL;
    assert_ok(tp_tensor_format(tensor, &text));
    tp_tensor_release(tensor);
    return text;
}

static void tensors_print_as_the_reference_documents_show(void **state) {
    tp_context_t *context = *state;
    const float product[] = {22, 28, 49, 64};
    char *text = format(context, TP_FLOAT32, TP_SHAPE(2, 2), product, sizeof product);
    assert_string_equal(text, "tp.Tensor(\n[[22. 28.]\n [49. 64.]], shape=(2, 2), dtype=float32)");
    free(text);
    const float sum[] = {44, 56, 98, 128};
    text = format(context, TP_FLOAT32, TP_SHAPE(2, 2), sum, sizeof sum);
    assert_string_equal(text,
                        "tp.Tensor(\n[[ 44.  56.]\n [ 98. 128.]], shape=(2, 2), dtype=float32)");
    free(text);
    const int32_t vector[] = {1, 2, 3};
    text = format(context, TP_INT32, TP_SHAPE(3), vector, sizeof vector);
    assert_string_equal(text, "tp.Tensor([1 2 3], shape=(3,), dtype=int32)");
    free(text);
    const float scalar = 3.0f;
    text = format(context, TP_FLOAT32, TP_SCALAR_SHAPE, &scalar, sizeof scalar);
    assert_string_equal(text, "tp.Tensor(3.0, shape=(), dtype=float32)");
    free(text);

    tp_tensor_t *tensor;
    assert_ok(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(2, 2), product, sizeof product,
                               &tensor));
    char *printed = NULL;
    size_t length = 0;
    FILE *out = open_memstream(&printed, &length);
    assert_ok(tp_tensor_print(tensor, out));
    fclose(out);
    assert_string_equal(printed,
                        "tp.Tensor(\n[[22. 28.]\n [49. 64.]], shape=(2, 2), dtype=float32)\n");
    free(printed);
    tp_tensor_release(tensor);
}

static void the_const_op_makes_constants(void **state) {
    tp_context_t *context = *state;
    const int64_t values[3] = {7, -8, 9};
    tp_tensor_t *t = NULL;
    assert_ok(tp_constant(context, TP_INT64, TP_SHAPE(3), values, sizeof values, &t));
    int64_t back[3];
    assert_ok(tp_tensor_read(t, back, sizeof back));
    assert_memory_equal(back, values, sizeof values);
    assert_string_equal(tp_tensor_device(t), "/job:localhost/replica:0/task:0/device:CPU:0");
    tp_tensor_release(t);
    t = NULL;
    assert_error(tp_constant(context, TP_INT64, TP_SHAPE(2, 2), values, sizeof values, &t),
                 TP_INVALID_ARGUMENT,
                 "Const: a int64 tensor of shape [2,2] needs 32 bytes of value, but 24 were given");
    assert_error(tp_constant(context, TP_INT64, TP_SHAPE(3), NULL, sizeof values, &t),
                 TP_INVALID_ARGUMENT, "has 24 bytes but no data");
    assert_null(t);
}

/* Kernels read bools as C's bool, for which a byte other than 0 or 1 is undefined: such data
 * is refused where it enters, by tp_tensor_create and by the Const op, naming the element. */
static void bool_bytes_must_be_0_or_1(void **state) {
    tp_context_t *context = *state;
    const uint8_t good[3] = {0, 1, 1}, bad[3] = {0, 1, 2};
    tp_tensor_t *t = NULL, *n = NULL;
    assert_error(tp_tensor_create(context, TP_BOOL, TP_SHAPE(3), bad, sizeof bad, &t),
                 TP_INVALID_ARGUMENT,
                 "tp_tensor_create: bool element 2 is the byte 2; a bool must be 0 or 1");
    assert_error(tp_constant(context, TP_BOOL, TP_SHAPE(3), bad, sizeof bad, &t),
                 TP_INVALID_ARGUMENT, "Const: bool element 2 is the byte 2; a bool must be 0 or 1");
    assert_null(t);
    assert_ok(tp_tensor_create(context, TP_BOOL, TP_SHAPE(3), good, sizeof good, &t));
    assert_ok(tp_cast(context, t, TP_INT32, &n));
    int32_t as_ints[3];
    assert_ok(tp_tensor_read(n, as_ints, sizeof as_ints));
    assert_true(as_ints[0] == 0 && as_ints[1] == 1 && as_ints[2] == 1);
    tp_tensor_release(n);
    tp_tensor_release(t);
    assert_ok(tp_constant(context, TP_BOOL, TP_SHAPE(3), good, sizeof good, &t));
    uint8_t back[3];
    assert_ok(tp_tensor_read(t, back, sizeof back));
    assert_memory_equal(back, good, sizeof good);
    tp_tensor_release(t);
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, cpu_context_setup, cpu_context_teardown)
    const struct CMUnitTest tests[] = {
        TEST(values_round_trip_for_every_dtype),
        TEST(the_tensor_owns_a_copy),
        TEST(references_keep_memory_until_the_last_release),
        cmocka_unit_test(a_tensor_may_outlive_its_context),
        TEST(empty_and_scalar_tensors),
        TEST(bad_input_is_refused_and_leaves_nothing),
        TEST(tensors_print_as_the_reference_documents_show),
        TEST(the_const_op_makes_constants),
        TEST(bool_bytes_must_be_0_or_1),
    };
#undef TEST
    return cmocka_run_group_tests(tests, NULL, NULL);
}
