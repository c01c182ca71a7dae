# SPDX-License-Identifier: Apache-2.0
"""Handwritten digits with a multilayer perceptron, in Keras' words: the C example
examples/digits_mlp.c written with tp.keras. The 8x8 images of the UCI digits set (the runtime's
loader, tp.datasets.load_digits) through 128 ReLU units to 10 logits, trained with Adam on the
softmax cross-entropy, 20 epochs of batches of 32.

    python3 digits_mlp.py [--epochs N] [--seed S] [--split fixed|shuffled] [--split-seed N]
                          [--replicas N] [--multi-worker]

--split shuffled is the C examples' shuffled split (the same images train and test), on which
both reach about 98% test accuracy; --replicas N trains data-parallel on N logical CPUs through
tp.distribute.MirroredStrategy, and --multi-worker over the workers of `mpirun -np N` through
tp.distribute.MultiWorkerMirroredStrategy. The last line is "Test accuracy (SPLIT): 98.06%"."""
import digits_common
import tensorplug as tp


def build_model(seed):
    # Glorot's uniform kernels drawn by the runtime with the C example's seeds: the same
    # starting weights as digits_mlp --seed SEED.
    glorot = tp.keras.initializers.GlorotUniform
    inputs = tp.keras.layers.Input(shape=(64,))
    hidden = tp.keras.layers.Dense(128, activation="relu",
                                   kernel_initializer=glorot(seed=seed))(inputs)
    logits = tp.keras.layers.Dense(10, kernel_initializer=glorot(seed=seed + 1))(hidden)
    return tp.keras.models.Model(inputs=inputs, outputs=logits)


if __name__ == "__main__":
    digits_common.run(__doc__.splitlines()[0], build_model, epochs=20, learning_rate=0.01)
