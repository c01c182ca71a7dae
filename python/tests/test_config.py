# SPDX-License-Identifier: Apache-2.0
"""tp.config and tp.debugging: device lists, visibility, memory growth and fraction, logical
devices, memory statistics, soft placement and placement logging.

The runtime, like TensorFlow, configures physical devices only before it makes its logical
devices (at the first tensor, op or logical-device query). This process's context is past
that point as soon as any test made a tensor, so each test that configures devices runs its
program in a fresh interpreter (run_snippet); the tests here in the process check what holds
afterwards."""
import textwrap

import numpy as np
import pytest

import tensorplug as tp
from conftest import FRACTION_CHECKS, run_snippet

CPU = tp.config.PhysicalDevice(name="/physical_device:CPU:0", device_type="CPU")
APU = tp.config.PhysicalDevice(name="/physical_device:APU:0", device_type="APU")
LOGICAL = "/job:localhost/replica:0/task:0/device:"
MIB = 1 << 20

# The APU wheel's one device, with its defaults, and nothing else configured.
PLAIN = {"TP_APU_DEVICES": "", "TP_APU_MEMORY": "", "TP_VISIBLE_DEVICES": "",
         "TP_FORCE_ALLOW_GROWTH": "", "TP_LOG_DEVICE_PLACEMENT": "0", "TP_PLUGIN_PATH": ""}


def configured(code, **env):
    """Runs `code` (after `import tensorplug as tp`) in a fresh interpreter; its stdout."""
    out, _ = run_snippet("import numpy as np\nimport tensorplug as tp\n" + textwrap.dedent(code),
                         env=dict(PLAIN, **env))
    return out


def initialized():
    """Makes sure this process's logical devices exist."""
    tp.nn.relu(tp.constant([1.0]))


# ---- Lists --------------------------------------------------------------------------------


def test_physical_devices_print_as_tensorflows():
    devices = tp.config.list_physical_devices()
    assert devices == [CPU, APU]
    assert repr(devices) == ("[PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU'), "
                             "PhysicalDevice(name='/physical_device:APU:0', device_type='APU')]")
    assert tp.config.list_physical_devices("APU") == [APU]
    assert tp.config.list_physical_devices("CPU") == [CPU]
    assert tp.config.list_physical_devices("GPU") == []
    assert tp.config.experimental.list_physical_devices("APU") == [APU]


def test_logical_devices_print_as_tensorflows():
    devices = tp.config.list_logical_devices()
    assert [d.name for d in devices] == [LOGICAL + "CPU:0", LOGICAL + "APU:0"]
    assert repr(devices[1]) == ("LogicalDevice(name='/job:localhost/replica:0/task:0/device:APU:0',"
                                " device_type='APU')")
    assert tp.config.list_logical_devices("APU") == [devices[1]]
    assert tp.config.list_logical_devices(device_type="XPU") == []


def test_a_device_type_that_is_not_a_str_is_a_type_error():
    with pytest.raises(TypeError, match="device_type must be a str or None, not int"):
        tp.config.list_physical_devices(3)


def test_device_details_are_the_plugins():
    details = tp.config.experimental.get_device_details(APU)
    assert details["device_name"] == "Awesome Processing Unit (simulated)"
    assert details["memory_bytes"] == 1 << 30


# ---- After initialization: RuntimeError, as TensorFlow ----------------------------------------


def test_physical_devices_cannot_be_modified_after_being_initialized():
    initialized()
    message = "^Physical devices cannot be modified after being initialized$"
    with pytest.raises(RuntimeError, match=message):
        tp.config.experimental.set_memory_growth(APU, True)
    with pytest.raises(RuntimeError, match=message):
        tp.config.set_logical_device_configuration(
            APU, [tp.config.LogicalDeviceConfiguration(memory_limit=16)] * 2)
    with pytest.raises(RuntimeError, match=message):
        tp.config.gpu.set_per_process_memory_fraction(0.5)
    with pytest.raises(RuntimeError, match=message):
        tp.config.gpu.set_per_process_memory_growth()
    assert tp.config.experimental.get_memory_growth(APU) is False
    assert tp.config.get_logical_device_configuration(APU) is None


