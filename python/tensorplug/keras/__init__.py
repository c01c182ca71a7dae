# SPDX-License-Identifier: Apache-2.0
"""tp.keras: layers, functional and Sequential models, compile/fit/evaluate/predict, over the
C training code (keras.c): each step is one call into C, on every replica of a
tp.distribute.MirroredStrategy when the model was built in its scope."""
from . import initializers, layers, losses, models, utils  # noqa: F401
from .layers import Input  # noqa: F401
from .models import Model, Sequential  # noqa: F401

import importlib.util as _util  # noqa: E402

# tp.keras.optimizers is the py-train branch's module (optimizers.py), imported once it exists.
if _util.find_spec(__name__ + ".optimizers") is not None:
    from . import optimizers  # noqa: F401
