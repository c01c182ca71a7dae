# SPDX-License-Identifier: Apache-2.0
"""tp.distribute.MirroredStrategy: replicas, run on their threads and devices, reduce, the
replica context's all-reduce, distributed datasets, the default devices, errors."""
import pytest

import tensorplug as tp
from conftest import run_snippet

LOGICAL = "/job:localhost/replica:0/task:0/device:"
BASE = {"TP_APU_DEVICES": "", "TP_APU_MEMORY": "", "TP_VISIBLE_DEVICES": "",
        "TP_FORCE_ALLOW_GROWTH": "", "TP_LOG_DEVICE_PLACEMENT": "0", "TP_PLUGIN_PATH": "",
        "TP_LOG_LEVEL": ""}
TWO_CPUS = '''
import numpy as np
import tensorplug as tp
cpu = tp.config.list_physical_devices('CPU')[0]
tp.config.set_logical_device_configuration(
    cpu, [tp.config.LogicalDeviceConfiguration(memory_limit=256)] * 2)
strategy = tp.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
'''


def run(code, **env):
    environment = dict(BASE)
    environment.update(env)
    out, _ = run_snippet(code, environment)
    return out.splitlines()


def test_one_replica_on_the_cpu():
    strategy = tp.distribute.MirroredStrategy(["/cpu:0"])
    assert strategy.num_replicas_in_sync == 1
    assert strategy.worker_devices == (LOGICAL + "CPU:0",)
    # One replica: run gives the value itself, as TensorFlow's
    result = strategy.run(lambda x: tp.multiply(x, 2.0), args=(tp.constant([1.0, 2.0]),))
    assert result.numpy().tolist() == [2.0, 4.0]
    assert result.device == LOGICAL + "CPU:0"


def test_every_strategy_is_a_tp_distribute_strategy():
    assert isinstance(tp.distribute.MirroredStrategy(["/cpu:0"]), tp.distribute.Strategy)
    with pytest.raises(TypeError, match="base class: make a tp.distribute.MirroredStrategy"):
        tp.distribute.Strategy()


def test_scope_is_a_context_manager():
    strategy = tp.distribute.MirroredStrategy(["/cpu:0"])
    assert not tp.distribute.has_strategy()
    with strategy.scope() as entered:
        assert entered is strategy
        assert tp.distribute.get_strategy() is strategy
        assert tp.distribute.get_replica_context() is None  # cross-replica context
    assert tp.distribute.get_strategy() is None
    default = tp.distribute.get_replica_context()
    assert default.replica_id_in_sync_group == 0 and default.num_replicas_in_sync == 1


def test_run_on_two_replicas_with_their_devices_and_ids():
    lines = run(TWO_CPUS + '''
def step(x):
    ctx = tp.distribute.get_replica_context()
    y = tp.multiply(x, float(ctx.replica_id_in_sync_group + 1))
    return y, ctx.replica_id_in_sync_group
data = strategy.experimental_distribute_dataset(
    [(np.arange(5, dtype=np.float32), np.arange(5, dtype=np.int32))])
for x, labels in data:
    print([v.numpy().tolist() for v in x.values])
    y, ids = strategy.run(step, args=(x,))
    print([v.numpy().tolist() for v in y.values], ids.values)
    print([v.device.rsplit(':', 2)[-2:] for v in y.values])
    print(strategy.reduce(tp.distribute.ReduceOp.SUM, y, axis=0).numpy().tolist())
    print(strategy.reduce('MEAN', y, axis=0).numpy().tolist())
''')
    assert lines[0] == "[[0.0, 1.0, 2.0], [3.0, 4.0]]"  # the first share a row longer
    assert lines[1] == "[[0.0, 1.0, 2.0], [6.0, 8.0]] (0, 1)"
    assert lines[2] == "[['CPU', '0'], ['CPU', '1']]"
    assert lines[3] == "17.0"
    assert float(lines[4]) == pytest.approx(17.0 / 5)


