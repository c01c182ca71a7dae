# SPDX-License-Identifier: Apache-2.0
"""tp.keras.models: Model (functional: Model(inputs=, outputs=)) and Sequential, with compile,
fit, evaluate and predict as Keras has them.

A model is a chain of layers from its input to its output. compile() hands the chain and its
weights (each replica's copies, when the layers were built in a strategy's scope) to a C
KerasProgram, which runs every training step: the batch split among the replicas, forward
pass, loss and gradients on each replica's thread, the gradients all-reduced (MEAN, weighted by
each replica's share of the batch) and the optimizer applied to every copy at once, so the
copies stay equal and the step is the one a single device would take.

Under tp.distribute.MultiWorkerMirroredStrategy every worker calls fit with the same data and
batch_size (the global batch): each takes its own rows of every batch, the shuffled order is
worker 0's, and the loss and accuracy shown are those of the whole global batch."""
import math

import numpy as np

from .. import _tensorplug
from . import layers as layers_module
from . import losses as losses_module
from . import _progress, optimizers, utils


class History:
    """What fit returns: history[name] is the list of each epoch's value."""

    def __init__(self):
        self.history = {}
        self.epoch = []

    def _add(self, epoch, logs):
        self.epoch.append(epoch)
        for name, value in logs.items():
            self.history.setdefault(name, []).append(value)


def _as_array(value, dtype=None):
    if hasattr(value, "numpy"):
        value = value.numpy()
    array = np.asarray(value)
    if dtype is not None and array.dtype != dtype:
        array = array.astype(dtype)
    return np.ascontiguousarray(array)


def _optimizer_object(optimizer):
    """The tp.keras.optimizers object that trains the model: made from Keras' names ('sgd',
    'adam') as Keras makes it, or the one given (SGD, Adam, tp.train.GradientDescentOptimizer).
    Each step is one tp_optimizer_apply of its C half with every replica's variables."""
    if isinstance(optimizer, str):
        return optimizers.get(optimizer)
    if not hasattr(optimizer, "_optimizer") or not hasattr(optimizer, "apply_gradients"):
        raise ValueError("optimizer %s is not a tp.keras.optimizers optimizer (SGD, Adam, "
                         "tp.train.GradientDescentOptimizer)" % type(optimizer).__name__)
    return optimizer


