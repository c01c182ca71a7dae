/* SPDX-License-Identifier: Apache-2.0 */
/* SGD (plain, momentum, Nesterov) and Adam against their updates computed here by hand in
 * double over several steps, Adam's in the paper's form (bias-corrected m and v) while the
 * library folds the correction into the step size as Keras does; their state as variables on
 * each variable's device, saved and restored by a checkpoint; learning-rate changes between
 * steps; and every bad argument refused naming the variable with nothing changed. The fixture
 * fails any test that leaves device memory in use. */
#include "test_support.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_fixture.h"
#include "training_support.h"

enum { N = 4, STEPS = 5 };

/* Two logical CPUs, so that variables can live on a device other than CPU:0. */
static int setup(void **state) { return split_cpu_context_setup(state, 2, 32u << 20); }

static tp_tensor_t *tensor(tp_context_t *context, tp_dtype_t dtype, const double *values,
                           size_t count) {
    tp_tensor_t *t;
    if (dtype == TP_FLOAT32) {
        float narrow[N];
        for (size_t i = 0; i < count; i++) narrow[i] = (float)values[i];
        assert_ok(tp_tensor_create(context, dtype, TP_SHAPE((int64_t)count), narrow,
                                   count * sizeof(float), &t));
    } else {
        assert_ok(tp_tensor_create(context, dtype, TP_SHAPE((int64_t)count), values,
                                   count * sizeof(double), &t));
    }
    return t;
}

static tp_variable_t *variable(tp_context_t *context, const char *name, tp_dtype_t dtype,
                               const double *values, size_t count, const char *device) {
    tp_tensor_t *initial = tensor(context, dtype, values, count);
    tp_variable_t *v;
    assert_ok(tp_variable_create(context, name, initial, device, &v));
    tp_tensor_release(initial);
    return v;
}

/* The values of `v` (float32 or float64) as doubles. */
static void read_variable(tp_variable_t *v, double *out, size_t count) {
    tp_tensor_t *value;
    assert_ok(tp_variable_read(v, &value));
    assert_int_equal(tp_tensor_num_elements(value), (int64_t)count);
    if (tp_tensor_dtype(value) == TP_FLOAT32) {
        float narrow[N];
        assert_ok(tp_tensor_read(value, narrow, count * sizeof(float)));
        for (size_t i = 0; i < count; i++) out[i] = narrow[i];
    } else {
        assert_ok(tp_tensor_read(value, out, count * sizeof(double)));
    }
    tp_tensor_release(value);
}

/* Asserts that `v` holds `expected` within `tolerance`, relative to max(1, |expected|). */
static void assert_close(tp_variable_t *v, const double *expected, size_t count,
                         double tolerance, int step) {
    double got[N];
    read_variable(v, got, count);
    for (size_t i = 0; i < count; i++) {
        double scale = fabs(expected[i]) > 1 ? fabs(expected[i]) : 1;
        if (!(fabs(got[i] - expected[i]) <= tolerance * scale))
            fail_msg("step %d: %s[%zu] is %.17g, computed by hand %.17g", step,
                     tp_variable_name(v), i, got[i], expected[i]);
    }
}

static void assert_bits_equal(tp_variable_t *a, tp_variable_t *b, size_t count) {
    double x[N], y[N];
    read_variable(a, x, count);
    read_variable(b, y, count);
    assert_memory_equal(x, y, count * sizeof(double));
}

static int64_t iterations(tp_optimizer_t *optimizer) {
    int64_t n = -1;
    assert_ok(tp_optimizer_iterations(optimizer, &n));
    return n;
}

static tp_variable_t *slot(tp_optimizer_t *optimizer, tp_variable_t *v, const char *name) {
    tp_variable_t *s = NULL;
    assert_ok(tp_optimizer_slot(optimizer, v, name, &s));
    assert_non_null(s);
    return s;
}

/* The gradient of step `step`, element i: varied in sign and size, never zero. */
static double gradient_at(int step, size_t i) {
    static const double base[N] = {0.5, -1.25, 2.0, -0.125};
    return base[i] * (1.0 + 0.3 * step) * (step % 2 == 0 ? 1 : -0.5) + 0.01 * (double)i;
}

static const double start[N] = {1.0, -2.0, 0.5, 3.0};

/* The gradient of step `step`: its values in `g`, and as a tensor of `dtype`. */
static tp_tensor_t *gradient(tp_context_t *context, tp_dtype_t dtype, int step, double *g) {
    for (size_t i = 0; i < N; i++) g[i] = gradient_at(step, i);
    return tensor(context, dtype, g, N);
}

/* ---- SGD -------------------------------------------------------------------------------- */

