# SPDX-License-Identifier: Apache-2.0
"""NumPy and tensors: round trips of every dtype through tp.constant and back by numpy(),
__array__, the buffer protocol and numpy.asarray; zero-copy views of CPU tensors, read-only and
keeping the tensor alive; copies from other devices; ndarray + Tensor giving a Tensor."""
import gc
import sys
import weakref

import numpy as np
import pytest

import tensorplug as tp

# Every tensorplug dtype and the NumPy dtype its values come to NumPy as.
DTYPES = [("float32", "float32"), ("float64", "float64"), ("float16", "float16"),
          ("bfloat16", "float32"), ("int8", "int8"), ("int16", "int16"), ("int32", "int32"),
          ("int64", "int64"), ("uint8", "uint8"), ("uint16", "uint16"), ("uint32", "uint32"),
          ("uint64", "uint64"), ("bool", "bool")]


def sample(numpy_dtype, shape=(2, 3)):
    """Values that each dtype holds exactly (bfloat16's are whole numbers below 256)."""
    count = int(np.prod(shape))
    if numpy_dtype == "bool":
        return (np.arange(count) % 3 == 0).reshape(shape)
    info = np.iinfo(numpy_dtype) if numpy_dtype[0] in "iu" else None
    if info is not None:
        extremes = [info.min, info.max, 0, 1]
        return np.array((extremes * count)[:count], dtype=numpy_dtype).reshape(shape)
    return (np.arange(count, dtype=numpy_dtype) * 3 - 5).reshape(shape)


def make(name, numpy_dtype, shape=(2, 3)):
    values = sample(numpy_dtype, shape)
    return values, tp.constant(values, dtype=getattr(tp, name))


def test_thirteen_dtypes():
    assert len(DTYPES) == 13


@pytest.mark.parametrize("name,numpy_dtype", DTYPES)
def test_round_trip_through_numpy(name, numpy_dtype):
    values, t = make(name, numpy_dtype)
    assert t.dtype == getattr(tp, name)
    got = t.numpy()
    assert got.dtype == np.dtype(numpy_dtype) and got.shape == (2, 3)
    np.testing.assert_array_equal(got, values)
    # numpy() is a copy: writing it leaves the tensor alone.
    got[...] = values[0, 0]
    np.testing.assert_array_equal(t.numpy(), values)
    # And the array comes back as the same tensor.
    again = tp.constant(t.numpy(), dtype=getattr(tp, name))
    np.testing.assert_array_equal(again.numpy(), values)


@pytest.mark.parametrize("name,numpy_dtype", DTYPES)
def test_round_trip_through_array_and_asarray(name, numpy_dtype):
    values, t = make(name, numpy_dtype)
    for array in [np.asarray(t), np.array(t), t.__array__(), np.asarray(t, dtype=numpy_dtype)]:
        assert array.dtype == np.dtype(numpy_dtype)
        np.testing.assert_array_equal(array, values)
    copied = t.__array__(copy=True)
    np.testing.assert_array_equal(copied, values)
    if name != "bfloat16":
        assert not np.shares_memory(copied, np.asarray(t))
        assert np.shares_memory(t.__array__(), np.asarray(t))
    as_float = t.__array__(dtype="float64")
    assert as_float.dtype == np.float64
    np.testing.assert_array_equal(as_float, values.astype("float64"))
    # Scalars too.
    scalar = tp.constant(values[0, 1], dtype=getattr(tp, name))
    assert np.asarray(scalar).shape == ()
    assert np.asarray(scalar) == values[0, 1]


@pytest.mark.parametrize("name,numpy_dtype", [d for d in DTYPES if d[0] != "bfloat16"])
def test_buffer_protocol_shares_the_tensors_memory(name, numpy_dtype):
    values, t = make(name, numpy_dtype, shape=(3, 4))
    view = memoryview(t)
    assert view.readonly
    assert view.shape == (3, 4)
    assert view.itemsize == np.dtype(numpy_dtype).itemsize
    assert view.strides == (4 * view.itemsize, view.itemsize)
    assert np.dtype(view.format) == np.dtype(numpy_dtype)
    first, second = np.asarray(t), np.asarray(t)
    # Zero-copy: both are views of the tensor's own bytes, not copies.
    assert first.ctypes.data == second.ctypes.data
    assert np.shares_memory(first, second)
    assert not first.flags.writeable
    np.testing.assert_array_equal(first, values)
    with pytest.raises(ValueError, match="read-only"):
        first[0, 0] = values[1, 1]
    with pytest.raises(TypeError):
        view[0, 0] = values[1, 1]
    view.release()


