# SPDX-License-Identifier: Apache-2.0
"""tp.debugging: placement logging, as tf.debugging. With it on, each op run prints
"Executing op MatMul in device /job:localhost/replica:0/task:0/device:CPU:0" on standard
error (TP_LOG_DEVICE_PLACEMENT=1 in the environment turns it on too)."""
from . import _tensorplug as _c

__all__ = ["get_log_device_placement", "set_log_device_placement"]


def set_log_device_placement(enabled):
    _c._set_log_device_placement(bool(enabled))


def get_log_device_placement():
    return _c._get_log_device_placement()
