# SPDX-License-Identifier: Apache-2.0
"""tp.keras.optimizers: Keras's SGD and Adam over the C API's optimizers (tp_optimizer_*).

Each optimizer keeps its state (the step count, and momentum or Adam's m and v per variable)
as variables in C; a step is one tp_optimizer_apply call, all or nothing."""
import warnings

from .. import _tensorplug

__all__ = ["Optimizer", "SGD", "Adam", "get"]


# Keras's common optimizer arguments: accepted at the value that changes nothing, refused
# otherwise rather than silently ignored.
_NEUTRAL = {"weight_decay": None, "clipnorm": None, "clipvalue": None, "global_clipnorm": None,
            "use_ema": False, "ema_momentum": 0.99, "ema_overwrite_frequency": None,
            "jit_compile": True, "decay": 0.0}


def _check_common(kind, kwargs):
    for key, value in kwargs.items():
        if key not in _NEUTRAL:
            raise TypeError("%s() got an unexpected keyword argument '%s'" % (kind, key))
        if value != _NEUTRAL[key] and not (key == "jit_compile" and value is False):
            raise NotImplementedError("tp.keras.optimizers.%s: %s=%r is not supported"
                                      % (kind, key, value))


def _number(value):
    """A learning rate as a float: a Python number, or a scalar tensor or variable."""
    try:
        return float(value)
    except TypeError:
        if hasattr(value, "numpy"):
            return float(value.numpy())
        raise


class Optimizer:
    """What SGD and Adam share: apply_gradients, minimize, iterations, learning_rate."""

    _kind = None

    def __init__(self, name, learning_rate, **options):
        self.name = name
        self._schedule = learning_rate if callable(learning_rate) else None
        first = self._schedule(0) if self._schedule is not None else learning_rate
        self._optimizer = _tensorplug._Optimizer(self._kind, learning_rate=_number(first),
                                                 **options)

    @property
    def learning_rate(self):
        """The step size, a float; set it between steps (or pass a schedule, a callable of the
        step number)."""
        return self._optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        if callable(value):
            self._schedule = value
            value = value(self.iterations)
        else:
            self._schedule = None
        self._optimizer.learning_rate = _number(value)

    lr = learning_rate

    @property
    def iterations(self):
        """The number of steps made so far."""
        return self._optimizer.iterations

    def variables(self):
        """The state variables: the step count first, then each variable's slots."""
        return self._optimizer.variables()

    def build(self, var_list):
        """Makes the slots of `var_list` now (zeros), as the first step would."""
        self._optimizer.build(list(var_list))

    def get_slot(self, var, slot_name):
        return self._optimizer.slot(var, slot_name)

    def apply_gradients(self, grads_and_vars, name=None, skip_gradients_aggregation=False,
                        **kwargs):
        """One step over (gradient, variable) pairs. A None gradient skips its variable,
        with the warning Keras gives; none at all is a ValueError. Returns the step count."""
        pairs = list(grads_and_vars)
        for pair in pairs:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError("apply_gradients takes (gradient, variable) pairs, not %r"
                                % (pair,))
        kept = [(g, v) for g, v in pairs if g is not None]
        missing = [v.name for g, v in pairs if g is None]
        if not kept:
            raise ValueError("No gradients provided for any variable: %s." % (
                [v.name for _, v in pairs],))
        if missing:
            warnings.warn("Gradients do not exist for variables %s when minimizing the loss."
                          % missing, stacklevel=2)
        if self._schedule is not None:
            self._optimizer.learning_rate = _number(self._schedule(self.iterations))
        self._optimizer.apply([v for _, v in kept], [g for g, _ in kept])
        return self.iterations

    def compute_gradients(self, loss, var_list, tape=None):
        """(gradient, variable) pairs of `loss` (a callable, or a tensor with `tape`)."""
        from .._tensorplug import GradientTape
        if callable(var_list):
            var_list = var_list()
        var_list = list(var_list)
        if callable(loss):
            with GradientTape() as tape:
                loss = loss()
        elif tape is None:
            raise ValueError("`tape` is required when a `Tensor` loss is passed. Received: "
                             "loss=%r, tape=None." % (loss,))
        return list(zip(tape.gradient(loss, var_list), var_list))

    def minimize(self, loss, var_list, tape=None):
        """One step of minimizing `loss`, a callable taking no argument (or a tensor recorded
        on `tape`), with respect to `var_list`."""
        return self.apply_gradients(self.compute_gradients(loss, var_list, tape))

    def get_config(self):
        return {"name": self.name, "learning_rate": self.learning_rate}

    def __repr__(self):
        return "<tp.keras.optimizers.%s learning_rate=%g iterations=%d>" % (
            type(self).__name__, self.learning_rate, self.iterations)


class SGD(Optimizer):
    """Gradient descent, with momentum and Nesterov momentum as Keras's SGD."""

    _kind = "SGD"

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD", **kwargs):
        _check_common("SGD", kwargs)
        super().__init__(name, learning_rate, momentum=float(momentum),
                         nesterov=bool(nesterov))
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)

    def get_config(self):
        config = super().get_config()
        config.update(momentum=self.momentum, nesterov=self.nesterov)
        return config


class Adam(Optimizer):
    """Adam, as Keras computes it (bias correction folded into the step size)."""

    _kind = "Adam"

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, name="Adam", **kwargs):
        if amsgrad:
            raise NotImplementedError("tp.keras.optimizers.Adam: amsgrad is not supported")
        _check_common("Adam", kwargs)
        super().__init__(name, learning_rate, beta_1=float(beta_1), beta_2=float(beta_2),
                         epsilon=float(epsilon))
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)

    def get_config(self):
        config = super().get_config()
        config.update(beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon)
        return config


_BY_NAME = {"sgd": SGD, "adam": Adam}


def get(identifier):
    """An optimizer from its name ('sgd', 'adam'), or the optimizer given, as Keras's get."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        return _BY_NAME[identifier.lower()]()
    raise ValueError("Could not interpret optimizer identifier: %r" % (identifier,))
