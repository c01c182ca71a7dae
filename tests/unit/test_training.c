/* SPDX-License-Identifier: Apache-2.0 */
/* Training makes progress: each optimizer moves variables by exactly the step its gradient
 * asks for, fit's update is gradient descent on the mean squared error, and a model's loss
 * falls epoch after epoch while every weight moves. Without these, a training loop that never
 * updates would pass every other test. Fit runs replica threads, so this runs under
 * ThreadSanitizer too. */
#include "test_support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_fixture.h"
#include "tensorplug/float16.h"
#include "training_support.h"

static tp_variable_t *variable(tp_context_t *context, const char *name, tp_shape_t shape,
                               const float *values) {
    tp_tensor_t *initial = floats(context, shape, values);
    tp_variable_t *v;
    assert_ok(tp_variable_create(context, name, initial, NULL, &v));
    tp_tensor_release(initial);
    return v;
}

/* Asserts that `v` holds exactly `expected` (`count` floats). */
static void assert_variable_equal(tp_variable_t *v, const float *expected, size_t count) {
    tp_tensor_t *value;
    assert_ok(tp_variable_read(v, &value));
    float got[16];
    assert_true(count <= 16);
    assert_ok(tp_tensor_read(value, got, count * sizeof *got));
    for (size_t i = 0; i < count; i++) {
        if (got[i] != expected[i])
            fail_msg("%s[%zu] is %.9g, expected %.9g", tp_variable_name(v), i, (double)got[i],
                     (double)expected[i]);
    }
    tp_tensor_release(value);
}

/* ---- tp_sgd_apply ---------------------------------------------------------------------------- */

/* variable -= rate * gradient, with values whose products and differences are exact in float,
 * applied twice: the second step starts where the first ended. */
static void sgd_steps_by_the_rate_times_the_gradient(void **state) {
    tp_context_t *context = *state;
    tp_variable_t *w = variable(context, "w", TP_SHAPE(2, 2), (const float[]){1, 2, 3, 4});
    tp_variable_t *b = variable(context, "b", TP_SHAPE(2), (const float[]){0.5f, -0.5f});
    tp_tensor_t *grads[2] = {floats(context, TP_SHAPE(2, 2), (const float[]){1, -2, 0.5f, 0}),
                             floats(context, TP_SHAPE(2), (const float[]){4, -4})};
    tp_variable_t *variables[2] = {w, b};
    assert_ok(tp_sgd_apply(variables, grads, 2, 0.25));
    assert_variable_equal(w, (const float[]){0.75f, 2.5f, 2.875f, 4}, 4);
    assert_variable_equal(b, (const float[]){-0.5f, 0.5f}, 2);
    assert_ok(tp_sgd_apply(variables, grads, 2, 0.25));
    assert_variable_equal(w, (const float[]){0.5f, 3, 2.75f, 4}, 4);
    assert_variable_equal(b, (const float[]){-1.5f, 1.5f}, 2);

    /* A bad second pair is refused before the first variable moves. */
    tp_tensor_t *wrong[2] = {grads[0], grads[0]};
    assert_error(tp_sgd_apply(variables, wrong, 2, 0.25), TP_INVALID_ARGUMENT,
                 "tp_sgd_apply: variable 'b' is float32 (2,), its gradient float32 (2, 2)");
    assert_variable_equal(w, (const float[]){0.5f, 3, 2.75f, 4}, 4);
    tp_tensor_release(grads[0]);
    tp_tensor_release(grads[1]);
    tp_variable_destroy(w);
    tp_variable_destroy(b);
}

/* A variable on another device is updated there, by the gradient copied over. */
static void sgd_updates_a_variable_on_its_own_device(void **state) {
    tp_context_t *context = *state;
    assert_ok(tp_context_set_logical_devices(context, "CPU:0",
                                             (uint64_t[]){16u << 20, 16u << 20}, 2));
    tp_tensor_t *initial = floats(context, TP_SHAPE(3), (const float[]){1, 1, 1});
    tp_variable_t *v;
    assert_ok(tp_variable_create(context, "v", initial, "/cpu:1", &v));
    tp_tensor_release(initial);
    tp_tensor_t *grad = floats(context, TP_SHAPE(3), (const float[]){2, 0, -8});
    assert_ok(tp_sgd_apply(&v, &grad, 1, 0.5));
    assert_variable_equal(v, (const float[]){0, 1, 5}, 3);
    assert_string_equal(tp_variable_device(v), "/job:localhost/replica:0/task:0/device:CPU:1");
    tp_tensor_release(grad);
    tp_variable_destroy(v);
}

