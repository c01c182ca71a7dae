# SPDX-License-Identifier: Apache-2.0
"""tp.keras: the part of Keras the documents use."""
from . import optimizers  # noqa: F401
