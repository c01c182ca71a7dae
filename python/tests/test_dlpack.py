# SPDX-License-Identifier: Apache-2.0
"""DLPack: tensors to NumPy (numpy.from_dlpack) and back (tp.from_dlpack) sharing memory, every
dtype through tensorplug's own capsules, strided and misaligned producers copied, capsules
consumed once, other devices refused, the producer's memory given back when the tensor goes,
and PyTorch when it is installed."""
import gc
import sys
import weakref

import numpy as np
import pytest

import tensorplug as tp

from test_numpy import DTYPES, make

# NumPy 1.24 exchanges integers and floats; it refuses bool (and has no bfloat16).
NUMPY_DLPACK = [d for d in DTYPES if d[0] not in ("bool", "bfloat16")]


@pytest.mark.parametrize("name,numpy_dtype", NUMPY_DLPACK)
def test_numpy_from_dlpack_shares_the_tensors_memory(name, numpy_dtype):
    values, t = make(name, numpy_dtype)
    assert t.__dlpack_device__() == (1, 0)
    array = np.from_dlpack(t)
    assert array.dtype == np.dtype(numpy_dtype) and array.shape == (2, 3)
    np.testing.assert_array_equal(array, values)
    assert np.shares_memory(array, np.asarray(t))


@pytest.mark.parametrize("name,numpy_dtype", NUMPY_DLPACK)
def test_tp_from_dlpack_shares_numpys_memory(name, numpy_dtype):
    values, _ = make(name, numpy_dtype)
    source = values.copy()
    t = tp.from_dlpack(source)
    assert t.dtype == getattr(tp, name) and t.shape == (2, 3)
    np.testing.assert_array_equal(t.numpy(), values)
    assert np.shares_memory(np.asarray(t), source)
    # Round trip: back to NumPy, still the same memory.
    assert np.shares_memory(np.from_dlpack(t), source)


@pytest.mark.parametrize("name,numpy_dtype", DTYPES)
def test_every_dtype_through_tensorplugs_own_capsule(name, numpy_dtype):
    values, t = make(name, numpy_dtype)
    again = tp.from_dlpack(t)
    assert again.dtype == t.dtype and again.shape == t.shape
    np.testing.assert_array_equal(again.numpy(), values)
    capsule = t.__dlpack__()
    assert type(capsule).__name__ == "PyCapsule" and "dltensor" in repr(capsule)
    np.testing.assert_array_equal(tp.from_dlpack(capsule).numpy(), values)
    if name != "bfloat16":
        assert np.shares_memory(np.asarray(again), np.asarray(t))


def test_a_capsule_is_consumed_once():
    capsule = tp.constant([1, 2]).__dlpack__()
    assert "used_dltensor" not in repr(capsule)
    tp.from_dlpack(capsule)
    assert "used_dltensor" in repr(capsule)
    with pytest.raises(ValueError, match="consumed once"):
        tp.from_dlpack(capsule)


def test_an_unconsumed_capsule_releases_the_tensor():
    t = tp.constant(np.arange(10.0))
    alive = weakref.ref(t)
    capsule = t.__dlpack__()
    del t, capsule
    gc.collect()
    assert alive() is None


def test_imported_memory_goes_back_to_its_producer():
    source = np.arange(64, dtype="float32")
    count = sys.getrefcount(source)
    t = tp.from_dlpack(source)
    assert sys.getrefcount(source) == count + 1  # NumPy's capsule holds the array
    doubled = t * 2  # an op reads it in place
    assert doubled.numpy()[63] == 126.0
    del t
    assert sys.getrefcount(source) == count
    del doubled
    for _ in range(1000):
        tp.from_dlpack(source).numpy()
    assert sys.getrefcount(source) == count


