/* SPDX-License-Identifier: Apache-2.0 */
/* Zero-copy host access: tp_tensor_host_data gives a CPU tensor's own bytes, and
 * tp_tensor_create_borrowed makes a tensor of memory it does not own, which ops read in place,
 * the memory statistics do not count, and which goes back to its owner once released. */
#include "cpu_fixture.h"

#include <stdalign.h>
#include <string.h>

static int releases;

static void count_release(void *arg) {
    (void)arg;
    releases++;
}

static uint64_t bytes_in_use(tp_context_t *c) {
    tp_memory_stats_t stats = {.struct_size = sizeof stats};
    assert_ok(tp_context_memory_stats(c, "CPU:0", &stats));
    return stats.bytes_in_use;
}

static void host_data_is_the_tensors_own_memory(void **state) {
    tp_context_t *c = *state;
    tp_tensor_t *a = tensor_of_doubles(c, TP_FLOAT32, TP_SHAPE(2, 2), (const double[]){1, 2, 3, 4});
    const void *first = NULL, *second = NULL;
    assert_ok(tp_tensor_host_data(a, &first));
    assert_ok(tp_tensor_host_data(a, &second));
    assert_ptr_equal(first, second);
    assert_float_equal(((const float *)first)[3], 4.0f, 0);
    tp_tensor_t *empty = NULL;
    assert_ok(tp_tensor_create(c, TP_INT32, TP_SHAPE(0), NULL, 0, &empty));
    const void *nothing = NULL;
    assert_ok(tp_tensor_host_data(empty, &nothing));
    assert_non_null(nothing);
    tp_tensor_release(empty);
    tp_tensor_release(a);
}

static void borrowed_memory_is_read_in_place_and_given_back(void **state) {
    tp_context_t *c = *state;
    alignas(64) float values[4] = {1, 2, 3, 4};
    uint64_t before = bytes_in_use(c);
    releases = 0;
    tp_tensor_t *borrowed = NULL;
    assert_ok(tp_tensor_create_borrowed(c, TP_FLOAT32, TP_SHAPE(4), values, sizeof values,
                                        count_release, NULL, &borrowed));
    assert_int_equal(bytes_in_use(c), before);
    const void *data = NULL;
    assert_ok(tp_tensor_host_data(borrowed, &data));
    assert_ptr_equal(data, values);
    tp_tensor_t *sum = NULL;
    assert_ok(tp_add(c, borrowed, borrowed, &sum));
    float twice[4];
    assert_ok(tp_tensor_read(sum, twice, sizeof twice));
    assert_float_equal(twice[0], 2.0f, 0);
    assert_float_equal(twice[3], 8.0f, 0);
    tp_tensor_release(sum);
    assert_int_equal(releases, 0);
    tp_tensor_release(borrowed);
    /* The CPU is synchronous: nothing reads the memory any more, so it goes back at once. */
    assert_int_equal(releases, 1);
}

static void borrowing_refuses_misaligned_and_short_data(void **state) {
    tp_context_t *c = *state;
    alignas(64) unsigned char bytes[64] = {0};
    tp_tensor_t *out = NULL;
    releases = 0;
    assert_error(tp_tensor_create_borrowed(c, TP_FLOAT32, TP_SHAPE(2), bytes + 4, 8,
                                           count_release, NULL, &out),
                 TP_INVALID_ARGUMENT, "is not aligned to 16 bytes");
    assert_error(tp_tensor_create_borrowed(c, TP_FLOAT32, TP_SHAPE(4), bytes, 8, count_release,
                                           NULL, &out),
                 TP_INVALID_ARGUMENT, "needs 16 bytes of data, but 8 were given");
    bytes[1] = 2; /* not a bool */
    assert_error(tp_tensor_create_borrowed(c, TP_BOOL, TP_SHAPE(2), bytes, 2, count_release,
                                           NULL, &out),
                 TP_INVALID_ARGUMENT, "");
    assert_null(out);
    assert_int_equal(releases, 0);
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, cpu_context_setup, cpu_context_teardown)
    const struct CMUnitTest tests[] = {
        TEST(host_data_is_the_tensors_own_memory),
        TEST(borrowed_memory_is_read_in_place_and_given_back),
        TEST(borrowing_refuses_misaligned_and_short_data),
    };
#undef TEST
    return cmocka_run_group_tests(tests, NULL, NULL);
}
