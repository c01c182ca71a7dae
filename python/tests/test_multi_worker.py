# SPDX-License-Identifier: Apache-2.0
"""tp.distribute.MultiWorkerMirroredStrategy without mpirun: one worker that trains as
MirroredStrategy does, MPI never loaded, errors that say what was wrong, the MPI library in the
wheel. The jobs of several workers are tests/distribute/test_multi_worker_python.sh's."""
import glob
import os

import numpy as np
import pytest

import tensorplug as tp
from conftest import run_snippet

LOGICAL = "/job:localhost/replica:0/task:0/device:"
# No launcher's variables, no APU: the strategies' default device is the CPU.
BASE = {"TP_APU_DEVICES": "0", "TP_VISIBLE_DEVICES": "", "TP_PLUGIN_PATH": "",
        "TP_LOG_LEVEL": "", "TP_MPI_LIBRARY": ""}
LAUNCHER = ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE")
MPI_MAPPED = '''
def mpi_mapped():
    with open("/proc/self/maps") as maps:
        return sorted({l.split()[-1] for l in maps if "libmpi" in l or "tensorplug_mpi" in l})
'''


def run(code, **env):
    environment = dict(BASE)
    environment.update(env)
    out, _ = run_snippet(MPI_MAPPED + code, environment, unset=LAUNCHER)
    return out.splitlines()


def test_outside_mpirun_it_is_one_worker_and_trains_as_mirrored_strategy():
    lines = run('''
import numpy as np
import tensorplug as tp
strategy = tp.distribute.MultiWorkerMirroredStrategy()
resolver = strategy.cluster_resolver
print(isinstance(strategy, tp.distribute.Strategy), strategy.num_replicas_in_sync,
      strategy.extended.worker_devices, strategy.should_checkpoint)
print(resolver.task_type, resolver.task_id, resolver.num_workers)
print(strategy.run(lambda x: tp.multiply(x, 2.0), args=(tp.constant([1.0, 2.0]),)).numpy())
print(strategy.reduce('SUM', tp.constant([1.0, 2.0])).numpy())
for x, y in strategy.experimental_distribute_dataset([(np.arange(5.0), np.arange(5))]):
    print(x.values[0].numpy(), y.values[0].numpy())

x = np.linspace(-1.0, 1.0, 50, dtype=np.float32).reshape(25, 2)
y = x @ np.array([[2.0], [-1.0]], np.float32) + 0.5
weights = []
for make in (lambda: tp.distribute.MirroredStrategy(['/cpu:0']),
             tp.distribute.MultiWorkerMirroredStrategy):
    tp.keras.utils.set_random_seed(3)
    with make().scope():
        inputs = tp.keras.layers.Input(shape=(2,))
        hidden = tp.keras.layers.Dense(4, activation='tanh')(inputs)
        model = tp.keras.Model(inputs, tp.keras.layers.Dense(1)(hidden))
        model.compile(optimizer=tp.keras.optimizers.Adam(0.05), loss='mse')
    history = model.fit(x, y, batch_size=7, epochs=4, verbose=0)
    weights.append(model.get_weights())
print(all(np.array_equal(a, b) for a, b in zip(*weights)), len(weights[1]))
print(history.history['loss'][-1] < history.history['loss'][0])
print(mpi_mapped())
''')
    assert lines == ["True 1 ('%sCPU:0',) True" % LOGICAL, "None 0 1", "[2. 4.]", "[1. 2.]",
                     "[0. 1. 2. 3. 4.] [0 1 2 3 4]", "True 4", "True", "[]"]


def test_a_program_that_never_asks_for_several_workers_loads_no_mpi():
    lines = run('''
import numpy as np
import tensorplug as tp
cpu = tp.config.list_physical_devices('CPU')[0]
tp.config.set_logical_device_configuration(
    cpu, [tp.config.LogicalDeviceConfiguration(memory_limit=256)] * 2)
print(mpi_mapped())
a = tp.nn.relu(tp.matmul(tp.ones([4, 4]), tp.ones([4, 4])))
strategy = tp.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
total = strategy.run(lambda: tp.distribute.get_replica_context().all_reduce(
    'SUM', tp.constant([1.0])))
with strategy.scope():
    inputs = tp.keras.layers.Input(shape=(4,))
    model = tp.keras.Model(inputs, tp.keras.layers.Dense(1)(inputs))
    model.compile(optimizer='sgd', loss='mse')
model.fit(np.ones((8, 4), np.float32), np.ones((8, 1), np.float32), verbose=0)
print(a.numpy()[0, 0], [t.numpy()[0] for t in total.values])
print(mpi_mapped())
''')
    assert lines == ["[]", "4.0 [2.0, 2.0]", "[]"]


