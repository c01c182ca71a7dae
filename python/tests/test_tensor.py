# SPDX-License-Identifier: Apache-2.0
"""Tensor protocols: operators and comparisons against NumPy, TensorFlow 2's equality (so no
hash, and ref() for keys), indexing against NumPy on random shapes and keys, len and
iteration, conversions to Python scalars, the repr, tp.pow, and that none of it leaks."""
import itertools
import operator
import random
import sys
import weakref

import numpy as np
import pytest

import tensorplug as tp

FLOATS = ["float32", "float64"]
INTEGERS = ["int32", "int64"]


def values(dtype, shape, rng, positive=False):
    if dtype.startswith("float"):
        low = 0.5 if positive else -4.0
        return rng.uniform(low, 4.0, size=shape).astype(dtype)
    return rng.integers(1 if positive else -9, 10, size=shape).astype(dtype)


def check_close(got, want):
    assert isinstance(got, tp.Tensor)
    array = got.numpy()
    assert np.shape(array) == np.shape(want)
    assert np.asarray(array).dtype == np.asarray(want).dtype, (array, want)
    np.testing.assert_allclose(array, want, rtol=2e-6 if array.dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("dtype", FLOATS + INTEGERS)
@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul])
def test_arithmetic_matches_numpy_with_broadcasting(dtype, op):
    rng = np.random.default_rng(7)
    for x_shape, y_shape in [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1), (1, 5)), ((), (3,))]:
        x, y = values(dtype, x_shape, rng), values(dtype, y_shape, rng)
        check_close(op(tp.constant(x), tp.constant(y)), op(x, y))


@pytest.mark.parametrize("dtype", FLOATS)
def test_true_division_of_floats(dtype):
    rng = np.random.default_rng(3)
    x, y = values(dtype, (3, 4), rng), values(dtype, (4,), rng, positive=True)
    check_close(tp.constant(x) / tp.constant(y), x / y)


def test_true_division_of_integers_gives_floats_as_tensorflow():
    x = np.array([7, -3, 4], dtype="int32")
    got = tp.constant(x) / 2
    assert got.dtype == tp.float64
    np.testing.assert_array_equal(got.numpy(), x / 2)
    got8 = tp.constant(np.array([5, 6], dtype="int8")) / tp.constant(np.array([2, 4], "int8"))
    assert got8.dtype == tp.float32
    np.testing.assert_array_equal(got8.numpy(), np.array([2.5, 1.5], dtype="float32"))


def test_python_scalars_take_the_tensors_dtype_on_either_side():
    x = tp.constant([1.0, 2.0, 4.0])
    for result, want in [(x * 2, [2, 4, 8]), (2 * x, [2, 4, 8]), (x + 1, [2, 3, 5]),
                         (10 - x, [9, 8, 6]), (x - 0.5, [0.5, 1.5, 3.5]), (8 / x, [8, 4, 2]),
                         (x ** 2, [1, 4, 16]), (2 ** x, [2, 4, 16])]:
        assert result.dtype == tp.float32
        np.testing.assert_array_equal(result.numpy(), np.array(want, dtype="float32"))
    i = tp.constant(np.array([3, 4], dtype="int64"))
    assert (i + 1).dtype == tp.int64
    assert (1 + i).numpy().tolist() == [4, 5]


def test_a_value_that_does_not_fit_the_tensors_dtype_is_refused():
    with pytest.raises(tp.errors.InvalidArgumentError,
                       match="does not fit in a tensor of dtype int32"):
        tp.constant([1, 2]) + 0.5


def test_matmul_operator():
    rng = np.random.default_rng(11)
    a, b = values("float32", (3, 4), rng), values("float32", (4, 2), rng)
    check_close(tp.constant(a) @ tp.constant(b), a @ b)
    check_close(a @ tp.constant(b), a @ b)
    with pytest.raises(tp.errors.InvalidArgumentError):
        tp.constant(a) @ tp.constant(a)


