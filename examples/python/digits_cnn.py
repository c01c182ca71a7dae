# SPDX-License-Identifier: Apache-2.0
"""Handwritten digits with a small convolutional network, in Keras' words: the C example
examples/digits_cnn.c written with tp.keras. The 8x8 images of the UCI digits set (the runtime's
loader, tp.datasets.load_digits) reshaped to 8x8x1, two 3x3 ReLU convolutions (SAME), 2x2 max
pooling, Flatten and a Dense layer to 10 logits, trained with Adam (0.003) on the softmax
cross-entropy, 15 epochs of batches of 32.

    python3 digits_cnn.py [--epochs N] [--seed S] [--split fixed|shuffled] [--split-seed N]
                          [--replicas N]

Seeded as the C example (its He-normal kernels drawn by the runtime with the same seeds, its
batch order), it reaches the same accuracy: 98.06% on the shuffled split, seed 0, as
digits_cnn --split shuffled prints."""
import math

import digits_common
import tensorplug as tp


def he_normal(fan_in, seed):
    # digits_cnn.c's He initialisation: N(0, 2 / fan_in) from the runtime's N(0, 1), untruncated
    return tp.keras.initializers.RandomNormal(stddev=math.sqrt(2.0 / fan_in), seed=seed)


def build_model(seed):
    layers = tp.keras.layers
    inputs = layers.Input(shape=(64,))
    square = layers.Reshape((8, 8, 1))(inputs)
    conv1 = layers.Conv2D(16, 3, padding="same", activation="relu",
                          kernel_initializer=he_normal(3 * 3 * 1, seed))(square)
    conv2 = layers.Conv2D(32, 3, padding="same", activation="relu",
                          kernel_initializer=he_normal(3 * 3 * 16, seed + 1))(conv1)
    pooled = layers.MaxPooling2D(2)(conv2)
    flat = layers.Flatten()(pooled)
    logits = layers.Dense(10, kernel_initializer=tp.keras.initializers.GlorotUniform(
        seed=seed + 2))(flat)
    return tp.keras.models.Model(inputs=inputs, outputs=logits)


if __name__ == "__main__":
    digits_common.run(__doc__.splitlines()[0], build_model, epochs=15, learning_rate=0.003)
