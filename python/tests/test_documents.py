# SPDX-License-Identifier: Apache-2.0
"""Every Python snippet of the reference documents, with `tf` replaced by `tp`, each in a fresh
interpreter, checked against what the documents show: device lists, placement lines (on
standard error), printed tensors, the unknown device's RuntimeError, soft placement.

- "GPU device plugins" (documents 000 and 001, the same snippet): the APU of the
  tensorplug_apu wheel, as the document installs it.
- "Using GPUs" (document 004): on this machine's CPU (with the APU wheel installed, which has
  no MatMul: the document's CPU lines), and on the OpenCL plug-in over PoCL as GPU:0 when
  ctest names it in TP_TEST_OPENCL_PLUGIN, with the APU hidden, so that the machine is the
  document's CPU and GPU. The multi-GPU snippets split one device into logical devices, as
  examples/multi_device.c and examples/mirrored_training.c do.

Where a snippet only states something (a REPL line, a configuration call), a few lines after
it print what the test checks; the snippet itself is the document's, word for word. Snippets
that use parts of the package still being written (tp.random, tp.function, tp.matmul,
tp.distribute, tp.keras) are skipped, naming what is missing, until those parts are there."""
import os
import re
import tempfile
import textwrap

import pytest

import tensorplug as tp
from conftest import run_snippet

LOGICAL = "/job:localhost/replica:0/task:0/device:"

# Nothing inherited from the caller's environment changes the devices or the logging.
BASE = {"TP_APU_DEVICES": "", "TP_APU_MEMORY": "", "TP_VISIBLE_DEVICES": "",
        "TP_FORCE_ALLOW_GROWTH": "", "TP_LOG_DEVICE_PLACEMENT": "0", "TP_PLUGIN_PATH": "",
        "TP_LOG_LEVEL": ""}
OPENCL_PLUGIN = os.environ.get("TP_TEST_OPENCL_PLUGIN", "")


def opencl_cache():
    build = os.environ.get("TP_TEST_BUILD_DIR")
    if build:
        return os.path.join(build, "tests", "opencl-cache")
    return os.path.join(tempfile.gettempdir(), "tensorplug-python-opencl-cache")


# The machines the snippets run on: the APU wheel's (CPU and APU), and CPU with GPU:0.
MACHINES = {
    "cpu": {},
    "gpu": {"TP_PLUGIN_PATH": OPENCL_PLUGIN, "TP_OPENCL_DEVICE_TYPES": "cpu",
            "TP_VISIBLE_DEVICES": "CPU,GPU", "TP_OPENCL_CACHE_DIR": opencl_cache()},
}
# The device "Using GPUs" shows each op on, per machine.
GPU0 = {"cpu": LOGICAL + "CPU:0", "gpu": LOGICAL + "GPU:0"}


def machine(name):
    """A pytest parameter for a machine, skipped where it does not exist."""
    marks = []
    if name == "gpu":
        marks.append(pytest.mark.skipif(
            not OPENCL_PLUGIN, reason="no OpenCL plug-in: TP_TEST_OPENCL_PLUGIN is empty "
                                      "(ctest sets it when the build has tensorplug_opencl)"))
    return pytest.param(name, marks=marks, id=name)


BOTH = [machine("cpu"), machine("gpu")]


def requires(*names):
    """Skips a test until the package offers every `names` ("random.normal", ...)."""
    missing = []
    for name in names:
        value = tp
        for part in name.split("."):
            value = getattr(value, part, None)
        if value is None:
            missing.append("tp." + name)
    return pytest.mark.skipif(bool(missing), reason="needs %s, which the package does not "
                              "offer yet (issue 20's other parts)" % ", ".join(missing))


def run(code, on="cpu", check=True, **env):
    """Runs `code` on a machine; (stdout, stderr, the placement lines of stderr)."""
    environment = dict(BASE, **MACHINES[on])
    environment.update(env)
    out, err = run_snippet(textwrap.dedent(code), env=environment, check=check)
    placements = [line for line in err.splitlines() if line.startswith("Executing op ")]
    return out, err, placements


MATMUL_PRINTED = ("tp.Tensor(\n"
                  "[[22. 28.]\n"
                  " [49. 64.]], shape=(2, 2), dtype=float32)\n")


