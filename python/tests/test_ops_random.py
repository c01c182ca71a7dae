# SPDX-License-Identifier: Apache-2.0
"""tp.random: shapes, dtypes and distributions, and the seed rule tensorplug/random.py
documents (reproducible after set_seed, and for seed=k from run to run; fresh otherwise). The
rules across runs are checked in fresh interpreters."""
import numpy as np
import pytest

import tensorplug as tp


def test_normal_shape_dtype_and_moments():
    x = tp.random.normal(shape=[200, 100], dtype=tp.float32)
    assert x.shape == (200, 100) and x.dtype == tp.float32
    values = x.numpy()
    assert abs(values.mean()) < 0.02 and abs(values.std() - 1) < 0.02
    y = tp.random.normal([20000], mean=3.0, stddev=0.5, dtype=tp.float64).numpy()
    assert y.dtype == np.float64
    assert abs(y.mean() - 3.0) < 0.02 and abs(y.std() - 0.5) < 0.02
    z = tp.random.normal([4], mean=tp.constant(10.0), stddev=tp.constant(0.0)).numpy()
    assert z.tolist() == [10.0] * 4


def test_uniform_floats_and_integers():
    u = tp.random.uniform([20000]).numpy()
    assert u.dtype == np.float32 and u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.01
    v = tp.random.uniform([20000], minval=-2, maxval=6, dtype=tp.float64).numpy()
    assert v.min() >= -2 and v.max() < 6 and abs(v.mean() - 2) < 0.1
    i = tp.random.uniform([20000], minval=-3, maxval=4, dtype=tp.int32)
    assert i.dtype == tp.int32
    counts = np.bincount(i.numpy() + 3, minlength=7)
    assert len(counts) == 7 and counts.min() > 2500
    big = tp.random.uniform([10], 0, 2 ** 40, tp.int64)
    assert big.dtype == tp.int64 and (big.numpy() >= 0).all()
    assert tp.random.uniform([3], minval=tp.constant(5.0), maxval=tp.constant(5.0)) \
        .numpy().tolist() == [5.0] * 3
    with pytest.raises(ValueError, match="maxval must be given for dtype int32"):
        tp.random.uniform([3], dtype=tp.int32)
    with pytest.raises(ValueError, match="float dtype, int32 or int64, not uint8"):
        tp.random.uniform([3], maxval=4, dtype=tp.uint8)
    with pytest.raises(ValueError, match="normal\\(\\): dtype must be a float dtype"):
        tp.random.normal([3], dtype=tp.int32)


def test_shapes_of_every_form():
    assert tp.random.normal(5).shape == (5,)
    assert tp.random.normal((2, 3)).shape == (2, 3)
    assert tp.random.uniform(tp.constant([3, 1])).shape == (3, 1)
    assert tp.random.normal([]).shape == ()
    with pytest.raises(TypeError, match="shape must be"):
        tp.random.normal(2.5)


def test_set_seed_makes_the_sequence_reproducible():
    tp.random.set_seed(1234)
    first = [tp.random.normal([8]).numpy(), tp.random.uniform([8]).numpy(),
             tp.nn.dropout(np.ones(64, np.float32), 0.5).numpy(),
             tp.random.normal([8], seed=7).numpy(), tp.random.normal([8], seed=7).numpy()]
    tp.random.set_seed(1234)
    second = [tp.random.normal([8]).numpy(), tp.random.uniform([8]).numpy(),
              tp.nn.dropout(np.ones(64, np.float32), 0.5).numpy(),
              tp.random.normal([8], seed=7).numpy(), tp.random.normal([8], seed=7).numpy()]
    for a, b in zip(first, second):
        assert a.tolist() == b.tolist()
    # Each call draws anew, with or without an op seed.
    assert first[0].tolist() != tp.random.normal([8]).numpy().tolist()
    assert first[3].tolist() != first[4].tolist()
    tp.random.set_seed(99)
    assert tp.random.normal([8]).numpy().tolist() != first[0].tolist()
    tp.random.set_seed(None)


def test_an_op_seed_does_not_move_the_unseeded_sequence():
    tp.random.set_seed(5)
    plain = [tp.random.normal([4]).numpy().tolist() for _ in range(2)]
    tp.random.set_seed(5)
    a = tp.random.normal([4]).numpy().tolist()
    tp.random.normal([4], seed=3)
    b = tp.random.normal([4]).numpy().tolist()
    assert [a, b] == plain
    tp.random.set_seed(None)


DRAW = """
import tensorplug as tp
{setup}
print(tp.random.normal([4]{seed}).numpy().tolist(), tp.random.uniform([3]{seed}).numpy().tolist())
"""


def test_runs_repeat_with_a_global_seed_or_an_op_seed_and_differ_without(snippet):
    def run(setup="", seed=""):
        return snippet(DRAW.format(setup=setup, seed=seed))[0]
    assert run("tp.random.set_seed(42)") == run("tp.random.set_seed(42)")
    assert run("tp.random.set_seed(42)") != run("tp.random.set_seed(43)")
    assert run(seed=", seed=11") == run(seed=", seed=11")
    assert run(seed=", seed=11") != run(seed=", seed=12")
    assert run() != run()
