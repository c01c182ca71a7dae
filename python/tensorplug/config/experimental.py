# SPDX-License-Identifier: Apache-2.0
"""tp.config.experimental: memory growth and statistics, and the older names TensorFlow keeps
here (VirtualDeviceConfiguration, set_virtual_device_configuration, the device lists)."""
from .. import _devices
from .. import _tensorplug as _c
from .._devices import LogicalDeviceConfiguration as VirtualDeviceConfiguration  # noqa: F401
from . import (  # noqa: F401
    get_logical_device_configuration as get_virtual_device_configuration,
    get_visible_devices, list_logical_devices, list_physical_devices,
    set_logical_device_configuration as set_virtual_device_configuration,
    set_visible_devices)

_growth = {}  # PhysicalDevice -> bool, as set here


def set_memory_growth(device, enable):
    """With growth, the physical `device` starts with a small region of memory and adds
    regions as tensors need them, never giving memory back; without it, the first tensor
    reserves nearly all of the device's memory (the host's CPU grows either way)."""
    device = _devices.check_physical(device, list_physical_devices())
    _c._set_memory_growth(device.name, bool(enable))
    _growth[device] = bool(enable)


def get_memory_growth(device):
    """Whether memory growth was set on the physical `device` (False if it never was)."""
    device = _devices.check_physical(device, list_physical_devices())
    return _growth.get(device, False)


def get_memory_info(device):
    """{'current': bytes in use by tensors, 'peak': the most since the device was made or
    reset_memory_stats} of a logical device ('GPU:0', '/device:APU:1'), after the work queued
    on the devices, frees included, is done."""
    return _c._memory_info(device)


def reset_memory_stats(device):
    """Starts the peak of the logical `device` over from what it holds now."""
    _c._reset_memory_stats(device)


def get_device_details(device):
    """What the plug-in says of the physical `device`: {'device_name': its hardware name,
    'vendor', 'driver_version', 'compute_units', 'memory_bytes'}."""
    device = _devices.check_physical(device, list_physical_devices())
    return _c._physical_device_details(device.name)
