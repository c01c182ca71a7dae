# SPDX-License-Identifier: Apache-2.0
"""tp.GradientTape: gradients against hand-derived values, persistent and one-shot tapes,
variables, structures, unconnected sources, errors."""
import collections
import sys

import numpy as np
import pytest

import tensorplug as tp

add, relu = tp._tensorplug.add, tp.nn.relu
needs_multiply = pytest.mark.skipif(not hasattr(tp, "multiply"), reason="tp.multiply not merged")
needs_matmul = pytest.mark.skipif(not hasattr(tp, "matmul"), reason="tp.matmul not merged")


def values(t):
    return None if t is None else t.numpy().tolist()


def test_relu_gradient_of_a_watched_tensor():
    x = tp.constant([-1.0, 2.0, -3.0, 4.0])
    with tp.GradientTape() as tape:
        tape.watch(x)
        y = relu(x)
    # A non-scalar target: the gradient of the sum of its elements, as TensorFlow.
    assert values(tape.gradient(y, x)) == [0.0, 1.0, 0.0, 1.0]


def test_chain_of_add_and_relu():
    x = tp.constant([1.0, -2.0])
    with tp.GradientTape() as tape:
        tape.watch(x)
        y = relu(add(add(x, x), x))  # relu(3x)
    assert values(tape.gradient(y, x)) == [3.0, 0.0]


def test_output_gradients_weight_the_targets():
    x = tp.constant([1.0, 2.0])
    with tp.GradientTape() as tape:
        tape.watch(x)
        y = add(x, x)
    grad = tape.gradient(y, x, output_gradients=tp.constant([10.0, -1.0]))
    assert values(grad) == [20.0, -2.0]


@needs_multiply
def test_square_by_multiply():
    x = tp.constant(3.0)
    with tp.GradientTape() as tape:
        tape.watch(x)
        y = tp.multiply(x, x)
    assert values(tape.gradient(y, x)) == 6.0


@needs_matmul
def test_matmul_gradients():
    a = tp.constant([[1.0, 2.0], [3.0, 4.0]])
    b = tp.constant([[5.0], [6.0]])
    with tp.GradientTape() as tape:
        tape.watch([a, b])
        y = tp.matmul(a, b)
    da, db = tape.gradient(y, [a, b])
    # d sum(a @ b) / da[i, k] = b[k]; / db[k] = sum_i a[i, k]
    assert values(da) == [[5.0, 6.0], [5.0, 6.0]]
    assert values(db) == [[4.0], [6.0]]


def test_persistent_tape_gives_gradients_many_times():
    x = tp.constant([2.0, -1.0])
    with tp.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = relu(x)
        z = add(y, x)
    assert values(tape.gradient(y, x)) == [1.0, 0.0]
    assert values(tape.gradient(z, x)) == [2.0, 1.0]
    assert values(tape.gradient(z, y)) == [1.0, 1.0]


def test_one_shot_tape_refuses_a_second_gradient():
    x = tp.constant(1.0)
    with tp.GradientTape() as tape:
        tape.watch(x)
        y = add(x, x)
    assert values(tape.gradient(y, x)) == 2.0
    with pytest.raises(RuntimeError, match="A non-persistent GradientTape can only be used to "
                                           "compute one set of gradients"):
        tape.gradient(y, x)


def test_unconnected_sources_give_none_or_zeros():
    x, u = tp.constant([1.0, 2.0]), tp.constant([5.0, 6.0])
    v = tp.Variable([1.0, 1.0])
    with tp.GradientTape(persistent=True) as tape:
        tape.watch([x, u])
        y = relu(x)
    assert tape.gradient(y, u) is None
    assert tape.gradient(y, v) is None  # never read under the tape
    zeros = tape.gradient(y, [u, v], unconnected_gradients="zero")
    assert values(zeros[0]) == [0.0, 0.0] and values(zeros[1]) == [0.0, 0.0]
    with pytest.raises(ValueError, match="unconnected_gradients"):
        tape.gradient(y, u, unconnected_gradients="sometimes")


def test_a_tensor_never_watched_gets_none():
    x, z = tp.constant(1.0), tp.constant(2.0)
    with tp.GradientTape() as tape:
        tape.watch(z)
        y = add(relu(x), z)
    grads = tape.gradient(y, [x, z, x])
    assert grads[0] is None and grads[2] is None and values(grads[1]) == 1.0


