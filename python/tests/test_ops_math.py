# SPDX-License-Identifier: Apache-2.0
"""tp's element-wise, comparison, product and reduction ops against NumPy: values on random
inputs of a few shapes, broadcasting, TensorFlow's keywords, and the errors of bad calls."""
import sys

import numpy as np
import pytest

import tensorplug as tp

rng = np.random.default_rng(20)
SHAPES = [(), (5,), (3, 4), (2, 3, 4)]


def tensor(x):
    """x as a tensor; a 0-d array through its Python value, since tp.constant(0-d array) gives
    shape (1,) on this branch (convert.c's numpy.ascontiguousarray makes it 1-d)."""
    if np.ndim(x) == 0:
        return tp.constant(float(x), dtype=tp.DType(x.dtype.name))
    return tp.constant(x)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


UNARY = [
    ("abs", np.abs, False), ("negative", np.negative, False), ("sign", np.sign, False),
    ("square", np.square, False), ("sqrt", np.sqrt, True), ("exp", np.exp, False),
    ("sigmoid", sigmoid, False), ("tanh", np.tanh, False), ("identity", lambda x: x, False),
]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name,reference,positive", UNARY)
def test_unary_ops_match_numpy(name, reference, positive, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    if positive:
        x = (np.abs(x) + 0.1).astype(np.float32)
    result = getattr(tp, name)(tensor(x))
    assert result.dtype == tp.float32
    assert result.shape == shape
    np.testing.assert_allclose(result.numpy(), reference(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,reference", [("rsqrt", lambda x: 1 / np.sqrt(x)),
                                            ("log", np.log)])
def test_math_only_unary_ops(name, reference):
    x = np.abs(rng.standard_normal((3, 4))).astype(np.float32) + 0.1
    np.testing.assert_allclose(getattr(tp.math, name)(x).numpy(), reference(x), rtol=1e-5)


def test_namespaces_share_the_functions():
    assert tp.math.add is tp.add and tp.math.reduce_sum is tp.reduce_sum
    assert tp.nn.sigmoid is tp.sigmoid is tp.math.sigmoid
    assert tp.nn.tanh is tp.tanh is tp.math.tanh
    assert tp.linalg.matmul is tp.matmul
    assert tp.math.equal is tp.equal and tp.math.greater_equal is tp.greater_equal


def test_keywords_as_tensorflow_names_them():
    x = tp.constant([-1.0, 4.0])
    assert tp.abs(x=x, name="a").numpy().tolist() == [1.0, 4.0]
    assert tp.nn.relu(features=x, name="r").numpy().tolist() == [0.0, 4.0]
    assert tp.identity(input=x).numpy().tolist() == [-1.0, 4.0]
    assert tp.add(x=x, y=1.0, name="s").numpy().tolist() == [0.0, 5.0]
    assert tp.subtract(x, y=1.0).numpy().tolist() == [-2.0, 3.0]


def test_bad_calls_raise_type_error_naming_the_argument():
    x = tp.constant([1.0])
    with pytest.raises(TypeError, match=r"abs\(\) got an unexpected keyword argument 'y'"):
        tp.abs(x, y=1)
    with pytest.raises(TypeError, match=r"add\(\) missing required argument 'y' \(pos 2\)"):
        tp.add(x)
    with pytest.raises(TypeError, match=r"add\(\) got multiple values for argument 'x'"):
        tp.add(x, x, x=x)
    with pytest.raises(TypeError, match=r"relu\(\) takes at most 2 arguments \(3 given\)"):
        tp.nn.relu(x, "n", 3)


BROADCAST = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((5,), ())]


