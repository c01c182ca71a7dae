# SPDX-License-Identifier: Apache-2.0
"""tp.keras.initializers: a layer's starting weights, as Keras draws them. Without a seed they
come from NumPy's generator (tp.keras.utils.set_random_seed seeds it); with seed=S, the uniform
and normal ones come from the runtime's own seeded draw (tp_random_uniform, tp_random_normal),
so that a model seeded alike in Python and in C (examples/digits_*.c) starts from the same
weights. A kernel's fans, as Keras computes them: (inputs, units) for Dense, kernel_h * kernel_w
times the channels in and out for Conv2D."""
import math

import numpy as np

from .. import _tensorplug
from . import utils


class _RuntimeDraws:
    """The runtime's seeded U(0, 1) and N(0, 1), in NumPy's generator's words."""

    def __init__(self, seed):
        self.seed = seed

    def uniform(self, low, high, shape):
        u = _tensorplug._random("uniform", tuple(shape), self.seed).numpy()
        # (high - low) * u + low in float32, as the C examples compute limit * (2u - 1)
        return u * np.float32(high - low) + np.float32(low)

    def normal(self, mean, stddev, shape):
        z = _tensorplug._random("normal", tuple(shape), self.seed).numpy()
        return z * np.float32(stddev) + np.float32(mean)


def _fans(shape):
    if len(shape) < 2:
        return shape[0] if shape else 1, shape[0] if shape else 1
    receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer:
    def __init__(self, seed=None):
        self.seed = seed

    def _rng(self):
        return utils.rng() if self.seed is None else _RuntimeDraws(self.seed)

    def __call__(self, shape, dtype="float32"):
        return np.asarray(self._draw(tuple(int(d) for d in shape), self._rng()), dtype=dtype)


class Zeros(Initializer):
    def _draw(self, shape, rng):
        return np.zeros(shape)


class Ones(Initializer):
    def _draw(self, shape, rng):
        return np.ones(shape)


class RandomNormal(Initializer):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def _draw(self, shape, rng):
        return rng.normal(self.mean, self.stddev, shape)


class RandomUniform(Initializer):
    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        super().__init__(seed)
        self.minval, self.maxval = minval, maxval

    def _draw(self, shape, rng):
        return rng.uniform(self.minval, self.maxval, shape)


class GlorotUniform(Initializer):
    def _draw(self, shape, rng):
        fan_in, fan_out = _fans(shape)
        limit = math.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-limit, limit, shape)


def _truncated_normal(rng, stddev, shape):
    if isinstance(rng, _RuntimeDraws):
        rng = np.random.RandomState(rng.seed)  # redrawing needs a stream; NumPy's, seeded
    values = rng.normal(0.0, 1.0, shape)
    outside = np.abs(values) > 2.0
    while outside.any():  # redrawn until within two deviations, as Keras' truncated normal
        values[outside] = rng.normal(0.0, 1.0, int(outside.sum()))
        outside = np.abs(values) > 2.0
    return values * stddev


class GlorotNormal(Initializer):
    def _draw(self, shape, rng):
        fan_in, fan_out = _fans(shape)
        # .8796...: the deviation of a unit normal truncated at two deviations
        return _truncated_normal(rng, math.sqrt(2.0 / (fan_in + fan_out)) / .87962566103423978,
                                 shape)


class HeNormal(Initializer):
    def _draw(self, shape, rng):
        fan_in, _ = _fans(shape)
        return _truncated_normal(rng, math.sqrt(2.0 / fan_in) / .87962566103423978, shape)


class HeUniform(Initializer):
    def _draw(self, shape, rng):
        fan_in, _ = _fans(shape)
        limit = math.sqrt(6.0 / fan_in)
        return rng.uniform(-limit, limit, shape)


_BY_NAME = {
    "zeros": Zeros, "ones": Ones, "random_normal": RandomNormal, "random_uniform": RandomUniform,
    "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal, "he_normal": HeNormal,
    "he_uniform": HeUniform,
}


def get(identifier):
    """An initializer from its Keras name ('glorot_uniform'), an Initializer, or a callable
    (shape, dtype) -> values."""
    if isinstance(identifier, str):
        try:
            return _BY_NAME[identifier.lower()]()
        except KeyError:
            raise ValueError("unknown initializer %r (%s)"
                             % (identifier, ", ".join(sorted(_BY_NAME))))
    if callable(identifier):
        return identifier
    raise TypeError("an initializer is a name or a callable, not %s" % type(identifier).__name__)
