# SPDX-License-Identifier: Apache-2.0
"""tp.nn: the neural-network ops under TensorFlow's names and signatures."""
from ._tensorplug import (  # noqa: F401
    avg_pool2d, bias_add, conv2d, dropout, fused_batch_norm, log_softmax, max_pool2d, relu,
    sigmoid, softmax, softmax_cross_entropy_with_logits,
    sparse_softmax_cross_entropy_with_logits, tanh)

# tf.nn.max_pool and avg_pool take an image of any rank; tensorplug pools 4-D (NHWC or NCHW)
# images, where they are max_pool2d and avg_pool2d.
max_pool = max_pool2d
avg_pool = avg_pool2d
