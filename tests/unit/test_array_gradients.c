/* SPDX-License-Identifier: Apache-2.0 */
/* The array ops' gradients in what the gradient check's cases (tests/gradcheck/cases_array.c,
 * walked by test_gradient_check) cannot state: rows dropped by negative segment ids, and
 * comparisons, ArgMax and OneHot on the path, whose indices and flags carry no gradient. Values
 * worked out by hand. */
#include "cpu_fixture.h"

#include <math.h>
#include <stdbool.h>

#include "tensorplug/training.h"

static double read_scalar(tp_tensor_t *t) {
    double value = 0;
    assert_ok(tp_tensor_read(t, &value, sizeof value));
    return value;
}

static void expect_doubles(tp_tensor_t *t, const double *want, size_t count) {
    double got[16];
    assert_true(count <= 16);
    assert_int_equal(tp_tensor_num_elements(t), (int64_t)count);
    assert_ok(tp_tensor_read(t, got, count * sizeof *got));
    for (size_t k = 0; k < count; k++)
        if (fabs(got[k] - want[k]) > 1e-12)
            fail_msg("element %zu: got %.17g, wanted %.17g", k, got[k], want[k]);
}

/* Rows with a negative id were dropped: they receive 0; the others their segment's gradient. */
static void unsorted_segment_sum_gives_dropped_rows_zero_gradient(void **state) {
    tp_context_t *c = *state;
    double values[6] = {1, 2, 3, 4, 5, 6}, weights[4] = {0.5, -1, 2, 3};
    int32_t ids[3] = {1, -1, 0};
    tp_tensor_t *data, *segment_ids, *w, *sums, *weighted, *f, *grad;
    assert_ok(tp_tensor_create(c, TP_FLOAT64, TP_SHAPE(3, 2), values, sizeof values, &data));
    assert_ok(tp_tensor_create(c, TP_INT32, TP_SHAPE(3), ids, sizeof ids, &segment_ids));
    assert_ok(tp_tensor_create(c, TP_FLOAT64, TP_SHAPE(2, 2), weights, sizeof weights, &w));
    tp_tape_t *tape;
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, data));
    assert_ok(tp_unsorted_segment_sum(c, data, segment_ids, 2, &sums));
    assert_ok(tp_mul(c, sums, w, &weighted));
    assert_ok(tp_sum(c, weighted, NULL, 0, false, &f));
    /* sums = [[5, 6], [1, 2]]: f = 2.5 - 6 + 2 + 6. */
    assert_true(fabs(read_scalar(f) - 4.5) < 1e-12);
    assert_ok(tp_tape_gradient(tape, f, &data, 1, &grad));
    expect_doubles(grad, (const double[]){2, 3, 0, 0, 0.5, -1}, 6);
    tp_tape_destroy(tape);
    tp_tensor_t *all[] = {data, segment_ids, w, sums, weighted, f, grad};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tp_tensor_release(all[i]);
    /* No segments at all: every row dropped, every gradient 0. */
    int32_t dropped[3] = {-1, -2, -3};
    assert_ok(tp_tensor_create(c, TP_FLOAT64, TP_SHAPE(3, 2), values, sizeof values, &data));
    assert_ok(tp_tensor_create(c, TP_INT32, TP_SHAPE(3), dropped, sizeof dropped, &segment_ids));
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, data));
    assert_ok(tp_unsorted_segment_sum(c, data, segment_ids, 0, &sums));
    assert_ok(tp_sum(c, sums, NULL, 0, false, &f));
    assert_ok(tp_tape_gradient(tape, f, &data, 1, &grad));
    expect_doubles(grad, (const double[]){0, 0, 0, 0, 0, 0}, 6);
    tp_tape_destroy(tape);
    tp_tensor_t *again[] = {data, segment_ids, sums, f, grad};
    for (size_t i = 0; i < sizeof again / sizeof again[0]; i++) tp_tensor_release(again[i]);
}

/* Comparisons and ArgMax on the path give indices and flags, through which nothing flows: the
 * gradient goes through Select and Gather alone. relu(x) = select(x < 0, 0, x) has gradient 1
 * where x >= 0; x[argmax(x)] has gradient 1 at the largest element. */
static void indices_and_flags_from_watched_tensors_carry_no_gradient(void **state) {
    tp_context_t *c = *state;
    double values[4] = {-1.5, 2, 0.5, -3}, zero = 0;
    tp_tensor_t *x, *z, *below, *relu, *f, *grad, *at, *largest;
    assert_ok(tp_tensor_create(c, TP_FLOAT64, TP_SHAPE(4), values, sizeof values, &x));
    assert_ok(tp_tensor_create(c, TP_FLOAT64, TP_SCALAR_SHAPE, &zero, sizeof zero, &z));
    tp_tape_t *tape;
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, x));
    assert_ok(tp_less(c, x, z, &below));
    assert_ok(tp_select(c, below, z, x, &relu));
    assert_ok(tp_sum(c, relu, NULL, 0, false, &f));
    assert_ok(tp_tape_gradient(tape, f, &x, 1, &grad));
    expect_doubles(grad, (const double[]){0, 1, 1, 0}, 4);
    tp_tensor_release(grad);
    tp_tensor_release(f);
    assert_ok(tp_argmax(c, x, 0, TP_INT64, &at));
    assert_ok(tp_gather(c, x, at, 0, &largest));
    assert_true(read_scalar(largest) == 2);
    assert_ok(tp_tape_gradient(tape, largest, &x, 1, &grad));
    expect_doubles(grad, (const double[]){0, 1, 0, 0}, 4);
    tp_tape_destroy(tape);
    tp_tensor_t *all[] = {x, z, below, relu, grad, at, largest};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tp_tensor_release(all[i]);
}

/* sum(one_hot(argmax(x)) * x) is the largest element: OneHot's indices, computed from x, give
 * nothing back, and x receives 1 at its largest element through the product alone. */
static void one_hot_of_watched_indices_passes_no_gradient(void **state) {
    tp_context_t *c = *state;
    double values[3] = {0.5, -2, 4};
    tp_tensor_t *x, *at, *mask, *product, *f, *grad;
    assert_ok(tp_tensor_create(c, TP_FLOAT64, TP_SHAPE(3), values, sizeof values, &x));
    tp_tape_t *tape;
    assert_ok(tp_tape_begin(c, &tape));
    assert_ok(tp_tape_watch(tape, x));
    assert_ok(tp_argmax(c, x, 0, TP_INT32, &at));
    assert_ok(tp_one_hot(c, at, 3, 1, 0, -1, TP_FLOAT64, &mask));
    assert_ok(tp_mul(c, mask, x, &product));
    assert_ok(tp_sum(c, product, NULL, 0, false, &f));
    assert_true(read_scalar(f) == 4);
    assert_ok(tp_tape_gradient(tape, f, &x, 1, &grad));
    expect_doubles(grad, (const double[]){0, 0, 1}, 3);
    tp_tape_destroy(tape);
    tp_tensor_t *all[] = {x, at, mask, product, f, grad};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tp_tensor_release(all[i]);
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, cpu_context_setup, cpu_context_teardown)
    const struct CMUnitTest tests[] = {
        TEST(unsorted_segment_sum_gives_dropped_rows_zero_gradient),
        TEST(indices_and_flags_from_watched_tensors_carry_no_gradient),
        TEST(one_hot_of_watched_indices_passes_no_gradient),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
