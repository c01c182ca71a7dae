# SPDX-License-Identifier: Apache-2.0
"""tp.nn against NumPy references: activations, softmax along any axis, bias_add, conv2d and
pooling in NHWC and NCHW, the cross-entropies, fused_batch_norm and dropout."""
import numpy as np
import pytest

import tensorplug as tp

rng = np.random.default_rng(22)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_relu():
    x = rng.standard_normal((3, 4)).astype(np.float32)
    assert tp.nn.relu(x).numpy().tolist() == np.maximum(x, 0).tolist()
    assert tp.nn.relu([1, -2]).numpy().tolist() == [1, 0]


@pytest.mark.parametrize("axis", [None, -1, 0, 1, -3])
def test_softmax_and_log_softmax_along_any_axis(axis):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    expected = softmax(x, -1 if axis is None else axis)
    np.testing.assert_allclose(tp.nn.softmax(x, axis=axis).numpy(), expected, rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(tp.nn.log_softmax(logits=x, axis=axis).numpy(),
                               np.log(expected), rtol=1e-5, atol=1e-6)
    assert tp.math.softmax is tp.nn.softmax


def test_softmax_bad_axis():
    with pytest.raises(tp.errors.InvalidArgumentError, match=r"axis 3 is not in \[-2, 2\)"):
        tp.nn.softmax(np.zeros((2, 2), np.float32), axis=3)
    with pytest.raises(tp.errors.InvalidArgumentError, match="rank 1 or more"):
        tp.nn.softmax(1.0, axis=0)


def test_bias_add_in_both_layouts():
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    bias = rng.standard_normal((5,)).astype(np.float32)
    np.testing.assert_allclose(tp.nn.bias_add(x, bias).numpy(), x + bias, rtol=1e-6)
    bias3 = rng.standard_normal((3,)).astype(np.float32)
    np.testing.assert_allclose(tp.nn.bias_add(value=x, bias=bias3, data_format="NCHW").numpy(),
                               x + bias3[:, None, None], rtol=1e-6)
    with pytest.raises(ValueError, match="data_format must be one of 'NHWC', 'NCHW'"):
        tp.nn.bias_add(x, bias, data_format="CHWN")
    with pytest.raises(tp.errors.InvalidArgumentError):
        tp.nn.bias_add(x, bias3)


def conv2d_reference(x, w, stride, padding, dilation=1):
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    ekh, ekw = (kh - 1) * dilation + 1, (kw - 1) * dilation + 1
    if padding == "SAME":
        oh, ow = -(-h // stride), -(-wd // stride)
        ph = max((oh - 1) * stride + ekh - h, 0)
        pw = max((ow - 1) * stride + ekw - wd, 0)
        x = np.pad(x, [(0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)])
    else:
        oh, ow = (h - ekh) // stride + 1, (wd - ekw) // stride + 1
    out = np.zeros((n, oh, ow, o), np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + ekh:dilation, j * stride:j * stride + ekw:dilation]
            out[:, i, j] = np.einsum("nhwc,hwco->no", patch, w)
    return out


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
@pytest.mark.parametrize("stride", [1, 2])
def test_conv2d(padding, stride):
    x = rng.standard_normal((2, 7, 6, 3)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 4)).astype(np.float32)
    expected = conv2d_reference(x, w, stride, padding)
    np.testing.assert_allclose(tp.nn.conv2d(x, w, strides=stride, padding=padding).numpy(),
                               expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(
        tp.nn.conv2d(input=x, filters=w, strides=[1, stride, stride, 1], padding=padding,
                     data_format="NHWC", dilations=1, name="c").numpy(),
        expected, rtol=1e-4, atol=1e-4)
    nchw = tp.nn.conv2d(x.transpose(0, 3, 1, 2), w, [1, 1, stride, stride], padding,
                        data_format="NCHW")
    np.testing.assert_allclose(nchw.numpy(), expected.transpose(0, 3, 1, 2), rtol=1e-4,
                               atol=1e-4)


def test_conv2d_dilations_and_errors():
    x = rng.standard_normal((1, 7, 7, 2)).astype(np.float32)
    w = rng.standard_normal((2, 2, 2, 3)).astype(np.float32)
    np.testing.assert_allclose(tp.nn.conv2d(x, w, 1, "VALID", dilations=[2, 2]).numpy(),
                               conv2d_reference(x, w, 1, "VALID", 2), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="padding must be one of 'VALID', 'SAME'"):
        tp.nn.conv2d(x, w, 1, "FULL")
    with pytest.raises(tp.errors.UnimplementedError, match="explicit paddings"):
        tp.nn.conv2d(x, w, 1, [[0, 0], [1, 1], [1, 1], [0, 0]])
    with pytest.raises(tp.errors.InvalidArgumentError, match="batch and channel"):
        tp.nn.conv2d(x, w, [2, 1, 1, 1], "VALID")
    with pytest.raises(ValueError, match="strides must have 1, 2 or 4 values, not 3"):
        tp.nn.conv2d(x, w, [1, 1, 1], "VALID")
    with pytest.raises(tp.errors.InvalidArgumentError):
        tp.nn.conv2d(x, w[:, :, :1], 1, "VALID")


def pool_reference(x, k, s, reduce):
    n, h, w, c = x.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    out = np.zeros((n, oh, ow, c), x.dtype)
    for i in range(oh):
        for j in range(ow):
            out[:, i, j] = reduce(x[:, i * s:i * s + k, j * s:j * s + k], axis=(1, 2))
    return out


@pytest.mark.parametrize("name,reduce", [("max_pool2d", np.max), ("avg_pool2d", np.mean)])
def test_pooling(name, reduce):
    x = rng.standard_normal((2, 6, 5, 3)).astype(np.float32)
    pool = getattr(tp.nn, name)
    expected = pool_reference(x, 2, 2, reduce)
    np.testing.assert_allclose(pool(x, 2, 2, "VALID").numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(
        pool(input=x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID").numpy(),
        expected, rtol=1e-6)
    nchw = pool(x.transpose(0, 3, 1, 2), [2, 2], [2, 2], "VALID", data_format="NCHW")
    np.testing.assert_allclose(nchw.numpy(), expected.transpose(0, 3, 1, 2), rtol=1e-6)
    assert pool(x, 2, 2, "SAME").shape == (2, 3, 3, 3)
    assert getattr(tp.nn, name.replace("2d", "")) is pool


def test_softmax_cross_entropy_with_logits():
    logits = rng.standard_normal((4, 5)).astype(np.float32)
    labels = softmax(rng.standard_normal((4, 5))).astype(np.float32)
    expected = -(labels * np.log(softmax(logits))).sum(-1)
    np.testing.assert_allclose(
        tp.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits).numpy(),
        expected, rtol=1e-5)
    deep = rng.standard_normal((2, 3, 5)).astype(np.float32)
    deep_labels = softmax(rng.standard_normal((2, 3, 5))).astype(np.float32)
    result = tp.nn.softmax_cross_entropy_with_logits(deep_labels, deep)
    assert result.shape == (2, 3)
    np.testing.assert_allclose(result.numpy(), -(deep_labels * np.log(softmax(deep))).sum(-1),
                               rtol=1e-5)
    along0 = tp.nn.softmax_cross_entropy_with_logits(labels.T, logits.T, axis=0)
    np.testing.assert_allclose(along0.numpy(), expected, rtol=1e-5)
    with pytest.raises(tp.errors.InvalidArgumentError):
        tp.nn.softmax_cross_entropy_with_logits(labels[:, :3], logits)


def test_sparse_softmax_cross_entropy_with_logits():
    logits = rng.standard_normal((4, 5)).astype(np.float32)
    labels = np.array([0, 4, 2, 2], np.int32)
    expected = -np.log(softmax(logits))[np.arange(4), labels]
    np.testing.assert_allclose(
        tp.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits).numpy(),
        expected, rtol=1e-5)
    deep = logits.reshape(2, 2, 5)
    result = tp.nn.sparse_softmax_cross_entropy_with_logits(labels.reshape(2, 2), deep)
    np.testing.assert_allclose(result.numpy(), expected.reshape(2, 2), rtol=1e-5)
    with pytest.raises(tp.errors.InvalidArgumentError, match="without its last dimension"):
        tp.nn.sparse_softmax_cross_entropy_with_logits(labels[:3], logits)
    with pytest.raises(tp.errors.InvalidArgumentError, match="7"):
        tp.nn.sparse_softmax_cross_entropy_with_logits([0, 7, 0, 0], logits)


def test_fused_batch_norm_training_and_inference():
    x = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
    scale = np.array([1.5, 0.5], np.float32)
    offset = np.array([0.1, -0.2], np.float32)
    mean, variance = x.mean(axis=(0, 1, 2)), x.var(axis=(0, 1, 2))
    y, running_mean, running_variance = tp.nn.fused_batch_norm(x, scale, offset, epsilon=1e-3)
    np.testing.assert_allclose(y.numpy(), scale * (x - mean) / np.sqrt(variance + 1e-3) + offset,
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(running_mean.numpy(), mean, rtol=1e-5, atol=1e-6)
    n = x.size / 2
    np.testing.assert_allclose(running_variance.numpy(), variance * n / (n - 1), rtol=1e-5)
    given_mean = np.array([0.5, -0.5], np.float32)
    given_variance = np.array([2.0, 0.5], np.float32)
    y, m, v = tp.nn.fused_batch_norm(x, scale, offset, mean=given_mean, variance=given_variance,
                                     is_training=False)
    np.testing.assert_allclose(
        y.numpy(), scale * (x - given_mean) / np.sqrt(given_variance + 1e-3) + offset, rtol=1e-4,
        atol=1e-5)
    assert m.numpy().tolist() == given_mean.tolist()
    nchw, _, _ = tp.nn.fused_batch_norm(x.transpose(0, 3, 1, 2), scale, offset, given_mean,
                                        given_variance, data_format="NCHW", is_training=False)
    np.testing.assert_allclose(nchw.numpy(), y.numpy().transpose(0, 3, 1, 2), rtol=1e-6)
    with pytest.raises(ValueError, match="needs mean and variance"):
        tp.nn.fused_batch_norm(x, scale, offset, is_training=False)


def test_dropout():
    x = np.ones((100, 100), np.float32)
    y = tp.nn.dropout(x, rate=0.25).numpy()
    kept = y != 0
    assert np.allclose(y[kept], 1 / 0.75)
    assert 0.70 < kept.mean() < 0.80
    assert tp.nn.dropout(x, 0.0).numpy().tolist() == x.tolist()
    assert not np.array_equal(tp.nn.dropout(x, 0.5).numpy(), tp.nn.dropout(x, 0.5).numpy())
    assert tp.nn.dropout(x, 0.5, noise_shape=[100, 100]).shape == (100, 100)
    for rate in (1.0, -0.1, 2):
        with pytest.raises(ValueError, match=r"rate must be a number in \[0, 1\)"):
            tp.nn.dropout(x, rate)
    with pytest.raises(tp.errors.UnimplementedError, match="noise_shape"):
        tp.nn.dropout(x, 0.5, noise_shape=[100, 1])