class Model:
    """Model(inputs=Input(...), outputs=the last layer's symbolic output)."""

    def __init__(self, inputs=None, outputs=None, name=None):
        self.name = name or layers_module._unique_name("model")
        self._layers = []
        self._input = None
        self._program = None
        self._compiled = None
        self.optimizer = None
        self.loss = None
        self.history = None
        if inputs is not None or outputs is not None:
            self._init_functional(inputs, outputs)

    def _init_functional(self, inputs, outputs):
        if isinstance(inputs, (list, tuple)):
            if len(inputs) != 1:
                raise ValueError("a model here has one input, not %d" % len(inputs))
            inputs = inputs[0]
        if isinstance(outputs, (list, tuple)):
            if len(outputs) != 1:
                raise ValueError("a model here has one output, not %d" % len(outputs))
            outputs = outputs[0]
        if not isinstance(inputs, layers_module.KerasTensor) or \
                not isinstance(outputs, layers_module.KerasTensor):
            raise TypeError("Model(inputs=, outputs=) takes symbolic tensors: "
                            "tp.keras.layers.Input(...) and a layer's output on it")
        chain, current = [], outputs
        while current is not None and current is not inputs:
            if current._layer is None:
                raise ValueError("the outputs do not come from the inputs given to Model")
            chain.append(current._layer)
            current = current._source
        if current is None:
            raise ValueError("the outputs do not come from the inputs given to Model")
        self._layers = chain[::-1]
        self._input = inputs

    # -- structure --------------------------------------------------------------------------

    @property
    def layers(self):
        return list(self._layers)

    @property
    def weights(self):
        return [w for layer in self._layers for w in layer.weights]

    variables = weights

    @property
    def trainable_weights(self):
        return [w for layer in self._layers for w in layer.trainable_weights]

    trainable_variables = trainable_weights

    @property
    def non_trainable_weights(self):
        return [w for layer in self._layers for w in layer.non_trainable_weights]

    def get_weights(self):
        return [w for layer in self._layers for w in layer.get_weights()]

    def set_weights(self, weights):
        weights = list(weights)
        for layer in self._layers:
            count = len(layer.weights)
            layer.set_weights(weights[:count])
            weights = weights[count:]

    def count_params(self):
        return sum(layer.count_params() for layer in self._layers)

    def _strategy(self):
        strategies = {id(l._strategy): l._strategy for l in self._layers if l.weights}
        if len(strategies) > 1:
            raise ValueError("the layers of one model were built under different strategies")
        return next(iter(strategies.values()), None)

    def _build_program(self):
        descriptions, replicas = [], None
        strategy = self._strategy()
        # The copies this process holds: one per local replica (not every worker's).
        count = 1 if strategy is None else len(strategy.extended.worker_devices)
        replicas = [[] for _ in range(count)]
        for layer in self._layers:
            if layer.weights and len(layer._replica_weights) != count:
                raise ValueError("layer %s was built outside the model's strategy scope"
                                 % layer.name)
            descriptions.append(layer._description(len(replicas[0])))
            for r in range(count):
                replicas[r].extend(layer._replica_weights[r] if layer.weights else [])
        self._program = _tensorplug.KerasProgram(
            descriptions, replicas, None if strategy is None else strategy._c)

    @property
    def trainable(self):
        return all(layer.trainable for layer in self._layers)

    @trainable.setter
    def trainable(self, value):
        for layer in self._layers:
            layer.trainable = bool(value)

    def _trainable_flags(self):
        # One per variable in the program's order; Keras reads layer.trainable at compile.
        return [layer.trainable for layer in self._layers for _ in layer.weights]

    def _ensure_program(self, x_shape=None):
        if self._program is None:
            self._build_for(x_shape)
            self._build_program()
            if self._compiled is not None:
                self._program.compile(trainable=self._trainable_flags(), **self._compiled)

    def _build_for(self, x_shape):
        pass

    def summary(self, print_fn=print):
        print_fn('Model: "%s"' % self.name)
        print_fn("%-30s %-24s %s" % ("Layer (type)", "Output Shape", "Param #"))
        shape = self._input.shape if self._input is not None else None
        for layer in self._layers:
            if shape is not None:
                shape = layer.compute_output_shape(shape)
            print_fn("%-30s %-24s %d" % ("%s (%s)" % (layer.name, type(layer).__name__),
                                         shape, layer.count_params()))
        print_fn("Total params: %d" % self.count_params())

    # -- compile, fit, evaluate, predict ----------------------------------------------------

    def compile(self, optimizer="rmsprop", loss=None, metrics=None, **kwargs):
        if loss is None:
            raise ValueError("compile() needs a loss: 'mse' or 'sparse_categorical_crossentropy'")
        metrics = list(metrics or [])
        for metric in metrics:
            if metric not in ("accuracy", "acc", "sparse_categorical_accuracy"):
                raise ValueError("unknown metric %r: 'accuracy' is the one computed here"
                                 % (metric,))
        self._metric_name = metrics[0] if metrics else None
        if self._metric_name == "acc":
            self._metric_name = "accuracy"
        self.optimizer = _optimizer_object(optimizer)
        self._compiled = dict(loss=losses_module.key(loss), accuracy=bool(metrics),
                              optimizer=self.optimizer)
        self.loss = loss
        if self._layers:
            if self._program is None:
                self._ensure_program()  # compiles it
            else:
                self._program.compile(trainable=self._trainable_flags(), **self._compiled)

    def _prepare(self, x, y):
        if x is None or y is None:
            raise ValueError("x and y are both needed: arrays or tensors of the same number "
                             "of rows")
        x = _as_array(x, np.float32)
        key = self._compiled["loss"] if self._compiled else "mse"
        if key == "mse":
            y = _as_array(y, np.float32)
        else:
            y = _as_array(y)
            if y.ndim == 2 and y.shape[1] == 1:
                y = y[:, 0]
            if y.dtype not in (np.int32, np.int64):
                y = y.astype(np.int32)
            y = np.ascontiguousarray(y)
        if len(x) != len(y):
            raise ValueError("x and y have different numbers of rows: %d and %d"
                             % (len(x), len(y)))
        return x, y

    def _reshape_targets(self, y, out_shape):
        if y is not None and y.dtype == np.float32 and y.ndim == 1 and len(out_shape) == 2 \
                and out_shape[1] == 1:
            return y.reshape(-1, 1)
        return y

    def _scheduled_rate(self):
        # A learning-rate schedule is a function of the step, as apply_gradients applies it.
        schedule = getattr(self.optimizer, "_schedule", None)
        if schedule is not None:
            self.optimizer._optimizer.learning_rate = float(schedule(self.optimizer.iterations))

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose=1, callbacks=None,
            validation_data=None, shuffle=True, initial_epoch=0, **kwargs):
        if self._compiled is None:
            raise RuntimeError("You must compile your model before training/testing it. "
                               "Use `model.compile(optimizer, loss)`.")
        if verbose == "auto":
            verbose = 1
        batch_size = 32 if batch_size is None else int(batch_size)
        if batch_size <= 0:
            raise ValueError("batch_size must be positive, not %d" % batch_size)
        x, y = self._prepare(x, y)
        if len(x) == 0:
            raise ValueError("fit() needs at least one row")
        self._ensure_program(x.shape)
        y = self._reshape_targets(y, self._output_shape(x.shape))
        history = History()
        rows = len(x)
        steps = math.ceil(rows / batch_size)
        metric = self._metric_name
        strategy = self._strategy()
        for epoch in range(initial_epoch, epochs):
            if verbose:
                print("Epoch %d/%d" % (epoch + 1, epochs), flush=True)
            order = utils.rng().permutation(rows) if shuffle else None
            if order is not None and strategy is not None:
                # Every worker steps through the same global batches: worker 0's order.
                order = strategy._from_worker_0(order)
            bar = _progress.Progbar(steps, verbose)
            loss_sum, correct, seen = 0.0, 0, 0
            for step in range(steps):
                if order is None:
                    xb, yb = x[step * batch_size:(step + 1) * batch_size], \
                        y[step * batch_size:(step + 1) * batch_size]
                else:
                    index = order[step * batch_size:(step + 1) * batch_size]
                    xb, yb = x[index], y[index]
                self._scheduled_rate()
                loss, right = self._program.train_step(xb, yb)
                loss_sum += loss * len(xb)
                seen += len(xb)
                logs = [("loss", loss_sum / seen)]
                if metric is not None:
                    correct += right
                    logs.append((metric, correct / seen))
                bar.update(step + 1, logs, finalize=False)
            epoch_logs = dict(logs)
            if validation_data is not None:
                val = self.evaluate(*validation_data[:2], batch_size=batch_size, verbose=0,
                                    return_dict=True)
                for name, value in val.items():
                    epoch_logs["val_" + name] = value
            bar.update(steps, list(epoch_logs.items()), finalize=True)
            history._add(epoch, epoch_logs)
        self.history = history
        return history

    def _output_shape(self, x_shape):
        shape = (None,) + tuple(x_shape[1:])
        for layer in self._layers:
            shape = layer.compute_output_shape(shape)
        return shape

    def evaluate(self, x=None, y=None, batch_size=None, verbose=1, return_dict=False, **kwargs):
        if self._compiled is None:
            raise RuntimeError("You must compile your model before training/testing it. "
                               "Use `model.compile(optimizer, loss)`.")
        if verbose == "auto":
            verbose = 1
        batch_size = 32 if batch_size is None else int(batch_size)
        x, y = self._prepare(x, y)
        self._ensure_program(x.shape)
        y = self._reshape_targets(y, self._output_shape(x.shape))
        steps = math.ceil(len(x) / batch_size)
        bar = _progress.Progbar(steps, verbose)
        loss_sum, correct = 0.0, 0
        for step in range(steps):
            xb = x[step * batch_size:(step + 1) * batch_size]
            yb = y[step * batch_size:(step + 1) * batch_size]
            loss, right = self._program.test_step(xb, yb)
            loss_sum += loss * len(xb)
            correct += right or 0
        results = {"loss": loss_sum / len(x)}
        if self._metric_name is not None:
            results[self._metric_name] = correct / len(x)
        bar.update(steps, list(results.items()), finalize=True)
        if return_dict:
            return results
        values = list(results.values())
        return values[0] if len(values) == 1 else values

    def predict(self, x, batch_size=None, verbose=0, **kwargs):
        batch_size = 32 if batch_size is None else int(batch_size)
        x = _as_array(x, np.float32)
        self._ensure_program(x.shape)
        outputs = [self._program(x[i:i + batch_size]).numpy()
                   for i in range(0, len(x), batch_size)]
        if not outputs:
            raise ValueError("predict() needs at least one row")
        return np.concatenate(outputs)

    def __call__(self, inputs, training=None):
        if isinstance(inputs, layers_module.KerasTensor):
            output = inputs
            for layer in self._layers:
                output = layer(output)
            return output
        self._ensure_program(np.shape(inputs))
        return self._program(inputs)


