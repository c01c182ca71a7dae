# SPDX-License-Identifier: Apache-2.0
"""tp.keras: layers, functional and Sequential models, compile/fit/evaluate/predict, over the
C training code (keras.c): each step is one call into C, on every replica of a
tp.distribute.MirroredStrategy when the model was built in its scope."""
from . import initializers, layers, losses, models, optimizers, utils  # noqa: F401
from .layers import Input  # noqa: F401
from .models import Model, Sequential  # noqa: F401
