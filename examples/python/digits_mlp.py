# SPDX-License-Identifier: Apache-2.0
"""Handwritten digits with a multilayer perceptron, in Keras' words: the C example
examples/digits_mlp.c written with tp.keras. The 8x8 images of the UCI digits set (the runtime's
loader, tp.datasets.load_digits) through 128 ReLU units to 10 logits, trained with Adam on the
softmax cross-entropy, 20 epochs of batches of 32.

    python3 digits_mlp.py [--epochs N] [--seed S] [--split fixed|shuffled] [--split-seed N]
                          [--replicas N]

--split shuffled is the C examples' shuffled split (the same images train and test), on which
both reach about 98% test accuracy; --replicas N trains data-parallel on N logical CPUs through
tp.distribute.MirroredStrategy. The last line is "Test accuracy (SPLIT): 98.06%"."""
import argparse

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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--split", choices=("fixed", "shuffled"), default="fixed")
    parser.add_argument("--split-seed", type=int, default=0)
    parser.add_argument("--replicas", type=int, default=0,
                        help="train on this many logical CPUs (0: no strategy)")
    parser.add_argument("--verbose", type=int, default=1)
    args = parser.parse_args()

    if args.replicas > 0:
        cpu = tp.config.list_physical_devices("CPU")[0]
        tp.config.set_logical_device_configuration(
            cpu, [tp.config.LogicalDeviceConfiguration(memory_limit=256)] * args.replicas)
    (x_train, y_train), (x_test, y_test) = tp.datasets.load_digits(
        split=args.split, split_seed=args.split_seed)

    strategy = None
    if args.replicas > 0:
        strategy = tp.distribute.MirroredStrategy(
            ["/cpu:%d" % i for i in range(args.replicas)])
        print("Number of devices: %d" % strategy.num_replicas_in_sync)
    scope = strategy.scope() if strategy is not None else _nothing()
    with scope:
        model = build_model(args.seed)
        model.compile(optimizer=tp.keras.optimizers.Adam(learning_rate=0.01),
                      loss=tp.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
    # Each epoch's batches in the C example's order (its seeded shuffle, continued from the
    # previous epoch's order), so that the two train alike step for step.
    order = range(len(x_train))
    for epoch in range(args.epochs):
        order = tp.datasets.digits_shuffle(order, args.seed, epoch + 1)
        model.fit(x_train[order], y_train[order], epochs=epoch + 1, initial_epoch=epoch,
                  batch_size=32, shuffle=False, validation_data=(x_test, y_test),
                  verbose=args.verbose)
    _, accuracy = model.evaluate(x_test, y_test, verbose=0)
    split = "fixed split" if args.split == "fixed" else "shuffled split, seed %d" % args.split_seed
    print("Test accuracy (%s): %.2f%%" % (split, 100.0 * accuracy))


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    main()
