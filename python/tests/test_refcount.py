# SPDX-License-Identifier: Apache-2.0
"""Reference counting: 10,000 ops, and 10,000 failed ops, leave no Python objects, no Tensor
objects and no device memory behind. Three counts are checked, each catching another kind of
leak: sys.getallocatedblocks() (any Python object or buffer kept, an exception or a message
string included), the live Tensor objects (a Tensor kept by a reference too many) and the
bytes in use of the devices' allocators (a tp_tensor_t whose release is missing)."""
import gc
import sys

import numpy
import pytest

import tensorplug as tp

_tp = tp._tensorplug
ROUNDS = 10000
# Blocks the measured rounds may leave that are no leak: the interpreter's free lists and
# pytest's own bookkeeping grow and shrink as gc runs (a few hundred under pytest, under ten in
# a bare interpreter). A leak of one block per round, the least a leak per op can be, would be
# ROUNDS.
BLOCK_SLACK = ROUNDS // 10


def devices():
    names = ["CPU:0"]
    try:
        _tp._memory_stats("APU:0")
        names.append("APU:0")
    except tp.errors.NotFoundError:
        pass
    return names


def snapshot():
    gc.collect()
    _tp._synchronize()
    return (sys.getallocatedblocks(), _tp._live_tensor_count(),
            {name: _tp._memory_stats(name)["bytes_in_use"] for name in devices()},
            {name: _tp._memory_stats(name)["num_allocations"] for name in devices()})


def assert_no_growth(before, after, what):
    blocks, tensors, in_use, allocations = before
    blocks_after, tensors_after, in_use_after, allocations_after = after
    assert tensors_after == tensors, "%s: %d Tensor objects left" % (what, tensors_after - tensors)
    assert in_use_after == in_use, "%s: device bytes in use %r, then %r" % (what, in_use,
                                                                            in_use_after)
    assert allocations_after == allocations, what
    assert blocks_after - blocks < BLOCK_SLACK, "%s: %d Python blocks more" % (
        what, blocks_after - blocks)


def run_rounds(body):
    # The first rounds fill caches that later ones reuse (NumPy's, the interpreter's free
    # lists, the fallback record of an op): growth there is no leak, growth after it is.
    for _ in range(ROUNDS // 5):
        body()
    before = snapshot()
    for _ in range(ROUNDS):
        body()
    after = snapshot()
    return before, after


def test_the_probes_see_a_kept_tensor():
    """The counts this file relies on move when a tensor is kept, so a test below that finds
    them unchanged has shown something."""
    before = snapshot()
    kept = tp.nn.relu(tp.constant(numpy.arange(100, dtype=numpy.float32)))
    during = snapshot()
    assert during[1] == before[1] + 1
    assert sum(during[2].values()) >= sum(before[2].values()) + 400
    del kept
    assert_no_growth(before, snapshot(), "after del")


def test_mixed_ops_leak_nothing():
    values = numpy.linspace(-1.0, 1.0, 12, dtype=numpy.float32)

    def body():
        a = tp.constant(values)
        b = tp.constant([[0.5, -0.5, 1.5]], dtype=tp.float32)
        c = tp.nn.relu(a)
        d = _tp.add(tp.constant([[1.0], [2.0]]), b)
        e = _tp.add(c, 2.0)
        assert d.shape == (2, 3)
        return a, b, c, d, e

    before, after = run_rounds(body)
    assert_no_growth(before, after, "constant, relu, add")
    # The values are right, so the loop did run the ops it claims.
    a, _, c, d, e = body()
    numpy.testing.assert_allclose(c.numpy(), numpy.maximum(values, 0))
    numpy.testing.assert_allclose(e.numpy(), numpy.maximum(values, 0) + 2.0)
    numpy.testing.assert_allclose(d.numpy(), [[1.5, 0.5, 2.5], [2.5, 1.5, 3.5]])


def test_numpy_and_printing_leak_nothing():
    t = tp.nn.relu(tp.constant([[1.0, -2.0], [3.0, -4.0]]))

    def body():
        array = t.numpy()
        assert array[1, 0] == 3.0
        return repr(t), str(t), t.shape, t.dtype, t.device

    before, after = run_rounds(body)
    assert_no_growth(before, after, "numpy, repr, str, attributes")


def test_matmul_leaks_nothing():
    matmul = getattr(tp, "matmul", None)
    if matmul is None:
        pytest.skip("tp.matmul is not in this build yet")
    x = tp.constant([[1.0, 2.0], [3.0, 4.0]])

    def body():
        return matmul(x, matmul(x, x))

    before, after = run_rounds(body)
    assert_no_growth(before, after, "matmul")
    numpy.testing.assert_allclose(body().numpy(), [[37.0, 54.0], [81.0, 118.0]])


def test_indexing_leaks_nothing():
    x = tp.constant([[1.0, 2.0], [3.0, 4.0]])
    try:
        x[0]
    except TypeError:
        pytest.skip("Tensor indexing is not in this build yet")

    def body():
        return x[0], x[1][0], x[:, 1]

    before, after = run_rounds(body)
    assert_no_growth(before, after, "indexing")
    row, element, column = body()
    numpy.testing.assert_allclose(row.numpy(), [1.0, 2.0])
    assert float(element.numpy()) == 3.0
    numpy.testing.assert_allclose(column.numpy(), [2.0, 4.0])


def test_failed_ops_leak_nothing():
    a = tp.constant([1.0, 2.0])
    b = tp.constant([1.0, 2.0, 3.0])
    messages = set()

    def body():
        # A runtime failure (a status turned into InvalidArgumentError) and conversion
        # failures (TypeError, ValueError) of the Python front itself.
        with pytest.raises(tp.errors.InvalidArgumentError) as shapes:
            _tp.add(a, b)
        # The list becomes a tensor the call owns, which the failure must release.
        with pytest.raises(tp.errors.InvalidArgumentError):
            _tp.add(a, [1.0, 2.0, 3.0])
        with pytest.raises(TypeError):
            tp.nn.relu("x")
        with pytest.raises(ValueError):
            tp.constant([[1.0], [2.0, 3.0]])
        with pytest.raises(TypeError):
            _tp.add(a)
        messages.add(shapes.value.message)

    before, after = run_rounds(body)
    assert_no_growth(before, after, "failed ops")
    assert messages == {"Add: Incompatible shapes: [2] vs. [3]"}