class Sequential(Model):
    """A stack of layers; the first may say its input_shape=, else the first call or fit
    gives it."""

    def __init__(self, layers=None, name=None):
        super().__init__(name=name or layers_module._unique_name("sequential"))
        self._pending = []
        for layer in layers or []:
            self.add(layer)

    def add(self, layer):
        if isinstance(layer, layers_module.KerasTensor):
            self._input = layer  # an Input given as the first "layer"
            return
        if self._program is not None:
            raise ValueError("layers are added before the model is compiled or first used")
        self._layers.append(layer)
        if self._input is None and layer._input_shape is not None:
            self._input = layers_module.Input(shape=layer._input_shape)
        if self._input is not None:
            self._connect()

    def _connect(self):
        output = self._input
        for layer in self._layers:
            output = layer(output)

    def _build_for(self, x_shape):
        if self._input is None:
            if x_shape is None:
                raise ValueError("the model has no input shape yet: give the first layer "
                                 "input_shape=, or call fit or predict first")
            self._input = layers_module.Input(shape=tuple(x_shape[1:]))
            self._connect()

    def compile(self, *args, **kwargs):
        if self._input is None:
            # The program is made at the first fit, when the rows' shape is known.
            optimizer = kwargs.pop("optimizer", args[0] if args else "rmsprop")
            loss = kwargs.pop("loss", args[1] if len(args) > 1 else None)
            layers, self._layers = self._layers, []
            try:
                super().compile(optimizer=optimizer, loss=loss, **kwargs)
            finally:
                self._layers = layers
            return
        super().compile(*args, **kwargs)
