/* SPDX-License-Identifier: Apache-2.0 */
/* Training makes progress: each optimizer moves variables by exactly the step its gradient
 * asks for, fit's update is gradient descent on the mean squared error, and a model's loss
 * falls epoch after epoch while every weight moves. Without these, a training loop that never
 * updates would pass every other test. Fit runs replica threads, so this runs under
 * ThreadSanitizer too. */
#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_fixture.h"
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
        TEST(a_fit_step_is_gradient_descent_on_the_mean_squared_error),
        TEST(loss_falls_across_epochs_and_weights_move),
    };
#undef TEST
    return cmocka_run_group_tests(tests, NULL, NULL);
}
