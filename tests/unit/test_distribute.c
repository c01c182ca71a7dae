/* SPDX-License-Identifier: Apache-2.0 */
/* Several devices at once on the host's CPU split in three logical devices: replicas run
 * concurrently on their own devices, all-reduce gives every replica the same values, a broken
 * collective fails instead of hanging, and mirrored training equals training on one device.
 * Labelled "concurrency": it runs under ThreadSanitizer too. */
#include "test_support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "cpu_fixture.h"
#include "model/model.h"
#include "training_support.h"

static const char *const cpus[3] = {"/cpu:0", "/cpu:1", "/cpu:2"};

static int setup(void **state) { return split_cpu_context_setup(state, 3, 64ull << 20); }

static int teardown(void **state) { return context_teardown(state); }

/* ---- Running replicas ------------------------------------------------------------------------ */

typedef struct {
    tp_tensor_t *a, *b;
    tp_tensor_t *results[3];
} matmul_run_t;

static tp_status_t *replica_matmul(tp_replica_context_t *replica, void *arg) {
    matmul_run_t *run = arg;
    return tp_matmul(tp_replica_context(replica), run->a, run->b, false, false,
                     &run->results[tp_replica_index(replica)]);
}

/* Each replica's ops land on its device, and give what one device gives. */
static void replicas_compute_on_their_devices(void **state) {
    tp_context_t *context = *state;
    const float v[6] = {1, 2, 3, 4, 5, 6};
    matmul_run_t run = {.a = floats(context, TP_SHAPE(2, 3), v),
                        .b = floats(context, TP_SHAPE(3, 2), v)};
    tp_mirrored_strategy_t *strategy;
    assert_ok(tp_mirrored_strategy_create(context, cpus, 3, &strategy));
    assert_int_equal(tp_mirrored_strategy_num_replicas(strategy), 3);
    assert_string_equal(tp_mirrored_strategy_device(strategy, 2),
                        "/job:localhost/replica:0/task:0/device:CPU:2");
    assert_null(tp_mirrored_strategy_device(strategy, 3));
    assert_ok(tp_mirrored_strategy_run(strategy, replica_matmul, &run));
    tp_tensor_t *single;
    assert_ok(tp_matmul(context, run.a, run.b, false, false, &single));
    float want[4];
    assert_ok(tp_tensor_read(single, want, sizeof want));
    assert_true(want[0] == 22 && want[1] == 28 && want[2] == 49 && want[3] == 64);
    for (int r = 0; r < 3; r++) {
        float got[4];
        assert_ok(tp_tensor_read(run.results[r], got, sizeof got));
        assert_memory_equal(got, want, sizeof want);
        assert_string_equal(tp_tensor_device(run.results[r]),
                            tp_mirrored_strategy_device(strategy, (size_t)r));
        tp_tensor_release(run.results[r]);
    }
    tp_tensor_release(single);
    tp_tensor_release(run.a);
    tp_tensor_release(run.b);
    tp_mirrored_strategy_destroy(strategy);
}

static void bad_strategies_are_refused(void **state) {
    tp_context_t *context = *state;
    tp_mirrored_strategy_t *strategy = NULL;
    const char *twice[2] = {"/cpu:1", "CPU:1"};
    assert_error(tp_mirrored_strategy_create(context, twice, 2, &strategy), TP_INVALID_ARGUMENT,
                 "/job:localhost/replica:0/task:0/device:CPU:1 is named twice");
    const char *missing[2] = {"/cpu:0", "/cpu:7"};
    assert_error(tp_mirrored_strategy_create(context, missing, 2, &strategy), TP_NOT_FOUND,
                 "device:CPU:7 unknown device.");
    assert_error(tp_mirrored_strategy_create(context, cpus, 0, &strategy), TP_INVALID_ARGUMENT,
                 "at least one device");
    assert_null(strategy);
}

/* ---- All-reduce ------------------------------------------------------------------------------ */

typedef struct {
    tp_reduce_op_t op;
    tp_tensor_t *results[3][2];
    bool skip_replica_1; /* replica 1 fails before the collective */
    bool wrong_shape_on_2;
} reduce_run_t;