@pytest.mark.parametrize("dtype", FLOATS)
def test_power_matches_numpy(dtype):
    rng = np.random.default_rng(5)
    x, y = values(dtype, (2, 5), rng, positive=True), values(dtype, (5,), rng)
    check_close(tp.constant(x) ** tp.constant(y), x ** y)
    check_close(tp.pow(x, tp.constant(y)), x ** y)
    check_close(tp.pow(tp.constant(x), 3, name="cube"), x ** 3)
    # A negative base to a whole power keeps its sign; 0 ** 0 is 1.
    base, exponent = np.array([-2.0, 0.0, -3.0], dtype), np.array([3.0, 0.0, 2.0], dtype)
    got = tp.constant(base) ** tp.constant(exponent)
    np.testing.assert_array_equal(got.numpy(), np.array([-8.0, 1.0, 9.0], dtype))


def test_integer_powers_and_the_refusal_of_negative_exponents():
    base = tp.constant(np.array([-3, 2, 5], dtype="int32"))
    np.testing.assert_array_equal((base ** 3).numpy(), np.array([-27, 8, 125], "int32"))
    with pytest.raises(tp.errors.InvalidArgumentError,
                       match="integers to negative integer powers are not allowed"):
        (base ** -1).numpy()
    with pytest.raises(TypeError, match="modulus"):
        pow(base, 2, 3)


@pytest.mark.parametrize("dtype", FLOATS + INTEGERS)
def test_unary_operators(dtype):
    x = values(dtype, (2, 3), np.random.default_rng(2))
    t = tp.constant(x)
    check_close(-t, -x)
    check_close(abs(t), abs(x))
    assert +t is t


@pytest.mark.parametrize("dtype", FLOATS + INTEGERS)
def test_comparisons_are_element_wise_with_broadcasting(dtype):
    rng = np.random.default_rng(9)
    x = values(dtype, (3, 4), rng)
    y = x[1]  # equal in one row, so == and != see both answers
    for op in [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]:
        got = op(tp.constant(x), tp.constant(y))
        assert got.dtype == tp.bool
        np.testing.assert_array_equal(got.numpy(), op(x, y))
        np.testing.assert_array_equal(op(tp.constant(x), 1).numpy(), op(x, 1))
        # A scalar on the left reflects the operator: 1 < t is t > 1.
        np.testing.assert_array_equal(op(1, tp.constant(x)).numpy(), op(1, x))


def test_equality_with_things_that_are_not_comparable_element_wise():
    t = tp.constant([1.0, 2.0, 3.0])
    assert (t == None) is False  # noqa: E711
    assert (t != None) is True  # noqa: E711
    for other in ["text", tp.constant([1.0, 2.0])]:
        assert isinstance(t == other, tp.Tensor) and (t == other).shape == ()
        assert not bool((t == other).numpy())
        assert bool((t != other).numpy())
    with pytest.raises((TypeError, ValueError)):
        t < "text"


def test_tensors_are_unhashable_and_ref_is_the_key():
    t = tp.constant([1, 2])
    with pytest.raises(TypeError,
                       match=r"^Tensor is unhashable\. Instead, use tensor\.ref\(\) as the key\.$"):
        hash(t)
    with pytest.raises(TypeError):
        {t}
    u = tp.constant([1, 2])
    keys = {t.ref(): "t", u.ref(): "u"}
    assert keys[t.ref()] == "t" and keys[u.ref()] == "u"
    assert t.ref() == t.ref() and t.ref() != u.ref()
    assert t.ref().deref() is t
    assert repr(t.ref()).startswith("<Reference wrapping <tp.Tensor: shape=(2,)")
    assert isinstance(t.ref(), tp.Reference)


