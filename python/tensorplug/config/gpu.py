# SPDX-License-Identifier: Apache-2.0
"""tp.config.gpu: the per-process memory settings "Using GPUs" shows, from TensorFlow's older
API. Each applies to every visible physical device that supports it:

- every device but the CPU: the host's CPU grows on demand anyway, and its memory is the
  whole process's, not the framework's to divide;
- not split into logical devices (each of those has its own limit, and the runtime refuses
  growth or a fraction on a split device);
- for a fraction, whose plug-in reports how much memory it has (a fraction of an unknown
  total cannot be computed; the runtime refuses it).

Devices are checked first and then configured, so a call that raises changes nothing, except
after the logical devices were made, when the first device already refuses: RuntimeError."""
import numbers

from . import experimental, get_logical_device_configuration, get_visible_devices
from .. import _tensorplug as _c


def _supporting(needs_memory_size):
    devices = []
    for device in get_visible_devices():
        if device.device_type.upper() == "CPU":
            continue
        if get_logical_device_configuration(device) is not None:
            continue
        if needs_memory_size and _c._physical_device_details(device.name)["memory_bytes"] == 0:
            continue
        devices.append(device)
    return devices


def set_per_process_memory_growth(enabled=True):
    """Memory growth on (or off) on every device that supports it; returns those devices."""
    devices = _supporting(needs_memory_size=not enabled)
    for device in devices:
        experimental.set_memory_growth(device, enabled)
    return devices


def set_per_process_memory_fraction(fraction):
    """Caps what each device that supports it reserves at `fraction` (0 < fraction <= 1) of its
    memory; returns those devices."""
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real):
        raise TypeError("fraction must be a number in (0, 1], not %r" % (fraction,))
    if not 0.0 < fraction <= 1.0:
        raise ValueError("fraction must be in (0, 1], not %r" % (fraction,))
    devices = _supporting(needs_memory_size=True)
    for device in devices:
        _c._set_memory_fraction(device.name, float(fraction))
    return devices