@pytest.mark.parametrize("xs,ys", BROADCAST)
@pytest.mark.parametrize("name,reference", [
    ("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
    ("divide", np.divide)])
def test_binary_ops_broadcast_as_numpy(name, reference, xs, ys):
    x = rng.standard_normal(xs).astype(np.float32)
    y = (rng.standard_normal(ys) + 3.0).astype(np.float32)
    result = getattr(tp, name)(x, tensor(y))
    expected = reference(x, y)
    assert result.shape == expected.shape
    np.testing.assert_allclose(result.numpy(), expected, rtol=1e-5)


def test_python_scalars_take_the_tensors_dtype():
    i = tp.constant([1, 2, 3], dtype=tp.int64)
    assert tp.add(i, 1).dtype == tp.int64
    assert tp.multiply(2, i).numpy().tolist() == [2, 4, 6]
    f = tp.constant([1.0], dtype=tp.float64)
    assert tp.subtract(1, f).dtype == tp.float64
    # Without a Tensor among them, the scalar takes the array's or list's dtype too.
    assert tp.greater(np.array([0.5, -1.0], np.float32), 0).numpy().tolist() == [True, False]
    assert tp.add([1.5], 1).numpy().tolist() == [2.5]
    assert tp.multiply(x=2, y=np.array([1.0])).dtype == tp.float64


def test_divide_of_integers_gives_floats_as_tensorflow():
    q = tp.divide(tp.constant([1, 7]), 2)
    assert q.dtype == tp.float64
    assert q.numpy().tolist() == [0.5, 3.5]
    assert tp.divide(tp.constant([3], dtype=tp.int16), tp.constant([2], dtype=tp.int16)).dtype \
        == tp.float32
    assert tp.truediv(tp.constant([1, 2]), tp.constant([4, 4])).numpy().tolist() == [0.25, 0.5]


def test_mixed_dtypes_fail_as_in_tensorflow():
    with pytest.raises(tp.errors.InvalidArgumentError):
        tp.add(tp.constant([1.0]), tp.constant([1]))


@pytest.mark.parametrize("name,reference", [
    ("equal", np.equal), ("not_equal", np.not_equal), ("less", np.less),
    ("less_equal", np.less_equal), ("greater", np.greater), ("greater_equal", np.greater_equal)])
def test_comparisons_give_bool(name, reference):
    x = rng.integers(0, 3, (3, 4)).astype(np.float32)
    y = rng.integers(0, 3, (4,)).astype(np.float32)
    result = getattr(tp, name)(x, y)
    assert result.dtype == tp.bool
    assert (result.numpy() == reference(x, y)).all()
    assert getattr(tp.math, name)(x, 1.0).numpy().tolist() == reference(x, 1.0).tolist()


def test_add_n_sums_a_list_of_tensors_and_values():
    parts = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(4)]
    total = tp.add_n([tp.constant(parts[0]), parts[1], tp.constant(parts[2]), parts[3]])
    np.testing.assert_allclose(total.numpy(), sum(parts), rtol=1e-5)
    assert tp.add_n(inputs=[tp.constant([1.0, 2.0])]).numpy().tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="add_n"):
        tp.add_n([])
    with pytest.raises(tp.errors.InvalidArgumentError):
        tp.add_n([tp.constant([1.0]), tp.constant([1.0, 2.0])])


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_with_transposes(ta, tb):
    a = rng.standard_normal((3, 4) if not ta else (4, 3)).astype(np.float32)
    b = rng.standard_normal((4, 5) if not tb else (5, 4)).astype(np.float32)
    expected = (a.T if ta else a) @ (b.T if tb else b)
    np.testing.assert_allclose(tp.matmul(a, b, transpose_a=ta, transpose_b=tb).numpy(),
                               expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tp.linalg.matmul(a, b, adjoint_a=ta, adjoint_b=tb).numpy(),
                               expected, rtol=1e-5, atol=1e-5)


