# SPDX-License-Identifier: Apache-2.0
"""tp.keras.optimizers (SGD, momentum, Nesterov, Adam) against hand-computed steps;
apply_gradients, minimize, iterations, learning_rate, state variables; tp.train's TF1 name."""
import math
import sys

import numpy as np
import pytest

import tensorplug as tp

add, relu = tp._tensorplug.add, tp.nn.relu


def close(a, b):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=1e-6, atol=1e-7)


def test_aliases():
    assert tp.optimizers is tp.keras.optimizers
    assert tp.optimizers.SGD is tp.keras.optimizers.SGD
    assert isinstance(tp.keras.optimizers.get("adam"), tp.keras.optimizers.Adam)
    with pytest.raises(ValueError, match="Could not interpret optimizer identifier"):
        tp.keras.optimizers.get("rmsprop-ish")


def test_plain_sgd_step():
    v = tp.Variable([1.0, -2.0])
    opt = tp.keras.optimizers.SGD()  # learning_rate 0.01
    assert opt.learning_rate == pytest.approx(0.01) and opt.iterations == 0
    assert opt.apply_gradients([(tp.constant([10.0, 20.0]), v)]) == 1
    close(v.numpy(), [1.0 - 0.1, -2.0 - 0.2])
    assert opt.iterations == 1
    assert [s.name for s in opt.variables()] == ["optimizer/iterations:0"]  # no slot


def test_momentum_and_nesterov_steps():
    for nesterov in (False, True):
        v = tp.Variable([1.0, 2.0], name="w")
        opt = tp.keras.optimizers.SGD(learning_rate=0.1, momentum=0.9, nesterov=nesterov)
        value, velocity = np.array([1.0, 2.0]), np.zeros(2)
        for grad in ([1.0, -1.0], [0.5, 2.0], [-3.0, 0.0]):
            opt.apply_gradients(zip([tp.constant(grad)], [v]))
            g = np.array(grad)
            velocity = 0.9 * velocity - 0.1 * g
            value = value + (0.9 * velocity - 0.1 * g if nesterov else velocity)
            close(v.numpy(), value)
        close(opt.get_slot(v, "momentum").numpy(), velocity)
        names = [s.name for s in opt.variables()]
        assert names == ["optimizer/iterations:0", "optimizer/w/momentum:0"]
        assert opt.iterations == 3


