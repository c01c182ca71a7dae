# SPDX-License-Identifier: Apache-2.0
"""The values tp.config hands out and takes: PhysicalDevice, LogicalDevice and
LogicalDeviceConfiguration, named and printed as TensorFlow's, and the checks that turn a
device argument into the name the C API takes."""
import collections
import numbers

PhysicalDevice = collections.namedtuple("PhysicalDevice", ["name", "device_type"])
PhysicalDevice.__doc__ = """A device of the machine, as a plug-in registered it:
PhysicalDevice(name='/physical_device:APU:0', device_type='APU')."""

LogicalDevice = collections.namedtuple("LogicalDevice", ["name", "device_type"])
LogicalDevice.__doc__ = """A device ops run on and tensors live in: a visible physical device, or
one of the parts a physical device was split into:
LogicalDevice(name='/job:localhost/replica:0/task:0/device:APU:0', device_type='APU')."""

LogicalDeviceConfiguration = collections.namedtuple(
    "LogicalDeviceConfiguration",
    ["memory_limit", "experimental_priority", "experimental_device_ordinal"],
    defaults=(None, None, None))
LogicalDeviceConfiguration.__doc__ = """One logical device to make of a physical device:
memory_limit in MiB (megabytes, as TensorFlow counts them); None shares the device's memory
equally among its logical devices."""

MEBIBYTE = 1 << 20


def ordinal(device):
    """The number at the end of a device's name: 1 for '/physical_device:APU:1'."""
    return int(device.name.rsplit(":", 1)[1])


def check_physical(device, known):
    """`device` if it is one of the `known` physical devices; ValueError as TensorFlow's."""
    if not isinstance(device, tuple) or device not in known:
        raise ValueError("Unrecognized device: %r" % (device,))
    return PhysicalDevice(*device)


def memory_limit_bytes(configuration, device, device_memory, count):
    """The bytes of one LogicalDeviceConfiguration's memory_limit (MiB) for the C API."""
    if not isinstance(configuration, LogicalDeviceConfiguration):
        raise TypeError("logical_devices must be LogicalDeviceConfiguration values, not %r"
                        % (configuration,))
    if configuration.experimental_priority is not None:
        raise ValueError("%s: experimental_priority is not supported: tensorplug's devices have "
                         "one stream priority" % device.name)
    if configuration.experimental_device_ordinal is not None:
        raise ValueError("%s: experimental_device_ordinal is not supported: logical devices are "
                         "numbered in the order of their physical devices" % device.name)
    limit = configuration.memory_limit
    if limit is None:
        # An unknown size: no cap of our own, the device's allocator grows as it can.
        return device_memory // count if device_memory > 0 else ((1 << 64) - 1) // count
    if isinstance(limit, bool) or not isinstance(limit, numbers.Real):
        raise TypeError("memory_limit must be a number of MiB, not %r" % (limit,))
    if not limit > 0:
        raise ValueError("memory_limit must be positive, not %r MiB (%s)" % (limit, device.name))
    return int(limit * MEBIBYTE)
