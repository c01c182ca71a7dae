/* SPDX-License-Identifier: Apache-2.0 */
/* A training run that stops and resumes from a checkpoint, as tf.train.Checkpoint or Keras's
 * save_weights do: y = w x + b learnt by gradient descent for 20 steps, w and b saved to a
 * NumPy .npz, restored into new variables (as a new process would make them), and trained for
 * 20 steps more. Python reads the same file:
 *
 *   >>> numpy.load("linear.npz")["w"]
 *   array([1.6293817], dtype=float32)
 *
 * The checkpoint goes to the path given as the argument, or linear.npz here. */
#include <stdio.h>

#include <tensorplug/training.h>

enum { ROWS = 16, STEPS = 20 };

/* One step of gradient descent on the mean squared error; returns the loss before it. */
static float step(tp_context_t *context, tp_variable_t *variables[2], tp_tensor_t *x,
                  tp_tensor_t *y) {
    tp_tape_t *tape;
    TP_CHECK(tp_tape_begin(context, &tape));
    tp_tensor_t *w, *b, *wx, *prediction, *loss;
    TP_CHECK(tp_variable_read(variables[0], &w));
    TP_CHECK(tp_variable_read(variables[1], &b));
    TP_CHECK(tp_mul(context, x, w, &wx));
    TP_CHECK(tp_add(context, wx, b, &prediction));
    TP_CHECK(tp_mean_squared_error(context, y, prediction, &loss));
    TP_CHECK(tp_tape_stop(tape));
    tp_tensor_t *grads[2];
    TP_CHECK(tp_tape_gradient_variables(tape, loss, variables, 2, grads));
    TP_CHECK(tp_sgd_apply(variables, grads, 2, /*learning_rate=*/0.1));
    float value;
    TP_CHECK(tp_tensor_read(loss, &value, sizeof value));
    tp_tensor_t *made[] = {w, b, wx, prediction, loss, grads[0], grads[1]};
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) tp_tensor_release(made[i]);
    tp_tape_destroy(tape);
    return value;
}

static void new_variables(tp_context_t *context, tp_variable_t *out[2]) {
    const float zero = 0;
    tp_tensor_t *initial;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(1), &zero, sizeof zero, &initial));
    TP_CHECK(tp_variable_create(context, "w", initial, NULL, &out[0]));
    TP_CHECK(tp_variable_create(context, "b", initial, NULL, &out[1]));
    tp_tensor_release(initial);
}

static void print_variables(const char *when, tp_variable_t *variables[2]) {
    float values[2];
    for (int i = 0; i < 2; i++) {
        tp_tensor_t *value;
        TP_CHECK(tp_variable_read(variables[i], &value));
        TP_CHECK(tp_tensor_read(value, &values[i], sizeof values[i]));
        tp_tensor_release(value);
    }
    printf("%s: w %.4f, b %.4f\n", when, values[0], values[1]);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "linear.npz";
    tp_context_t *context;
    TP_CHECK(tp_context_create(NULL, &context));
    float xs[ROWS], ys[ROWS];
    for (int i = 0; i < ROWS; i++) {
        xs[i] = -1.0f + 2.0f * (float)i / (ROWS - 1);
        ys[i] = 2.0f * xs[i] + 1.0f;
    }
    tp_tensor_t *x, *y;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(ROWS), xs, sizeof xs, &x));
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(ROWS), ys, sizeof ys, &y));

    tp_variable_t *first[2];
    new_variables(context, first);
    float loss = 0;
    for (int i = 0; i < STEPS; i++) loss = step(context, first, x, y);
    printf("Step %d: loss %.6f\n", STEPS, loss);
    print_variables("Saved", first);
    TP_CHECK(tp_checkpoint_save(path, first, NULL, 2));

    /* The run resumes: new variables, restored by name. */
    tp_variable_t *second[2];
    new_variables(context, second);
    TP_CHECK(tp_checkpoint_load(context, path, second, NULL, 2));
    print_variables("Restored", second);
    for (int i = 0; i < STEPS; i++) loss = step(context, second, x, y);
    printf("Step %d: loss %.6f\n", 2 * STEPS, loss);
    print_variables("Learnt (y = 2x + 1)", second);

    for (int i = 0; i < 2; i++) {
        tp_variable_destroy(first[i]);
        tp_variable_destroy(second[i]);
    }
    tp_tensor_release(x);
    tp_tensor_release(y);
    tp_context_destroy(context);
    return 0;
}