/* Runs STEPS steps of `optimizer` on a float32 variable and checks it, and its velocity where
 * there is one, against the rule in double after each step. */
static void check_sgd(tp_context_t *context, tp_optimizer_t *optimizer, double lr,
                      double momentum, bool nesterov) {
    tp_variable_t *w = variable(context, "w", TP_FLOAT32, start, N, NULL);
    double want[N], velocity[N] = {0};
    memcpy(want, start, sizeof want);
    for (int step = 0; step < STEPS; step++) {
        double g[N];
        tp_tensor_t *grad = gradient(context, TP_FLOAT32, step, g);
        assert_ok(tp_optimizer_apply(optimizer, &w, &grad, 1));
        tp_tensor_release(grad);
        for (size_t i = 0; i < N; i++) {
            if (momentum == 0) {
                want[i] -= lr * g[i];
                continue;
            }
            velocity[i] = momentum * velocity[i] - lr * g[i];
            want[i] += nesterov ? momentum * velocity[i] - lr * g[i] : velocity[i];
        }
        assert_close(w, want, N, 2e-6, step + 1);
        if (momentum != 0)
            assert_close(slot(optimizer, w, "momentum"), velocity, N, 2e-6, step + 1);
    }
    assert_int_equal(iterations(optimizer), STEPS);
    tp_optimizer_destroy(optimizer);
    tp_variable_destroy(w);
}

static void sgd_without_momentum_keeps_no_slot(void **state) {
    tp_context_t *context = *state;
    tp_sgd_options_t options = TP_SGD_OPTIONS_INIT;
    options.learning_rate = 0.1;
    tp_optimizer_t *optimizer;
    assert_ok(tp_optimizer_create_sgd(context, &options, &optimizer));
    assert_string_equal(tp_optimizer_name(optimizer), "SGD");
    assert_int_equal(iterations(optimizer), 0);
    tp_variable_t *w = variable(context, "w", TP_FLOAT32, start, N, NULL);
    assert_ok(tp_optimizer_build(optimizer, &w, 1));
    tp_variable_t *all[4];
    assert_int_equal(tp_optimizer_variables(optimizer, all, 4), 1);
    assert_string_equal(tp_variable_name(all[0]), "optimizer/iterations");
    assert_int_equal(tp_variable_dtype(all[0]), TP_INT64);
    tp_variable_t *s;
    assert_error(tp_optimizer_slot(optimizer, w, "momentum", &s), TP_NOT_FOUND,
                 "tp_optimizer_slot: SGD without momentum keeps no slot 'momentum'");
    tp_variable_destroy(w);
    check_sgd(context, optimizer, 0.1, 0, false);
}

static void sgd_with_momentum_matches_the_rule(void **state) {
    tp_sgd_options_t options = TP_SGD_OPTIONS_INIT;
    options.learning_rate = 0.05;
    options.momentum = 0.9;
    tp_optimizer_t *optimizer;
    assert_ok(tp_optimizer_create_sgd(*state, &options, &optimizer));
    check_sgd(*state, optimizer, 0.05, 0.9, false);
}

static void sgd_with_nesterov_momentum_matches_the_rule(void **state) {
    tp_sgd_options_t options = TP_SGD_OPTIONS_INIT;
    options.learning_rate = 0.05;
    options.momentum = 0.75;
    options.nesterov = true;
    tp_optimizer_t *optimizer;
    assert_ok(tp_optimizer_create_sgd(*state, &options, &optimizer));
    check_sgd(*state, optimizer, 0.05, 0.75, true);
}

/* ---- Adam ------------------------------------------------------------------------------- */

typedef struct {
    double m[N], v[N], w[N];
} adam_state_t;

/* One step of Adam as the paper writes it: bias-corrected m and v. Keras's epsilon is added to
 * sqrt(v) before the correction, which is the paper's form with epsilon / sqrt(1 - beta2^t). */
static void adam_by_hand(adam_state_t *s, const double *g, int t, double lr, double beta1,
                         double beta2, double epsilon) {
    for (size_t i = 0; i < N; i++) {
        s->m[i] = beta1 * s->m[i] + (1 - beta1) * g[i];
        s->v[i] = beta2 * s->v[i] + (1 - beta2) * g[i] * g[i];
        double m_hat = s->m[i] / (1 - pow(beta1, t));
        double v_hat = s->v[i] / (1 - pow(beta2, t));
        double epsilon_hat = epsilon / sqrt(1 - pow(beta2, t));
        s->w[i] -= lr * m_hat / (sqrt(v_hat) + epsilon_hat);
    }
}

