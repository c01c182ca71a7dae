/* SPDX-License-Identifier: Apache-2.0 */
/* The gradients of the array ops against central finite differences in float64: every case of
 * tests/gradcheck/cases_array.c, each at several draws of its sizes (0 included), and the cases
 * the case format cannot state (negative segment ids, a gradient only some inputs need, the
 * gradients of the ops that have none). */
#include "cpu_fixture.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff/gradients.h"
#include "gradcheck.h"
#include "tensorplug/training.h"

extern const gradcheck_family_t gradcheck_cases_array;

/* The sizes GRADCHECK_SIZE_A..D take, one row per run of each case. */
static const int64_t size_draws[][4] = {
    {3, 2, 4, 1}, {0, 3, 1, 2}, {2, 0, 3, 0}, {1, 4, 0, 3}, {4, 1, 2, 4},
};
enum { NUM_DRAWS = sizeof size_draws / sizeof size_draws[0] };

/* A small deterministic generator: uniform in [0, 1). */
static double next_unit(uint32_t *state) {
    *state = *state * 1664525u + 1013904223u;
    return (double)(*state >> 8) / (double)(1u << 24);
}

static tp_shape_t drawn_shape(const gradcheck_input_t *in, const int64_t *sizes) {
    tp_shape_t shape = {.rank = in->rank};
    for (int32_t d = 0; d < in->rank; d++)
        shape.dims[d] = in->dims[d] < 0 ? sizes[-in->dims[d] - 1] : in->dims[d];
    return shape;
}

static int64_t count_of(tp_shape_t shape) {
    int64_t count = 0;
    assert_ok(tp_shape_num_elements(&shape, &count));
    return count;
}

/* One run of a case: its inputs' shapes and values; float64 values are kept to perturb. */
typedef struct {
    const gradcheck_case_t *test;
    tp_shape_t shapes[GRADCHECK_MAX_INPUTS];
    int64_t counts[GRADCHECK_MAX_INPUTS];
    void *values[GRADCHECK_MAX_INPUTS];
    char label[200];
} run_t;

static void make_run(const gradcheck_case_t *test, const int64_t *sizes, uint32_t seed,
                     run_t *run) {
    run->test = test;
    snprintf(run->label, sizeof run->label, "%s (%s), sizes %lld %lld %lld %lld", test->op,
             test->what, (long long)sizes[0], (long long)sizes[1], (long long)sizes[2],
             (long long)sizes[3]);
    for (int i = 0; i < test->num_inputs; i++) {
        const gradcheck_input_t *in = &test->inputs[i];
        run->shapes[i] = drawn_shape(in, sizes);
        run->counts[i] = count_of(run->shapes[i]);
        run->values[i] = malloc((size_t)run->counts[i] * tp_dtype_size(in->dtype) + 1);
        assert_non_null(run->values[i]);
        for (int64_t k = 0; k < run->counts[i]; k++) {
            double unit = next_unit(&seed);
            switch (in->dtype) {
            case TP_FLOAT64: ((double *)run->values[i])[k] = 4 * unit - 2; break;
            case TP_INT32: ((int32_t *)run->values[i])[k] = (int32_t)(unit * (double)in->limit);
                break;
            case TP_INT64: ((int64_t *)run->values[i])[k] = (int64_t)(unit * (double)in->limit);
                break;
            case TP_BOOL: ((bool *)run->values[i])[k] = unit < 0.5; break;
            default: fail_msg("%s: input %d has an unexpected dtype", run->label, i);
            }
        }
    }
}

static void free_run(run_t *run) {
    for (int i = 0; i < run->test->num_inputs; i++) free(run->values[i]);
}

static tp_tensor_t *input_tensor(tp_context_t *c, const run_t *run, int i) {
    tp_dtype_t dtype = run->test->inputs[i].dtype;
    tp_tensor_t *tensor = NULL;
    assert_ok(tp_tensor_create(c, dtype, run->shapes[i], run->values[i],
                               (size_t)run->counts[i] * tp_dtype_size(dtype), &tensor));
    return tensor;
}

/* sum(op(inputs) * W) with W fixed, varied and never 0, so that a misplaced element shows. */
static tp_status_t *objective(tp_context_t *c, const run_t *run, tp_tensor_t *const *inputs,
                              tp_tensor_t **out) {
    tp_tensor_t *y = NULL, *weights = NULL, *weighted = NULL;
    tp_status_t *error = tp_execute(c, run->test->op, inputs, (size_t)run->test->num_inputs,
                                    run->test->attrs, (size_t)run->test->num_attrs, &y, 1);
    if (error != NULL) return error;
    int64_t count = tp_tensor_num_elements(y);
    double *w = malloc((size_t)count * sizeof *w + 1);
    assert_non_null(w);
    for (int64_t k = 0; k < count; k++)
        w[k] = (k % 3 == 1 ? -1.0 : 1.0) * (0.25 + fmod(0.6180339887 * (double)(k + 1), 1.0));
    error = tp_tensor_create(c, TP_FLOAT64, tp_tensor_shape(y), w, (size_t)count * sizeof *w,
                             &weights);
    free(w);
    if (error == NULL) error = tp_mul(c, y, weights, &weighted);
    if (error == NULL) error = tp_sum(c, weighted, NULL, 0, false, out);
    tp_tensor_release(weighted);
    tp_tensor_release(weights);
    tp_tensor_release(y);
    return error;
}

