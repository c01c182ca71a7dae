# SPDX-License-Identifier: Apache-2.0
"""tp.linalg: matrix products under TensorFlow's names."""
from ._tensorplug import matmul  # noqa: F401
