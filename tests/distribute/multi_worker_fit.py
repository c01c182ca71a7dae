# SPDX-License-Identifier: Apache-2.0
"""Data-parallel training through tp.distribute.MultiWorkerMirroredStrategy, as a user writes it.

    python3 multi_worker_fit.py OUT              one process (outside mpirun: one worker)
    mpirun -np N python3 multi_worker_fit.py OUT N workers

Trains a Keras MLP with model.fit (Adam, shuffled batches of 30 rows, the last one of 10) and a
linear model with a custom loop (strategy.run over experimental_distribute_dataset, the
replica context's all-reduce, strategy.reduce), and writes each worker's final weights to
OUT-worker{K}.npz. Each worker draws its initial weights and shuffled orders from its own seed,
so that only the strategy (variables broadcast from worker 0, worker 0's order, each worker on
its own rows of a global batch) can make the job's weights those of one process. It checks
what it can see alone (the cluster resolver, the replicas, every worker's input pipeline, MPI
loaded from beside the installed runtime exactly when there are several workers) and exits 1
naming what was wrong."""
import os
import sys

import numpy as np

import tensorplug as tp

BATCH = 30
ROWS = 250
problems = []


def check(condition, what):
    if not condition:
        problems.append(what)


def data():
    rng = np.random.RandomState(1)
    x = rng.uniform(-1.0, 1.0, (ROWS, 8)).astype(np.float32)
    w = rng.normal(size=(8, 1)).astype(np.float32)
    y = (np.tanh(x @ w) + 0.1 * rng.normal(size=(ROWS, 1))).astype(np.float32)
    return x, y


def mapped_mpi_libraries():
    with open("/proc/self/maps") as maps:
        return sorted({line.split()[-1] for line in maps
                       if "libmpi" in line or "libtensorplug_mpi" in line})


def keras_fit(strategy, x, y):
    with strategy.scope():
        inputs = tp.keras.layers.Input(shape=(8,))
        hidden = tp.keras.layers.Dense(16, activation="tanh")(inputs)
        model = tp.keras.Model(inputs, tp.keras.layers.Dense(1)(hidden))
        model.compile(optimizer=tp.keras.optimizers.Adam(0.01), loss="mse")
    history = model.fit(x, y, batch_size=BATCH, epochs=3, verbose=0)
    losses = history.history["loss"]
    check(losses[-1] < losses[0], "fit's loss did not fall: %s" % losses)
    return {"fit_%d" % i: w for i, w in enumerate(model.get_weights())}, losses


def custom_loop(strategy, x, y):
    """Gradient descent on y ~ x @ w: each replica's share of a global batch's mean squared
    error, its gradient summed over every replica of every worker."""
    w = tp.Variable(np.zeros((8, 1), np.float32))
    batches = [(x[i:i + BATCH], y[i:i + BATCH]) for i in range(0, ROWS, BATCH)]
    loss = None

    def step(xs, ys, rows):
        context = tp.distribute.get_replica_context()
        # One CPU replica per worker here: worker K's replica is number K of the job's.
        check(context.replica_id_in_sync_group == strategy.cluster_resolver.task_id and
              context.num_replicas_in_sync == strategy.num_replicas_in_sync,
              "replica %d of %d in sync" % (context.replica_id_in_sync_group,
                                           context.num_replicas_in_sync))
        with tp.GradientTape() as tape:
            error = tp.subtract(tp.matmul(xs, w), ys)
            mine = tp.divide(tp.reduce_sum(tp.multiply(error, error)), float(rows))
        summed = context.all_reduce("SUM", tape.gradient(mine, w))
        return summed, mine

    for _ in range(3):
        # Every worker iterates over the same global batches, each taking its replicas' rows.
        distributed = strategy.experimental_distribute_dataset(batches)
        for (whole, _), (xs, ys) in zip(batches, distributed):
            grad, mine = strategy.run(step, args=(xs, ys, len(whole)))
            w.assign_sub(tp.multiply(strategy.experimental_local_results(grad)[0], 0.5))
            loss = float(strategy.reduce("SUM", mine).numpy())
    # Every row of every worker, reduced over axis 0: the data's column means.
    rows = next(iter(strategy.experimental_distribute_dataset([x])))
    means = strategy.reduce("MEAN", rows, axis=0).numpy()
    check(means.shape == (8,) and np.allclose(means, x.mean(axis=0), atol=1e-6),
          "the MEAN over axis 0 of every worker's rows is %s, not the data's %s"
          % (means, x.mean(axis=0)))
    return {"loop_w": w.numpy()}, loss


def input_pipelines(strategy):
    """distribute_datasets_from_function: worker K's function sees pipeline K of N and takes
    every N-th item; the replicas' sums, reduced, are the sum of every item."""
    seen = []

    def dataset_fn(context):
        seen.append(context)
        items = np.arange(40, dtype=np.float32)[context.input_pipeline_id::
                                               context.num_input_pipelines]
        per_replica = context.get_per_replica_batch_size(4 * context.num_replicas_in_sync)
        return [items[i:i + per_replica] for i in range(0, len(items), per_replica)]

    total = 0.0
    for batch in strategy.distribute_datasets_from_function(dataset_fn):
        total += float(strategy.reduce("SUM", batch, axis=0).numpy())
    resolver = strategy.cluster_resolver
    check(len(seen) == 1 and seen[0].num_input_pipelines == resolver.num_workers and
          seen[0].input_pipeline_id == resolver.task_id, "dataset_fn saw %s" % seen)
    check(total == float(np.arange(40).sum()), "the input pipelines summed to %s" % total)


def main(out):
    strategy = tp.distribute.MultiWorkerMirroredStrategy()
    resolver = strategy.cluster_resolver
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    workers = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    in_job = "OMPI_COMM_WORLD_SIZE" in os.environ
    check(resolver.task_id == rank and resolver.num_workers == workers and
          resolver.task_type == ("worker" if in_job else None),
          "cluster_resolver says %r, mpirun says worker %d of %d" % (resolver, rank, workers))
    check(strategy.num_replicas_in_sync == workers * len(strategy.extended.worker_devices),
          "num_replicas_in_sync %d" % strategy.num_replicas_in_sync)
    check(strategy.should_checkpoint == (rank == 0), "should_checkpoint on worker %d" % rank)
    tp.keras.utils.set_random_seed(100 + rank)
    x, y = data()
    weights, losses = keras_fit(strategy, x, y)
    loop_weights, loop_loss = custom_loop(strategy, x, y)
    weights.update(loop_weights)
    input_pipelines(strategy)
    libraries = mapped_mpi_libraries()
    runtime = os.path.dirname(tp._tensorplug.__file__)
    if in_job:
        check(os.path.join(runtime, "libtensorplug_mpi.so") in libraries,
              "libtensorplug_mpi.so was not loaded from the installed package %s: %s"
              % (runtime, libraries))
    else:
        check(libraries == [], "one process loaded MPI: %s" % libraries)
    np.savez("%s-worker%d.npz" % (out, rank), **weights)
    print("worker %d of %d: fit losses %s, loop loss %.6f" % (rank, workers,
          " ".join("%.6f" % v for v in losses), loop_loss))
    for problem in problems:
        print("worker %d: FAIL: %s" % (rank, problem))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