static void check_adam(tp_context_t *context, tp_dtype_t dtype, double tolerance,
                       const char *device) {
    tp_adam_options_t options = TP_ADAM_OPTIONS_INIT;
    options.learning_rate = 0.01;
    options.beta1 = 0.8;
    options.beta2 = 0.95;
    options.epsilon = 1e-3; /* large enough to matter, so that its placement is checked */
    tp_optimizer_t *optimizer;
    assert_ok(tp_optimizer_create_adam(context, &options, &optimizer));
    assert_string_equal(tp_optimizer_name(optimizer), "Adam");
    tp_variable_t *w = variable(context, "w", dtype, start, N, device);
    adam_state_t want = {{0}, {0}, {0}};
    memcpy(want.w, start, sizeof want.w);
    for (int step = 0; step < STEPS; step++) {
        double g[N];
        tp_tensor_t *grad = gradient(context, dtype, step, g);
        assert_ok(tp_optimizer_apply(optimizer, &w, &grad, 1));
        tp_tensor_release(grad);
        adam_by_hand(&want, g, step + 1, 0.01, 0.8, 0.95, 1e-3);
        assert_close(w, want.w, N, tolerance, step + 1);
        assert_close(slot(optimizer, w, "m"), want.m, N, tolerance, step + 1);
        assert_close(slot(optimizer, w, "v"), want.v, N, tolerance, step + 1);
    }
    assert_int_equal(iterations(optimizer), STEPS);
    /* The state: the step count, then m and v on the variable's device. */
    tp_variable_t *all[3];
    assert_int_equal(tp_optimizer_variables(optimizer, all, 3), 3);
    assert_string_equal(tp_variable_name(all[0]), "optimizer/iterations");
    assert_string_equal(tp_variable_name(all[1]), "optimizer/w/m");
    assert_string_equal(tp_variable_name(all[2]), "optimizer/w/v");
    assert_string_equal(tp_variable_device(all[0]),
                        "/job:localhost/replica:0/task:0/device:CPU:0");
    for (int s = 1; s < 3; s++) {
        assert_string_equal(tp_variable_device(all[s]), tp_variable_device(w));
        assert_int_equal(tp_variable_dtype(all[s]), dtype);
    }
    tp_optimizer_destroy(optimizer);
    tp_variable_destroy(w);
}

static void adam_matches_the_paper_with_bias_correction(void **state) {
    check_adam(*state, TP_FLOAT32, 2e-6, NULL);
}

static void adam_in_float64_matches_to_rounding(void **state) {
    check_adam(*state, TP_FLOAT64, 1e-13, NULL);
}

/* Bias correction makes Adam's first step about lr * sign(g), whatever the gradient's size;
 * without it the step would be lr * (1 - beta1) / sqrt(1 - beta2) = 3.16 lr with the defaults. */
static void adams_first_step_is_the_learning_rate(void **state) {
    tp_context_t *context = *state;
    tp_optimizer_t *optimizer;
    assert_ok(tp_optimizer_create_adam(context, NULL, &optimizer));
    assert_float_equal(tp_optimizer_learning_rate(optimizer), 0.001, 0);
    const double zeros[N] = {0}, g[N] = {1000, -0.1, 3, -50};
    tp_variable_t *w = variable(context, "w", TP_FLOAT64, zeros, N, NULL);
    tp_tensor_t *grad = tensor(context, TP_FLOAT64, g, N);
    assert_ok(tp_optimizer_apply(optimizer, &w, &grad, 1));
    double got[N];
    read_variable(w, got, N);
    for (size_t i = 0; i < N; i++) {
        /* |g| / (|g| + epsilon / sqrt(1 - beta2)): 3.2e-6 against |g| >= 0.1 moves it by at
         * most 3.2e-5 relative */
        double want = g[i] > 0 ? -0.001 : 0.001;
        if (fabs(got[i] - want) > 1e-7) fail_msg("w[%zu] is %.17g, not %g", i, got[i], want);
    }
    tp_tensor_release(grad);
    tp_optimizer_destroy(optimizer);
    tp_variable_destroy(w);
}

/* ---- The learning rate, devices, checkpoints -------------------------------------------- */