static double evaluate(tp_context_t *c, const run_t *run) {
    tp_tensor_t *inputs[GRADCHECK_MAX_INPUTS] = {NULL}, *f = NULL;
    for (int i = 0; i < run->test->num_inputs; i++) inputs[i] = input_tensor(c, run, i);
    tp_status_t *error = objective(c, run, inputs, &f);
    for (int i = 0; i < run->test->num_inputs; i++) tp_tensor_release(inputs[i]);
    if (error != NULL) print_error("in %s:\n", run->label);
    assert_ok(error);
    double value = 0;
    assert_ok(tp_tensor_read(f, &value, sizeof value));
    tp_tensor_release(f);
    return value;
}

/* The tape's gradient of every float64 input equals (f(x+h) - f(x-h)) / 2h element by element,
 * to the case's tolerance relative to max(1, |gradient|). */
static bool check_run(tp_context_t *c, run_t *run) {
    const gradcheck_case_t *test = run->test;
    double tolerance = test->tolerance > 0 ? test->tolerance : 1e-6, h = 1e-6;
    tp_tensor_t *inputs[GRADCHECK_MAX_INPUTS] = {NULL}, *sources[GRADCHECK_MAX_INPUTS] = {NULL};
    tp_tensor_t *grads[GRADCHECK_MAX_INPUTS] = {NULL}, *f = NULL;
    int source_of[GRADCHECK_MAX_INPUTS], num_sources = 0;
    for (int i = 0; i < test->num_inputs; i++) {
        inputs[i] = input_tensor(c, run, i);
        if (test->inputs[i].dtype == TP_FLOAT64) {
            source_of[num_sources] = i;
            sources[num_sources++] = inputs[i];
        }
    }
    tp_tape_t *tape = NULL;
    assert_ok(tp_tape_begin(c, &tape));
    for (int s = 0; s < num_sources; s++) assert_ok(tp_tape_watch(tape, sources[s]));
    tp_status_t *error = objective(c, run, inputs, &f);
    if (error == NULL) error = tp_tape_gradient(tape, f, sources, (size_t)num_sources, grads);
    tp_tape_destroy(tape);
    tp_tensor_release(f);
    for (int i = 0; i < test->num_inputs; i++) tp_tensor_release(inputs[i]);
    if (error != NULL) print_error("in %s:\n", run->label);
    assert_ok(error);
    bool ok = true;
    for (int s = 0; s < num_sources; s++) {
        int i = source_of[s];
        double *analytic = malloc((size_t)run->counts[i] * sizeof *analytic + 1);
        assert_non_null(analytic);
        tp_shape_t got = tp_tensor_shape(grads[s]);
        bool shaped = got.rank == run->shapes[i].rank;
        for (int32_t d = 0; d < got.rank && shaped; d++)
            shaped = got.dims[d] == run->shapes[i].dims[d];
        if (!shaped) {
            print_error("%s: the gradient of input %d has the wrong shape\n", run->label, i);
            free(analytic);
            ok = false;
            continue;
        }
        assert_ok(tp_tensor_read(grads[s], analytic, (size_t)run->counts[i] * sizeof *analytic));
        double *x = run->values[i];
        for (int64_t k = 0; k < run->counts[i]; k++) {
            double saved = x[k];
            x[k] = saved + h;
            double plus = evaluate(c, run);
            x[k] = saved - h;
            double minus = evaluate(c, run);
            x[k] = saved;
            double numeric = (plus - minus) / (2 * h);
            if (fabs(analytic[k] - numeric) > tolerance * fmax(1.0, fabs(analytic[k]))) {
                print_error("%s: input %d element %lld: tape %.12g, finite differences %.12g\n",
                            run->label, i, (long long)k, analytic[k], numeric);
                ok = false;
            }
        }
        free(analytic);
    }
    for (int s = 0; s < num_sources; s++) tp_tensor_release(grads[s]);
    return ok;
}

static void every_array_case_matches_finite_differences(void **state) {
    tp_context_t *c = *state;
    const gradcheck_family_t *family = &gradcheck_cases_array;
    bool ok = true;
    for (size_t t = 0; t < family->count; t++) {
        for (int draw = 0; draw < NUM_DRAWS; draw++) {
            run_t run;
            make_run(&family->cases[t], size_draws[draw], (uint32_t)(t * 7919 + (size_t)draw),
                     &run);
            ok = check_run(c, &run) && ok;
            free_run(&run);
        }
    }
    if (!ok) fail_msg("some array gradients differ from finite differences");
}

/* Every op of the array family with a gradient has a case (the walk over every family will
 * check this for all of them). */
static void every_array_gradient_has_a_case(void **state) {
    (void)state;
    for (size_t e = 0; e < tp_gradients_array.count; e++) {
        const char *op = tp_gradients_array.entries[e].op;
        bool found = false;
        for (size_t t = 0; t < gradcheck_cases_array.count && !found; t++)
            found = strcmp(gradcheck_cases_array.cases[t].op, op) == 0;
        if (!found) fail_msg("%s has a gradient but no gradient check case", op);
    }
}

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

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, cpu_context_setup, cpu_context_teardown)
    const struct CMUnitTest tests[] = {
        TEST(every_array_gradient_has_a_case),
        TEST(every_array_case_matches_finite_differences),
        TEST(unsorted_segment_sum_gives_dropped_rows_zero_gradient),
        TEST(indices_and_flags_from_watched_tensors_carry_no_gradient),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
