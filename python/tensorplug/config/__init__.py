# SPDX-License-Identifier: Apache-2.0
"""tp.config: the devices the runtime found and how it uses them, as tf.config.

The context is made at `import tensorplug`, but it makes its logical devices only at the first
tensor, op or logical-device query: until then physical devices may be configured (memory
growth, logical devices, visibility). Afterwards such a change raises RuntimeError
("Physical devices cannot be modified after being initialized"), as in TensorFlow.

What the C API has no getter for (visible devices, memory growth, logical-device
configurations) is remembered here, from the calls made through this module and from
TP_VISIBLE_DEVICES as it was when the context read it."""
import os

from .. import _devices
from .. import _tensorplug as _c
from .._devices import LogicalDevice, LogicalDeviceConfiguration, PhysicalDevice

__all__ = [
    "LogicalDevice", "LogicalDeviceConfiguration", "PhysicalDevice", "experimental",
    "get_logical_device_configuration", "get_soft_device_placement", "get_visible_devices",
    "gpu", "list_logical_devices", "list_physical_devices", "set_logical_device_configuration",
    "set_soft_device_placement", "set_visible_devices",
]

# What the context read at its creation, during `import tensorplug`, just before this module.
_ENVIRONMENT_VISIBLE = os.environ.get("TP_VISIBLE_DEVICES", "")


def list_physical_devices(device_type=None):
    """Every physical device (of `device_type`, such as 'GPU', if given), hidden ones too."""
    return [PhysicalDevice(*pair) for pair in _c._physical_devices(device_type)]


def list_logical_devices(device_type=None):
    """The devices ops run on (of `device_type` if given). Makes them: physical devices
    cannot be configured afterwards."""
    return [LogicalDevice(*pair) for pair in _c._logical_devices(device_type)]


def _matches(entry, device):
    device_type, ordinal, _ = _c._parse_device_spec(entry)
    if device_type is None:
        raise ValueError(entry)
    return (device.device_type.lower() == device_type.lower() and
            (ordinal is None or ordinal == _devices.ordinal(device)))


def _from_environment(physical):
    """The devices TP_VISIBLE_DEVICES left visible; every device when it is unset, or
    malformed (the runtime then warns and keeps them all)."""
    entries = [e.strip() for e in _ENVIRONMENT_VISIBLE.split(",") if e.strip()]
    if not entries:
        return list(physical)
    try:
        shown = [d for d in physical if any(_matches(e, d) for e in entries)]
        if not all(any(_matches(e, d) for d in physical) for e in entries):
            return list(physical)
    except ValueError:
        return list(physical)
    host = physical[0]  # the host's CPU:0, always visible
    return shown if host in shown else [host] + shown


_visible = None  # the visible physical devices, once known


def _visible_devices():
    global _visible
    if _visible is None:
        _visible = _from_environment(list_physical_devices())
    return _visible


def get_visible_devices(device_type=None):
    """The physical devices the runtime uses (of `device_type` if given)."""
    return [d for d in _visible_devices()
            if device_type is None or d.device_type.lower() == device_type.lower()]


def set_visible_devices(devices, device_type=None):
    """Uses only `devices` (a PhysicalDevice or a list of them) of their types; with
    `device_type`, only devices of that type change. The host's CPU:0 stays visible: host data
    enters and leaves through it. Hidden devices' logical devices are never made."""
    global _visible
    physical = list_physical_devices()
    if isinstance(devices, PhysicalDevice):
        devices = [devices]
    try:
        devices = list(devices)
    except TypeError:
        raise TypeError("devices must be a PhysicalDevice or a list of them, not %r"
                        % (devices,)) from None
    devices = [_devices.check_physical(d, physical) for d in devices]
    for d in devices:
        if device_type is not None and d.device_type.lower() != device_type.lower():
            raise ValueError("Unrecognized device: %r (device_type is %r)" % (d, device_type))
    wanted = set(devices)
    if device_type is not None:
        wanted.update(d for d in _visible_devices()
                      if d.device_type.lower() != device_type.lower())
    wanted.add(physical[0])
    visible = [d for d in physical if d in wanted]  # the runtime's order: by type, then ordinal
    if visible == _visible_devices():
        return
    _c._set_visible_devices(",".join("%s:%d" % (d.device_type, _devices.ordinal(d))
                                     for d in visible))
    _visible = visible


_logical_configurations = {}  # PhysicalDevice -> [LogicalDeviceConfiguration]


def set_logical_device_configuration(device, logical_devices):
    """Splits the physical `device` into one logical device per LogicalDeviceConfiguration,
    each with its own memory_limit (MiB), stream and allocator."""
    device = _devices.check_physical(device, list_physical_devices())
    if logical_devices is None or isinstance(logical_devices, LogicalDeviceConfiguration):
        raise TypeError("logical_devices must be a list of LogicalDeviceConfiguration, not %r"
                        % (logical_devices,))
    configurations = list(logical_devices)
    if not configurations:
        raise ValueError("%s: give at least one LogicalDeviceConfiguration" % device.name)
    memory = _c._physical_device_details(device.name)["memory_bytes"]
    limits = [_devices.memory_limit_bytes(c, device, memory, len(configurations))
              for c in configurations]
    _c._set_logical_devices(device.name, limits)
    _logical_configurations[device] = configurations


def get_logical_device_configuration(device):
    """The LogicalDeviceConfiguration list set on the physical `device`, or None."""
    device = _devices.check_physical(device, list_physical_devices())
    configurations = _logical_configurations.get(device)
    return list(configurations) if configurations is not None else None


def set_soft_device_placement(enabled):
    """With soft placement, an op asked for on a device that does not exist, or that has no
    kernel for it, runs on the best device that can run it (with a warning line) instead of
    failing."""
    _c._set_soft_device_placement(bool(enabled))


def get_soft_device_placement():
    return _c._get_soft_device_placement()


# Last: they use the functions above.
from . import experimental, gpu  # noqa: E402,F401
