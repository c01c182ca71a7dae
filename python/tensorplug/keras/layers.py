# SPDX-License-Identifier: Apache-2.0
"""tp.keras.layers: Input, Dense, Conv2D, MaxPooling2D, Flatten, Reshape, Activation.

A layer called on a symbolic Input (or another layer's symbolic output) builds its weights for
that shape and returns a new symbolic tensor, which models.Model follows back to its input. A
layer called on values (a Tensor, a NumPy array) computes its output through the C forward
pass of a one-layer KerasProgram. A layer built inside strategy.scope() has a copy of each
weight on every replica's device."""
import itertools

import numpy as np

from .. import _tensorplug
from .. import distribute
from . import initializers

_counters = {}


def _unique_name(base):
    count = _counters.setdefault(base, itertools.count())
    index = next(count)
    return base if index == 0 else "%s_%d" % (base, index)


def _pair(value, what):
    if isinstance(value, int):
        return (value, value)
    value = tuple(value)
    if len(value) != 2 or not all(isinstance(v, int) for v in value):
        raise ValueError("%s must be an int or a pair of ints, not %r" % (what, value))
    return value


def _activation(name):
    if name is None or name == "linear":
        return None
    if name in ("relu", "sigmoid", "tanh", "softmax"):
        return name
    raise ValueError("unknown activation %r (linear, relu, sigmoid, tanh, softmax)" % (name,))


class KerasTensor:
    """A symbolic tensor: the shape (None for the batch) of what a layer will output."""

    def __init__(self, shape, layer=None, source=None, name=None):
        self.shape = tuple(shape)
        self.dtype = "float32"
        self.name = name
        self._layer = layer    # the layer that makes it; None for an Input
        self._source = source  # the KerasTensor that layer was called on

    def __repr__(self):
        origin = "" if self._layer is None else " (created by layer '%s')" % self._layer.name
        return "<KerasTensor: shape=%s dtype=float32%s>" % (self.shape, origin)


def Input(shape=None, batch_size=None, name=None, dtype=None, **kwargs):
    """A model's symbolic input: rows of `shape` (the batch dimension left out)."""
    del kwargs
    if shape is None:
        raise ValueError("Input needs shape=, the shape of one row (without the batch)")
    if dtype not in (None, "float32") and getattr(dtype, "name", None) != "float32":
        raise ValueError("Keras models here take float32 inputs, not %r" % (dtype,))
    shape = tuple(int(d) for d in shape)
    return KerasTensor((batch_size,) + shape, name=name or _unique_name("input"))


class Layer:
    """What every layer shares: a name, its weights (one list per replica), build on first
    call."""

    _base_name = "layer"
    _weight_names = ()

    def __init__(self, name=None, input_shape=None, trainable=True, **kwargs):
        self.name = name or _unique_name(self._base_name)
        self.trainable = trainable
        self.built = False
        self._input_shape = tuple(input_shape) if input_shape is not None else None
        self._replica_weights = [[]]
        self._strategy = None
        self._program = None
        self._has_bias = False
        if kwargs.get("batch_input_shape") is not None:
            self._input_shape = tuple(kwargs["batch_input_shape"])[1:]

    # -- weights ----------------------------------------------------------------------------

    def add_weight(self, name, shape, initializer):
        """A weight drawn by `initializer`: one tp.Variable, or a copy per replica's device
        under a strategy's scope."""
        value = np.asarray(initializers.get(initializer)(shape, "float32"), dtype=np.float32)
        full_name = "%s/%s" % (self.name, name)
        strategy = self._strategy
        if strategy is None:
            variables = [_tensorplug.Variable(value, name=full_name)]
        else:
            variables = [_tensorplug.Variable(copy, name=full_name)
                         for copy in _tensorplug._mirror(strategy._c, value)]
            strategy._initial_values(variables)  # worker 0's, under several workers
        if len(self._replica_weights) != len(variables):
            self._replica_weights = [[] for _ in variables]
        for replica, variable in zip(self._replica_weights, variables):
            replica.append(variable)
        return variables[0]

    @property
    def weights(self):
        return list(self._replica_weights[0])

    variables = weights

    @property
    def trainable_weights(self):
        """The weights training updates: none once trainable is False (read at compile)."""
        return self.weights if self.trainable else []

    trainable_variables = trainable_weights

    @property
    def non_trainable_weights(self):
        return [] if self.trainable else self.weights

    def get_weights(self):
        return [w.read_value().numpy() for w in self._replica_weights[0]]

    def set_weights(self, weights):
        if len(weights) != len(self._replica_weights[0]):
            raise ValueError("layer %s has %d weights, not %d" % (
                self.name, len(self._replica_weights[0]), len(weights)))
        for replica in self._replica_weights:
            for variable, value in zip(replica, weights):
                variable.assign(np.asarray(value, dtype=np.float32))

    # -- building and calling ---------------------------------------------------------------

    def build(self, input_shape):
        self.built = True

    def _ensure_built(self, input_shape):
        if not self.built:
            self._strategy = distribute.get_strategy()
            self.build(tuple(input_shape))
            self.built = True

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def _description(self, offset):
        """This layer's description for a KerasProgram, its weights indexed from `offset`."""
        raise NotImplementedError

    def __call__(self, inputs, *args, **kwargs):
        if isinstance(inputs, KerasTensor):
            self._ensure_built(inputs.shape)
            return KerasTensor(self.compute_output_shape(inputs.shape), self, inputs)
        values = inputs if hasattr(inputs, "numpy") else np.asarray(inputs, dtype=np.float32)
        self._ensure_built(tuple(values.shape))
        if self._program is None:
            self._program = _tensorplug.KerasProgram(
                [self._description(0)], [list(r) for r in self._replica_weights],
                None if self._strategy is None else self._strategy._c)
        return self._program(values)

    def count_params(self):
        return int(sum(np.prod(w.read_value().numpy().shape) for w in self.weights))

    def __repr__(self):
        return "<%s name=%s, built=%s>" % (type(self).__name__, self.name, self.built)


