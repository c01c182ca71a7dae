# SPDX-License-Identifier: Apache-2.0
"""tp.distribute: data parallelism over several devices, as tf.distribute names it.

    strategy = tp.distribute.MirroredStrategy()
    with strategy.scope():
        model = ...            # its variables get a copy on every replica's device
    model.fit(x, y)            # each batch split among the replicas, gradients all-reduced

MirroredStrategy() with no devices takes, as TensorFlow takes every GPU, every logical device of
the best accelerator type: GPU when there is one, else the first other type a plug-in
registered (APU, ...), and the CPU alone when there is no accelerator. The replicas run on
threads of the runtime (tp_mirrored_strategy_run); run() calls the Python function on each
replica's thread with that replica's device in scope.

MultiWorkerMirroredStrategy() does the same over every process of an MPI job (`mpirun -np N
python3 train.py`): each worker's devices are replicas, collectives cross the workers through
libtensorplug_mpi.so (loaded then, and only then), variables start as worker 0's, and each
worker takes its own rows of every global batch. Outside mpirun it is one worker, as
MirroredStrategy() is, and MPI is not loaded.
"""
import numpy as np

from . import _tensorplug

__all__ = ["MirroredStrategy", "MultiWorkerMirroredStrategy", "Strategy", "InputContext",
           "experimental", "PerReplica", "ReduceOp", "get_replica_context",
           "get_strategy", "has_strategy", "experimental_set_strategy"]


class ReduceOp:
    """How values of the replicas combine: their sum, or their mean."""
    SUM = "SUM"
    MEAN = "MEAN"


def _reduce_op_name(reduce_op):
    name = getattr(reduce_op, "value", reduce_op)
    if isinstance(name, str) and name.upper() in ("SUM", "MEAN"):
        return name.upper()
    raise ValueError("reduce_op must be tp.distribute.ReduceOp.SUM or .MEAN, not %r" % (reduce_op,))


class PerReplica:
    """One value per replica, as strategy.run returns them."""

    def __init__(self, values):
        self.values = tuple(values)

    def __repr__(self):
        return "PerReplica:{\n%s\n}" % "\n".join("  %d: %r" % (i, v)
                                                for i, v in enumerate(self.values))


_default_stack = []  # the scopes entered, shared by every thread as TensorFlow's default
# The strategy whose run() is calling replicas. Not thread-local: the replicas run on the
# runtime's threads, not the caller's; each thread's replica index is _tensorplug._replica_id().
_running = [None]


def _strategy_stack():
    return _default_stack


def has_strategy():
    """True inside a strategy's scope()."""
    return bool(_strategy_stack())


def get_strategy():
    """The strategy whose scope() this code is in, or None outside any."""
    stack = _strategy_stack()
    return stack[-1] if stack else None


def experimental_set_strategy(strategy):
    """Makes `strategy` the current one until it is set to None."""
    stack = _strategy_stack()
    stack.clear()
    if strategy is not None:
        stack.append(strategy)


class ReplicaContext:
    """What a function run by strategy.run sees of its replica."""

    def __init__(self, strategy, replica_id):
        self.strategy = strategy
        self.replica_id_in_sync_group = replica_id

    @property
    def num_replicas_in_sync(self):
        return self.strategy.num_replicas_in_sync if self.strategy is not None else 1

    def all_reduce(self, reduce_op, value):
        """The SUM or MEAN of `value` (a tensor, or a list/tuple of them) over the replicas;
        every replica must call it."""
        op = _reduce_op_name(reduce_op)
        if self.strategy is None:
            return value
        single = not isinstance(value, (list, tuple))
        values = [value] if single else list(value)
        reduced = _tensorplug._replica_all_reduce(op, values)
        if single:
            return reduced[0]
        return type(value)(reduced)