def test_visible_devices_cannot_be_modified_after_being_initialized():
    initialized()
    with pytest.raises(RuntimeError,
                       match="^Visible devices cannot be modified after being initialized$"):
        tp.config.set_visible_devices([CPU])
    assert tp.config.get_visible_devices() == [CPU, APU]
    tp.config.set_visible_devices([CPU, APU])  # no change: nothing to refuse, as TensorFlow


# ---- Bad arguments -------------------------------------------------------------------------


def test_a_device_that_is_not_a_physical_device_is_a_value_error():
    for bad in ("APU:0", tp.config.PhysicalDevice("/physical_device:APU:7", "APU"), None):
        with pytest.raises(ValueError, match="Unrecognized device"):
            tp.config.experimental.set_memory_growth(bad, True)
        with pytest.raises(ValueError, match="Unrecognized device"):
            tp.config.experimental.get_memory_growth(bad)
        with pytest.raises(ValueError, match="Unrecognized device"):
            tp.config.set_visible_devices([bad])
        with pytest.raises(ValueError, match="Unrecognized device"):
            tp.config.get_logical_device_configuration(bad)


def test_bad_arguments_raise_as_tensorflow():
    with pytest.raises(TypeError, match="PhysicalDevice or a list"):
        tp.config.set_visible_devices(5)
    with pytest.raises(ValueError, match="Unrecognized device.*device_type is 'CPU'"):
        tp.config.set_visible_devices([APU], "CPU")
    with pytest.raises(ValueError, match="at least one LogicalDeviceConfiguration"):
        tp.config.set_logical_device_configuration(APU, [])
    with pytest.raises(TypeError, match="list of LogicalDeviceConfiguration"):
        tp.config.set_logical_device_configuration(APU, None)
    with pytest.raises(TypeError, match="must be LogicalDeviceConfiguration values"):
        tp.config.set_logical_device_configuration(APU, [64])
    with pytest.raises(TypeError, match="memory_limit must be a number of MiB"):
        tp.config.set_logical_device_configuration(
            APU, [tp.config.LogicalDeviceConfiguration(memory_limit="64")])
    with pytest.raises(ValueError, match="memory_limit must be positive"):
        tp.config.set_logical_device_configuration(
            APU, [tp.config.LogicalDeviceConfiguration(memory_limit=-1)])
    with pytest.raises(ValueError, match="experimental_priority is not supported"):
        tp.config.set_logical_device_configuration(
            APU, [tp.config.LogicalDeviceConfiguration(64, experimental_priority=1)])
    with pytest.raises(ValueError, match=r"fraction must be in \(0, 1\], not 1.5"):
        tp.config.gpu.set_per_process_memory_fraction(1.5)
    with pytest.raises(ValueError, match=r"fraction must be in \(0, 1\], not 0"):
        tp.config.gpu.set_per_process_memory_fraction(0)
    with pytest.raises(TypeError, match="fraction must be a number"):
        tp.config.gpu.set_per_process_memory_fraction("0.4")
    with pytest.raises(ValueError, match="XPU"):
        tp.config.experimental.get_memory_info("XPU:0")
    with pytest.raises(ValueError, match="must name a logical device"):
        tp.config.experimental.get_memory_info(None)
    with pytest.raises(TypeError, match="device must be a str"):
        tp.config.experimental.get_memory_info(0)
    with pytest.raises(ValueError, match="'/bad::name'"):
        tp.config.experimental.reset_memory_stats("/bad::name")


# ---- Memory statistics ------------------------------------------------------------------------


