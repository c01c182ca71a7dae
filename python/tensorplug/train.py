# SPDX-License-Identifier: Apache-2.0
"""tp.train: TensorFlow 1's optimizer names, which "Using GPUs" still writes."""
from .keras.optimizers import SGD as _SGD

__all__ = ["GradientDescentOptimizer"]


class GradientDescentOptimizer(_SGD):
    """tf.compat.v1.train.GradientDescentOptimizer: variable -= learning_rate * gradient."""

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(learning_rate=learning_rate, name=name)

    def minimize(self, loss, global_step=None, var_list=None, tape=None, **kwargs):
        """One step on `loss` (a callable in eager mode); `global_step`, a variable, counts
        steps as in TensorFlow 1."""
        if var_list is None:
            raise ValueError("GradientDescentOptimizer.minimize needs var_list in eager mode")
        result = super().minimize(loss, var_list, tape=tape)
        if global_step is not None:
            global_step.assign_add(1)
        return result