static tp_status_t *replica_reduce(tp_replica_context_t *replica, void *arg) {
    reduce_run_t *run = arg;
    size_t r = tp_replica_index(replica);
    tp_context_t *context = tp_replica_context(replica);
    if (run->skip_replica_1 && r == 1)
        return tp_status_make(TP_DATA_LOSS, "replica 1's own failure");
    /* Replica r brings (r + 1) * [1 2 3 4] and a scalar r. */
    float v[4], s = (float)r;
    for (int i = 0; i < 4; i++) v[i] = (float)((r + 1) * (size_t)(i + 1));
    tp_tensor_t *values[2] = {
        floats(context, run->wrong_shape_on_2 && r == 2 ? TP_SHAPE(4, 1) : TP_SHAPE(4), v),
        floats(context, TP_SCALAR_SHAPE, &s)};
    tp_status_t *error = tp_replica_all_reduce(replica, run->op, values, 2, run->results[r]);
    tp_tensor_release(values[0]);
    tp_tensor_release(values[1]);
    return error;
}

static void all_reduce_gives_every_replica_the_sum_or_mean(void **state) {
    tp_context_t *context = *state;
    tp_mirrored_strategy_t *strategy;
    assert_ok(tp_mirrored_strategy_create(context, cpus, 3, &strategy));
    for (int op = TP_REDUCE_SUM; op <= TP_REDUCE_MEAN; op++) {
        reduce_run_t run = {.op = (tp_reduce_op_t)op};
        assert_ok(tp_mirrored_strategy_run(strategy, replica_reduce, &run));
        float divisor = op == TP_REDUCE_MEAN ? 3.0f : 1.0f;
        for (size_t r = 0; r < 3; r++) {
            float got[4], scalar;
            assert_ok(tp_tensor_read(run.results[r][0], got, sizeof got));
            assert_ok(tp_tensor_read(run.results[r][1], &scalar, sizeof scalar));
            for (int i = 0; i < 4; i++) assert_true(got[i] == 6.0f * (float)(i + 1) / divisor);
            assert_true(scalar == 3.0f / divisor);
            assert_string_equal(tp_tensor_device(run.results[r][0]),
                                tp_mirrored_strategy_device(strategy, r));
            tp_tensor_release(run.results[r][0]);
            tp_tensor_release(run.results[r][1]);
        }
    }
    tp_mirrored_strategy_destroy(strategy);
}

/* From outside a run: tensors on any device, results on each replica's device. */
static void all_reduce_from_outside_a_run(void **state) {
    tp_context_t *context = *state;
    const char *two[2] = {"/cpu:1", "/cpu:2"};
    tp_mirrored_strategy_t *strategy;
    assert_ok(tp_mirrored_strategy_create(context, two, 2, &strategy));
    const float a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
    tp_tensor_t *in[2] = {floats(context, TP_SHAPE(3), a), floats(context, TP_SHAPE(3), b)};
    tp_tensor_t *out[2];
    assert_ok(tp_mirrored_strategy_all_reduce(strategy, TP_REDUCE_MEAN, in, out));
    for (int r = 0; r < 2; r++) {
        float got[3];
        assert_ok(tp_tensor_read(out[r], got, sizeof got));
        assert_true(got[0] == 5.5f && got[1] == 11.0f && got[2] == 16.5f);
        assert_string_equal(tp_tensor_device(out[r]), tp_mirrored_strategy_device(strategy,
                                                                                   (size_t)r));
        tp_tensor_release(out[r]);
        tp_tensor_release(in[r]);
    }
    tp_mirrored_strategy_destroy(strategy);
}

/* A replica that fails before the collective: the run reports its error, not the others'
 * "never joined", and nobody hangs. */