class Dense(Layer):
    """activation(x @ kernel + bias)."""

    _base_name = "dense"

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        if int(units) <= 0:
            raise ValueError("Dense needs a positive number of units, not %r" % (units,))
        self.units = int(units)
        self.activation = _activation(activation)
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer

    def build(self, input_shape):
        if len(input_shape) != 2:
            raise ValueError("Dense takes rows (batch, features), not shape %s; Flatten first"
                             % (input_shape,))
        self.kernel = self.add_weight("kernel", (input_shape[-1], self.units),
                                      self.kernel_initializer)
        self.bias = self.add_weight("bias", (self.units,), self.bias_initializer) \
            if self.use_bias else None
        self.built = True

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def _description(self, offset):
        return ("dense", offset, offset + 1 if self.use_bias else -1, self.activation)


def _conv_size(size, window, stride, padding):
    if size is None:
        return None
    if padding == "same":
        return -(-size // stride)
    return (size - window) // stride + 1


class Conv2D(Layer):
    """A 2-D convolution of NHWC images, its bias and activation."""

    _base_name = "conv2d"

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 data_format=None, **kwargs):
        super().__init__(**kwargs)
        if data_format not in (None, "channels_last"):
            raise ValueError("Conv2D takes channels_last (NHWC) images only")
        self.filters = int(filters)
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.strides = _pair(strides, "strides")
        self.padding = padding.lower()
        if self.padding not in ("valid", "same"):
            raise ValueError("padding must be 'valid' or 'same', not %r" % (padding,))
        self.activation = _activation(activation)
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer

    def build(self, input_shape):
        if len(input_shape) != 4:
            raise ValueError("Conv2D takes images (batch, height, width, channels), not shape %s"
                             % (input_shape,))
        self.kernel = self.add_weight("kernel", self.kernel_size + (input_shape[-1], self.filters),
                                      self.kernel_initializer)
        self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer) \
            if self.use_bias else None
        self.built = True

    def compute_output_shape(self, input_shape):
        return (input_shape[0],
                _conv_size(input_shape[1], self.kernel_size[0], self.strides[0], self.padding),
                _conv_size(input_shape[2], self.kernel_size[1], self.strides[1], self.padding),
                self.filters)

    def _description(self, offset):
        return ("conv2d", offset, offset + 1 if self.use_bias else -1, self.activation,
                self.strides, self.padding)


class MaxPooling2D(Layer):
    """The largest value of each pool_size window, moved by strides (default: pool_size)."""

    _base_name = "max_pooling2d"

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(**kwargs)
        if data_format not in (None, "channels_last"):
            raise ValueError("MaxPooling2D takes channels_last (NHWC) images only")
        self.pool_size = _pair(pool_size, "pool_size")
        self.strides = _pair(strides, "strides") if strides is not None else self.pool_size
        self.padding = padding.lower()
        if self.padding not in ("valid", "same"):
            raise ValueError("padding must be 'valid' or 'same', not %r" % (padding,))

    def compute_output_shape(self, input_shape):
        return (input_shape[0],
                _conv_size(input_shape[1], self.pool_size[0], self.strides[0], self.padding),
                _conv_size(input_shape[2], self.pool_size[1], self.strides[1], self.padding),
                input_shape[3])

    def _description(self, offset):
        return ("maxpool", self.pool_size, self.strides, self.padding)


MaxPool2D = MaxPooling2D


class Flatten(Layer):
    """Each row's values in one dimension: (batch, ...) to (batch, product)."""

    _base_name = "flatten"

    def compute_output_shape(self, input_shape):
        rest = input_shape[1:]
        return (input_shape[0], None if None in rest else int(np.prod(rest)))

    def _description(self, offset):
        return ("flatten",)


class Reshape(Layer):
    """Each row to target_shape."""

    _base_name = "reshape"

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)

    def compute_output_shape(self, input_shape):
        return (input_shape[0],) + self.target_shape

    def _description(self, offset):
        return ("reshape", self.target_shape)


class Activation(Layer):
    """An activation alone."""

    _base_name = "activation"

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = _activation(activation)

    def _description(self, offset):
        return ("activation", self.activation)


__all__ = ["Activation", "Conv2D", "Dense", "Flatten", "Input", "KerasTensor", "Layer",
           "MaxPool2D", "MaxPooling2D", "Reshape"]