def test_adam_steps():
    v = tp.Variable([0.5, -1.0, 2.0], name="a")
    opt = tp.keras.optimizers.Adam(learning_rate=0.01)
    value, m, s = np.array([0.5, -1.0, 2.0]), np.zeros(3), np.zeros(3)
    for t, grad in enumerate(([1.0, 0.1, -2.0], [0.3, 0.3, 0.3], [-1.0, 4.0, 0.0]), start=1):
        opt.apply_gradients([(grad, v)])  # a plain list converts to the variable's dtype
        g = np.array(grad)
        m = m + (g - m) * (1 - 0.9)
        s = s + (g * g - s) * (1 - 0.999)
        alpha = 0.01 * math.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        value = value - alpha * m / (np.sqrt(s) + 1e-7)
        close(v.numpy(), value)
    close(opt.get_slot(v, "m").numpy(), m)
    close(opt.get_slot(v, "v").numpy(), s)
    assert opt.get_config() == {"name": "Adam", "learning_rate": pytest.approx(0.01),
                                "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}


def test_learning_rate_can_change_between_steps():
    v = tp.Variable(1.0)
    opt = tp.keras.optimizers.SGD(learning_rate=0.5)
    opt.apply_gradients([(1.0, v)])
    opt.learning_rate = 0.25
    assert opt.learning_rate == 0.25 and opt.lr == 0.25
    opt.apply_gradients([(1.0, v)])
    close(v.numpy(), 1.0 - 0.5 - 0.25)
    with pytest.raises(tp.errors.InvalidArgumentError):
        opt.learning_rate = -1.0
    opt.learning_rate = tp.constant(0.125)  # a scalar tensor is read as its value
    assert opt.learning_rate == 0.125
    schedule = tp.keras.optimizers.SGD(learning_rate=lambda step: 1.0 / (step + 1))
    w = tp.Variable(0.0)
    for _ in range(3):
        schedule.apply_gradients([(1.0, w)])
    close(w.numpy(), -(1.0 + 0.5 + 1.0 / 3))


def test_none_gradients_are_skipped_with_a_warning():
    a, b = tp.Variable(1.0, name="a"), tp.Variable(1.0, name="b")
    opt = tp.keras.optimizers.SGD(learning_rate=1.0)
    with pytest.warns(UserWarning, match=r"Gradients do not exist for variables \['b:0'\]"):
        opt.apply_gradients([(2.0, a), (None, b)])
    assert a.numpy() == -1.0 and b.numpy() == 1.0
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        opt.apply_gradients([(None, a)])


def test_minimize_with_a_callable_loss_and_with_a_tape():
    w = tp.Variable([1.0, -1.0])
    opt = tp.keras.optimizers.SGD(learning_rate=0.5)
    opt.minimize(lambda: relu(add(w, w)), var_list=[w])  # d/dw = 2 where w > 0
    close(w.numpy(), [0.0, -1.0])
    x = tp.Variable([3.0, 1.0])
    with tp.GradientTape() as tape:
        loss = add(x, x)
    opt.minimize(loss, [x], tape=tape)
    close(x.numpy(), [2.0, 0.0])
    with pytest.raises(ValueError, match="`tape` is required"):
        opt.minimize(loss, [x])


def test_bad_steps_change_nothing():
    v, w = tp.Variable([1.0, 2.0]), tp.Variable(3.0)
    opt = tp.keras.optimizers.Adam()
    with pytest.raises(tp.errors.InvalidArgumentError):
        opt.apply_gradients([([1.0, 1.0], v), ([1.0, 1.0], w)])  # wrong shape for w
    with pytest.raises(tp.errors.InvalidArgumentError):
        opt.apply_gradients([([1.0, 1.0], v), ([1.0, 1.0], v)])  # listed twice
    with pytest.raises(TypeError, match="a tp.Variable is needed"):
        opt.apply_gradients([(1.0, tp.constant(1.0))])
    with pytest.raises(TypeError, match="pairs"):
        opt.apply_gradients([v])
    assert v.numpy().tolist() == [1.0, 2.0] and w.numpy() == 3.0 and opt.iterations == 0
    with pytest.raises(NotImplementedError, match="amsgrad"):
        tp.keras.optimizers.Adam(amsgrad=True)
    with pytest.raises(NotImplementedError, match="clipnorm=1.0 is not supported"):
        tp.keras.optimizers.SGD(clipnorm=1.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        tp.keras.optimizers.Adam(bogus=1)
    tp.keras.optimizers.SGD(clipnorm=None, jit_compile=False)  # neutral values are fine


def test_gradient_descent_optimizer_tf1_name():
    w = tp.Variable([2.0, -2.0])
    step = tp.Variable(0, dtype=tp.int64)
    opt = tp.train.GradientDescentOptimizer(learning_rate=0.1)
    assert opt.name == "GradientDescent"
    opt.minimize(lambda: relu(w), global_step=step, var_list=[w])
    close(w.numpy(), [1.9, -2.0])
    assert step.numpy() == 1


def test_optimizer_keeps_what_it_needs_alive():
    opt = tp.keras.optimizers.SGD(learning_rate=0.1, momentum=0.5)
    v = tp.Variable([1.0])
    opt.apply_gradients([([1.0], v)])
    slot = opt.get_slot(v, "momentum")
    before = sys.getrefcount(v)
    del opt  # the slot keeps the C optimizer; the optimizer keeps v
    close(slot.numpy(), [-0.1])
    assert sys.getrefcount(v) == before
    with pytest.raises(tp.errors.NotFoundError):
        tp.keras.optimizers.SGD(momentum=0.5).get_slot(v, "momentum")