def test_matmul_of_the_documents():
    a = tp.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3], name='a')
    b = tp.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2], name='b')
    c = tp.matmul(a, b)
    assert c.numpy().tolist() == [[22.0, 28.0], [49.0, 64.0]]


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_of_batches_broadcasts_as_numpy(ta, tb):
    # [2, 1, M, K] against [3, K, N]: BatchMatMulV2, its batch dimensions broadcast to [2, 3].
    a = rng.standard_normal((2, 1, 4, 3) if ta else (2, 1, 3, 4)).astype(np.float32)
    b = rng.standard_normal((3, 5, 4) if tb else (3, 4, 5)).astype(np.float32)
    expected = (np.swapaxes(a, -1, -2) if ta else a) @ (np.swapaxes(b, -1, -2) if tb else b)
    got = tp.matmul(a, b, transpose_a=ta, transpose_b=tb).numpy()
    assert got.shape == (2, 3, 3, 5)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_matmul_operator_and_gradient_of_a_batch():
    x = tp.constant(rng.standard_normal((4, 2, 3)).astype(np.float64))
    w = tp.Variable(rng.standard_normal((3, 5)))
    with tp.GradientTape() as tape:
        loss = tp.reduce_sum(x @ w)
    # d(sum(x @ w))/dw sums x's rows over the batch: the batch that w was broadcast over.
    expected = np.sum(x.numpy(), axis=(0, 1))[:, None] * np.ones((1, 5))
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(), expected, rtol=1e-12)
    with pytest.raises(tp.errors.InvalidArgumentError, match="compatible batch dimensions"):
        tp.matmul(np.ones((2, 3, 4), np.float32), np.ones((3, 4, 5), np.float32))


def test_matmul_errors():
    with pytest.raises(tp.errors.InvalidArgumentError, match="MatMul"):
        tp.matmul(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="transpose_a and adjoint_a"):
        tp.matmul([[1.0]], [[1.0]], transpose_a=True, adjoint_a=True)
    with pytest.raises(tp.errors.UnimplementedError, match="output_type"):
        tp.matmul([[1.0]], [[1.0]], output_type=tp.float64)


REDUCTIONS = [("reduce_sum", np.sum), ("reduce_mean", np.mean), ("reduce_max", np.max),
              ("reduce_min", np.min), ("reduce_prod", np.prod)]