static void the_learning_rate_changes_between_steps(void **state) {
    tp_context_t *context = *state;
    tp_sgd_options_t options = TP_SGD_OPTIONS_INIT;
    options.learning_rate = 0.5;
    options.momentum = 0.5;
    tp_optimizer_t *optimizer;
    assert_ok(tp_optimizer_create_sgd(context, &options, &optimizer));
    tp_variable_t *w = variable(context, "w", TP_FLOAT32, start, N, NULL);
    const double rates[3] = {0.5, 0.25, 0.0625};
    double want[N], velocity[N] = {0};
    memcpy(want, start, sizeof want);
    for (int step = 0; step < 3; step++) {
        if (step > 0) assert_ok(tp_optimizer_set_learning_rate(optimizer, rates[step]));
        assert_float_equal(tp_optimizer_learning_rate(optimizer), rates[step], 0);
        double g[N];
        tp_tensor_t *grad = gradient(context, TP_FLOAT32, step, g);
        assert_ok(tp_optimizer_apply(optimizer, &w, &grad, 1));
        tp_tensor_release(grad);
        for (size_t i = 0; i < N; i++) {
            velocity[i] = 0.5 * velocity[i] - rates[step] * g[i];
            want[i] += velocity[i];
        }
        assert_close(w, want, N, 2e-6, step + 1);
    }
    assert_error(tp_optimizer_set_learning_rate(optimizer, NAN), TP_INVALID_ARGUMENT,
                 "tp_optimizer_set_learning_rate: the learning rate is nan; it must be finite "
                 "and >= 0");
    assert_error(tp_optimizer_set_learning_rate(optimizer, -0.1), TP_INVALID_ARGUMENT,
                 "the learning rate is -0.1");
    assert_float_equal(tp_optimizer_learning_rate(optimizer), 0.0625, 0);
    tp_optimizer_destroy(optimizer);
    tp_variable_destroy(w);
}

/* Variables on CPU:0 and CPU:1 in one step: each updated, with its slots, on its own device. */
static void each_variable_is_updated_on_its_device(void **state) {
    tp_context_t *context = *state;
    check_adam(context, TP_FLOAT32, 2e-6, "/cpu:1");

    tp_adam_options_t options = TP_ADAM_OPTIONS_INIT;
    options.learning_rate = 0.1;
    tp_optimizer_t *optimizer;
    assert_ok(tp_optimizer_create_adam(context, &options, &optimizer));
    tp_variable_t *on[2] = {variable(context, "a", TP_FLOAT32, start, N, "/cpu:0"),
                            variable(context, "b", TP_FLOAT32, start, N, "/cpu:1")};
    adam_state_t want = {{0}, {0}, {0}};
    memcpy(want.w, start, sizeof want.w);
    for (int step = 0; step < 3; step++) {
        double g[N];
        /* Both gradients on CPU:0: b's is copied to CPU:1. */
        tp_tensor_t *grads[2] = {gradient(context, TP_FLOAT32, step, g), NULL};
        grads[1] = tensor(context, TP_FLOAT32, g, N);
        assert_ok(tp_optimizer_apply(optimizer, on, grads, 2));
        tp_tensor_release(grads[0]);
        tp_tensor_release(grads[1]);
        adam_by_hand(&want, g, step + 1, 0.1, 0.9, 0.999, 1e-7);
        assert_close(on[0], want.w, N, 2e-6, step + 1);
        assert_close(on[1], want.w, N, 2e-6, step + 1);
    }
    assert_string_equal(tp_variable_device(on[1]), "/job:localhost/replica:0/task:0/device:CPU:1");
    assert_string_equal(tp_variable_device(slot(optimizer, on[1], "m")),
                        "/job:localhost/replica:0/task:0/device:CPU:1");
    assert_string_equal(tp_variable_device(slot(optimizer, on[1], "v")),
                        "/job:localhost/replica:0/task:0/device:CPU:1");
    assert_string_equal(tp_variable_device(slot(optimizer, on[0], "v")),
                        "/job:localhost/replica:0/task:0/device:CPU:0");
    assert_int_equal(iterations(optimizer), 3); /* one step per call, however many variables */
    tp_optimizer_destroy(optimizer);
    tp_variable_destroy(on[0]);
    tp_variable_destroy(on[1]);
}

/* Training that saves the optimizer's state with the variable, and a fresh optimizer restored
 * from it, take the same next step to the bit. */