def test_strided_and_misaligned_producers_are_copied():
    base = np.arange(24, dtype="float64").reshape(4, 6)
    strided = base[:, ::2]
    t = tp.from_dlpack(strided)
    np.testing.assert_array_equal(t.numpy(), strided)
    assert not np.shares_memory(np.asarray(t), base)
    transposed = base.T
    np.testing.assert_array_equal(tp.from_dlpack(transposed).numpy(), transposed)
    raw = np.zeros(80, dtype="uint8")
    offset = (-raw.ctypes.data) % 16 + 4  # 4 bytes past a 16-byte boundary
    misaligned = raw[offset:offset + 32].view("float32")
    misaligned[:] = np.arange(8)
    t = tp.from_dlpack(misaligned)
    np.testing.assert_array_equal(t.numpy(), np.arange(8, dtype="float32"))
    assert not np.shares_memory(np.asarray(t), raw)
    empty = tp.from_dlpack(np.zeros((0, 3), dtype="int16"))
    assert empty.shape == (0, 3) and empty.dtype == tp.int16


def test_tensors_on_other_devices_are_refused_with_a_way_out():
    t = tp.nn.relu(tp.constant([-1.0, 2.0]))
    assert t.device.endswith("device:APU:0")
    assert t.__dlpack_device__() == (12, 0)  # kDLExtDev
    with pytest.raises(BufferError, match="DLPack exports CPU tensors only.*APU:0.*copy it to "
                                          "the CPU first"):
        t.__dlpack__()
    with pytest.raises(BufferError):
        np.from_dlpack(t)


def test_bad_arguments():
    t = tp.constant([1.0])
    with pytest.raises(ValueError, match="stream must be None"):
        t.__dlpack__(stream=1)
    with pytest.raises(TypeError, match="__dlpack__ or a DLPack capsule, not list"):
        tp.from_dlpack([1, 2])
    with pytest.raises(BufferError):
        tp.from_dlpack(np.array([True, False]))  # NumPy 1.24 does not export bool


def test_pytorch_round_trip():
    torch = pytest.importorskip("torch", reason="python3-torch is not installed")
    source = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    t = tp.from_dlpack(source)
    assert t.dtype == tp.float32 and t.shape == (3, 4)
    np.testing.assert_array_equal(t.numpy(), source.numpy())
    assert np.shares_memory(np.asarray(t), source.numpy())
    back = torch.from_dlpack(t)
    assert back.data_ptr() == source.data_ptr()
    # PyTorch 1.13 (Debian 12's) has no bool in its DLPack exchange, either way.
    for dtype in [torch.int8, torch.int64, torch.uint8, torch.float64, torch.bfloat16,
                  torch.float16]:
        value = torch.ones(5, dtype=dtype)
        assert torch.equal(torch.from_dlpack(tp.from_dlpack(value)), value)


def test_imported_memory_is_not_counted_and_exported_memory_is_held():
    info = tp.config.experimental.get_memory_info
    before = info("CPU:0")["current"]
    source = np.ones((512, 512), dtype="float32")
    t = tp.from_dlpack(source)
    assert info("CPU:0")["current"] == before  # borrowed: NumPy's memory, not the runtime's
    del t
    exported = tp.constant(np.ones((512, 512), dtype="float32"))
    held = info("CPU:0")["current"]
    array = np.from_dlpack(exported)
    del exported
    assert info("CPU:0")["current"] == held  # the array holds the tensor's memory
    assert array.sum() == 512 * 512
    del array
    assert info("CPU:0")["current"] == before


def test_memory_released_outside_a_tensor_object_goes_back_too():
    # A variable holds the imported tensor itself; its release is the runtime's, not a Tensor
    # object's, and the producer's deleter runs at the interpreter's next pending call.
    source = np.arange(16, dtype="float32")
    count = sys.getrefcount(source)
    variable = tp.Variable(tp.from_dlpack(source))
    assert sys.getrefcount(source) == count + 1
    del variable
    for _ in range(100):  # a loop lets the interpreter run its pending calls
        pass
    assert sys.getrefcount(source) == count


def test_imports_released_on_other_threads():
    import threading
    source = np.arange(1024, dtype="float64")
    count = sys.getrefcount(source)
    tensors = [tp.from_dlpack(source) for _ in range(8)]

    def drop(tensor):
        assert float((tensor * 1.0)[1023]) == 1023.0

    threads = [threading.Thread(target=drop, args=(t,)) for t in tensors]
    del tensors
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    del threads
    for _ in range(100):
        pass
    assert sys.getrefcount(source) == count
