# SPDX-License-Identifier: Apache-2.0
"""Where the ops run (the runtime's placement log, TP_LOG_DEVICE_PLACEMENT=1, in a fresh
interpreter), which C ops a Python call is made of, and that the memory the ops take comes
back when their results go."""
import numpy as np
import pytest

import tensorplug as tp

CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
APU = "/job:localhost/replica:0/task:0/device:APU:0"


def placements(snippet, code):
    _, err = snippet("import tensorplug as tp\n" + code, env={"TP_LOG_DEVICE_PLACEMENT": "1"})
    return [line[len("Executing op "):] for line in err.splitlines()
            if line.startswith("Executing op ")]


def test_the_documents_snippet_places_random_on_the_cpu_and_relu_on_the_apu(snippet):
    lines = placements(snippet, """
a = tp.random.normal(shape=[5], dtype=tp.float32)  # Runs on CPU.
b = tp.nn.relu(a)                                   # Runs on APU.
""")
    assert lines == ["RandomStandardNormal in device " + CPU, "Relu in device " + APU]


def test_ops_follow_the_device_scope(snippet):
    lines = placements(snippet, """
a = tp.constant([-1.0, 2.0])
with tp.device("/CPU:0"):
    tp.nn.relu(a)
    tp.nn.dropout(a, 0.5)
with tp.device("/APU:0"):
    tp.nn.relu(features=a)
""")
    assert lines == ["Relu in device " + CPU, "Dropout in device " + CPU, "Relu in device " + APU]


def test_each_call_runs_the_ops_it_is_made_of(snippet):
    lines = placements(snippet, """
x = tp.constant([[1.0, 2.0], [3.0, 4.0]])
print("--- matmul"); tp.linalg.matmul(x, x, transpose_b=True)
print("--- softmax last"); tp.nn.softmax(x)
print("--- softmax 0"); tp.nn.softmax(x, axis=0)
print("--- divide ints"); tp.divide([1, 2], 2)
print("--- uniform"); tp.random.uniform([3], minval=1.0, maxval=3.0)
print("--- zeros"); tp.zeros([2])
""")
    ops = [line.split(" in device ")[0] for line in lines]
    assert ops == ["MatMul", "Softmax", "Transpose", "Softmax", "Transpose", "Cast", "Cast",
                   "Div", "RandomUniform", "Mul", "Add", "Fill"]
    assert all(line.endswith(CPU) for line in lines if not line.startswith("Relu"))


def test_ops_give_back_their_memory():
    experimental = getattr(getattr(tp, "config", None), "experimental", None)
    if experimental is None or not hasattr(experimental, "get_memory_info"):
        pytest.skip("tp.config.experimental.get_memory_info is not on this branch")
    x = np.ones((64, 64), np.float32)
    before = experimental.get_memory_info("CPU:0")["current"]
    for _ in range(3):
        results = [tp.matmul(x, x), tp.nn.softmax(x, axis=0), tp.reduce_sum(x, [0, 1]),
                   tp.concat([x, x], 0), tp.pad(x, [[1, 1], [0, 0]]),
                   tp.nn.fused_batch_norm(x.reshape(4, 4, 4, 64), np.ones(64, np.float32),
                                          np.zeros(64, np.float32)),
                   tp.nn.sparse_softmax_cross_entropy_with_logits(np.zeros((2, 4), np.int32),
                                                                  x.reshape(2, 4, 512)),
                   tp.random.uniform([64], minval=tp.constant(1.0), maxval=3.0),
                   tp.nn.dropout(x, 0.5)]
        assert experimental.get_memory_info("CPU:0")["current"] > before
        del results
        with pytest.raises(tp.errors.InvalidArgumentError):
            tp.nn.conv2d(x.reshape(1, 64, 64, 1), np.ones((3, 3, 2, 1), np.float32), 1, "SAME",
                         data_format="NCHW")
    assert experimental.get_memory_info("CPU:0")["current"] == before
