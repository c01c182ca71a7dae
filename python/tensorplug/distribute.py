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
"""
import numpy as np

from . import _tensorplug

__all__ = ["MirroredStrategy", "Strategy", "PerReplica", "ReduceOp", "get_replica_context",
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
        return ReplicaContext(current, replica)
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


def _split_rows(value, count):
    """value's rows cut in `count` shares, the first ones a row longer when they do not divide
    evenly (as the C training splits a batch)."""
    array = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
    if array.ndim == 0:
        raise ValueError("a batch to distribute needs a first (batch) dimension")
    rows = array.shape[0]
    shares = [rows // count + (1 if r < rows % count else 0) for r in range(count)]
    parts, first = [], 0
    for share in shares:
        parts.append(_tensorplug.constant(array[first:first + share]))
        first += share
    return parts


class _DistributedDataset:
    """Each element of a dataset of batches, split among the replicas: an element (x, y)
    becomes (PerReplica(x's shares), PerReplica(y's shares))."""

    def __init__(self, strategy, dataset):
        self._strategy = strategy
        self._dataset = dataset

    def __iter__(self):
        count = self._strategy.num_replicas_in_sync
        for element in self._dataset:
            if isinstance(element, (tuple, list)):
                yield tuple(PerReplica(_split_rows(part, count)) for part in element)
            else:
                yield PerReplica(_split_rows(element, count))


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
        return self._c.num_replicas_in_sync

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
        count = self.num_replicas_in_sync

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
        # A plain value stands for the same value on every replica, as in TensorFlow.
        values = (value.values if isinstance(value, PerReplica)
                  else (value,) * self.num_replicas_in_sync)
        if axis is not None:
            arrays = [v.numpy() if hasattr(v, "numpy") else np.asarray(v) for v in values]
            total = sum(a.sum(axis=axis) for a in arrays)
            if op == "MEAN":
                total = total / sum(a.shape[axis] for a in arrays)
            return _tensorplug.constant(np.asarray(total, dtype=arrays[0].dtype))
        return self._c.all_reduce(op, list(values))[0]

    def experimental_local_results(self, value):
        """The per-replica values of `value`, a tuple."""
        return value.values if isinstance(value, PerReplica) else (value,)

    def experimental_distribute_dataset(self, dataset, options=None):
        """A dataset of batches (an iterable of (x, y) or of single batches) whose every batch
        is split among the replicas."""
        del options
        return _DistributedDataset(self, dataset)


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
