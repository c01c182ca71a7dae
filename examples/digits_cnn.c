/* SPDX-License-Identifier: Apache-2.0 */
/* Handwritten digits with a small convolutional network: the 8x8 images of the UCI digits set
 * (python3-sklearn's copy, tp_digits_load_split), reshaped to [N, 8, 8, 1], through two 3x3
 * convolutions with ReLU (SAME padding), 2x2 max pooling and a dense layer to 10 logits,
 * trained with Adam on the softmax cross-entropy. In Keras:
 *
 *   model = tf.keras.Sequential([
 *       tf.keras.layers.Reshape((8, 8, 1), input_shape=(64,)),
 *       tf.keras.layers.Conv2D(16, 3, padding='same', activation='relu',
 *                              kernel_initializer='he_normal'),
 *       tf.keras.layers.Conv2D(32, 3, padding='same', activation='relu',
 *                              kernel_initializer='he_normal'),
 *       tf.keras.layers.MaxPooling2D(2),
 *       tf.keras.layers.Flatten(),
 *       tf.keras.layers.Dense(10)])
 *   model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=0.003),
 *                 loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
 *                 metrics=['accuracy'])
 *   model.fit(train_images, train_labels, epochs=15, batch_size=32, shuffle=True,
 *             validation_data=(test_images, test_labels))
 *
 * This file is the model: its weights, their initial values and the forward pass. The training
 * loop is written out in digits_common.c (digits_run): a gradient tape records each step's
 * forward pass, tp_tape_gradient_variables gives the gradients and tp_optimizer_apply makes
 * Adam's update, every step through a MirroredStrategy. Its options (digits_common.h): --epochs
 * (default 15), --seed, --device, --strategy, --log-placement, --split, --split-seed.
 *
 * It prints a line per epoch, then the test accuracy: 95.6% with the defaults, on the file's
 * last 360 images (other writers'); 98.3% on the shuffled split (split seed 0; 99.2-99.7% on
 * seeds 1-4), where train and test come from the same writers.
 *
 * With the APU plug-in, --device APU:0 runs Conv2D and Relu on the APU, which has their forward
 * kernels; the convolution's gradients (Conv2DBackpropInput, Conv2DBackpropFilter), BiasAdd,
 * MaxPool, MatMul, the loss and Adam's arithmetic fall back to the CPU, each logged once.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include <tensorplug/training.h>

#include "digits_common.h"

enum { SIDE = 8, CLASSES = 10 };
enum { FILTERS1 = 16, FILTERS2 = 32 };                       /* the convolutions' channels */
enum { FLAT = (SIDE / 2) * (SIDE / 2) * FILTERS2 };           /* what the dense layer sees */
enum { NUM_PARAMS = 6 }; /* kernel and bias of each convolution and of the dense layer */

static const char *const param_names[NUM_PARAMS] = {"conv1/kernel", "conv1/bias",
                                                    "conv2/kernel", "conv2/bias",
                                                    "dense/kernel", "dense/bias"};

/* He's normal initialisation (Keras' he_normal) for the ReLU convolutions:
 * N(0, 2 / fan_in), fan_in = 3 * 3 * input channels, from tp_random_normal's N(0, 1). Keras
 * truncates the normal at two deviations; the plain normal trains as well here. */
static tp_status_t *he_normal(tp_context_t *c, tp_shape_t shape, int64_t fan_in, int64_t seed,
                              tp_tensor_t **out) {
    tp_status_t *error = NULL;
    tp_tensor_t *z = NULL, *deviation = NULL;
    TRY(tp_random_normal(c, TP_FLOAT32, shape, seed, &z));
    TRY(digits_scalar(c, (float)sqrt(2.0 / (double)fan_in), &deviation));
    TRY(tp_mul(c, z, deviation, out));
done:
    tp_tensor_release(z);
    tp_tensor_release(deviation);
    return error;
}

/* Every weight's initial value, in param_names' order: He's normal convolution kernels,
 * Glorot's uniform dense kernel (Keras' default), zero biases. */
static tp_status_t *initial_values(tp_context_t *c, int64_t seed, tp_tensor_t **initial) {
    tp_status_t *error = NULL;
    TRY(he_normal(c, TP_SHAPE(3, 3, 1, FILTERS1), 3 * 3 * 1, seed, &initial[0]));
    TRY(digits_zeros(c, FILTERS1, &initial[1]));
    TRY(he_normal(c, TP_SHAPE(3, 3, FILTERS1, FILTERS2), 3 * 3 * FILTERS1, seed + 1,
                  &initial[2]));
    TRY(digits_zeros(c, FILTERS2, &initial[3]));
    TRY(digits_glorot_uniform(c, FLAT, CLASSES, seed + 2, &initial[4]));
    TRY(digits_zeros(c, CLASSES, &initial[5]));
done:
    return error;
}

/* A 3x3 convolution with SAME padding (the image keeps its size), its bias and ReLU. On a
 * device with a Conv2D kernel (the APU has one) the convolution runs there. Reading the
 * variables is what lets a recording tape take gradients with respect to them. */
static tp_status_t *conv_relu(tp_context_t *c, tp_tensor_t *x, tp_variable_t *kernel,
                              tp_variable_t *bias, tp_tensor_t **out) {
    const tp_conv2d_options_t same = {.padding = TP_PADDING_SAME};
    tp_status_t *error = NULL;
    tp_tensor_t *k = NULL, *b = NULL, *conv = NULL, *z = NULL;
    TRY(tp_variable_read(kernel, &k));
    TRY(tp_variable_read(bias, &b));
    TRY(tp_conv2d(c, x, k, &same, &conv));
    TRY(tp_bias_add(c, conv, b, &z));
    TRY(tp_relu(c, z, out));
done:
    tp_tensor_release(k);
    tp_tensor_release(b);
    tp_tensor_release(conv);
    tp_tensor_release(z);
    return error;
}

/* The model: images [n, 64] to logits [n, 10]. */
static tp_status_t *forward(tp_context_t *c, tp_variable_t *const *params, tp_tensor_t *images,
                            tp_tensor_t **logits) {
    const tp_pool_options_t two_by_two = {.window_height = 2, .window_width = 2};
    tp_status_t *error = NULL;
    tp_tensor_t *square = NULL, *conv1 = NULL, *conv2 = NULL, *pooled = NULL, *flat = NULL;
    TRY(tp_reshape(c, images, TP_SHAPE(-1, SIDE, SIDE, 1), &square));
    TRY(conv_relu(c, square, params[0], params[1], &conv1));   /* [n, 8, 8, 16] */
    TRY(conv_relu(c, conv1, params[2], params[3], &conv2));    /* [n, 8, 8, 32] */
    TRY(tp_max_pool(c, conv2, &two_by_two, &pooled));          /* [n, 4, 4, 32] */
    TRY(tp_reshape(c, pooled, TP_SHAPE(-1, FLAT), &flat));     /* [n, 512] */
    TRY(digits_dense(c, flat, params[4], params[5], false, logits));
done:
    tp_tensor_release(square);
    tp_tensor_release(conv1);
    tp_tensor_release(conv2);
    tp_tensor_release(pooled);
    tp_tensor_release(flat);
    return error;
}

/* The CNN as digits_run trains it: Adam's learning rate and the epochs of the Keras model's
 * compile and fit above. */
static const digits_model_t cnn = {
    .program = "digits_cnn", .num_params = NUM_PARAMS, .param_names = param_names,
    .initial_values = initial_values, .forward = forward,
    .learning_rate = 0.003, .default_epochs = 15};

int main(int argc, char **argv) {
    return digits_run(argc, argv, &cnn);
}