/* GradientDescentUpdate, the one pass tp_sgd_apply makes per variable on the CPU, gives the bits
 * of Mul then Sub in float32 and float64 (products that are not exact, an odd size spread over
 * the worker threads), and float16 rounded once from float32. */
static tp_tensor_t *values_of(tp_context_t *context, tp_dtype_t dtype, int64_t n, double scale,
                              double shift) {
    double *values = malloc((size_t)n * sizeof *values);
    assert_non_null(values);
    for (int64_t i = 0; i < n; i++) values[i] = scale * sin((double)i * 0.37) + shift;
    tp_tensor_t *t = tensor_of_doubles(context, dtype, TP_SHAPE(n), values);
    free(values);
    return t;
}

static void expect_same_bits(tp_tensor_t *a, tp_tensor_t *b, size_t bytes, const char *what) {
    unsigned char *x = malloc(bytes > 0 ? bytes : 1), *y = malloc(bytes > 0 ? bytes : 1);
    assert_non_null(x);
    assert_non_null(y);
    assert_ok(tp_tensor_read(a, x, bytes));
    assert_ok(tp_tensor_read(b, y, bytes));
    if (memcmp(x, y, bytes) != 0) fail_msg("%s: the bits differ", what);
    free(x);
    free(y);
}

static void the_fused_update_gives_the_bits_of_mul_then_sub(void **state) {
    tp_context_t *context = *state;
    const tp_dtype_t dtypes[] = {TP_FLOAT32, TP_FLOAT64};
    const int64_t sizes[] = {0, 1, 1003, 300001};
    for (size_t d = 0; d < COUNT_OF(dtypes); d++)
        for (size_t k = 0; k < COUNT_OF(sizes); k++) {
            int64_t n = sizes[k];
            tp_tensor_t *var = values_of(context, dtypes[d], n, 3.0, 0.1);
            tp_tensor_t *delta = values_of(context, dtypes[d], n, 0.7, -0.2);
            tp_tensor_t *alpha = tensor_of_doubles(context, dtypes[d], TP_SCALAR_SHAPE,
                                                   (const double[]){0.013});
            tp_tensor_t *inputs[3] = {var, alpha, delta}, *fused, *step, *by_two;
            assert_ok(tp_execute(context, "GradientDescentUpdate", inputs, 3, NULL, 0, &fused, 1));
            assert_ok(tp_mul(context, delta, alpha, &step));
            assert_ok(tp_sub(context, var, step, &by_two));
            assert_tensor_shape(fused, TP_SHAPE(n));
            expect_same_bits(fused, by_two, (size_t)n * tp_dtype_size(dtypes[d]),
                             "GradientDescentUpdate against Mul then Sub");
            /* tp_sgd_apply takes the same pass. */
            tp_variable_t *v;
            assert_ok(tp_variable_create(context, "v", var, NULL, &v));
            assert_ok(tp_sgd_apply(&v, &delta, 1, 0.013));
            tp_tensor_t *value;
            assert_ok(tp_variable_read(v, &value));
            expect_same_bits(value, by_two, (size_t)n * tp_dtype_size(dtypes[d]),
                             "tp_sgd_apply against Mul then Sub");
            tp_tensor_release(value);
            tp_variable_destroy(v);
            tp_tensor_t *made[] = {var, delta, alpha, fused, step, by_two};
            for (size_t t = 0; t < COUNT_OF(made); t++) tp_tensor_release(made[t]);
        }
}

static void the_fused_update_rounds_float16_once(void **state) {
    tp_context_t *context = *state;
    const double var[] = {1.0, -2.5, 1000.0, 0.333}, delta[] = {0.1, 0.77, -3.0, 65504.0};
    const double alpha = 0.003;
    tp_tensor_t *v = tensor_of_doubles(context, TP_FLOAT16, TP_SHAPE(4), var);
    tp_tensor_t *d = tensor_of_doubles(context, TP_FLOAT16, TP_SHAPE(4), delta);
    tp_tensor_t *a = tensor_of_doubles(context, TP_FLOAT16, TP_SCALAR_SHAPE, &alpha);
    tp_tensor_t *inputs[3] = {v, a, d}, *out;
    assert_ok(tp_execute(context, "GradientDescentUpdate", inputs, 3, NULL, 0, &out, 1));
    double *got = read_doubles(out, NULL), *vs = read_doubles(v, NULL);
    double *ds = read_doubles(d, NULL), *as = read_doubles(a, NULL);
    for (int i = 0; i < 4; i++) {
        float step = (float)as[0] * (float)ds[i], want32 = (float)vs[i] - step;
        double want = tp_float16_to_float(tp_float16_from_float(want32));
        if (got[i] != want) fail_msg("float16 element %d: %.9g, expected %.9g", i, got[i], want);
    }
    free(got), free(vs), free(ds), free(as);
    tp_tensor_t *made[] = {v, d, a, out};
    for (size_t t = 0; t < COUNT_OF(made); t++) tp_tensor_release(made[t]);
}