def test_bfloat16_has_no_buffer_and_comes_as_float32():
    t = tp.constant([1.5, -2.0, 256.0], dtype=tp.bfloat16)
    with pytest.raises(BufferError, match="NumPy has no bfloat16"):
        memoryview(t)
    array = np.asarray(t)
    assert array.dtype == np.float32
    assert array.tolist() == [1.5, -2.0, 256.0]


def test_a_view_keeps_the_tensor_alive():
    t = tp.constant(np.arange(1000, dtype="float64"))
    alive = weakref.ref(t)
    view = np.asarray(t)
    del t
    gc.collect()
    assert alive() is not None
    assert view[999] == 999.0
    del view
    gc.collect()
    assert alive() is None


def test_writable_buffers_are_refused():
    import ctypes
    t = tp.constant([1, 2, 3])
    import io
    with pytest.raises(TypeError, match="not writable"):
        (ctypes.c_int32 * 3).from_buffer(t)
    with pytest.raises(TypeError, match="read-write"):
        io.BytesIO(b"abcd").readinto(t)
    with pytest.raises(ValueError, match="WRITEABLE"):
        np.frombuffer(t, dtype="int32").setflags(write=True)
    assert np.frombuffer(t, dtype="int32").tolist() == [1, 2, 3]


def test_tensors_on_another_device_come_to_numpy_as_copies():
    # The APU wheel is installed: Relu runs there.
    t = tp.nn.relu(tp.constant([-1.0, 2.0, -3.0, 4.0]))
    assert t.device.endswith("device:APU:0")
    with pytest.raises(BufferError, match="APU:0.*copy it to the CPU first"):
        memoryview(t)
    first, second = np.asarray(t), np.asarray(t)
    assert first.tolist() == [0.0, 2.0, 0.0, 4.0]
    assert not np.shares_memory(first, second)


def test_ndarray_operator_tensor_gives_a_tensor():
    t = tp.constant([1.0, 2.0, 3.0])
    a = np.array([10.0, 20.0, 30.0])  # float64: converted to the tensor's float32
    for result, want in [(a + t, [11, 22, 33]), (a - t, [9, 18, 27]), (a * t, [10, 40, 90]),
                         (a / t, [10, 10, 10]), (t + a, [11, 22, 33]),
                         (np.float32(2) * t, [2, 4, 6])]:
        assert isinstance(result, tp.Tensor), type(result)
        assert result.dtype == tp.float32
        np.testing.assert_array_equal(result.numpy(), np.array(want, dtype="float32"))
    compared = a > t
    assert isinstance(compared, tp.Tensor) and compared.numpy().tolist() == [True] * 3
    assert tp.Tensor.__array_priority__ == 100


@pytest.mark.parametrize("name,numpy_dtype", DTYPES)
def test_constant_copies_the_array(name, numpy_dtype):
    values = sample(numpy_dtype)
    source = values.copy()
    t = tp.constant(source, dtype=getattr(tp, name))
    source[...] = source[0, 0]
    np.testing.assert_array_equal(t.numpy(), values)
    assert not np.shares_memory(np.asarray(t), source)


def test_numpy_scalars_and_zero_dimensional_arrays_stay_scalars():
    for value, dtype in [(np.float32(2.5), tp.float32), (np.int64(3), tp.int64),
                         (np.array(7, dtype="uint8"), tp.uint8), (np.bool_(True), tp.bool)]:
        t = tp.constant(value)
        assert t.shape == () and t.dtype == dtype
        assert t.numpy() == value


def test_views_do_not_leak():
    t = tp.constant(np.ones((16, 16), dtype="float32"))
    for _ in range(200):
        np.asarray(t).sum()
        memoryview(t).release()
    before = sys.getallocatedblocks()
    for _ in range(2000):
        np.asarray(t).sum()
        memoryview(t).release()
        t.__array__()
    assert sys.getallocatedblocks() - before < 100
    assert sys.getrefcount(t) == 2


def test_views_add_no_runtime_memory_and_leave_none_behind():
    info = tp.config.experimental.get_memory_info
    before = info("CPU:0")["current"]
    t = tp.constant(np.ones((256, 256), dtype="float32"))
    with_tensor = info("CPU:0")["current"]
    assert with_tensor >= before + 256 * 256 * 4
    views = [np.asarray(t) for _ in range(10)] + [memoryview(t)]
    assert info("CPU:0")["current"] == with_tensor
    del t, views
    assert info("CPU:0")["current"] == before