def test_variables_read_under_the_tape_are_watched():
    w = tp.Variable([1.0, -2.0])
    b = tp.Variable([0.5, 0.5])
    with tp.GradientTape() as tape:
        y = relu(add(w, b))
    grads = tape.gradient(y, {"w": w, "b": b})
    assert sorted(grads) == ["b", "w"]
    assert values(grads["w"]) == [1.0, 0.0] and values(grads["b"]) == [1.0, 0.0]


def test_a_variable_read_twice_sums_its_gradients():
    w = tp.Variable(3.0)
    with tp.GradientTape() as tape:
        y = add(w, w)  # two reads
        z = add(y, w)  # a third
    assert values(tape.gradient(z, w)) == 3.0
    assert tape.watched_variables() == (w,)


def test_watch_accessed_variables_false_needs_an_explicit_watch():
    w, v = tp.Variable(1.0), tp.Variable(2.0)
    with tp.GradientTape(watch_accessed_variables=False, persistent=True) as tape:
        tape.watch(v)
        y = add(w, v)
    assert tape.gradient(y, w) is None
    assert values(tape.gradient(y, v)) == 1.0
    assert tape.watched_variables() == (v,)


def test_structures_come_back_in_the_sources_shape():
    Pair = collections.namedtuple("Pair", "first second")
    x, y = tp.constant(1.0), tp.constant(2.0)
    with tp.GradientTape() as tape:
        tape.watch({"x": x, "more": [y]})
        z = add(add(x, y), y)
    grads = tape.gradient(z, [Pair(x, y), (y,), {"k": [x]}])
    assert isinstance(grads[0], Pair) and isinstance(grads[1], tuple)
    assert values(grads[0].first) == 1.0 and values(grads[0].second) == 2.0
    assert values(grads[1][0]) == 2.0 and values(grads[2]["k"][0]) == 1.0


def test_several_targets_sum():
    x = tp.constant(1.0)
    with tp.GradientTape() as tape:
        tape.watch(x)
        a = add(x, x)
        b = relu(x)
    assert values(tape.gradient([a, b], x)) == 3.0


def test_nested_tapes_second_order():
    x = tp.constant(2.0)
    with tp.GradientTape() as outer:
        outer.watch(x)
        with tp.GradientTape() as inner:
            inner.watch(x)
            y = relu(add(x, x))
        dy = inner.gradient(y, x)
    assert values(dy) == 2.0
    # d(dy)/dx: the gradient of a constant slope; reached only through ReluGrad's mask.
    second = outer.gradient(dy, x)
    assert second is None or values(second) == 0.0


def test_stop_recording():
    x = tp.constant([1.0, -1.0])
    w = tp.Variable([2.0, 2.0])
    with tp.GradientTape(persistent=True) as tape:
        tape.watch(x)
        a = add(x, w)
        with tape.stop_recording():
            b = add(x, x)       # not recorded
            c = add(a, w)       # not recorded, nor this read of w
        d = add(a, b)
        e = relu(c)
    assert values(tape.gradient(d, x)) == [1.0, 1.0]
    assert values(tape.gradient(d, w)) == [1.0, 1.0]
    assert tape.gradient(e, x) is None
    with pytest.raises(RuntimeError, match="not recording"):
        with tape.stop_recording():
            pass
    with tp.GradientTape() as tape:
        with tape.stop_recording():
            with pytest.raises(RuntimeError, match="not reentrant"):
                with tape.stop_recording():
                    pass


def test_errors():
    tape = tp.GradientTape()
    with pytest.raises(RuntimeError, match="has not recorded"):
        tape.gradient(tp.constant(1.0), tp.constant(1.0))
    with tp.GradientTape() as tape:
        with pytest.raises(ValueError, match="only tensors and variables"):
            tape.watch([tp.constant(1.0), "nope"])
        y = relu(tp.constant(1.0))
    with pytest.raises(RuntimeError, match="cannot be entered again"):
        with tape:
            pass
    with pytest.raises(ValueError, match="source 0 is a str"):
        tape.gradient(y, ["x"])
    with pytest.raises(TypeError):
        tp.GradientTape(persistent=True, bogus=1)


def test_no_reference_leaks():
    w = tp.Variable(np.ones(4, np.float32))
    x = tp.constant(np.ones(4, np.float32))
    before = sys.getrefcount(w), sys.getrefcount(x)
    for persistent in (False, True):
        for _ in range(50):
            with tp.GradientTape(persistent=persistent) as tape:
                tape.watch(x)
                y = relu(add(w, x))
            tape.gradient(y, [w, x])
            del tape, y
    assert (sys.getrefcount(w), sys.getrefcount(x)) == before