# ---- "GPU device plugins" (000, 001) ---------------------------------------------------------

PLUGIN_SNIPPET = '''
import tensorplug as tp   # TensorFlow registers PluggableDevices here.
print(tp.config.list_physical_devices())  # APU device is visible to TensorFlow.

a = tp.random.normal(shape=[5], dtype=tp.float32)  # Runs on CPU.
b =  tp.nn.relu(a)         # Runs on APU.

with tp.device("/APU:0"):  # Users can also use 'with tf.device' syntax.
  c = tp.nn.relu(a)        # Runs on APU.

with tp.device("/CPU:0"):
  c = tp.nn.relu(a)        # Runs on CPU.

@tp.function  # Defining a tf.function
def run():
  d = tp.random.uniform(shape=[100], dtype=tp.float32)  # Runs on CPU.
  e = tp.nn.relu(d)        # Runs on APU.

run()  # PluggableDevices also work with tf.function and graph mode.
'''

# What the comments say, made visible: b's values and place, and run()'s relu on the APU.
PLUGIN_CHECKS = '''
import numpy as np
print(b.device, bool((b.numpy() == np.maximum(a.numpy(), 0)).all()))
print(c.device)

@tp.function
def run_returning():
  d = tp.random.uniform(shape=[100], dtype=tp.float32)
  return tp.nn.relu(d)

e = run_returning()
print(e.device, e.numpy().shape, bool((e.numpy() >= 0).all()))
'''


@requires("random.normal", "random.uniform", "function")
def test_gpu_device_plugins_snippet_runs_on_the_apu():
    out, err, placements = run(PLUGIN_SNIPPET + PLUGIN_CHECKS, TP_LOG_DEVICE_PLACEMENT="1")
    assert out.splitlines() == [
        "[PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU'), "
        "PhysicalDevice(name='/physical_device:APU:0', device_type='APU')]",
        LOGICAL + "APU:0 True",
        LOGICAL + "CPU:0",
        LOGICAL + "APU:0 (100,) True",
    ]
    # The eager ops, as the comments say: the APU has only ReLU.
    assert placements[:4] == [
        "Executing op RandomStandardNormal in device " + LOGICAL + "CPU:0",
        "Executing op Relu in device " + LOGICAL + "APU:0",
        "Executing op Relu in device " + LOGICAL + "APU:0",
        "Executing op Relu in device " + LOGICAL + "CPU:0",
    ]
    # The traced functions' placed graphs: "<node>: (<op>): <device>" per node.
    graph_lines = re.findall(r"^\S+: \((\w+)\): (\S+)$", err, re.MULTILINE)
    assert ("RandomUniform", LOGICAL + "CPU:0") in graph_lines
    assert ("Relu", LOGICAL + "APU:0") in graph_lines
    assert all(device == {"RandomUniform": LOGICAL + "CPU:0", "Relu": LOGICAL + "APU:0"}[op]
               for op, device in graph_lines)


def test_gpu_device_plugins_device_list_is_the_documents():
    out, _, _ = run("""
        import tensorplug as tp   # TensorFlow registers PluggableDevices here.
        print(tp.config.list_physical_devices())  # APU device is visible to TensorFlow.
    """)
    assert out == ("[PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU'), "
                   "PhysicalDevice(name='/physical_device:APU:0', device_type='APU')]\n")


# ---- "Using GPUs" (004) ----------------------------------------------------------------------

LOGGING_SNIPPET = '''
import tensorplug as tp
tp.debugging.set_log_device_placement(True)

# Creates some tensors
a = tp.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3], name='a')
b = tp.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2], name='b')
c = tp.matmul(a, b)
print(c)
'''


@requires("matmul")
@pytest.mark.parametrize("on", BOTH)
def test_logging_device_placement(on):
    out, _, placements = run(LOGGING_SNIPPET, on)
    assert placements == ["Executing op MatMul in device " + GPU0[on]]
    assert out == MATMUL_PRINTED


MANUAL_SNIPPET = '''
import tensorplug as tp
tp.debugging.set_log_device_placement(True)

# Place tensors on the CPU
with tp.device('/cpu:0'):
  a = tp.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3], name='a')
  b = tp.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2], name='b')
c = tp.matmul(a, b)
print(c)
print(a.device, b.device)
'''