def test_memory_info_goes_back_to_its_start_when_tensors_are_freed():
    initialized()
    start = tp.config.experimental.get_memory_info("APU:0")
    assert set(start) == {"current", "peak"}
    x = tp.constant(np.zeros(MIB // 4, np.float32))  # 1 MiB on the CPU
    with tp.device("/APU:0"):
        y = tp.nn.relu(x)
        z = tp.nn.relu(y)
    during = tp.config.experimental.get_memory_info("/device:APU:0")
    assert during["current"] == start["current"] + 2 * MIB
    assert during["peak"] >= during["current"]
    cpu_during = tp.config.experimental.get_memory_info("CPU:0")["current"]
    del y, z
    after = tp.config.experimental.get_memory_info("APU:0")
    assert after["current"] == start["current"]
    assert after["peak"] == during["peak"]
    tp.config.experimental.reset_memory_stats("APU:0")
    assert tp.config.experimental.get_memory_info("APU:0")["peak"] == after["current"]
    del x
    assert tp.config.experimental.get_memory_info("CPU:0")["current"] == cpu_during - MIB


def test_ten_thousand_ops_leave_no_memory_behind():
    initialized()
    before = tp.config.experimental.get_memory_info("APU:0")["current"]
    x = tp.constant([1.0, -2.0, 3.0])
    with tp.device("/APU:0"):
        for _ in range(10000):
            x = tp.nn.relu(x)
    assert x.numpy().tolist() == [1.0, 0.0, 3.0]
    del x
    assert tp.config.experimental.get_memory_info("APU:0")["current"] == before


# ---- Placement switches ------------------------------------------------------------------------


def test_log_device_placement_prints_each_op_on_standard_error(capfd):
    x = tp.constant([-1.0, 1.0])
    assert tp.debugging.get_log_device_placement() is False
    tp.debugging.set_log_device_placement(True)
    try:
        assert tp.debugging.get_log_device_placement() is True
        with tp.device("/CPU:0"):
            tp.nn.relu(x)
        tp.nn.relu(x)
    finally:
        tp.debugging.set_log_device_placement(False)
    tp.nn.relu(x)
    assert capfd.readouterr().err.splitlines() == [
        "Executing op Relu in device " + LOGICAL + "CPU:0",
        "Executing op Relu in device " + LOGICAL + "APU:0",
    ]


def test_placement_logging_from_the_environment_shows_in_the_getter():
    out = configured("print(tp.debugging.get_log_device_placement())",
                     TP_LOG_DEVICE_PLACEMENT="1")
    assert out == "True\n"


def test_soft_placement_falls_back_instead_of_failing():
    assert tp.config.get_soft_device_placement() is False
    x = tp.constant([-1.0, 1.0])
    tp.config.set_soft_device_placement(True)
    try:
        assert tp.config.get_soft_device_placement() is True
        with tp.device("/device:GPU:2"):
            y = tp.nn.relu(x)
        assert y.numpy().tolist() == [0.0, 1.0]
        assert y.device == LOGICAL + "APU:0"
    finally:
        tp.config.set_soft_device_placement(False)
    assert tp.config.get_soft_device_placement() is False
    with pytest.raises(RuntimeError, match="GPU:2 unknown device"):
        with tp.device("/device:GPU:2"):
            tp.nn.relu(x)


# ---- Configuration before the first tensor (fresh interpreters) ----------------------------------


def test_visible_devices_hide_the_apu():
    out = configured("""
        cpu, apu = tp.config.list_physical_devices()
        assert tp.config.get_visible_devices() == [cpu, apu]
        tp.config.set_visible_devices([cpu])
        print(tp.config.get_visible_devices())
        print(tp.config.list_logical_devices())
        print(len(tp.config.list_physical_devices()))
        print(tp.nn.relu(tp.constant([-1.0])).device)
    """)
    assert out.splitlines() == [
        "[PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')]",
        "[LogicalDevice(name='/job:localhost/replica:0/task:0/device:CPU:0', device_type='CPU')]",
        "2",
        LOGICAL + "CPU:0",
    ]


def test_visible_devices_of_one_type_and_the_cpu_kept_visible():
    out = configured("""
        tp.config.set_visible_devices([], "APU")
        print(tp.config.get_visible_devices())
        print(tp.config.get_visible_devices("APU"))
        tp.config.set_visible_devices([])   # CPU:0 stays: host data goes through it
        print([d.name for d in tp.config.list_logical_devices()])
    """)
    assert out.splitlines() == [
        "[PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')]",
        "[]",
        "['/job:localhost/replica:0/task:0/device:CPU:0']",
    ]


def test_visible_devices_from_the_environment():
    out = configured("""
        print(tp.config.get_visible_devices())
        print([d.name for d in tp.config.list_logical_devices()])
    """, TP_APU_DEVICES="2", TP_VISIBLE_DEVICES="APU:1")
    assert out.splitlines() == [
        "[PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU'), "
        "PhysicalDevice(name='/physical_device:APU:1', device_type='APU')]",
        "['/job:localhost/replica:0/task:0/device:CPU:0', "
        "'/job:localhost/replica:0/task:0/device:APU:0']",
    ]


def test_visible_devices_renumber_the_logical_ones():
    out = configured("""
        cpu, apu0, apu1 = tp.config.list_physical_devices()
        tp.config.set_visible_devices([apu1], "APU")
        with tp.device("/APU:0"):
            print(tp.nn.relu(tp.constant([1.0])).device)
        print(len(tp.config.list_logical_devices("APU")))
    """, TP_APU_DEVICES="2")
    assert out.splitlines() == [LOGICAL + "APU:0", "1"]


def test_logical_devices_split_a_physical_one_each_with_its_limit():
    out = configured("""
        apus = tp.config.list_physical_devices('APU')
        tp.config.set_logical_device_configuration(
            apus[0],
            [tp.config.LogicalDeviceConfiguration(memory_limit=64),
             tp.config.LogicalDeviceConfiguration(memory_limit=64)])
        logical_apus = tp.config.list_logical_devices('APU')
        print(len(apus), "Physical APU,", len(logical_apus), "Logical APUs")
        print(logical_apus)
        print(tp.config.get_logical_device_configuration(apus[0]))
        # 24 MiB on the CPU: a relu on the device holds its input's copy and its output
        chunk = tp.constant(np.ones(6 << 20, np.float32))
        with tp.device('/device:APU:0'):
            first = tp.nn.relu(chunk)
        try:
            with tp.device('/device:APU:0'):
                tp.nn.relu(chunk).numpy()
        except tp.errors.ResourceExhaustedError:
            print("24 MiB more on APU:0: ResourceExhaustedError")
        with tp.device('/device:APU:1'):
            second = tp.nn.relu(chunk)
        print(tp.config.experimental.get_memory_info('APU:0')['current'] >> 20,
              tp.config.experimental.get_memory_info('APU:1')['current'] >> 20)
        del first, second
        print(tp.config.experimental.get_memory_info('APU:0')['current'],
              tp.config.experimental.get_memory_info('APU:1')['current'])
    """)
    assert out.splitlines() == [
        "1 Physical APU, 2 Logical APUs",
        "[LogicalDevice(name='/job:localhost/replica:0/task:0/device:APU:0', device_type='APU'), "
        "LogicalDevice(name='/job:localhost/replica:0/task:0/device:APU:1', device_type='APU')]",
        "[LogicalDeviceConfiguration(memory_limit=64, experimental_priority=None, "
        "experimental_device_ordinal=None), LogicalDeviceConfiguration(memory_limit=64, "
        "experimental_priority=None, experimental_device_ordinal=None)]",
        "24 MiB more on APU:0: ResourceExhaustedError",
        "24 24",
        "0 0",
    ]


def test_virtual_device_names_and_a_cpu_split_without_limits():
    out = configured("""
        cpu = tp.config.list_physical_devices('CPU')[0]
        tp.config.experimental.set_virtual_device_configuration(
            cpu, [tp.config.experimental.VirtualDeviceConfiguration()] * 2)
        print(tp.config.experimental.get_virtual_device_configuration(cpu) ==
              [tp.config.LogicalDeviceConfiguration()] * 2)
        print([d.name for d in tp.config.list_logical_devices('CPU')])
        with tp.device('/cpu:1'):
            print(tp.nn.relu(tp.constant([-2.0, 2.0])).device)
    """)
    assert out.splitlines() == [
        "True",
        "['/job:localhost/replica:0/task:0/device:CPU:0', "
        "'/job:localhost/replica:0/task:0/device:CPU:1']",
        LOGICAL + "CPU:1",
    ]


def test_memory_growth_and_a_split_refuse_each_other():
    out = configured("""
        cpu, apu0, apu1 = tp.config.list_physical_devices()
        tp.config.experimental.set_memory_growth(apu0, True)
        print(tp.config.experimental.get_memory_growth(apu0),
              tp.config.experimental.get_memory_growth(apu1))
        try:
            tp.config.set_logical_device_configuration(
                apu0, [tp.config.LogicalDeviceConfiguration(memory_limit=8)] * 2)
        except ValueError as e:
            print("ValueError:", e)
        tp.config.set_logical_device_configuration(
            apu1, [tp.config.LogicalDeviceConfiguration(memory_limit=8)] * 2)
        try:
            tp.config.experimental.set_memory_growth(apu1, True)
        except ValueError as e:
            print("ValueError:", e)
        print(tp.config.experimental.get_memory_growth(apu1))
    """, TP_APU_DEVICES="2")
    lines = out.splitlines()
    assert lines[0] == "True False"
    assert lines[1].startswith("ValueError: cannot split /physical_device:APU:0 into logical")
    assert lines[2].startswith("ValueError: cannot set memory growth on /physical_device:APU:1: "
                               "it is split into 2 logical devices")
    assert lines[3] == "False"


def test_gpu_per_process_memory_growth_applies_to_every_device_but_the_cpu():
    out = configured("""
        print(tp.config.gpu.set_per_process_memory_growth())
        print([tp.config.experimental.get_memory_growth(d)
               for d in tp.config.list_physical_devices()])
    """, TP_APU_DEVICES="2")
    assert out.splitlines() == [
        "[PhysicalDevice(name='/physical_device:APU:0', device_type='APU'), "
        "PhysicalDevice(name='/physical_device:APU:1', device_type='APU')]",
        "[False, True, True]",
    ]


# The APU's memory in use at the end, in units of 256 KiB: the 10 MiB relu's 40.
FRACTION_PROGRAM = (FRACTION_CHECKS +
                    "print(tp.config.experimental.get_memory_info('APU:0')['current'] >> 18)\n")


def test_gpu_per_process_memory_fraction_caps_every_device_but_the_cpu():
    out = configured("print(tp.config.gpu.set_per_process_memory_fraction(0.4))\n" +
                     FRACTION_PROGRAM, TP_APU_MEMORY="64M")
    assert out.splitlines() == [
        "[PhysicalDevice(name='/physical_device:APU:0', device_type='APU')]",
        "8 MiB more: ResourceExhaustedError",
        "40",
    ]


def test_the_documents_prose_name_tp_gpu_sets_the_same_fraction():
    out = configured("print(tp.gpu.set_per_process_memory_fraction(0.4))\n" +
                     FRACTION_PROGRAM, TP_APU_MEMORY="64M")
    assert out.splitlines()[1:] == ["8 MiB more: ResourceExhaustedError", "40"]


def test_without_the_fraction_the_same_program_fits():
    out = configured(FRACTION_PROGRAM, TP_APU_MEMORY="64M")
    assert out.splitlines() == ["8 MiB more: fits", "40"]


def test_gpu_per_process_settings_skip_a_split_device():
    out = configured("""
        apu = tp.config.list_physical_devices('APU')[0]
        tp.config.set_logical_device_configuration(
            apu, [tp.config.LogicalDeviceConfiguration(memory_limit=8)] * 2)
        print(tp.config.gpu.set_per_process_memory_fraction(0.4),
              tp.config.gpu.set_per_process_memory_growth())
    """)
    assert out == "[] []\n"


def test_logical_configuration_after_initialization_is_a_runtime_error():
    out = configured("""
        apu = tp.config.list_physical_devices('APU')[0]
        tp.config.list_logical_devices()
        try:
            tp.config.set_logical_device_configuration(
                apu, [tp.config.LogicalDeviceConfiguration(memory_limit=8)] * 2)
        except RuntimeError as e:
            print("RuntimeError:", e)
        print(tp.config.get_logical_device_configuration(apu))
    """)
    assert out.splitlines() == [
        "RuntimeError: Physical devices cannot be modified after being initialized", "None"]


def test_repeated_calls_leave_no_objects_behind():
    import gc
    import sys

    initialized()

    def round_of_calls():
        tp.config.list_physical_devices()
        tp.config.list_logical_devices("APU")
        tp.config.experimental.get_memory_info("APU:0")
        tp.config.experimental.get_device_details(APU)
        tp.config.get_visible_devices()
        for bad in ("XPU:0", "/bad::name"):
            try:
                tp.config.experimental.get_memory_info(bad)
            except ValueError:
                pass
        try:
            tp.config.experimental.set_memory_growth(APU, True)
        except RuntimeError:
            pass

    round_of_calls()
    gc.collect()
    before = sys.getallocatedblocks()  # every object, tracked by the collector or not
    for _ in range(1000):
        round_of_calls()
    gc.collect()
    assert sys.getallocatedblocks() - before < 100