def random_key(shape, rng):
    """A random index for `shape`: ints (negative too), slices with any bounds and steps,
    None, and at most one Ellipsis."""
    entries, dims = [], list(shape)
    ellipsis_at = rng.randrange(len(dims) + 1) if rng.random() < 0.4 else None
    d = 0
    while d < len(dims):
        if ellipsis_at == d:
            entries.append(Ellipsis)
            d += rng.randrange(0, len(dims) - d + 1)
            ellipsis_at = None
            continue
        kind = rng.random()
        if kind < 0.15:
            entries.append(None)
            continue
        size = dims[d]
        if kind < 0.45 and size > 0:
            entries.append(rng.randrange(-size, size))
        else:
            def bound():
                return None if rng.random() < 0.3 else rng.randrange(-size - 2, size + 3)
            step = rng.choice([None, 1, 2, 3, -1, -2])
            entries.append(slice(bound(), bound(), step))
        d += 1
    if rng.random() < 0.2:
        entries.append(None)
    return tuple(entries) if len(entries) != 1 or rng.random() < 0.5 else entries[0]


def test_indexing_matches_numpy_on_random_shapes_and_keys():
    rng = random.Random(20)
    checked = 0
    for _ in range(300):
        shape = tuple(rng.randrange(0, 5) for _ in range(rng.randrange(1, 5)))
        array = np.arange(int(np.prod(shape)), dtype="float32").reshape(shape)
        t = tp.constant(array)
        key = random_key(shape, rng)
        want = array[key]
        got = t[key]
        assert isinstance(got, tp.Tensor)
        assert got.shape == np.shape(want), key
        np.testing.assert_array_equal(got.numpy(), want, err_msg=repr(key))
        checked += 1
    assert checked == 300


def test_the_documented_index_forms():
    a = np.arange(24, dtype="int32").reshape(2, 3, 4)
    t = tp.constant(a)
    for key in [0, -1, slice(1, None), (slice(None), 1), (Ellipsis, None), (Ellipsis, 2),
                (1, slice(None, None, -1), slice(0, 4, 2)), (None, 0, Ellipsis, -1),
                (np.int64(1), tp.constant(2))]:
        numpy_key = key if not isinstance(key, tuple) else tuple(
            int(k) if isinstance(k, tp.Tensor) else k for k in key)
        np.testing.assert_array_equal(t[key].numpy(), a[numpy_key])
    assert t[..., tp.newaxis].shape == (2, 3, 4, 1)
    assert t[0, 0, 0].numpy() == 0 and t[0, 0, 0].shape == ()


def test_index_errors_name_the_index_and_dimension():
    t = tp.constant(np.zeros((2, 3)))
    error = tp.errors.InvalidArgumentError
    with pytest.raises(error, match=r"^slice index 5 of dimension 0 out of bounds\.$"):
        t[5]
    with pytest.raises(error, match=r"^slice index -4 of dimension 1 out of bounds\.$"):
        t[:, -4]
    with pytest.raises(error, match=r"^slice index 3 of dimension 1 out of bounds\.$"):
        t[..., 3]
    with pytest.raises(tp.errors.InvalidArgumentError):
        t[0, 0, 0]
    with pytest.raises(TypeError, match=r"Only integers, slices \(`:`\), ellipsis \(`\.\.\.`\), "
                                        r"tp\.newaxis \(`None`\) and scalar tp\.int32/tp\.int64 "
                                        r"tensors are valid indices, got 'a'"):
        t["a"]
    with pytest.raises(TypeError, match="valid indices, got 1.5"):
        t[1.5]
    with pytest.raises(TypeError, match="valid indices"):
        t[tp.constant([0, 1])]
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        t[::0]
    with pytest.raises(ValueError, match="single ellipsis"):
        t[..., ...]


def test_len_and_iteration_over_the_first_dimension():
    a = np.arange(6, dtype="int64").reshape(3, 2)
    t = tp.constant(a)
    assert len(t) == 3
    rows = list(t)
    assert len(rows) == 3 and all(isinstance(r, tp.Tensor) for r in rows)
    for row, want in zip(rows, a):
        np.testing.assert_array_equal(row.numpy(), want)
    assert list(tp.constant(np.zeros((0, 2)))) == []
    scalar = tp.constant(1.0)
    with pytest.raises(TypeError, match="Scalar tensor has no `len\\(\\)`"):
        len(scalar)
    with pytest.raises(TypeError, match="Cannot iterate over a scalar tensor."):
        iter(scalar)
    a, b = tp.constant([4, 5])
    assert int(a) == 4 and int(b) == 5


