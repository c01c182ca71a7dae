# SPDX-License-Identifier: Apache-2.0
"""tp.keras: layers against NumPy, functional and Sequential models, compile/fit/evaluate/
predict, the progress lines, optimizer steps against hand-computed ones, data-parallel training
equal to one device's, memory given back, errors."""
import gc
import re
import weakref

import numpy as np
import pytest

import tensorplug as tp
from conftest import run_snippet

BASE = {"TP_APU_DEVICES": "", "TP_APU_MEMORY": "", "TP_VISIBLE_DEVICES": "",
        "TP_FORCE_ALLOW_GROWTH": "", "TP_LOG_DEVICE_PLACEMENT": "0", "TP_PLUGIN_PATH": "",
        "TP_LOG_LEVEL": ""}
CPU = ["/cpu:0"]


def line_data():
    x = np.linspace(-1.0, 1.0, 64, dtype=np.float32).reshape(64, 1)
    return x, 2.0 * x + 1.0


def test_using_gpus_snippet_learns_y_equals_2x_plus_1(capfd):
    strategy = tp.distribute.MirroredStrategy(CPU)
    with strategy.scope():
        inputs = tp.keras.layers.Input(shape=(1,))
        predictions = tp.keras.layers.Dense(1)(inputs)
        model = tp.keras.models.Model(inputs=inputs, outputs=predictions)
        model.compile(loss='mse',
                      optimizer=tp.train.GradientDescentOptimizer(learning_rate=0.2))
    x, y = line_data()
    history = model.fit(x, y, batch_size=16, epochs=20)
    kernel, bias = model.get_weights()
    assert kernel.shape == (1, 1) and bias.shape == (1,)
    assert kernel[0, 0] == pytest.approx(2.0, abs=0.02)
    assert bias[0] == pytest.approx(1.0, abs=0.02)
    assert len(history.history["loss"]) == 20
    assert history.history["loss"][-1] < 1e-3 < history.history["loss"][0]
    out = capfd.readouterr().out.splitlines()
    assert out[0] == "Epoch 1/20" and out[2] == "Epoch 2/20"
    assert re.fullmatch(r"4/4 \[=+\] - \d+s \d+(us|ms)/step - loss: \d\.\d{4}(e-\d\d)?", out[1])
    assert len(out[1].split("[")[1].split("]")[0]) == 30
    assert model.evaluate(x, y, verbose=0) < 1e-3
    p = model.predict(np.array([[0.0], [1.0]], np.float32))
    assert isinstance(p, np.ndarray) and p.shape == (2, 1)
    np.testing.assert_allclose(p[:, 0], [1.0, 3.0], atol=0.05)


def test_two_replicas_train_as_one_device_does():
    # The same start, the same batches: every step's update must be the one device's, with
    # batches that split evenly (16) and unevenly (15 rows: 8 and 7) among the replicas.
    out, _ = run_snippet('''
import numpy as np
import tensorplug as tp
cpu = tp.config.list_physical_devices('CPU')[0]
tp.config.set_logical_device_configuration(
    cpu, [tp.config.LogicalDeviceConfiguration(memory_limit=256)] * 2)
x = np.linspace(-1.0, 1.0, 64, dtype=np.float32).reshape(64, 1)
y = 2.0 * x + 1.0
for devices in (['/cpu:0'], ['/cpu:0', '/cpu:1']):
    for batch in (16, 15):
        strategy = tp.distribute.MirroredStrategy(devices)
        with strategy.scope():
            inputs = tp.keras.layers.Input(shape=(1,))
            hidden = tp.keras.layers.Dense(4, activation='tanh',
                kernel_initializer=tp.keras.initializers.GlorotUniform(seed=3))(inputs)
            predictions = tp.keras.layers.Dense(1,
                kernel_initializer=tp.keras.initializers.GlorotUniform(seed=4))(hidden)
            model = tp.keras.models.Model(inputs=inputs, outputs=predictions)
            model.compile(loss='mse', optimizer=tp.keras.optimizers.SGD(0.1, momentum=0.5))
        # one optimizer step per batch, updating every replica's copy and its slots
        assert model.optimizer.iterations == 0
        h = model.fit(x, y, batch_size=batch, epochs=5, shuffle=False, verbose=0)
        copies = [[v.numpy() for v in replica] for replica in model._layers[1]._replica_weights]
        same = all(np.array_equal(c[0], copies[0][0]) for c in copies)
        assert model.optimizer.iterations == 5 * -(-64 // batch)
        assert len(model.optimizer.variables()) == 1 + 4 * len(devices)  # count, momenta
        print(len(devices), batch, repr(h.history['loss'][-1]), same,
              ' '.join(repr(float(v)) for w in model.get_weights() for v in w.ravel()))
''', BASE)
    rows = [line.split() for line in out.splitlines()]
    assert [r[:2] for r in rows] == [["1", "16"], ["1", "15"], ["2", "16"], ["2", "15"]]
    assert all(r[3] == "True" for r in rows)  # every replica's copy took the same update
    for one, two in ((rows[0], rows[2]), (rows[1], rows[3])):
        assert float(two[2]) == pytest.approx(float(one[2]), rel=1e-4)
        np.testing.assert_allclose([float(v) for v in two[4:]], [float(v) for v in one[4:]],
                                   rtol=1e-4, atol=1e-6)
    assert float(rows[0][2]) < 0.05


