# SPDX-License-Identifier: Apache-2.0
"""tp.nn: the neural-network ops under TensorFlow's names."""
from ._tensorplug import relu  # noqa: F401