@requires("matmul")
@pytest.mark.parametrize("on", BOTH)
def test_manual_device_placement(on):
    out, _, placements = run(MANUAL_SNIPPET, on)
    assert placements == ["Executing op MatMul in device " + GPU0[on]]
    assert out == MATMUL_PRINTED + "%sCPU:0 %sCPU:0\n" % (LOGICAL, LOGICAL)


# After the configuration statement: where it applied, and that the device still computes.
GROWTH_CHECKS = '''
print([tp.config.experimental.get_memory_growth(d) for d in tp.config.get_visible_devices()])
with tp.device('/%s:0'):
  y = tp.nn.relu(tp.constant([-1.0, 2.0]))
print(y.device, y.numpy().tolist())
'''


@pytest.mark.parametrize("on,device", [
    pytest.param("cpu", "APU", id="apu"),
    pytest.param("gpu", "GPU", id="gpu", marks=machine("gpu").marks)])
def test_allowing_memory_growth(on, device):
    out, _, _ = run(textwrap.dedent("""
        import tensorplug as tp
        tp.config.gpu.set_per_process_memory_growth()
    """) + GROWTH_CHECKS % device, on)
    assert out.splitlines() == ["[False, True]", "%s%s:0 [0.0, 2.0]" % (LOGICAL, device)]


def test_allowing_memory_growth_only_before_the_first_tensor():
    out, err, _ = run("""
        import tensorplug as tp
        tp.nn.relu(tp.constant([1.0]))
        tp.config.gpu.set_per_process_memory_growth()
    """, check=False)
    assert err.splitlines()[-1] == (
        "RuntimeError: Physical devices cannot be modified after being initialized")


FRACTION_SNIPPET = '''
import tensorplug as tp
tp.config.gpu.set_per_process_memory_fraction(0.4)
'''

# 0.4 of the 64 MiB APU is 25.6 MiB: a relu of 10 MiB takes 20 (its input's copy on the
# device is freed after it); one of 8 MiB more needs 16 beside the 10 left.
FRACTION_CHECKS = '''
import numpy as np
with tp.device('/APU:0'):
  first = tp.nn.relu(tp.constant(np.zeros(10 << 18, np.float32)))
  first.numpy()
  try:
    tp.nn.relu(tp.constant(np.zeros(8 << 18, np.float32))).numpy()
    print("8 MiB more: fits")
  except tp.errors.ResourceExhaustedError:
    print("8 MiB more: ResourceExhaustedError")
'''


def test_memory_fraction_bounds_the_apu():
    out, _, _ = run(FRACTION_SNIPPET + FRACTION_CHECKS, TP_APU_MEMORY="64M")
    assert out == "8 MiB more: ResourceExhaustedError\n"
    out, _, _ = run("import tensorplug as tp\n" + FRACTION_CHECKS, TP_APU_MEMORY="64M")
    assert out == "8 MiB more: fits\n"  # the same without the fraction


@pytest.mark.parametrize("on", [machine("gpu")])
def test_memory_fraction_on_the_gpu(on):
    out, _, _ = run(FRACTION_SNIPPET + GROWTH_CHECKS % "GPU", on)
    assert out.splitlines() == ["[False, False]", LOGICAL + "GPU:0 [0.0, 2.0]"]


SINGLE_GPU_SNIPPET = '''
import tensorplug as tp
tp.debugging.set_log_device_placement(True)

# Specify a device
with tp.device('/device:GPU:2'):
  a = tp.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3], name='a')
  b = tp.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2], name='b')
  c = tp.matmul(a, b)

print(c)
'''


@requires("matmul")
@pytest.mark.parametrize("on", BOTH)
def test_a_device_that_does_not_exist_is_the_documents_runtime_error(on):
    out, err, placements = run(SINGLE_GPU_SNIPPET, on, check=False)
    assert err.splitlines()[-1] == (
        "RuntimeError: Error copying tensor to device: "
        "/job:localhost/replica:0/task:0/device:GPU:2. "
        "/job:localhost/replica:0/task:0/device:GPU:2 unknown device.")
    assert placements == [] and out == ""