def test_dense_against_numpy():
    layer = tp.keras.layers.Dense(3, activation="relu")
    x = np.array([[1.0, -2.0], [0.5, 4.0]], np.float32)
    with tp.device("/cpu:0"):
        y = layer(x)
    kernel, bias = layer.get_weights()
    assert kernel.shape == (2, 3) and bias.tolist() == [0.0, 0.0, 0.0]
    limit = np.sqrt(6.0 / 5)
    assert np.all(np.abs(kernel) <= limit) and np.any(kernel != 0)
    np.testing.assert_allclose(y.numpy(), np.maximum(x @ kernel, 0.0), rtol=1e-6)
    layer.set_weights([np.ones((2, 3)), np.array([1.0, 2.0, 3.0])])
    np.testing.assert_allclose(layer(x).numpy(), np.maximum(x @ np.ones((2, 3)) + [1, 2, 3], 0))
    assert layer.kernel.name.startswith(layer.name + "/kernel")


def numpy_conv_same(x, k):
    n, h, w, c = x.shape
    kh, kw, _, o = k.shape
    padded = np.pad(x, ((0, 0), (kh // 2, kh - 1 - kh // 2), (kw // 2, kw - 1 - kw // 2), (0, 0)))
    out = np.zeros((n, h, w, o), np.float32)
    for i in range(h):
        for j in range(w):
            out[:, i, j, :] = np.tensordot(padded[:, i:i + kh, j:j + kw, :], k, axes=3)
    return out


def test_conv_pool_flatten_model_against_numpy():
    layers = tp.keras.layers
    inputs = layers.Input(shape=(4, 4, 2))
    conv = layers.Conv2D(3, 3, padding="same", activation="relu")
    pooled = layers.MaxPooling2D(pool_size=2)
    conv_out = conv(inputs)
    assert conv_out.shape == (None, 4, 4, 3)
    pool_out = pooled(conv_out)
    assert pool_out.shape == (None, 2, 2, 3)
    flat = layers.Flatten()(pool_out)
    assert flat.shape == (None, 12)
    valid = layers.Conv2D(5, (3, 2), strides=(1, 2))
    assert valid.compute_output_shape((None, 7, 8, 1)) == (None, 5, 4, 5)
    model = tp.keras.Model(inputs=inputs, outputs=flat)
    x = np.random.RandomState(0).normal(size=(3, 4, 4, 2)).astype(np.float32)
    with tp.device("/cpu:0"):
        got = model.predict(x)
    k, b = conv.get_weights()
    c = np.maximum(numpy_conv_same(x, k) + b, 0.0)
    expected = c.reshape(3, 2, 2, 2, 2, 3).max(axis=(2, 4)).reshape(3, 12)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_one_sgd_step_matches_the_hand_computed_one():
    layer = tp.keras.layers.Dense(1, kernel_initializer="ones")
    inputs = tp.keras.layers.Input(shape=(1,))
    model = tp.keras.models.Model(inputs=inputs, outputs=layer(inputs))
    model.compile(optimizer=tp.keras.optimizers.SGD(learning_rate=0.1), loss="mse")
    x = np.array([[1.0], [2.0]], np.float32)
    with tp.device("/cpu:0"):
        history = model.fit(x, np.zeros((2, 1), np.float32), batch_size=2, verbose=0)
    # predictions 1 and 2: loss (1 + 4) / 2; d/dw = mean(2 p x) = 5, d/db = mean(2 p) = 3
    assert history.history["loss"] == [pytest.approx(2.5)]
    kernel, bias = model.get_weights()
    assert kernel[0, 0] == pytest.approx(1.0 - 0.1 * 5.0)
    assert bias[0] == pytest.approx(-0.1 * 3.0)
    assert model.optimizer.iterations == 1  # the optimizer given stepped once


def test_sequential_softmax_classifier_with_accuracy(capfd):
    tp.keras.utils.set_random_seed(0)
    rng = np.random.RandomState(1)
    x = rng.normal(size=(200, 2)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int32)
    model = tp.keras.Sequential([
        tp.keras.layers.Dense(8, activation="relu", input_shape=(2,)),
        tp.keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    assert isinstance(model.optimizer, tp.keras.optimizers.Adam)
    model.optimizer.learning_rate = 0.05
    with tp.device("/cpu:0"):
        history = model.fit(x, y, batch_size=32, epochs=10, validation_data=(x, y))
        loss, accuracy = model.evaluate(x, y, verbose=0)
        p = model.predict(x[:5])
    assert accuracy >= 0.95
    assert model.optimizer.iterations == 70
    assert history.history["accuracy"][-1] >= 0.9
    assert history.history["val_accuracy"][-1] == pytest.approx(accuracy)
    assert history.history["val_loss"][-1] == pytest.approx(loss, rel=1e-5)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-5)
    last = capfd.readouterr().out.splitlines()[-1]
    assert re.fullmatch(r"7/7 \[=+\] - \d+s \d+(us|ms)/step - loss: \S+ - accuracy: \d\.\d{4}"
                        r" - val_loss: \S+ - val_accuracy: \d\.\d{4}", last), last


def test_sequential_built_by_its_first_fit():
    model = tp.keras.Sequential()
    model.add(tp.keras.layers.Dense(1, kernel_initializer="zeros"))
    model.compile(optimizer=tp.keras.optimizers.SGD(0.5), loss="mse")
    x, y = line_data()
    with tp.device("/cpu:0"):
        model.fit(x, y, epochs=30, verbose=0)
    kernel, bias = model.get_weights()
    assert kernel[0, 0] == pytest.approx(2.0, abs=0.01) and bias[0] == pytest.approx(1.0, abs=0.01)


def test_model_memory_is_given_back():
    gc.collect()
    before = tp.config.experimental.get_memory_info("CPU:0")["current"]
    with tp.device("/cpu:0"):
        inputs = tp.keras.layers.Input(shape=(16,))
        model = tp.keras.Model(inputs, tp.keras.layers.Dense(256)(inputs))
        model.compile(optimizer=tp.keras.optimizers.Adam(), loss="mse")
        model.fit(np.ones((8, 16), np.float32), np.ones((8, 256), np.float32), verbose=0)
    assert tp.config.experimental.get_memory_info("CPU:0")["current"] > before
    kernel = weakref.ref(model.weights[0])
    del model, inputs
    gc.collect()
    assert kernel() is None
    assert tp.config.experimental.get_memory_info("CPU:0")["current"] == before


def test_errors():
    layers = tp.keras.layers
    inputs = layers.Input(shape=(3,))
    outputs = layers.Dense(2)(inputs)
    model = tp.keras.Model(inputs=inputs, outputs=outputs)
    x = np.ones((4, 3), np.float32)
    with pytest.raises(RuntimeError, match="must compile your model"):
        model.fit(x, np.ones((4, 2), np.float32))
    with pytest.raises(ValueError, match="unknown loss 'hinge'"):
        model.compile(optimizer="sgd", loss="hinge")
    with pytest.raises(ValueError, match="Could not interpret optimizer identifier: 'rmsprop'"):
        model.compile(optimizer="rmsprop", loss="mse")
    with pytest.raises(ValueError, match="ends in activation='softmax'"):
        model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match="unknown metric 'auc'"):
        model.compile(optimizer="sgd", loss="mse", metrics=["auc"])
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match="x and y are both needed"):
        model.fit(x)
    with pytest.raises(ValueError, match="different numbers of rows: 4 and 3"):
        model.fit(x, np.ones((3, 2), np.float32))
    with pytest.raises(tp.errors.InvalidArgumentError):
        model.fit(np.ones((4, 5), np.float32), np.ones((4, 2), np.float32), verbose=0)
    with pytest.raises(ValueError, match="Flatten first"):
        layers.Dense(2)(layers.Input(shape=(2, 2)))
    with pytest.raises(ValueError, match="unknown activation 'swish'"):
        layers.Dense(2, activation="swish")
    with pytest.raises(ValueError, match="padding must be"):
        layers.Conv2D(2, 3, padding="full")
    with pytest.raises(ValueError, match="do not come from the inputs"):
        tp.keras.Model(inputs=layers.Input(shape=(3,)), outputs=outputs)
    with pytest.raises(ValueError, match="unknown initializer"):
        layers.Dense(2, kernel_initializer="orthogonal")(layers.Input(shape=(3,)))


def test_custom_training_loop_with_gradient_tape():
    # model(x) reads its weights through the Variables, so a tp.GradientTape around it takes
    # gradients with respect to model.trainable_variables, as TensorFlow's custom loops do.
    inputs = tp.keras.layers.Input(shape=(1,))
    model = tp.keras.Model(inputs, tp.keras.layers.Dense(1, kernel_initializer="ones")(inputs))
    optimizer = tp.keras.optimizers.SGD(learning_rate=0.1)
    x = np.array([[1.0], [2.0]], np.float32)
    with tp.device("/cpu:0"):
        with tp.GradientTape() as tape:
            loss = tp.reduce_mean(tp.square(model(x)))
        grads = tape.gradient(loss, model.trainable_variables)
        assert [g.numpy().tolist() for g in grads] == [[[5.0]], [3.0]]
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    kernel, bias = model.get_weights()
    assert kernel[0, 0] == pytest.approx(0.5) and bias[0] == pytest.approx(-0.3)


def test_mirrored_model_memory_is_given_back_on_every_replica():
    out, _ = run_snippet('''
import gc
import numpy as np
import tensorplug as tp
cpu = tp.config.list_physical_devices('CPU')[0]
tp.config.set_logical_device_configuration(
    cpu, [tp.config.LogicalDeviceConfiguration(memory_limit=256)] * 2)
strategy = tp.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
info = tp.config.experimental.get_memory_info
before = [info(d)['current'] for d in ('CPU:0', 'CPU:1')]
with strategy.scope():
    inputs = tp.keras.layers.Input(shape=(32,))
    model = tp.keras.Model(inputs, tp.keras.layers.Dense(64)(inputs))
    model.compile(optimizer='adam', loss='mse')
model.fit(np.ones((16, 32), np.float32), np.zeros((16, 64), np.float32), verbose=0)
during = [info(d)['current'] for d in ('CPU:0', 'CPU:1')]
print([d > b for d, b in zip(during, before)])
print(model.layers[0]._replica_weights[1][0].device.endswith('CPU:1'))
del model, inputs
gc.collect()
print([info(d)['current'] for d in ('CPU:0', 'CPU:1')] == before)
''', BASE)
    assert out.splitlines() == ["[True, True]", "True", "True"]


def test_frozen_layers_keep_their_weights():
    strategy = tp.distribute.MirroredStrategy(CPU)
    with strategy.scope():
        inputs = tp.keras.layers.Input(shape=(1,))
        hidden_layer = tp.keras.layers.Dense(4, activation="tanh")
        output_layer = tp.keras.layers.Dense(1)
        model = tp.keras.Model(inputs, output_layer(hidden_layer(inputs)))
    hidden_layer.trainable = False  # read at compile, as Keras reads it
    model.compile(optimizer=tp.keras.optimizers.SGD(0.1, momentum=0.9), loss="mse")
    assert model.trainable_weights == output_layer.weights
    assert model.non_trainable_weights == hidden_layer.weights
    frozen = hidden_layer.get_weights()
    trained = output_layer.get_weights()
    x, y = line_data()
    model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    for before, after in zip(frozen, hidden_layer.get_weights()):
        np.testing.assert_array_equal(before, after)
    assert not np.array_equal(trained[0], output_layer.get_weights()[0])
    assert len(model.optimizer.variables()) == 1 + 2  # the step count, two momenta
    model.trainable = True
    model.compile(optimizer=tp.keras.optimizers.SGD(0.1), loss="mse")
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    assert not np.array_equal(frozen[0], hidden_layer.get_weights()[0])


def test_training_steps_leave_nothing_behind():
    # After a first epoch (slots made, caches warm), more epochs, evaluations, predictions and
    # replica runs leave no Python blocks, Tensor objects or device bytes behind.
    import sys
    probe = tp._tensorplug
    strategy = tp.distribute.MirroredStrategy(CPU)
    with strategy.scope():
        inputs = tp.keras.layers.Input(shape=(8,))
        hidden = tp.keras.layers.Dense(16, activation="relu")(inputs)
        model = tp.keras.Model(inputs, tp.keras.layers.Dense(3)(hidden))
        model.compile(optimizer="adam", metrics=["accuracy"],
                      loss=tp.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.RandomState(0)
    x, y = rng.rand(50, 8).astype(np.float32), rng.randint(0, 3, 50)

    def rounds():
        model.fit(x, y, batch_size=7, epochs=3, verbose=0)
        model.evaluate(x, y, verbose=0)
        model.predict(x)
        strategy.run(lambda: tp.distribute.get_replica_context().all_reduce(
            "SUM", tp.constant([1.0])))

    def snapshot():
        gc.collect()
        return (sys.getallocatedblocks(), probe._live_tensor_count(),
                probe._memory_stats("CPU:0")["bytes_in_use"])

    for _ in range(10):  # warm: the slots, NumPy's and the interpreter's caches
        rounds()
    before = snapshot()
    for _ in range(20):
        rounds()
    after = snapshot()
    assert after[1:] == before[1:]
    # Fewer Python blocks than steps (20 rounds of 24): a block kept per step would exceed it;
    # what remains is the allocator's arenas settling (it shrinks as the rounds go on).
    assert after[0] - before[0] < 20 * 24
