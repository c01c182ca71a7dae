# SPDX-License-Identifier: Apache-2.0
"""tp.math: the element-wise, comparison and reduction ops under TensorFlow's names."""
from ._tensorplug import (  # noqa: F401
    abs, add, add_n, argmax, argmin, divide, equal, exp, greater, greater_equal, less,
    less_equal, log, log_softmax, maximum, minimum, multiply, negative, not_equal, pow,
    reduce_max, reduce_mean, reduce_min, reduce_prod, reduce_sum, rsqrt, sigmoid, sign, softmax, sqrt, square, subtract, tanh,
    truediv, unsorted_segment_sum)
