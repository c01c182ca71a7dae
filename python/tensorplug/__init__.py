# SPDX-License-Identifier: Apache-2.0
"""tensorplug: a tensor runtime whose devices are plug-ins, with TensorFlow's Python names.

    import tensorplug as tp          # plug-ins register their devices here
    tp.config.list_physical_devices()
    with tp.device("/APU:0"):
        c = tp.nn.relu(tp.random.normal(shape=[5]))
"""
from . import _plugins
from . import _tensorplug

_tensorplug._initialize(_plugins.plugin_path())

from ._shape import TensorShape  # noqa: E402

_tensorplug._set_tensor_shape_class(TensorShape)

from ._tensorplug import (  # noqa: E402
    DType, Tensor, Variable, bfloat16, bool, constant, double, float16, float32, float64, half, int8,
    int16, int32, int64, uint8, uint16, uint32, uint64)
from . import errors  # noqa: E402
from . import nn  # noqa: E402

# ---- Training (helper H4): tapes, optimizers, traced functions ----
from ._tensorplug import Function, GradientTape, function  # noqa: E402
from . import keras  # noqa: E402
from . import train  # noqa: E402
from .keras import optimizers  # noqa: E402
# ---- end of training ----

__version__ = _tensorplug.__version__

# ---- py-keras: tp.distribute, tp.keras, tp.datasets ----------------------------------------
from . import distribute  # noqa: E402,F401
from . import datasets  # noqa: E402,F401

# ---- H3: device configuration and scopes (tp.config, tp.debugging, tp.device) ----
from ._tensorplug import device  # noqa: E402
from . import config  # noqa: E402
from . import debugging  # noqa: E402
# "Using GPUs" names the memory fraction tf.gpu.set_per_process_memory_fraction() in its text
# and tf.config.gpu.set_per_process_memory_fraction() in its code: both names work here.
gpu = config.gpu

# ---- The ops under their TensorFlow names (tp.add, tp.matmul, tp.reduce_sum, ...) -------------
from ._tensorplug import (  # noqa: E402
    abs, add, add_n, argmax, argmin, cast, concat, divide, equal, exp, expand_dims, fill, gather,
    greater, greater_equal, identity, less, less_equal, matmul, maximum, minimum, multiply,
    negative, not_equal, one_hot, ones, ones_like, pad, rank, reduce_max, reduce_mean,
    reduce_min, reduce_prod, reduce_sum, reshape, shape, sigmoid, sign, size, slice, sqrt, square, squeeze, stack, strided_slice,
    subtract, tanh, tile, transpose, truediv, where, zeros, zeros_like)
from . import linalg, math, random  # noqa: E402

# ---- Tensor protocols (H1): tf.pow, tf.newaxis, tf.experimental.dlpack's from_dlpack ----------
from ._tensorplug import Reference, from_dlpack, pow  # noqa: E402,F401

newaxis = None