static void a_checkpoint_saves_and_restores_the_state(void **state) {
    tp_context_t *context = *state;
    char folder[] = "/tmp/tp_test_optimizers.XXXXXX";
    assert_non_null(mkdtemp(folder));
    char path[64];
    snprintf(path, sizeof path, "%s/state.npz", folder);

    tp_optimizer_t *first, *second;
    assert_ok(tp_optimizer_create_adam(context, NULL, &first));
    assert_ok(tp_optimizer_create_adam(context, NULL, &second));
    tp_variable_t *w = variable(context, "w", TP_FLOAT32, start, N, NULL);
    const double zeros[N] = {0};
    tp_variable_t *restored = variable(context, "w", TP_FLOAT32, zeros, N, "/cpu:1");
    double g[N];
    for (int step = 0; step < 3; step++) {
        tp_tensor_t *grad = gradient(context, TP_FLOAT32, step, g);
        assert_ok(tp_optimizer_apply(first, &w, &grad, 1));
        tp_tensor_release(grad);
    }
    tp_variable_t *saved[4] = {w};
    assert_int_equal(tp_optimizer_variables(first, saved + 1, 3), 3);
    assert_ok(tp_checkpoint_save(path, saved, NULL, 4));

    /* Before its first step, a fresh optimizer has slots only once built. */
    tp_variable_t *s;
    assert_error(tp_optimizer_slot(second, restored, "m", &s), TP_NOT_FOUND,
                 "variable 'w' has no slots yet");
    assert_ok(tp_optimizer_build(second, &restored, 1));
    tp_variable_t *loaded[4] = {restored};
    assert_int_equal(tp_optimizer_variables(second, loaded + 1, 3), 3);
    assert_ok(tp_checkpoint_load(context, path, loaded, NULL, 4));
    assert_int_equal(iterations(second), 3);

    tp_tensor_t *grad = gradient(context, TP_FLOAT32, 3, g);
    assert_ok(tp_optimizer_apply(first, &w, &grad, 1));
    assert_ok(tp_optimizer_apply(second, &restored, &grad, 1));
    tp_tensor_release(grad);
    assert_bits_equal(w, restored, N);
    assert_bits_equal(slot(first, w, "v"), slot(second, restored, "v"), N);
    assert_int_equal(iterations(second), 4);

    tp_optimizer_destroy(first);
    tp_optimizer_destroy(second);
    tp_variable_destroy(w);
    tp_variable_destroy(restored);
    assert_int_equal(remove(path), 0);
    assert_int_equal(rmdir(folder), 0);
}

/* ---- Bad arguments ---------------------------------------------------------------------- */

/* Each bad second pair is refused naming the variable, and the first variable, its slots and the
 * step count stay as they were. */