static void the_fused_update_refuses_shapes_that_do_not_fit(void **state) {
    tp_context_t *context = *state;
    tp_tensor_t *var = floats(context, TP_SHAPE(2, 2), (const float[]){1, 2, 3, 4});
    tp_tensor_t *row = floats(context, TP_SHAPE(2), (const float[]){1, 2});
    tp_tensor_t *rate = floats(context, TP_SCALAR_SHAPE, (const float[]){0.5f}), *out;
    tp_tensor_t *vector_rate[3] = {var, row, var}, *short_delta[3] = {var, rate, row};
    assert_op_fails(out, tp_execute(context, "GradientDescentUpdate", vector_rate, 3, NULL, 0,
                                    &out, 1),
                    TP_INVALID_ARGUMENT, "GradientDescentUpdate: alpha must be a scalar; got "
                                         "shape [2]");
    assert_op_fails(out, tp_execute(context, "GradientDescentUpdate", short_delta, 3, NULL, 0,
                                    &out, 1),
                    TP_INVALID_ARGUMENT, "GradientDescentUpdate: var and delta must have the "
                                         "same shape; got [2,2] and [2]");
    tp_tensor_release(var);
    tp_tensor_release(row);
    tp_tensor_release(rate);
}

/* ---- tp_model_fit ----------------------------------------------------------------------------- */

/* A linear Dense layer that starts at zero predicts 0 for every row, so one step of fit on
 * the whole batch has the known gradient of mean((y - (x W + b))^2) at zero:
 *     dW = -2/n x^T y = -1/2 [0, 5],   db = -2/n sum(y) = -1/2 * 4,
 * and with learning rate 0.5, W = [0, 1.25] and b = 1, exact in float. */
static void a_fit_step_is_gradient_descent_on_the_mean_squared_error(void **state) {
    tp_context_t *context = *state;
    tp_model_t *model;
    assert_ok(tp_model_create(context, 2, NULL, &model));
    assert_ok(tp_model_add_dense(model, 1, TP_ACTIVATION_LINEAR, TP_INITIALIZER_ZEROS, 0));
    tp_tensor_t *x = floats(context, TP_SHAPE(4, 2), (const float[]){1, 0, 0, 1, 1, 1, 2, 0});
    tp_tensor_t *y = floats(context, TP_SHAPE(4, 1), (const float[]){1, 2, 3, -2});
    tp_fit_options_t options = TP_FIT_OPTIONS_INIT;
    options.epochs = 1;
    options.batch_size = 4;
    options.learning_rate = 0.5;
    double loss;
    assert_ok(tp_model_fit(model, x, y, &options, &loss));
    assert_float_equal(loss, (1.0 + 4 + 9 + 4) / 4, 1e-9); /* the loss before the step */
    tp_tensor_t *kernel, *bias;
    assert_ok(tp_model_get_weights(model, 0, &kernel, &bias));
    float w[2], b[1];
    assert_ok(tp_tensor_read(kernel, w, sizeof w));
    assert_ok(tp_tensor_read(bias, b, sizeof b));
    assert_float_equal(w[0], 0, 1e-6);
    assert_float_equal(w[1], 1.25, 1e-6);
    assert_float_equal(b[0], 1, 1e-6);
    tp_tensor_release(kernel);
    tp_tensor_release(bias);
    tp_tensor_release(x);
    tp_tensor_release(y);
    tp_model_destroy(model);
}

enum { ROWS = 64, FEATURES = 3, HIDDEN = 8, EPOCHS = 6 };

/* The losses fit printed, one per epoch. */
static int parse_losses(const char *progress, double *losses, int capacity) {
    int count = 0;
    for (const char *at = strstr(progress, ", loss "); at != NULL && count < capacity;
         at = strstr(at + 1, ", loss "))
        losses[count++] = strtod(at + strlen(", loss "), NULL);
    return count;
}

