# SPDX-License-Identifier: Apache-2.0
"""tp's array ops against NumPy: making, reshaping, slicing, gathering, padding and choosing
elements, with TensorFlow's signatures and the errors of bad shapes and axes."""
import numpy as np
import pytest

import tensorplug as tp

rng = np.random.default_rng(21)


def test_reshape_and_transpose():
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    assert tp.reshape(x, [4, -1]).numpy().tolist() == x.reshape(4, -1).tolist()
    assert tp.reshape(tensor=x, shape=tp.constant([6, 4]), name="r").shape == (6, 4)
    assert tp.reshape(x, (24,)).shape == (24,)
    assert tp.reshape(x, 24).shape == (24,)
    assert tp.transpose(x).numpy().tolist() == x.T.tolist()
    assert tp.transpose(x, perm=[1, 0, 2]).numpy().tolist() == x.transpose(1, 0, 2).tolist()
    with pytest.raises(tp.errors.InvalidArgumentError, match="Reshape"):
        tp.reshape(x, [5, -1])
    with pytest.raises(tp.errors.InvalidArgumentError):
        tp.transpose(x, [0, 1])
    with pytest.raises(ValueError, match="unknown"):
        tp.reshape(x, [None, 4])


def test_zeros_ones_fill():
    z = tp.zeros([2, 3])
    assert z.dtype == tp.float32 and z.shape == (2, 3) and not z.numpy().any()
    o = tp.ones(shape=(4,), dtype=tp.int64)
    assert o.dtype == tp.int64 and o.numpy().tolist() == [1, 1, 1, 1]
    assert tp.ones(3, "bool").numpy().tolist() == [True] * 3
    assert tp.zeros([]).shape == ()
    f = tp.fill([2, 2], 7)
    assert f.dtype == tp.int32 and f.numpy().tolist() == [[7, 7], [7, 7]]
    assert tp.fill(dims=[3], value=tp.constant(1.5, dtype=tp.float64)).dtype == tp.float64
    with pytest.raises(tp.errors.InvalidArgumentError):
        tp.zeros([-2, 3])


def test_concat():
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal((2, 5)).astype(np.float32)
    assert tp.concat([a, tp.constant(b)], axis=-1).numpy().tolist() == \
        np.concatenate([a, b], axis=1).tolist()
    assert tp.concat(values=[[1, 2], [3]], axis=0).numpy().tolist() == [1, 2, 3]
    assert tp.concat([tp.constant([1.0]), [2, 3]], 0).dtype == tp.float32
    with pytest.raises(tp.errors.InvalidArgumentError):
        tp.concat([a, b], 0)
    with pytest.raises(TypeError, match="concat\\(\\): expected a list of tensors"):
        tp.concat(3, 0)


def test_slice_and_strided_slice():
    x = rng.standard_normal((4, 5, 6)).astype(np.float32)
    assert tp.slice(x, [1, 0, 2], [2, -1, 3]).numpy().tolist() == x[1:3, :, 2:5].tolist()
    assert tp.slice(input_=x, begin=[0, 1, 0], size=[1, 1, 1]).shape == (1, 1, 1)
    with pytest.raises(tp.errors.InvalidArgumentError, match="begin has 2 values and size 3"):
        tp.slice(x, [0, 0], [1, 1, 1])
    assert tp.strided_slice(x, [0, 1, 0], [4, 5, 6], [2, 2, 3]).numpy().tolist() == \
        x[0:4:2, 1:5:2, 0:6:3].tolist()
    assert tp.strided_slice(x, [3, 0, 0], [0, 0, 0], [-1, 1, 1], end_mask=6).numpy().tolist() \
        == x[3:0:-1].tolist()
    assert tp.strided_slice(x, [1], [2], shrink_axis_mask=1).numpy().tolist() == x[1].tolist()
    assert tp.strided_slice(x, [0, 2], [0, 3], begin_mask=1, end_mask=1, ellipsis_mask=0,
                            new_axis_mask=0, shrink_axis_mask=0).shape == (4, 1, 6)


def test_gather():
    params = rng.standard_normal((5, 3)).astype(np.float32)
    indices = [[4, 0], [1, 1]]
    assert tp.gather(params, indices).numpy().tolist() == params[np.array(indices)].tolist()
    assert tp.gather(params, [2, 0], axis=1).numpy().tolist() == params[:, [2, 0]].tolist()
    assert tp.gather(params=params, indices=tp.constant([1], dtype=tp.int64), axis=-2,
                     validate_indices=True).numpy().tolist() == params[[1]].tolist()
    with pytest.raises(tp.errors.InvalidArgumentError, match="7"):
        tp.gather(params, [7])
    with pytest.raises(tp.errors.UnimplementedError, match="batch_dims"):
        tp.gather(params, [[0]], batch_dims=1)


