/* SPDX-License-Identifier: Apache-2.0 */
/* "Using multiple GPUs" with tf.distribute.Strategy: a copy of the model on each device, the
 * input data split between them.
 *
 *   strategy = tf.distribute.MirroredStrategy()
 *   with strategy.scope():
 *     inputs = tf.keras.layers.Input(shape=(1,))
 *     predictions = tf.keras.layers.Dense(1)(inputs)
 *     model = tf.keras.models.Model(inputs=inputs, outputs=predictions)
 *     model.compile(loss='mse',
 *                   optimizer=tf.train.GradientDescentOptimizer(learning_rate=0.2))
 *
 * The devices are the host's CPU split into two logical devices, CPU:0 and CPU:1, so that the
 * program runs on any machine; with a device type as its argument, that type's device 0 split
 * in two instead: `mirrored_training GPU` trains on two logical GPUs (the OpenCL plug-in;
 * TP_OPENCL_DEVICE_TYPES=cpu on a machine whose only OpenCL device is PoCL's). The model learns
 * y = 2x + 1 from 64 points in [-1, 1], 16 to a batch: each replica takes 8 rows of every
 * batch.
 */
#include <stdio.h>

#include <tensorplug/training.h>

enum { ROWS = 64 };

int main(int argc, char **argv) {
    const char *type = argc > 1 ? argv[1] : "CPU";
    char physical[32], replicas[2][32];
    snprintf(physical, sizeof physical, "%s:0", type);
    snprintf(replicas[0], sizeof replicas[0], "/%s:0", type);
    snprintf(replicas[1], sizeof replicas[1], "/%s:1", type);
    tp_context_t *context;
    TP_CHECK(tp_context_create(NULL, &context));
    const uint64_t limits[2] = {256ull << 20, 256ull << 20};
    TP_CHECK(tp_context_set_logical_devices(context, physical, limits, 2));

    const char *devices[2] = {replicas[0], replicas[1]};
    tp_mirrored_strategy_t *strategy;
    TP_CHECK(tp_mirrored_strategy_create(context, devices, 2, &strategy));
    printf("Number of devices: %zu\n", tp_mirrored_strategy_num_replicas(strategy));

    tp_model_t *model;
    TP_CHECK(tp_model_create(context, 1, strategy, &model));
    TP_CHECK(tp_model_add_dense(model, 1, TP_ACTIVATION_LINEAR, TP_INITIALIZER_GLOROT_UNIFORM,
                                /*seed=*/7));

    float x[ROWS], y[ROWS];
    for (int i = 0; i < ROWS; i++) {
        x[i] = -1.0f + 2.0f * (float)i / (ROWS - 1);
        y[i] = 2.0f * x[i] + 1.0f;
    }
    tp_tensor_t *xs, *ys;
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(ROWS, 1), x, sizeof x, &xs));
    TP_CHECK(tp_tensor_create(context, TP_FLOAT32, TP_SHAPE(ROWS, 1), y, sizeof y, &ys));

    tp_fit_options_t options = TP_FIT_OPTIONS_INIT;
    options.epochs = 10;
    options.batch_size = 16;
    options.learning_rate = 0.2;
    options.progress = stdout;
    TP_CHECK(tp_model_fit(model, xs, ys, &options, NULL));

    tp_tensor_t *kernel, *bias;
    TP_CHECK(tp_model_get_weights(model, 0, &kernel, &bias));
    float w, b;
    TP_CHECK(tp_tensor_read(kernel, &w, sizeof w));
    TP_CHECK(tp_tensor_read(bias, &b, sizeof b));
    printf("Learnt weight %.4f and bias %.4f (y = 2x + 1)\n", w, b);

    tp_tensor_release(kernel);
    tp_tensor_release(bias);
    tp_tensor_release(xs);
    tp_tensor_release(ys);
    tp_model_destroy(model);
    tp_mirrored_strategy_destroy(strategy);
    tp_context_destroy(context);
    return 0;
}