static void a_replica_that_never_joins_fails_the_run(void **state) {
    tp_context_t *context = *state;
    tp_mirrored_strategy_t *strategy;
    assert_ok(tp_mirrored_strategy_create(context, cpus, 3, &strategy));
    reduce_run_t run = {.op = TP_REDUCE_SUM, .skip_replica_1 = true};
    assert_error(tp_mirrored_strategy_run(strategy, replica_reduce, &run), TP_DATA_LOSS,
                 "replica 1 on /job:localhost/replica:0/task:0/device:CPU:1: replica 1's own "
                 "failure");
    /* Tensors that differ between replicas fail the call on every replica. */
    reduce_run_t mismatched = {.op = TP_REDUCE_SUM, .wrong_shape_on_2 = true};
    assert_error(tp_mirrored_strategy_run(strategy, replica_reduce, &mismatched),
                 TP_INVALID_ARGUMENT, "tensor 0 is float32 (4,) on replica 0 but float32 (4, 1) "
                                      "on replica 2");
    /* The strategy still works afterwards. */
    reduce_run_t good = {.op = TP_REDUCE_SUM};
    assert_ok(tp_mirrored_strategy_run(strategy, replica_reduce, &good));
    for (int r = 0; r < 3; r++) {
        tp_tensor_release(good.results[r][0]);
        tp_tensor_release(good.results[r][1]);
    }
    tp_mirrored_strategy_destroy(strategy);
}

/* ---- Mirrored training ----------------------------------------------------------------------- */

enum { ROWS = 45, FEATURES = 3, HIDDEN = 5 };

/* A 3-5-1 network trained 3 epochs with batches of 10 (the last one 5 rows), on `replicas`
 * devices; returns every weight of replica 0, and checks that every replica holds the same,
 * that every weight moved and that the loss fell each epoch. */
static void train(tp_context_t *context, size_t replicas, float *weights, size_t count,
                  double *loss) {
    float x[ROWS * FEATURES], y[ROWS];
    for (int i = 0; i < ROWS; i++) {
        for (int f = 0; f < FEATURES; f++) x[i * FEATURES + f] = sinf((float)(i * 3 + f));
        y[i] = 0.5f * x[i * FEATURES] - x[i * FEATURES + 1] + 0.25f;
    }
    tp_mirrored_strategy_t *strategy;
    assert_ok(tp_mirrored_strategy_create(context, cpus, replicas, &strategy));
    tp_model_t *model;
    assert_ok(tp_model_create(context, FEATURES, strategy, &model));
    assert_ok(tp_model_add_dense(model, HIDDEN, TP_ACTIVATION_TANH,
                                 TP_INITIALIZER_GLOROT_UNIFORM, 11));
    assert_ok(tp_model_add_dense(model, 1, TP_ACTIVATION_LINEAR, TP_INITIALIZER_RANDOM_NORMAL,
                                 12));
    float initial[FEATURES * HIDDEN + HIDDEN + HIDDEN + 1];
    read_weights(model, initial, sizeof initial / sizeof *initial);
    tp_tensor_t *xs = floats(context, TP_SHAPE(ROWS, FEATURES), x);
    tp_tensor_t *ys = floats(context, TP_SHAPE(ROWS, 1), y);
    char progress[1024] = {0};
    FILE *out = fmemopen(progress, sizeof progress - 1, "w");
    assert_non_null(out);
    tp_fit_options_t options = TP_FIT_OPTIONS_INIT;
    options.epochs = 3;
    options.batch_size = 10;
    options.learning_rate = 0.1;
    options.progress = out;
    assert_ok(tp_model_fit(model, xs, ys, &options, loss));
    fclose(out);
    /* Training made progress: each epoch's loss is below the one before. */
    const char *at = progress;
    double previous = INFINITY;
    for (int epoch = 0; epoch < 3; epoch++) {
        at = strstr(at, ", loss ");
        assert_non_null(at);
        at += strlen(", loss ");
        double epoch_loss = strtod(at, NULL);
        if (!(epoch_loss < previous)) fail_msg("the loss did not fall:\n%s", progress);
        previous = epoch_loss;
    }
    /* Every replica applied the same updates: their variables are equal to the bit. */
    for (size_t layer = 0; layer < 2; layer++) {
        for (size_t r = 1; r < replicas; r++) {
            tp_variable_t *mine[2] = {model->layers[layer].kernel[r], model->layers[layer].bias[r]};
            tp_variable_t *first[2] = {model->layers[layer].kernel[0],
                                       model->layers[layer].bias[0]};
            for (int v = 0; v < 2; v++) {
                tp_tensor_t *a, *b;
                assert_ok(tp_variable_read(first[v], &a));
                assert_ok(tp_variable_read(mine[v], &b));
                float va[FEATURES * HIDDEN], vb[FEATURES * HIDDEN];
                size_t bytes = tp_tensor_byte_size(a);
                assert_ok(tp_tensor_read(a, va, bytes));
                assert_ok(tp_tensor_read(b, vb, bytes));
                assert_memory_equal(va, vb, bytes);
                assert_string_equal(tp_variable_device(mine[v]),
                                    tp_mirrored_strategy_device(strategy, r));
                tp_tensor_release(a);
                tp_tensor_release(b);
            }
        }
    }
    assert_int_equal(read_weights(model, weights, count), count);
    /* Every weight moved (the second layer's bias starts at zero, like every bias). */
    for (size_t i = 0; i < count; i++)
        if (weights[i] == initial[i]) fail_msg("weight %zu did not move from %g", i, initial[i]);
    tp_tensor_release(xs);
    tp_tensor_release(ys);
    tp_model_destroy(model);
    tp_mirrored_strategy_destroy(strategy);
}

