# SPDX-License-Identifier: Apache-2.0
"""tp.keras.losses: the losses compile() takes, by name or as objects. Each is computed by the
runtime's own op (tp_mean_squared_error, tp_sparse_softmax_cross_entropy) inside the C
training step."""


class Loss:
    name = None

    def _key(self):
        return self.name


class MeanSquaredError(Loss):
    name = "mean_squared_error"

    def __init__(self, name="mean_squared_error"):
        self.name = name

    def _key(self):
        return "mse"


class SparseCategoricalCrossentropy(Loss):
    def __init__(self, from_logits=False, name="sparse_categorical_crossentropy"):
        self.from_logits = from_logits
        self.name = name

    def _key(self):
        return ("sparse_categorical_crossentropy_logits" if self.from_logits
                else "sparse_categorical_crossentropy")


_NAMES = {"mse": "mse", "mean_squared_error": "mse", "MSE": "mse",
          "sparse_categorical_crossentropy": "sparse_categorical_crossentropy"}


def key(loss):
    """The C training step's name for `loss`."""
    if isinstance(loss, Loss):
        return loss._key()
    if isinstance(loss, str) and loss in _NAMES:
        return _NAMES[loss]
    raise ValueError("unknown loss %r: 'mse', 'sparse_categorical_crossentropy', "
                     "tp.keras.losses.MeanSquaredError() or SparseCategoricalCrossentropy()"
                     % (loss,))
