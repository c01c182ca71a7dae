# SPDX-License-Identifier: Apache-2.0
"""tp.errors: the exceptions of failed operations, as tf.errors names them. Each is a subclass of
OpError and carries the runtime's message (`message`) and status code (`error_code`)."""
from ._tensorplug import errors as _classes

globals().update(_classes)
__all__ = sorted(_classes)
