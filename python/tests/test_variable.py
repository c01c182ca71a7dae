# SPDX-License-Identifier: Apache-2.0
"""tp.Variable: attributes, reads, the assign family, operators through the value, repr."""
import sys

import numpy as np
import pytest

import tensorplug as tp

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


def test_attributes_and_repr_as_tensorflow():
    v = tp.Variable([1.0, 2.0])
    assert v.name == "Variable:0"
    assert v.shape == (2,) and v.shape.as_list() == [2]
    assert v.dtype == tp.float32
    assert v.trainable
    assert v.device == CPU0
    assert repr(v) == ("<tp.Variable 'Variable:0' shape=(2,) dtype=float32, "
                       "numpy=array([1., 2.], dtype=float32)>")
    assert str(v) == repr(v)
    w = tp.Variable(3, name="steps", trainable=False, dtype=tp.int64)
    assert w.name == "steps:0" and not w.trainable and w.dtype == tp.int64
    assert repr(w) == "<tp.Variable 'steps:0' shape=() dtype=int64, numpy=3>"


def test_positional_arguments_keep_tensorflows_order():
    v = tp.Variable(np.zeros((2, 3), np.float64), False, True, None, "m")
    assert v.name == "m:0" and not v.trainable and v.dtype == tp.float64 and v.shape == (2, 3)


def test_callable_initial_value_and_shape_check():
    v = tp.Variable(lambda: tp.constant([[1.0], [2.0]]), shape=(2, 1))
    assert v.numpy().tolist() == [[1.0], [2.0]]
    with pytest.raises(ValueError, match=r"shape= does not match .*\(2, 1\)"):
        tp.Variable([[1.0], [2.0]], shape=[1, 2])
    with pytest.raises(ValueError, match="initial_value must be specified"):
        tp.Variable()


def test_assign_family_returns_the_variable_and_updates_in_place():
    v = tp.Variable([1.0, 2.0])
    assert v.assign([5.0, 6.0]) is v
    assert v.numpy().tolist() == [5.0, 6.0]
    assert v.assign_add([1.0, 0.5]) is v
    assert v.numpy().tolist() == [6.0, 6.5]
    assert v.assign_sub(2.0) is v  # a delta broadcasts
    assert v.numpy().tolist() == [4.0, 4.5]
    assert v.assign([0.0, 0.0], read_value=False) is None
    assert v.read_value().numpy().tolist() == [0.0, 0.0]
    assert v.value().dtype == tp.float32


def test_assign_refuses_other_shapes_and_dtypes():
    v = tp.Variable([1.0, 2.0])
    with pytest.raises(tp.errors.InvalidArgumentError):
        v.assign([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="dtype int32 where one of dtype float32"):
        v.assign(tp.constant([1, 2]))
    assert v.numpy().tolist() == [1.0, 2.0]
    with pytest.raises(TypeError):
        v.assign()


def test_value_goes_wherever_a_tensor_does():
    v = tp.Variable([-1.0, 2.0])
    assert np.asarray(v).tolist() == [-1.0, 2.0]
    assert np.asarray(v, dtype=np.float64).dtype == np.float64
    assert tp.nn.relu(v).numpy().tolist() == [0.0, 2.0]
    assert tp._tensorplug.add(v, v).numpy().tolist() == [-2.0, 4.0]
    assert tp.constant(v).numpy().tolist() == [-1.0, 2.0]
    assert len(v) == 2
    with pytest.raises(TypeError, match="rank-0"):
        len(tp.Variable(1.0))


def test_variables_hash_by_identity():
    a, b = tp.Variable(1.0), tp.Variable(1.0)
    table = {a: "a", b: "b"}
    assert table[a] == "a" and table[b] == "b"
    assert a in [a] and a not in [b]


@pytest.mark.skipif(not hasattr(tp.Tensor, "__add__"), reason="Tensor operators not merged yet")
def test_operators_are_the_tensors_on_the_value():
    v = tp.Variable([1.0, 2.0])
    assert (v + 1).numpy().tolist() == [2.0, 3.0]
    assert (1 + v).numpy().tolist() == [2.0, 3.0]
    assert (v * v).numpy().tolist() == [1.0, 4.0]
    assert (v - tp.constant([1.0, 1.0])).numpy().tolist() == [0.0, 1.0]
    assert (-v).numpy().tolist() == [-1.0, -2.0]
    assert (v / 2).numpy().tolist() == [0.5, 1.0]
    assert (v ** 2).numpy().tolist() == [1.0, 4.0]
    assert (v > 1.5).numpy().tolist() == [False, True]
    m = tp.Variable([[1.0, 2.0], [3.0, 4.0]])
    assert (m @ m).numpy().tolist() == [[7.0, 10.0], [15.0, 22.0]]


@pytest.mark.skipif(not hasattr(tp.Tensor, "__getitem__"), reason="Tensor indexing not merged yet")
def test_indexing_is_the_tensors():
    v = tp.Variable([[1.0, 2.0], [3.0, 4.0]])
    assert v[1].numpy().tolist() == [3.0, 4.0]
    assert v[:, 0].numpy().tolist() == [1.0, 3.0]


def test_scalar_conversions():
    v = tp.Variable(2.5)
    assert float(v) == 2.5
    assert int(tp.Variable(7)) == 7
    assert bool(tp.Variable(0.0)) is False and bool(v) is True
    with pytest.raises(ValueError, match="ambiguous"):
        bool(tp.Variable([1.0, 2.0]))
    assert repr(v).endswith("numpy=2.5>")


def test_uninitialized_variable_is_an_error_not_a_crash():
    v = tp.Variable.__new__(tp.Variable)
    with pytest.raises(ValueError, match="not initialized"):
        v.numpy()
    with pytest.raises(ValueError, match="not initialized"):
        v.assign(1.0)


def test_no_reference_leaks():
    v = tp.Variable([1.0, 2.0])
    before = sys.getrefcount(v)
    for _ in range(100):
        v.assign_add([1.0, 1.0])
        v.read_value()
        np.asarray(v)
        repr(v)
    assert sys.getrefcount(v) == before
    assert v.numpy().tolist() == [101.0, 102.0]