def get_replica_context():
    """The replica context of the replica this thread runs inside strategy.run(); outside a run
    and outside any scope, the default context (replica 0 of 1), as TensorFlow; inside a scope
    but outside run(), None (the cross-replica context)."""
    replica = _tensorplug._replica_id()
    current = _running[0]
    if replica is not None and current is not None:
        # Numbered among every worker's replicas, worker by worker, as TensorFlow does.
        local = current._c.num_replicas_in_sync
        return ReplicaContext(current, current._c.worker_index * local + replica)
    if has_strategy():
        return None
    return ReplicaContext(None, 0)


def _default_devices():
    from . import config  # imported late: tensorplug imports this module before config
    devices = [(d.name, d.device_type) for d in config.list_logical_devices()]
    types = []
    for _, device_type in devices:
        if device_type != "CPU" and device_type not in types:
            types.append(device_type)
    if not types:
        return ["/CPU:0"]
    best = "GPU" if "GPU" in types else types[0]
    return [name for name, device_type in devices if device_type == best]


class _Scope:
    def __init__(self, strategy):
        self._strategy = strategy

    def __enter__(self):
        _strategy_stack().append(self._strategy)
        return self._strategy

    def __exit__(self, *exc):
        stack = _strategy_stack()
        if stack and stack[-1] is self._strategy:
            stack.pop()
        return False


def _split_rows(value, ranges):
    """value's rows cut at `ranges`, one (begin, end) per replica."""
    array = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
    if array.ndim == 0:
        raise ValueError("a batch to distribute needs a first (batch) dimension")
    return [_tensorplug.constant(array[begin:end]) for begin, end in ranges]


class _DistributedDataset:
    """Each element of a dataset of batches, split among the replicas: an element (x, y)
    becomes (PerReplica(x's shares), PerReplica(y's shares)); under several workers, the
    shares of this worker's replicas only."""

    def __init__(self, strategy, dataset):
        self._strategy = strategy
        self._dataset = dataset

    def __iter__(self):
        for element in self._dataset:
            parts = element if isinstance(element, (tuple, list)) else (element,)
            shape = np.shape(parts[0].numpy() if hasattr(parts[0], "numpy") else parts[0]) \
                if parts else ()
            if not shape:
                raise ValueError("a batch to distribute needs a first (batch) dimension")
            ranges = self._strategy._replica_rows(shape[0])
            split = tuple(PerReplica(_split_rows(part, ranges)) for part in parts)
            yield split if isinstance(element, (tuple, list)) else split[0]


class InputContext:
    """What distribute_datasets_from_function tells the function that makes a worker's input,
    as tf.distribute.InputContext: how many input pipelines (workers) there are, which one
    this is, and the replicas of them all."""

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        self.num_input_pipelines = num_input_pipelines
        self.input_pipeline_id = input_pipeline_id
        self.num_replicas_in_sync = num_replicas_in_sync

    def get_per_replica_batch_size(self, global_batch_size):
        """The rows each replica takes of a global batch, which must divide evenly."""
        if global_batch_size % self.num_replicas_in_sync:
            raise ValueError("the global batch size (%d) is not divisible by "
                             "num_replicas_in_sync (%d)"
                             % (global_batch_size, self.num_replicas_in_sync))
        return global_batch_size // self.num_replicas_in_sync

    def __repr__(self):
        return ("tp.distribute.InputContext(num_input_pipelines=%d, input_pipeline_id=%d, "
                "num_replicas_in_sync=%d)" % (self.num_input_pipelines, self.input_pipeline_id,
                                              self.num_replicas_in_sync))


class _DatasetPerReplica:
    """A dataset of per-replica batches (distribute_datasets_from_function): each step gives
    every local replica the next element in turn. A last step that runs short gives the
    replicas left over an empty batch (no rows) shaped as the last one, as TensorFlow does."""

    def __init__(self, dataset, count):
        self._dataset = dataset
        self._count = count

    def __iter__(self):
        taken = []
        for element in self._dataset:
            taken.append(element)
            if len(taken) == self._count:
                yield _per_replica_of(taken)
                taken = []
        if taken:
            last = taken[-1]
            while len(taken) < self._count:
                taken.append(_empty_like(last))
            yield _per_replica_of(taken)