def test_reduce_and_all_reduce_across_replicas():
    lines = run(TWO_CPUS + '''
def step():
    ctx = tp.distribute.get_replica_context()
    mine = tp.multiply(tp.constant([1.0, 2.0]), float(ctx.replica_id_in_sync_group + 1))
    total, = ctx.all_reduce('SUM', [mine])
    return mine, total
mine, total = strategy.run(step)
print([v.numpy().tolist() for v in total.values])
print([v.device.endswith(d) for v, d in zip(total.values, ('CPU:0', 'CPU:1'))])
print(strategy.reduce('SUM', mine).numpy().tolist())
print(strategy.reduce(tp.distribute.ReduceOp.MEAN, mine).numpy().tolist())
print(strategy.experimental_local_results(mine)[1].numpy().tolist())
''')
    assert lines == ["[[3.0, 6.0], [3.0, 6.0]]", "[True, True]", "[3.0, 6.0]", "[1.5, 3.0]",
                     "[2.0, 4.0]"]


def test_an_exception_in_a_replica_is_raised_by_run():
    lines = run(TWO_CPUS + '''
def step():
    if tp.distribute.get_replica_context().replica_id_in_sync_group == 1:
        raise KeyError('replica one fails')
    return tp.constant(1.0)
try:
    strategy.run(step)
except KeyError as error:
    print('KeyError', error)
# replica 0's all-reduce is aborted since replica 1 left: the cause is what run raises
def collective():
    ctx = tp.distribute.get_replica_context()
    if ctx.replica_id_in_sync_group == 1:
        raise KeyError('replica one leaves')
    return ctx.all_reduce('SUM', tp.constant(1.0))
try:
    strategy.run(collective)
except KeyError as error:
    print('KeyError', error)
def mismatched():
    ctx = tp.distribute.get_replica_context()
    return ctx.all_reduce('SUM', tp.constant([1.0] * (ctx.replica_id_in_sync_group + 1)))
try:
    strategy.run(mismatched)
except tp.errors.InvalidArgumentError as error:
    print('InvalidArgumentError', 'on replica 1' in str(error))
# the strategy still works afterwards
print(strategy.reduce('SUM', strategy.run(lambda: tp.constant(2.0))).numpy())
''')
    assert lines == ["KeyError 'replica one fails'", "KeyError 'replica one leaves'",
                     "InvalidArgumentError True", "4.0"]


def test_default_devices_are_every_accelerator_of_the_best_type():
    lines = run('''
import tensorplug as tp
print(tp.distribute.MirroredStrategy().worker_devices)
''', TP_APU_DEVICES="2")
    assert lines == ["('%sAPU:0', '%sAPU:1')" % (LOGICAL, LOGICAL)]
    lines = run('''
import tensorplug as tp
print(tp.distribute.MirroredStrategy().worker_devices)
''', TP_VISIBLE_DEVICES="CPU:0")
    assert lines == ["('%sCPU:0',)" % LOGICAL]


def test_bad_arguments():
    with pytest.raises(TypeError, match="not a string"):
        tp.distribute.MirroredStrategy("/cpu:0")
    with pytest.raises(ValueError, match="at least one device"):
        tp.distribute.MirroredStrategy([])
    with pytest.raises(TypeError, match="device 0 must be a str"):
        tp.distribute.MirroredStrategy([0])
    with pytest.raises(tp.errors.OpError, match="CPU:7"):
        tp.distribute.MirroredStrategy(["/cpu:7"])
    strategy = tp.distribute.MirroredStrategy(["/cpu:0"])
    with pytest.raises(ValueError, match="SUM or .MEAN"):
        strategy.reduce("MAX", tp.constant(1.0))
    with pytest.raises(TypeError, match="callable"):
        strategy.run(3)
    with pytest.raises(RuntimeError, match="inside strategy.run"):
        tp._tensorplug._replica_all_reduce("SUM", [tp.constant(1.0)])