/* A 3-8-1 network learns y = 0.5 x0 - x1 + 0.25 x2: the loss of each epoch is below the one
 * before, the last is under a quarter of the first, and every layer's kernel and bias moved. */
static void loss_falls_across_epochs_and_weights_move(void **state) {
    tp_context_t *context = *state;
    float xv[ROWS * FEATURES], yv[ROWS];
    for (int i = 0; i < ROWS; i++) {
        for (int f = 0; f < FEATURES; f++)
            xv[i * FEATURES + f] = (float)((i * 7 + f * 13) % 17) / 8.0f - 1.0f;
        yv[i] = 0.5f * xv[i * FEATURES] - xv[i * FEATURES + 1] + 0.25f * xv[i * FEATURES + 2];
    }
    tp_model_t *model;
    assert_ok(tp_model_create(context, FEATURES, NULL, &model));
    assert_ok(tp_model_add_dense(model, HIDDEN, TP_ACTIVATION_TANH,
                                 TP_INITIALIZER_GLOROT_UNIFORM, 3));
    assert_ok(tp_model_add_dense(model, 1, TP_ACTIVATION_LINEAR, TP_INITIALIZER_GLOROT_UNIFORM,
                                 4));
    enum { WEIGHTS = FEATURES * HIDDEN + HIDDEN + HIDDEN + 1 };
    float before[WEIGHTS], after[WEIGHTS];
    assert_int_equal(read_weights(model, before, WEIGHTS), WEIGHTS);

    tp_tensor_t *x = floats(context, TP_SHAPE(ROWS, FEATURES), xv);
    tp_tensor_t *y = floats(context, TP_SHAPE(ROWS, 1), yv);
    char progress[4096] = {0};
    FILE *out = fmemopen(progress, sizeof progress - 1, "w");
    assert_non_null(out);
    tp_fit_options_t options = TP_FIT_OPTIONS_INIT;
    options.epochs = EPOCHS;
    options.batch_size = 8;
    options.learning_rate = 0.05;
    options.progress = out;
    double last;
    assert_ok(tp_model_fit(model, x, y, &options, &last));
    fclose(out);

    double losses[EPOCHS];
    assert_int_equal(parse_losses(progress, losses, EPOCHS), EPOCHS);
    for (int e = 1; e < EPOCHS; e++) {
        if (!(losses[e] < losses[e - 1]))
            fail_msg("epoch %d's loss %.6f is not below epoch %d's %.6f\n%s", e + 1, losses[e], e,
                     losses[e - 1], progress);
    }
    if (!(losses[EPOCHS - 1] < losses[0] / 4))
        fail_msg("the loss fell only from %.6f to %.6f", losses[0], losses[EPOCHS - 1]);
    assert_float_equal(last, losses[EPOCHS - 1], 1e-6);

    assert_int_equal(read_weights(model, after, WEIGHTS), WEIGHTS);
    /* Each part of each layer: kernel 1, bias 1 (from zero), kernel 2, bias 2. */
    const size_t parts[] = {0, FEATURES * HIDDEN, FEATURES * HIDDEN + HIDDEN,
                            FEATURES * HIDDEN + 2 * HIDDEN, WEIGHTS};
    for (size_t p = 0; p + 1 < sizeof parts / sizeof parts[0]; p++) {
        double moved = 0;
        for (size_t i = parts[p]; i < parts[p + 1]; i++)
            moved += (double)(after[i] - before[i]) * (double)(after[i] - before[i]);
        if (!(moved > 1e-6)) fail_msg("weights %zu..%zu did not move", parts[p], parts[p + 1]);
    }
    tp_tensor_release(x);
    tp_tensor_release(y);
    tp_model_destroy(model);
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, cpu_context_setup, cpu_context_teardown)
    const struct CMUnitTest tests[] = {
        TEST(sgd_steps_by_the_rate_times_the_gradient),
        TEST(sgd_updates_a_variable_on_its_own_device),
        TEST(the_fused_update_gives_the_bits_of_mul_then_sub),
        TEST(the_fused_update_rounds_float16_once),
        TEST(the_fused_update_refuses_shapes_that_do_not_fit),
        TEST(a_fit_step_is_gradient_descent_on_the_mean_squared_error),
        TEST(loss_falls_across_epochs_and_weights_move),
    };
#undef TEST
    return cmocka_run_group_tests(tests, NULL, NULL);
}