def test_datasets_from_a_function_give_each_replica_its_own_batch():
    lines = run('''
import numpy as np
import tensorplug as tp
cpu = tp.config.list_physical_devices('CPU')[0]
tp.config.set_logical_device_configuration(
    cpu, [tp.config.LogicalDeviceConfiguration(memory_limit=256)] * 2)
strategy = tp.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
def dataset_fn(context):
    print(context)
    size = context.get_per_replica_batch_size(4)
    items = np.arange(10.0)
    return [items[i:i + size] for i in range(0, 10, size)]
for batch in strategy.distribute_datasets_from_function(dataset_fn):
    print([v.numpy().tolist() for v in batch.values])
    print(strategy.reduce('SUM', batch, axis=0).numpy())
''')
    assert lines == [
        "tp.distribute.InputContext(num_input_pipelines=1, input_pipeline_id=0, "
        "num_replicas_in_sync=2)",
        "[[0.0, 1.0], [2.0, 3.0]]", "6.0", "[[4.0, 5.0], [6.0, 7.0]]", "22.0",
        # The last step runs short: the replica left over gets a batch of no rows.
        "[[8.0, 9.0], []]", "17.0"]


def test_a_missing_mpi_library_is_an_error_naming_it():
    # A launcher's variables make the process a worker, which loads the library named.
    lines = run('''
import tensorplug as tp
print(tp.config.list_logical_devices('CPU')[0].name)
try:
    tp.distribute.MultiWorkerMirroredStrategy()
except tp.errors.UnavailableError as error:
    print(type(error).__name__, str(error))
print(tp.distribute.MirroredStrategy(['/cpu:0']).num_replicas_in_sync)
''', OMPI_COMM_WORLD_RANK="0", OMPI_COMM_WORLD_SIZE="1",
        TP_MPI_LIBRARY="/nonexistent/libtensorplug_mpi.so")
    assert lines[0] == "/job:worker/replica:0/task:0/device:CPU:0"
    assert lines[1].startswith("UnavailableError ")
    assert "cannot load the MPI communication library '/nonexistent/libtensorplug_mpi.so'" \
        in lines[1]
    assert "Open MPI" in lines[1]
    assert lines[2] == "1"


def test_bad_options_are_refused_before_mpi_is_loaded():
    lines = run('''
import tensorplug as tp
for options in (dict(chunk_bytes=10), dict(collective_timeout=0.0)):
    try:
        tp._tensorplug.MirroredStrategy(['/cpu:0'], multi_worker=True, **options)
    except tp.errors.InvalidArgumentError as error:
        print(str(error))
try:
    tp._tensorplug.MirroredStrategy(['/cpu:9'], multi_worker=True)
except tp.errors.OpError as error:
    print('CPU:9' in str(error))
print(mpi_mapped())
''')
    assert "chunks of 10 bytes are too small" in lines[0]
    assert "collective timeout must be a finite number of seconds above 0" in lines[1]
    assert lines[2:] == ["True", "[]"]


def test_bad_arguments():
    options = tp.distribute.experimental.CommunicationOptions
    with pytest.raises(ValueError, match="NCCL.*go through MPI"):
        options(implementation=tp.distribute.experimental.CommunicationImplementation.NCCL)
    with pytest.raises(ValueError, match="bytes_per_pack must not be negative"):
        options(bytes_per_pack=-1)
    with pytest.raises(ValueError, match="timeout_seconds must be above 0"):
        options(timeout_seconds=0)
    with pytest.raises(ValueError, match="comes from mpirun"):
        tp.distribute.MultiWorkerMirroredStrategy(cluster_resolver=object())
    with pytest.raises(TypeError, match="communication_options must be"):
        tp.distribute.MultiWorkerMirroredStrategy(communication_options="RING")
    with pytest.raises(ValueError, match="chunk_bytes must not be negative"):
        tp._tensorplug.MirroredStrategy(["/cpu:0"], multi_worker=True, chunk_bytes=-1)
    with pytest.raises(ValueError, match=r"global batch size \(7\) is not divisible"):
        tp.distribute.InputContext(1, 0, 2).get_per_replica_batch_size(7)
    with pytest.raises(TypeError, match="Variable"):
        tp.distribute.MirroredStrategy(["/cpu:0"])._c.broadcast_variables([1.0])
    strategy = tp.distribute.MultiWorkerMirroredStrategy(
        communication_options=options(bytes_per_pack=1 << 20, timeout_seconds=5))
    assert strategy.communication_options.timeout_seconds == 5
    assert tp._tensorplug._shard_range(10, 4, 3) == (7, 10)
    assert tp._tensorplug._shard_range(10, 4, 4) == (0, 0)


def test_the_wheel_carries_the_mpi_library_beside_the_runtime():
    built = os.path.join(os.environ.get("TP_TEST_BUILD_DIR", ""), "lib", "libtensorplug_mpi.so")
    if not os.environ.get("TP_TEST_BUILD_DIR") or not os.path.exists(built):
        pytest.skip("this build made no libtensorplug_mpi.so (MPI was not found)")
    package = os.path.dirname(tp._tensorplug.__file__)
    assert glob.glob(os.path.join(package, "libtensorplug.so.*"))
    with open(os.path.join(package, "libtensorplug_mpi.so"), "rb") as installed, \
            open(built, "rb") as original:
        assert installed.read() == original.read()