@pytest.mark.parametrize("name,reference", REDUCTIONS)
@pytest.mark.parametrize("axis", [None, 0, -1, [0, 2], (1,)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_match_numpy(name, reference, axis, keepdims):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    result = getattr(tp, name)(x, axis=axis, keepdims=keepdims)
    np_axis = tuple(axis) if isinstance(axis, (list, tuple)) else axis
    expected = reference(x, axis=np_axis, keepdims=keepdims)
    assert result.shape == expected.shape
    np.testing.assert_allclose(result.numpy(), expected, rtol=1e-5, atol=1e-6)
    assert getattr(tp.math, name)(input_tensor=x, axis=axis, keepdims=keepdims).shape == \
        expected.shape


@pytest.mark.parametrize("name,reference", [("maximum", np.maximum), ("minimum", np.minimum)])
def test_maximum_and_minimum_broadcast_and_keep_nan(name, reference):
    x = np.array([[1.0, np.nan, -np.inf], [4.0, 0.5, 2.0]], np.float32)
    y = np.array([2.0, 3.0, np.nan], np.float32)
    np.testing.assert_array_equal(getattr(tp, name)(x, y).numpy(), reference(x, y))
    np.testing.assert_array_equal(getattr(tp.math, name)(x=y, y=x).numpy(), reference(y, x))
    ints = np.array([[-3, 7], [5, -1]], np.int32)
    assert getattr(tp, name)(ints, np.int32(0)).numpy().tolist() == \
        reference(ints, 0).tolist()
    with pytest.raises(tp.errors.InvalidArgumentError, match=name.capitalize()):
        getattr(tp, name)(np.ones((2, 3), np.float32), np.ones((4,), np.float32))


def test_maximum_and_minimum_gradients_give_ties_to_x():
    x = tp.Variable([1.0, 2.0, 3.0])
    y = tp.Variable([1.0, 5.0, 0.0])
    with tp.GradientTape(persistent=True) as tape:
        larger = tp.maximum(x, y)
        smaller = tp.minimum(x, y)
    assert [g.numpy().tolist() for g in tape.gradient(larger, [x, y])] == \
        [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    assert [g.numpy().tolist() for g in tape.gradient(smaller, [x, y])] == \
        [[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]


def test_reduce_prod_integers_and_gradient():
    assert tp.reduce_prod([[2, 3], [4, 5]], axis=1).numpy().tolist() == [6, 20]
    assert tp.reduce_prod(np.zeros((0, 2), np.float32), axis=0).numpy().tolist() == [1.0, 1.0]
    x = tp.Variable([[2.0, 0.0, 3.0], [1.0, 2.0, 4.0], [0.0, 5.0, 0.0]])
    with tp.GradientTape() as tape:
        y = tp.reduce_prod(x, axis=1)
    grad = tape.gradient(y, x).numpy().tolist()
    assert grad == [[0.0, 6.0, 0.0], [8.0, 4.0, 2.0], [0.0, 0.0, 0.0]]


def test_reduction_axis_forms():
    x = tp.constant([[1.0, 2.0], [3.0, 4.0]])
    assert tp.reduce_sum(x).numpy() == 10.0
    assert tp.reduce_sum(x, np.int64(1)).numpy().tolist() == [3.0, 7.0]
    assert tp.reduce_sum(x, np.array(1)).numpy().tolist() == [3.0, 7.0]
    assert tp.reduce_sum(x, np.array([0, 1])).numpy() == 10.0
    assert tp.reduce_sum(x, axis=tp.constant([0])).numpy().tolist() == [4.0, 6.0]
    assert tp.reduce_sum(x, axis=[]).numpy().tolist() == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(tp.errors.InvalidArgumentError, match="2"):
        tp.reduce_sum(x, axis=2)
    with pytest.raises(TypeError, match="axis must be an integer or a list of integers"):
        tp.reduce_sum(x, axis=0.5)


@pytest.mark.parametrize("name,reference", [("argmax", np.argmax), ("argmin", np.argmin)])
def test_argmax_argmin(name, reference):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    default = getattr(tp, name)(x)
    assert default.dtype == tp.int64
    assert default.numpy().tolist() == reference(x, axis=0).tolist()
    along = getattr(tp.math, name)(x, axis=-1, output_type=tp.int32)
    assert along.dtype == tp.int32
    assert along.numpy().tolist() == reference(x, axis=1).tolist()
    with pytest.raises(TypeError, match="output_type must be int32 or int64"):
        getattr(tp, name)(x, output_type=tp.float32)


def test_cast_and_likes():
    x = tp.constant([1.5, -2.5])
    assert tp.cast(x, tp.int32).numpy().tolist() == [1, -2]
    assert tp.cast(x, dtype="float64").dtype == tp.float64
    with pytest.raises(TypeError, match="dtype"):
        tp.cast(x, None)
    assert tp.zeros_like(x).numpy().tolist() == [0.0, 0.0]
    assert tp.ones_like(x, dtype=tp.int64).numpy().tolist() == [1, 1]
    assert tp.ones_like(x, dtype=tp.int64).dtype == tp.int64
    assert tp.zeros_like(input=[[1, 2]]).dtype == tp.int32


def test_failed_calls_keep_their_arguments_references():
    values = [1.0, 2.0]
    before = sys.getrefcount(values)
    for _ in range(100):
        with pytest.raises(tp.errors.InvalidArgumentError):
            tp.reduce_sum(values, axis=3)
        with pytest.raises(TypeError):
            tp.add(values, y=values, z=1)
    assert sys.getrefcount(values) == before


def test_variables_lists_and_arrays_are_tensor_arguments():
    v = tp.Variable([[1.0, 2.0], [3.0, 4.0]])
    assert tp.matmul(v, v).numpy().tolist() == [[7.0, 10.0], [15.0, 22.0]]
    assert tp.reduce_sum(v, axis=0).numpy().tolist() == [4.0, 6.0]
    assert tp.nn.relu(v).numpy().tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert tp.add(v, 1).numpy().tolist() == [[2.0, 3.0], [4.0, 5.0]]
    assert tp.matmul([[1.0, 2.0]], np.array([[1.0], [1.0]], np.float32)).numpy().tolist() == \
        [[3.0]]


def test_a_long_op_lets_other_threads_run():
    import threading
    import time
    a = np.ones((1536, 1536), np.float32)
    took = []

    def work():
        start = time.perf_counter()
        tp.matmul(a, a)
        took.append(time.perf_counter() - start)

    worker = threading.Thread(target=work)
    stamps = [time.perf_counter()]
    worker.start()
    while worker.is_alive():
        stamps.append(time.perf_counter())
    worker.join()
    # With the GIL held through the op, this thread would stop for all of it.
    assert max(np.diff(stamps)) < took[0] / 2