SOFT_SNIPPET = '''
import tensorplug as tp
tp.config.set_soft_device_placement(True)
tp.debugging.set_log_device_placement(True)

# Creates some tensors
with tp.device('/device:GPU:2'):
  a = tp.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3], name='a')
  b = tp.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2], name='b')
  c = tp.matmul(a, b)

print(c)
'''


@requires("matmul")
@pytest.mark.parametrize("on", BOTH)
def test_soft_device_placement_falls_back(on):
    out, _, placements = run(SOFT_SNIPPET, on)
    assert placements == ["Executing op MatMul in device " + GPU0[on]]
    assert out == MATMUL_PRINTED


# Two devices of the machine's kind, as "Using multiple GPUs" assumes: its one device split
# in two, as examples/multi_device.c and mirrored_training.c split theirs.
SPLIT = '''
import tensorplug as tp
device = tp.config.list_physical_devices('%s')[0]
tp.config.set_logical_device_configuration(
    device, [tp.config.LogicalDeviceConfiguration(memory_limit=256)] * 2)
'''
KIND = {"cpu": "CPU", "gpu": "GPU"}

STRATEGY_SNIPPET = '''
strategy = tp.distribute.MirroredStrategy(%s)

with strategy.scope():
  inputs = tp.keras.layers.Input(shape=(1,))
  predictions = tp.keras.layers.Dense(1)(inputs)
  model = tp.keras.models.Model(inputs=inputs, outputs=predictions)
  model.compile(loss='mse',
                optimizer=tp.train.GradientDescentOptimizer(learning_rate=0.2))
'''

# "This program will run a copy of your model on each GPU, splitting the input data between
# them": y = 2x + 1 learnt from 64 points, 16 to a batch, as examples/mirrored_training.c.
STRATEGY_CHECKS = '''
import numpy as np
print('Number of devices: {}'.format(strategy.num_replicas_in_sync))
x = np.linspace(-1.0, 1.0, 64, dtype=np.float32).reshape(64, 1)
model.fit(x, 2.0 * x + 1.0, batch_size=16, epochs=20)
p = np.asarray(model.predict(np.array([[0.0], [1.0]], np.float32)))
print(bool(abs(p[0, 0] - 1.0) < 0.05), bool(abs(p[1, 0] - 3.0) < 0.05))
'''


@requires("distribute.MirroredStrategy", "keras.layers.Input", "keras.layers.Dense",
          "keras.models.Model", "train.GradientDescentOptimizer")
@pytest.mark.parametrize("on", BOTH)
def test_mirrored_strategy(on):
    # MirroredStrategy() takes every GPU, as TensorFlow's; with none, TensorFlow takes the CPU
    # alone, so the CPU machine names its two logical CPUs.
    devices = "" if on == "gpu" else "['/cpu:0', '/cpu:1']"
    out, _, _ = run(SPLIT % KIND[on] + STRATEGY_SNIPPET % devices + STRATEGY_CHECKS, on)
    lines = out.splitlines()
    assert lines[0] == "Number of devices: 2"
    assert lines[-1] == "True True"


REPLICATION_SNIPPET = '''
tp.debugging.set_log_device_placement(True)

# Replicate your computation on multiple GPUs
c = []
for d in ['/device:%s:0', '/device:%s:1']:
  with tp.device(d):
    a = tp.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3])
    b = tp.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2])
    c.append(tp.matmul(a, b))
with tp.device('/cpu:0'):
  sum = tp.add_n(c)

print(sum)
'''


@requires("matmul", "add_n")
@pytest.mark.parametrize("on", BOTH)
def test_replication_without_a_strategy(on):
    kind = KIND[on]
    out, _, placements = run(SPLIT % kind + REPLICATION_SNIPPET % (kind, kind), on)
    assert placements == [
        "Executing op MatMul in device %s%s:0" % (LOGICAL, kind),
        "Executing op MatMul in device %s%s:1" % (LOGICAL, kind),
        "Executing op AddN in device " + LOGICAL + "CPU:0",
    ]
    assert out == ("tp.Tensor(\n"
                   "[[ 44.  56.]\n"
                   " [ 98. 128.]], shape=(2, 2), dtype=float32)\n")