def test_python_scalar_conversions():
    assert float(tp.constant(2.5)) == 2.5
    assert int(tp.constant(7)) == 7 and int(tp.constant([7])) == 7
    assert bool(tp.constant(1)) is True and bool(tp.constant(0.0)) is False
    assert [10, 20, 30][tp.constant(1)] == 20
    assert operator.index(tp.constant(np.int64(2))) == 2
    with pytest.raises(ValueError, match="truth value of an array with more than one element"):
        bool(tp.constant([1, 2]))
    with pytest.raises(TypeError):
        operator.index(tp.constant(1.5))
    with pytest.raises(TypeError):
        int(tp.constant([1, 2]))
    if tp.constant(True):
        pass
    else:
        pytest.fail("a true scalar tensor is false")


def test_repr_is_tensorflows():
    assert repr(tp.constant(5)) == "<tp.Tensor: shape=(), dtype=int32, numpy=5>"
    assert repr(tp.constant(2.5)) == "<tp.Tensor: shape=(), dtype=float32, numpy=2.5>"
    assert repr(tp.constant(True)) == "<tp.Tensor: shape=(), dtype=bool, numpy=True>"
    assert repr(tp.constant([1.0, 2.0])) == (
        "<tp.Tensor: shape=(2,), dtype=float32, numpy=array([1., 2.], dtype=float32)>")
    assert repr(tp.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])) == (
        "<tp.Tensor: shape=(2, 3), dtype=float32, numpy=\n"
        "array([[1., 2., 3.],\n"
        "       [4., 5., 6.]], dtype=float32)>")
    assert repr(tp.constant([1, 2], dtype=tp.int64)) == (
        "<tp.Tensor: shape=(2,), dtype=int64, numpy=array([1, 2])>")
    # numpy() of a scalar is a NumPy scalar, as TensorFlow's.
    assert type(tp.constant(2.5).numpy()) is np.float32


def test_operators_release_what_they_make():
    x = tp.constant(np.ones((4, 4), dtype="float32"))
    ref = weakref.ref(x + x)
    assert ref() is None

    def work(count):
        for k in range(count):
            y = (x * 2 + 1 - x) / 3
            y = y ** 2 @ x
            _ = (y < 1, y == y, y[1:, ::2], list(y[0]), abs(-y), float(y[0, 0]), y.ref())

    work(500)
    before = sys.getallocatedblocks()
    work(2000)
    growth = sys.getallocatedblocks() - before
    assert growth < 200, growth
    assert sys.getrefcount(x) == 2  # the name and getrefcount's argument


def test_operators_run_from_several_threads():
    import threading
    x = tp.constant(np.arange(100000, dtype="float32"))
    results, errors = [], []

    def worker():
        try:
            for _ in range(20):
                results.append(float(((x * 2) - x)[99999]))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert results == [99999.0] * 80


def test_every_binary_operator_pair_of_dtypes_is_refused_or_right():
    # Two tensors of different dtypes are not converted: the runtime refuses, as TensorFlow.
    a, b = tp.constant([1.0]), tp.constant([1], dtype=tp.int32)
    for op in [operator.add, operator.mul, operator.pow]:
        with pytest.raises(tp.errors.InvalidArgumentError):
            op(a, b)
    for x, y in itertools.product([tp.constant([2.0]), 2.0, np.float32(2.0)], repeat=2):
        if isinstance(x, tp.Tensor) or isinstance(y, tp.Tensor):
            assert (x * y).numpy().tolist() == [4.0]


def memory_in_use():
    return {d: tp.config.experimental.get_memory_info(d)["current"] for d in ("CPU:0", "APU:0")}


def test_runtime_memory_comes_back_after_ten_thousand_operator_calls():
    x = tp.constant(np.arange(12, dtype="float32").reshape(3, 4))
    w = tp.constant(np.ones((4, 4), dtype="float32"))
    before = memory_in_use()
    for k in range(10000):
        y = (x * 2 + 1) ** 2 @ w
        _ = (y[k % 3, ::-1], y > 3.0, -y, y == y, list(x[0]))
    del y, _
    assert memory_in_use() == before