static void a_bad_step_changes_nothing(void **state) {
    tp_context_t *context = *state;
    tp_sgd_options_t options = TP_SGD_OPTIONS_INIT;
    options.momentum = 0.9;
    tp_optimizer_t *optimizer;
    assert_ok(tp_optimizer_create_sgd(context, &options, &optimizer));
    tp_variable_t *a = variable(context, "a", TP_FLOAT32, start, N, NULL);
    tp_variable_t *b = variable(context, "b", TP_FLOAT32, start, 2, NULL);
    tp_variable_t *d = variable(context, "d", TP_FLOAT64, start, 2, NULL);
    int32_t ints[2] = {1, 2};
    tp_tensor_t *int_value;
    assert_ok(tp_tensor_create(context, TP_INT32, TP_SHAPE(2), ints, sizeof ints, &int_value));
    tp_variable_t *n;
    assert_ok(tp_variable_create(context, "n", int_value, NULL, &n));
    double g[N] = {1, 2, 3, 4};
    tp_tensor_t *ga = tensor(context, TP_FLOAT32, g, N), *g2 = tensor(context, TP_FLOAT32, g, 2);
    tp_tensor_t *g64 = tensor(context, TP_FLOAT64, g, 2);
    /* One good step first, so that there is momentum to keep. */
    assert_ok(tp_optimizer_apply(optimizer, &a, &ga, 1));
    double before[N], velocity[N];
    read_variable(a, before, N);
    read_variable(slot(optimizer, a, "momentum"), velocity, N);

    tp_context_t *other;
    tp_context_options_t other_options = TP_CONTEXT_OPTIONS_INIT;
    other_options.no_plugins = true;
    assert_ok(tp_context_create(&other_options, &other));
    tp_tensor_t *foreign_value;
    assert_ok(tp_tensor_create(other, TP_FLOAT32, TP_SHAPE(2), (float[]){1, 2}, 8,
                               &foreign_value));
    tp_variable_t *foreign;
    assert_ok(tp_variable_create(other, "f", foreign_value, NULL, &foreign));

    struct {
        tp_variable_t *variable;
        tp_tensor_t *grad;
        const char *message;
    } cases[] = {
        {b, ga, "tp_optimizer_apply: variable 'b' is float32 (2,), its gradient float32 (4,)"},
        {b, g64, "tp_optimizer_apply: variable 'b' is float32 (2,), its gradient float64 (2,)"},
        {d, g2, "tp_optimizer_apply: variable 'd' is float64 (2,), its gradient float32 (2,)"},
        {n, g2, "tp_optimizer_apply: variable 'n' is int32; optimizers update float32 and "
                "float64 variables"},
        {a, ga, "tp_optimizer_apply: variable 'a' is listed twice (0 and 1); one step updates "
                "each once"},
        {b, NULL, "tp_optimizer_apply: the gradient of variable 'b' (1) is NULL"},
        {NULL, g2, "tp_optimizer_apply: variable 1 is NULL"},
        {foreign, g2, "tp_optimizer_apply: variable 'f' belongs to another context than the "
                      "optimizer"},
        {b, foreign_value, "tp_optimizer_apply: the gradient of variable 'b' belongs to another "
                           "context"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tp_variable_t *variables[2] = {a, cases[c].variable};
        tp_tensor_t *grads[2] = {ga, cases[c].grad};
        assert_error(tp_optimizer_apply(optimizer, variables, grads, 2), TP_INVALID_ARGUMENT,
                     cases[c].message);
        assert_close(a, before, N, 0, (int)c);
        assert_close(slot(optimizer, a, "momentum"), velocity, N, 0, (int)c);
        assert_int_equal(iterations(optimizer), 1);
    }
    /* A refused step made no slots for the variables it names. */
    assert_int_equal(tp_optimizer_variables(optimizer, NULL, 0), 2);
    assert_error(tp_optimizer_apply(NULL, &a, &ga, 1), TP_INVALID_ARGUMENT,
                 "argument 'optimizer' is NULL");
    assert_error(tp_optimizer_apply(optimizer, &a, NULL, 1), TP_INVALID_ARGUMENT,
                 "argument 'grads' is NULL");
    assert_error(tp_optimizer_build(optimizer, &n, 1), TP_INVALID_ARGUMENT,
                 "tp_optimizer_build: variable 'n' is int32");

    tp_variable_destroy(foreign);
    tp_tensor_release(foreign_value);
    tp_context_destroy(other);
    tp_tensor_release(ga);
    tp_tensor_release(g2);
    tp_tensor_release(g64);
    tp_tensor_release(int_value);
    tp_optimizer_destroy(optimizer);
    tp_variable_destroy(a);
    tp_variable_destroy(b);
    tp_variable_destroy(d);
    tp_variable_destroy(n);
}

static void bad_options_are_refused(void **state) {
    tp_context_t *context = *state;
    tp_optimizer_t *optimizer = NULL;
    tp_sgd_options_t sgd = TP_SGD_OPTIONS_INIT;
    sgd.struct_size = 8;
    assert_error(tp_optimizer_create_sgd(context, &sgd, &optimizer), TP_INVALID_ARGUMENT,
                 "tp_optimizer_create_sgd: options->struct_size is 8; start from "
                 "TP_SGD_OPTIONS_INIT");
    sgd = (tp_sgd_options_t)TP_SGD_OPTIONS_INIT;
    sgd.learning_rate = INFINITY;
    assert_error(tp_optimizer_create_sgd(context, &sgd, &optimizer), TP_INVALID_ARGUMENT,
                 "the learning rate is inf; it must be finite and >= 0");
    sgd = (tp_sgd_options_t)TP_SGD_OPTIONS_INIT;
    sgd.momentum = 1.5;
    assert_error(tp_optimizer_create_sgd(context, &sgd, &optimizer), TP_INVALID_ARGUMENT,
                 "tp_optimizer_create_sgd: momentum is 1.5; it must be in [0, 1]");
    sgd.momentum = NAN;
    assert_error(tp_optimizer_create_sgd(context, &sgd, &optimizer), TP_INVALID_ARGUMENT,
                 "momentum is nan");
    tp_adam_options_t adam = TP_ADAM_OPTIONS_INIT;
    adam.beta1 = 1.0;
    assert_error(tp_optimizer_create_adam(context, &adam, &optimizer), TP_INVALID_ARGUMENT,
                 "tp_optimizer_create_adam: beta1 is 1; it must be in [0, 1)");
    adam = (tp_adam_options_t)TP_ADAM_OPTIONS_INIT;
    adam.beta2 = -0.5;
    assert_error(tp_optimizer_create_adam(context, &adam, &optimizer), TP_INVALID_ARGUMENT,
                 "beta2 is -0.5; it must be in [0, 1)");
    adam = (tp_adam_options_t)TP_ADAM_OPTIONS_INIT;
    adam.epsilon = -1e-7;
    assert_error(tp_optimizer_create_adam(context, &adam, &optimizer), TP_INVALID_ARGUMENT,
                 "epsilon is -1e-07; it must be finite and >= 0");
    assert_error(tp_optimizer_create_adam(NULL, NULL, &optimizer), TP_INVALID_ARGUMENT,
                 "argument 'context' is NULL");
    assert_null(optimizer);
    tp_optimizer_destroy(NULL);
}

typedef struct {
    tp_optimizer_t *optimizer;
    tp_variable_t *variable;
    tp_tensor_t *grad;
} traced_step_t;

static tp_status_t *step_in_body(tp_context_t *context, tp_tensor_t *const *inputs,
                                 size_t num_inputs, tp_tensor_t **outputs, size_t num_outputs,
                                 void *user_data) {
    (void)context;
    (void)num_inputs;
    (void)num_outputs;
    traced_step_t *step = user_data;
    tp_status_t *error = tp_optimizer_apply(step->optimizer, &step->variable, &step->grad, 1);
    if (error != NULL) return error;
    outputs[0] = tp_tensor_retain(inputs[0]);
    return NULL;
}

/* A graph would record the update once and keep the values read while tracing. */
static void a_step_inside_a_traced_function_is_refused(void **state) {
    tp_context_t *context = *state;
    tp_optimizer_t *optimizer;
    assert_ok(tp_optimizer_create_sgd(context, NULL, &optimizer));
    traced_step_t step = {optimizer, variable(context, "w", TP_FLOAT32, start, N, NULL), NULL};
    step.grad = tensor(context, TP_FLOAT32, start, N);
    tp_function_t *function;
    assert_ok(tp_function_create(context, "step", step_in_body, 1, &step, &function));
    tp_tensor_t *out = NULL;
    assert_error(tp_function_call(function, &step.grad, 1, &out, 1), TP_UNIMPLEMENTED,
                 "tp_optimizer_apply: inside a traced function: a graph cannot update variables");
    assert_null(out);
    assert_close(step.variable, start, N, 0, 0);
    assert_int_equal(iterations(optimizer), 0);
    tp_function_destroy(function);
    tp_tensor_release(step.grad);
    tp_variable_destroy(step.variable);
    tp_optimizer_destroy(optimizer);
}

/* ---- Fit ---------------------------------------------------------------------------------- */

/* A linear Dense layer from zero on rows whose mean squared error has the gradient
 * dW = [0, -2.5], db = -2 at zero (see test_training.c): Adam's first step moves each weight by
 * about lr against its gradient's sign, and W[0], whose gradient is 0, not at all. */
static void fit_steps_with_the_given_optimizer(void **state) {
    tp_context_t *context = *state;
    tp_model_t *model;
    assert_ok(tp_model_create(context, 2, NULL, &model));
    assert_ok(tp_model_add_dense(model, 1, TP_ACTIVATION_LINEAR, TP_INITIALIZER_ZEROS, 0));
    tp_tensor_t *x = floats(context, TP_SHAPE(4, 2), (const float[]){1, 0, 0, 1, 1, 1, 2, 0});
    tp_tensor_t *y = floats(context, TP_SHAPE(4, 1), (const float[]){1, 2, 3, -2});
    tp_adam_options_t adam = TP_ADAM_OPTIONS_INIT;
    adam.learning_rate = 0.125;
    tp_optimizer_t *optimizer;
    assert_ok(tp_optimizer_create_adam(context, &adam, &optimizer));
    tp_fit_options_t options = TP_FIT_OPTIONS_INIT;
    options.batch_size = 4;
    options.learning_rate = 0; /* not used with an optimizer */
    options.optimizer = optimizer;
    double loss;
    assert_ok(tp_model_fit(model, x, y, &options, &loss));
    assert_float_equal(loss, (1.0 + 4 + 9 + 4) / 4, 1e-9);
    tp_tensor_t *kernel, *bias;
    assert_ok(tp_model_get_weights(model, 0, &kernel, &bias));
    float w[2], b[1];
    assert_ok(tp_tensor_read(kernel, w, sizeof w));
    assert_ok(tp_tensor_read(bias, b, sizeof b));
    assert_true(w[0] == 0);
    assert_float_equal(w[1], 0.125, 1e-6);
    assert_float_equal(b[0], 0.125, 1e-6);
    assert_int_equal(iterations(optimizer), 1);
    /* The step count, then m and v of the kernel and of the bias. */
    assert_int_equal(tp_optimizer_variables(optimizer, NULL, 0), 5);

    /* An old caller's options, without the optimizer field: gradient descent, as before. */
    tp_fit_options_t old = TP_FIT_OPTIONS_INIT;
    old.struct_size = offsetof(tp_fit_options_t, optimizer);
    old.batch_size = 4;
    old.learning_rate = 0;
    old.optimizer = optimizer; /* beyond struct_size: not read */
    assert_error(tp_model_fit(model, x, y, &old, &loss), TP_INVALID_ARGUMENT,
                 "learning_rate (0) must be positive");
    old.struct_size = offsetof(tp_fit_options_t, optimizer) - 1;
    assert_error(tp_model_fit(model, x, y, &old, &loss), TP_INVALID_ARGUMENT,
                 "start from TP_FIT_OPTIONS_INIT");
    tp_tensor_release(kernel);
    tp_tensor_release(bias);
    tp_tensor_release(x);
    tp_tensor_release(y);
    tp_model_destroy(model);
    tp_optimizer_destroy(optimizer);
}

/* Trains a 3-4-2 model with Adam, on CPU:0 alone or mirrored on CPU:0 and CPU:1; returns its
 * weights (kernels and biases, layer by layer) in `out` and the optimizer's step count. */
static int64_t train_with_adam(tp_context_t *context, tp_mirrored_strategy_t *strategy,
                               float *out, size_t capacity) {
    enum { ROWS = 21, FEATURES = 3 };
    float xv[ROWS * FEATURES], yv[ROWS * 2];
    for (int i = 0; i < ROWS; i++) {
        for (int f = 0; f < FEATURES; f++)
            xv[i * FEATURES + f] = (float)((i * 5 + f * 7) % 11) / 5 - 1;
        yv[2 * i] = xv[i * FEATURES] - 0.5f * xv[i * FEATURES + 2];
        yv[2 * i + 1] = 0.25f * xv[i * FEATURES + 1];
    }
    tp_model_t *model;
    assert_ok(tp_model_create(context, FEATURES, strategy, &model));
    assert_ok(tp_model_add_dense(model, 4, TP_ACTIVATION_TANH, TP_INITIALIZER_GLOROT_UNIFORM, 5));
    assert_ok(tp_model_add_dense(model, 2, TP_ACTIVATION_LINEAR, TP_INITIALIZER_GLOROT_UNIFORM,
                                 6));
    tp_optimizer_t *optimizer;
    tp_adam_options_t adam = TP_ADAM_OPTIONS_INIT;
    adam.learning_rate = 0.05;
    assert_ok(tp_optimizer_create_adam(context, &adam, &optimizer));
    tp_tensor_t *x = floats(context, TP_SHAPE(ROWS, FEATURES), xv);
    tp_tensor_t *y = floats(context, TP_SHAPE(ROWS, 2), yv);
    tp_fit_options_t options = TP_FIT_OPTIONS_INIT;
    options.epochs = 3;
    options.batch_size = 8; /* 8, 8, 5 rows: shares of 4 and 4, then 2 and 3 */
    options.optimizer = optimizer;
    assert_ok(tp_model_fit(model, x, y, &options, NULL));
    assert_int_equal(read_weights(model, out, capacity), capacity);
    int64_t steps = iterations(optimizer);
    tp_tensor_release(x);
    tp_tensor_release(y);
    tp_model_destroy(model);
    tp_optimizer_destroy(optimizer);
    return steps;
}

/* Under a mirrored strategy the optimizer makes one step per batch over both replicas'
 * variables, and the model learns what it learns on one device. */
static void mirrored_fit_steps_once_per_batch(void **state) {
    tp_context_t *context = *state;
    enum { WEIGHTS = 3 * 4 + 4 + 4 * 2 + 2 };
    float alone[WEIGHTS], mirrored[WEIGHTS];
    assert_int_equal(train_with_adam(context, NULL, alone, WEIGHTS), 9);
    const char *devices[2] = {"/cpu:0", "/cpu:1"};
    tp_mirrored_strategy_t *strategy;
    assert_ok(tp_mirrored_strategy_create(context, devices, 2, &strategy));
    assert_int_equal(train_with_adam(context, strategy, mirrored, WEIGHTS), 9);
    tp_mirrored_strategy_destroy(strategy);
    double moved = 0;
    for (size_t i = 0; i < WEIGHTS; i++) {
        if (fabsf(alone[i] - mirrored[i]) > 1e-5f)
            fail_msg("weight %zu: %.9g alone, %.9g mirrored", i, (double)alone[i],
                     (double)mirrored[i]);
        moved += fabs((double)alone[i]);
    }
    assert_true(moved > 0);
}

int main(void) {
#define TEST(name) cmocka_unit_test_setup_teardown(name, setup, cpu_context_teardown)
    const struct CMUnitTest tests[] = {
        TEST(sgd_without_momentum_keeps_no_slot),
        TEST(sgd_with_momentum_matches_the_rule),
        TEST(sgd_with_nesterov_momentum_matches_the_rule),
        TEST(adam_matches_the_paper_with_bias_correction),
        TEST(adam_in_float64_matches_to_rounding),
        TEST(adams_first_step_is_the_learning_rate),
        TEST(the_learning_rate_changes_between_steps),
        TEST(each_variable_is_updated_on_its_device),
        TEST(a_checkpoint_saves_and_restores_the_state),
        TEST(a_bad_step_changes_nothing),
        TEST(bad_options_are_refused),
        TEST(a_step_inside_a_traced_function_is_refused),
        TEST(fit_steps_with_the_given_optimizer),
        TEST(mirrored_fit_steps_once_per_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