static void mirrored_training_matches_one_device(void **state) {
    tp_context_t *context = *state;
    enum { WEIGHTS = FEATURES * HIDDEN + HIDDEN + HIDDEN + 1 };
    float one[WEIGHTS], two[WEIGHTS], three[WEIGHTS];
    double loss1, loss2, loss3;
    train(context, 1, one, WEIGHTS, &loss1);
    train(context, 2, two, WEIGHTS, &loss2);
    train(context, 3, three, WEIGHTS, &loss3);
    for (int i = 0; i < WEIGHTS; i++) {
        assert_float_equal(two[i], one[i], 1e-5);
        assert_float_equal(three[i], one[i], 1e-5);
    }
    assert_float_equal(loss2, loss1, 1e-6);
    assert_float_equal(loss3, loss1, 1e-6);
    assert_true(loss1 > 0 && loss1 < 1);
}

static void bad_fit_arguments_are_refused(void **state) {
    tp_context_t *context = *state;
    tp_model_t *model;
    assert_ok(tp_model_create(context, 2, NULL, &model));
    const float v[4] = {1, 2, 3, 4};
    tp_tensor_t *x = floats(context, TP_SHAPE(2, 2), v), *y = floats(context, TP_SHAPE(2, 2), v);
    tp_fit_options_t options = TP_FIT_OPTIONS_INIT;
    assert_error(tp_model_fit(model, x, y, &options, NULL), TP_FAILED_PRECONDITION,
                 "the model has no layer yet");
    assert_ok(tp_model_add_dense(model, 1, TP_ACTIVATION_RELU, TP_INITIALIZER_ONES, 0));
    assert_error(tp_model_fit(model, x, y, &options, NULL), TP_INVALID_ARGUMENT,
                 "y must be float32 of shape (2, 1)");
    assert_error(tp_model_add_dense(model, 0, TP_ACTIVATION_RELU, TP_INITIALIZER_ONES, 0),
                 TP_INVALID_ARGUMENT, "units is 0");
    options.learning_rate = 0;
    tp_tensor_t *y1 = floats(context, TP_SHAPE(2, 1), v);
    assert_error(tp_model_fit(model, x, y1, &options, NULL), TP_INVALID_ARGUMENT,
                 "must be positive");
    /* Predict on a model with ones as kernel: relu(x @ [1 1]^T + 0). */
    tp_tensor_t *prediction;
    assert_ok(tp_model_predict(model, x, &prediction));
    float got[2];
    assert_ok(tp_tensor_read(prediction, got, sizeof got));
    assert_true(got[0] == 3 && got[1] == 7);
    tp_tensor_release(prediction);
    tp_tensor_release(x);
    tp_tensor_release(y);
    tp_tensor_release(y1);
    tp_model_destroy(model);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(replicas_compute_on_their_devices, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_strategies_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(all_reduce_gives_every_replica_the_sum_or_mean, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(all_reduce_from_outside_a_run, setup, teardown),
        cmocka_unit_test_setup_teardown(a_replica_that_never_joins_fails_the_run, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(mirrored_training_matches_one_device, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_fit_arguments_are_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
