# SPDX-License-Identifier: Apache-2.0
"""What digits_mlp.py and digits_cnn.py share, as examples/digits_common.c does for the C
examples: the command line, the data, the optional MirroredStrategy over logical CPUs (or
MultiWorkerMirroredStrategy over the workers of an mpirun job), and the
training in the C examples' batch order, ending with "Test accuracy (SPLIT): NN.NN%"."""
import argparse
import contextlib

import tensorplug as tp


def run(description, build_model, epochs, learning_rate):
    """Trains build_model(seed) with Adam at `learning_rate` for `epochs` (the defaults of the
    command line) and prints the test accuracy."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--epochs", type=int, default=epochs)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--split", choices=("fixed", "shuffled"), default="fixed")
    parser.add_argument("--split-seed", type=int, default=0)
    parser.add_argument("--replicas", type=int, default=0,
                        help="train on this many logical CPUs (0: no strategy)")
    parser.add_argument("--multi-worker", action="store_true",
                        help="train data-parallel over the workers of an mpirun job")
    parser.add_argument("--verbose", type=int, default=1)
    args = parser.parse_args()

    if args.replicas > 0:
        cpu = tp.config.list_physical_devices("CPU")[0]
        tp.config.set_logical_device_configuration(
            cpu, [tp.config.LogicalDeviceConfiguration(memory_limit=256)] * args.replicas)
    (x_train, y_train), (x_test, y_test) = tp.datasets.load_digits(
        split=args.split, split_seed=args.split_seed)

    strategy = None
    if args.multi_worker:
        strategy = tp.distribute.MultiWorkerMirroredStrategy()
        resolver = strategy.cluster_resolver
        print("Worker %d of %d: %d replicas in sync" % (
            resolver.task_id, resolver.num_workers, strategy.num_replicas_in_sync))
    elif args.replicas > 0:
        strategy = tp.distribute.MirroredStrategy(
            ["/cpu:%d" % i for i in range(args.replicas)])
        print("Number of devices: %d" % strategy.num_replicas_in_sync)
    scope = strategy.scope() if strategy is not None else contextlib.nullcontext()
    with scope:
        model = build_model(args.seed)
        model.compile(optimizer=tp.keras.optimizers.Adam(learning_rate=learning_rate),
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