def _empty_like(element):
    if isinstance(element, (tuple, list)):
        return type(element)(_empty_like(part) for part in element)
    array = element.numpy() if hasattr(element, "numpy") else np.asarray(element)
    return _tensorplug.constant(array[:0])


def _as_tensor(value):
    return value if isinstance(value, _tensorplug.Tensor) else _tensorplug.constant(value)


def _per_replica_of(elements):
    first = elements[0]
    if isinstance(first, (tuple, list)):
        return tuple(PerReplica([_as_tensor(e[i]) for e in elements])
                     for i in range(len(first)))
    return PerReplica([_as_tensor(e) for e in elements])


class Strategy:
    """The base of every distribution strategy, as tf.distribute.Strategy is: a program may test
    isinstance(s, tp.distribute.Strategy). It is made through a subclass (MirroredStrategy)."""

    def __init__(self, *args, **kwargs):
        del args, kwargs
        raise TypeError("tp.distribute.Strategy is a base class: make a "
                        "tp.distribute.MirroredStrategy")


class MirroredStrategy(Strategy):
    """Synchronous training on several devices of one machine: a copy of every variable made in
    scope() on each device, each batch split among them, gradients all-reduced."""

    def __init__(self, devices=None, cross_device_ops=None):
        del cross_device_ops  # the runtime's all-reduce is the one way to combine
        if devices is None:
            devices = _default_devices()
        elif isinstance(devices, str):
            raise TypeError("devices must be a list of device names, not a string")
        self._c = _tensorplug.MirroredStrategy(list(devices))

    def __repr__(self):
        return "<tp.distribute.MirroredStrategy devices=%s>" % (self._c.devices,)

    @property
    def num_replicas_in_sync(self):
        """The replicas of every worker (this process's devices, with one worker)."""
        return self._c.num_global_replicas

    @property
    def extended(self):
        """TensorFlow's strategy.extended: here the strategy itself (worker_devices)."""
        return self

    @property
    def worker_devices(self):
        """The replicas' devices, canonical names."""
        return self._c.devices

    def scope(self):
        """A context manager: variables (Keras layers and models) made inside are mirrored."""
        return _Scope(self)

    def _replica_args(self, args, kwargs):
        count = self._c.num_replicas_in_sync  # each worker gives its own replicas' values

        def pick(value, replica):
            if isinstance(value, PerReplica):
                if len(value.values) != count:
                    raise ValueError("a PerReplica of %d values given to a strategy of %d "
                                     "replicas" % (len(value.values), count))
                return value.values[replica]
            if isinstance(value, tuple):
                return tuple(pick(v, replica) for v in value)
            if isinstance(value, list):
                return [pick(v, replica) for v in value]
            if isinstance(value, dict):
                return {k: pick(v, replica) for k, v in value.items()}
            return value

        return [(pick(args, r), pick(kwargs, r)) for r in range(count)]

    def run(self, fn, args=(), kwargs=None):
        """fn(*args, **kwargs) once per replica, on the replica's thread and device; PerReplica
        values among the arguments give each replica its own. The results, as fn returns them
        with PerReplica in place of each tensor (one replica: the values themselves)."""
        if not callable(fn):
            raise TypeError("run() needs a callable, not %s" % type(fn).__name__)
        per_replica = self._replica_args(tuple(args), dict(kwargs or {}))

        def call(replica_args, replica_kwargs):
            return fn(*replica_args, **replica_kwargs)

        previous = _running[0]
        _running[0] = self
        try:
            results = self._c.run(call, [tuple(item) for item in per_replica])
        finally:
            _running[0] = previous
        return _regroup(results)

    def reduce(self, reduce_op, value, axis=None):
        """The SUM or MEAN over replicas of a PerReplica value (also over `axis` of each
        replica's value when given), as one tensor."""
        op = _reduce_op_name(reduce_op)
        local = self._c.num_replicas_in_sync
        # A plain value stands for the same value on every replica, as in TensorFlow.
        values = value.values if isinstance(value, PerReplica) else (value,) * local
        if axis is None:
            return self._c.all_reduce(op, list(values))[0]
        arrays = [v.numpy() if hasattr(v, "numpy") else np.asarray(v) for v in values]
        total = sum(a.sum(axis=axis) for a in arrays)
        count = sum(a.shape[axis] for a in arrays)
        if self._c.num_workers > 1:
            # Every worker's sums and row counts, added up by one all-reduce (in float64, which
            # crosses workers and keeps the counts exact).
            mine = np.append(np.asarray(total, np.float64).ravel(), count)
            offered = [mine] + [np.zeros_like(mine)] * (local - 1)
            summed = self._c.all_reduce("SUM", [_tensorplug.constant(v) for v in offered])
            summed = summed[0].numpy()
            total, count = summed[:-1].reshape(np.shape(total)), summed[-1]
        if op == "MEAN":
            total = total / count
        return _tensorplug.constant(np.asarray(total, dtype=arrays[0].dtype))

    def experimental_local_results(self, value):
        """The per-replica values of `value`, a tuple."""
        return value.values if isinstance(value, PerReplica) else (value,)

    def _replica_rows(self, rows):
        """The rows (begin, end) of a global batch that each local replica takes: under
        several workers its share among every worker's replicas (tp_shard_range), else the
        first rows % replicas shares a row longer."""
        local = self._c.num_replicas_in_sync
        if self._c.num_workers > 1:
            first = self._c.worker_index * local
            return [_tensorplug._shard_range(rows, self._c.num_global_replicas, first + r)
                    for r in range(local)]
        shares = [rows // local + (1 if r < rows % local else 0) for r in range(local)]
        starts = np.cumsum([0] + shares)
        return [(int(starts[r]), int(starts[r + 1])) for r in range(local)]

    def experimental_distribute_dataset(self, dataset, options=None):
        """A dataset of global batches (an iterable of (x, y) or of single batches) whose every
        batch is split among the replicas; under several workers each worker takes its own
        replicas' rows, so every worker iterates over the same global batches."""
        del options
        return _DistributedDataset(self, dataset)

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """dataset_fn(InputContext) makes this worker's input, a dataset of per-replica
        batches (an iterable); each step gives every local replica the next one in turn."""
        del options
        context = InputContext(self._c.num_workers, self._c.worker_index,
                               self.num_replicas_in_sync)
        return _DatasetPerReplica(dataset_fn(context), self._c.num_replicas_in_sync)

    experimental_distribute_datasets_from_function = distribute_datasets_from_function

    def _from_worker_0(self, array):
        """`array` as worker 0 has it (itself, with one worker)."""
        return array

    def _initial_values(self, variables):
        """Makes variables just made in scope() (every local copy, in order) start as worker
        0's; nothing to do with one worker."""
        del variables


class CommunicationImplementation:
    """How collectives travel, as tf.distribute.experimental.CommunicationImplementation:
    here always MPI (AUTO and RING name it too)."""
    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


class CommunicationOptions:
    """Options of the collectives across workers, as
    tf.distribute.experimental.CommunicationOptions: bytes_per_pack, the chunks a large
    all-reduce is cut in (0: 4 MiB); timeout_seconds, how long a collective waits for the
    other workers before DeadlineExceededError (None: 300)."""

    def __init__(self, bytes_per_pack=0, timeout_seconds=None,
                 implementation=CommunicationImplementation.AUTO):
        if implementation not in (CommunicationImplementation.AUTO,
                                  CommunicationImplementation.RING):
            raise ValueError("implementation %r is not available: collectives across workers "
                             "go through MPI (AUTO or RING)" % (implementation,))
        if int(bytes_per_pack) < 0:
            raise ValueError("bytes_per_pack must not be negative, not %r" % (bytes_per_pack,))
        if timeout_seconds is not None and not float(timeout_seconds) > 0:
            raise ValueError("timeout_seconds must be above 0, not %r" % (timeout_seconds,))
        self.bytes_per_pack = int(bytes_per_pack)
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation


class experimental:  # noqa: N801 - a namespace, as tf.distribute.experimental
    CommunicationImplementation = CommunicationImplementation
    CommunicationOptions = CommunicationOptions


class ClusterResolver:
    """Where this process stands in the job, as strategy.cluster_resolver in TensorFlow:
    task_type 'worker' and task_id K for worker K of an mpirun job; outside one, task_type
    None and task_id 0 (TensorFlow's local mode)."""

    def __init__(self, task_type, task_id, num_workers):
        self.task_type = task_type
        self.task_id = task_id
        self.num_workers = num_workers
        self.rpc_layer = None
        self.environment = "mpi" if task_type is not None else ""

    def __repr__(self):
        return "<tp.distribute.ClusterResolver task_type=%r task_id=%d num_workers=%d>" % (
            self.task_type, self.task_id, self.num_workers)


def _in_mpi_job():
    """True in a process started by mpirun: the runtime then names its devices
    /job:worker/replica:0/task:K/..."""
    from . import config
    return any(d.name.startswith("/job:worker/") for d in config.list_logical_devices())


class MultiWorkerMirroredStrategy(MirroredStrategy):
    """Synchronous training on every device of every worker of an MPI job (`mpirun -np N`), as
    tf.distribute.MultiWorkerMirroredStrategy: each worker's devices (those MirroredStrategy()
    takes) are replicas, gradients are all-reduced across all of them, variables made in
    scope() start as worker 0's, and each worker takes its own rows of every global batch.
    Making it joins the job: every worker must make it, with as many local devices. Outside
    mpirun it is a job of one worker, MirroredStrategy() under another name, and MPI is not
    loaded."""

    def __init__(self, cluster_resolver=None, communication_options=None):
        if cluster_resolver is not None:
            raise ValueError("the job comes from mpirun: MultiWorkerMirroredStrategy takes no "
                             "cluster_resolver (start the workers with mpirun -np N)")
        options = communication_options or CommunicationOptions()
        if not isinstance(options, CommunicationOptions):
            raise TypeError("communication_options must be a "
                            "tp.distribute.experimental.CommunicationOptions, not %s"
                            % type(options).__name__)
        devices = _default_devices()
        if _in_mpi_job():
            timeout = 300.0 if options.timeout_seconds is None else float(options.timeout_seconds)
            self._c = _tensorplug.MirroredStrategy(devices, multi_worker=True,
                                                   collective_timeout=timeout,
                                                   chunk_bytes=options.bytes_per_pack)
            self.cluster_resolver = ClusterResolver("worker", self._c.worker_index,
                                                    self._c.num_workers)
        else:
            self._c = _tensorplug.MirroredStrategy(devices)
            self.cluster_resolver = ClusterResolver(None, 0, 1)
        self.communication_options = options

    def __repr__(self):
        return "<tp.distribute.MultiWorkerMirroredStrategy worker %d of %d, devices=%s>" % (
            self._c.worker_index, self._c.num_workers, self._c.devices)

    @property
    def should_checkpoint(self):
        """True on worker 0, the one that writes checkpoints (strategy.extended's)."""
        return self._c.worker_index == 0

    should_save_summary = should_checkpoint

    def _from_worker_0(self, array):
        if self._c.num_workers == 1:
            return array
        holder = _tensorplug.Variable(np.ascontiguousarray(array))
        self._c.broadcast_variables([holder])
        return holder.numpy()

    def _initial_values(self, variables):
        self._c.broadcast_variables(list(variables))


def _regroup(results):
    """Replica results [r0, r1, ...] to one structure with PerReplica leaves."""
    if len(results) == 1:
        return results[0]
    first = results[0]
    if first is None:
        return None
    if isinstance(first, (tuple, list)):
        return type(first)(_regroup([r[i] for r in results]) for i in range(len(first)))
    if isinstance(first, dict):
        return {k: _regroup([r[k] for r in results]) for k in first}
    return PerReplica(results)
