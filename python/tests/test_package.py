# SPDX-License-Identifier: Apache-2.0
"""The package as installed: the wheel's module, the APU wheel's plug-in found in
site-packages/tensorplug-plugins/, the documents' first snippet."""
import os

import tensorplug as tp


def test_imports_the_installed_wheel_not_the_source_tree():
    assert "site-packages" in tp.__file__
    assert os.path.exists(os.path.join(os.path.dirname(tp.__file__), "libtensorplug.so.1"))


def test_relu_runs_on_the_apu():
    a = tp.constant([-1.0, 2.0, -3.0])
    b = tp.nn.relu(a)
    assert b.device == "/job:localhost/replica:0/task:0/device:APU:0"
    assert b.numpy().tolist() == [0.0, 2.0, 0.0]