def test_unsorted_segment_sum():
    data = rng.standard_normal((6, 2)).astype(np.float32)
    ids = np.array([2, 0, 2, -1, 1, 0], np.int32)
    expected = np.zeros((4, 2), np.float32)
    for row, segment in zip(data, ids):
        if segment >= 0:
            expected[segment] += row
    result = tp.math.unsorted_segment_sum(data, ids, num_segments=4)
    np.testing.assert_allclose(result.numpy(), expected, rtol=1e-6)
    with pytest.raises(tp.errors.InvalidArgumentError):
        tp.math.unsorted_segment_sum(data, ids, 2)


def test_one_hot():
    result = tp.one_hot([0, 2, 5], 3)
    assert result.dtype == tp.float32
    assert result.numpy().tolist() == [[1, 0, 0], [0, 0, 1], [0, 0, 0]]
    ints = tp.one_hot(indices=[1, 0], depth=2, on_value=5, off_value=-1)
    assert ints.dtype == tp.int32 and ints.numpy().tolist() == [[-1, 5], [5, -1]]
    columns = tp.one_hot([1, 0], 3, axis=0, dtype=tp.float64)
    assert columns.dtype == tp.float64
    assert columns.numpy().tolist() == np.eye(3)[[1, 0]].T.tolist()
    assert tp.one_hot([1], 2, on_value=tp.constant(2.0)).numpy().tolist() == [[0.0, 2.0]]


def test_pad():
    x = rng.standard_normal((2, 3)).astype(np.float32)
    assert tp.pad(x, [[1, 0], [2, 1]]).numpy().tolist() == \
        np.pad(x, [[1, 0], [2, 1]]).tolist()
    assert tp.pad(tensor=x, paddings=np.array([[0, 1], [0, 0]]), mode="constant",
                  constant_values=9).numpy().tolist() == \
        np.pad(x, [[0, 1], [0, 0]], constant_values=9).tolist()
    with pytest.raises(tp.errors.UnimplementedError, match="mode 'REFLECT'"):
        tp.pad(x, [[1, 1], [1, 1]], mode="REFLECT")
    with pytest.raises(ValueError, match="mode must be one of 'CONSTANT', 'REFLECT', "
                                         "'SYMMETRIC', not 'WRAP'"):
        tp.pad(x, [[1, 1], [1, 1]], "WRAP")
    with pytest.raises(tp.errors.InvalidArgumentError, match="rank, 2"):
        tp.pad(x, [1, 1])


def test_tile_and_where():
    x = rng.standard_normal((2, 3)).astype(np.float32)
    assert tp.tile(x, [2, 1]).numpy().tolist() == np.tile(x, [2, 1]).tolist()
    assert tp.tile(input=x, multiples=tp.constant([1, 3])).shape == (2, 9)
    condition = x > 0
    y = rng.standard_normal((3,)).astype(np.float32)
    assert tp.where(condition, x, y).numpy().tolist() == np.where(condition, x, y).tolist()
    assert tp.where(tp.constant(condition), x, 0.0).numpy().tolist() == \
        np.where(condition, x, 0.0).tolist()
    with pytest.raises(tp.errors.UnimplementedError, match="Where op"):
        tp.where(condition)
    with pytest.raises(ValueError, match="both be given"):
        tp.where(condition, x)
    with pytest.raises(TypeError, match="dtype float32 where one of dtype bool"):
        tp.where(tp.constant(x), x, x)


def test_expand_dims_squeeze_stack():
    x = rng.standard_normal((2, 3)).astype(np.float32)
    assert tp.expand_dims(x, 0).shape == (1, 2, 3)
    assert tp.expand_dims(input=x, axis=-1).shape == (2, 3, 1)
    assert tp.expand_dims(x, 1).numpy().tolist() == x[:, None].tolist()
    with pytest.raises(tp.errors.InvalidArgumentError, match="axis 3"):
        tp.expand_dims(x, 3)
    y = x.reshape(1, 2, 1, 3, 1)
    assert tp.squeeze(y).shape == (2, 3)
    assert tp.squeeze(y, axis=[0, -1]).shape == (2, 1, 3)
    assert tp.squeeze(y, 2).numpy().tolist() == y[:, :, 0].tolist()
    with pytest.raises(tp.errors.InvalidArgumentError, match="dimension 1 of size 2"):
        tp.squeeze(y, axis=1)
    parts = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(4)]
    for axis in (0, 1, 2, -1):
        assert tp.stack(parts, axis=axis).numpy().tolist() == np.stack(parts, axis).tolist()
    assert tp.stack(values=[1, 2, 3]).numpy().tolist() == [1, 2, 3]
    with pytest.raises(tp.errors.InvalidArgumentError):
        tp.stack([x, x.T])


def test_shape_size_rank_are_host_tensors():
    x = np.zeros((2, 3, 4), np.float32)
    s = tp.shape(x)
    assert s.dtype == tp.int32 and s.numpy().tolist() == [2, 3, 4]
    assert tp.shape(x, out_type=tp.int64).dtype == tp.int64
    assert tp.size(input=x).numpy() == 24 and tp.size(x).shape == ()
    assert tp.rank(x).numpy() == 3 and tp.rank(1.0).numpy() == 0
    assert tp.shape(1.0).shape == (0,)
    with pytest.raises(TypeError, match="out_type must be int32 or int64"):
        tp.shape(x, out_type=tp.float32)
