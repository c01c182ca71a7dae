# SPDX-License-Identifier: Apache-2.0
"""The plug-in page's snippet, with tf replaced by tp: run with the tensorplug and tensorplug_apu
wheels installed (TP_LOG_DEVICE_PLACEMENT=1 shows where each op runs)."""
import tensorplug as tp   # tensorplug registers PluggableDevices here.
print(tp.config.list_physical_devices())  # APU device is visible to tensorplug.

a = tp.random.normal(shape=[5], dtype=tp.float32)  # Runs on CPU.
b = tp.nn.relu(a)         # Runs on APU.

with tp.device("/APU:0"):  # Users can also use 'with tp.device' syntax.
    c = tp.nn.relu(a)        # Runs on APU.

with tp.device("/CPU:0"):
    c = tp.nn.relu(a)        # Runs on CPU.


@tp.function  # Defining a tp.function
def run():
    d = tp.random.uniform(shape=[100], dtype=tp.float32)  # Runs on CPU.
    e = tp.nn.relu(d)        # Runs on APU.


run()  # PluggableDevices also work with tp.function and graph mode.
