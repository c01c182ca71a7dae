# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures. Each test module that needs another device set (two APUs, the OpenCL GPU)
runs its snippets in a subprocess with that environment (see run_snippet), because the
runtime, like TensorFlow, configures its devices once per process."""
import os
import subprocess
import sys
import textwrap

import pytest


def run_snippet(code, env=None, check=True, unset=()):
    """Runs `code` in a fresh interpreter, with `env` added to the environment and the
    variables named in `unset` taken out; returns (stdout, stderr)."""
    environment = {k: v for k, v in os.environ.items() if k not in unset}
    environment.update(env or {})
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=environment,
                            capture_output=True, text=True, timeout=600)
    if check and result.returncode != 0:
        raise AssertionError("snippet failed (%d):\n%s\n%s" % (result.returncode, result.stdout,
                                                                result.stderr))
    return result.stdout, result.stderr


# After tp.config.gpu.set_per_process_memory_fraction(0.4), or without it, on a 64 MiB APU
# (TP_APU_MEMORY=64M), in test_config and test_documents: 0.4 of it is 25.6 MiB; a relu of 10 MiB
# takes 20 (its input's copy on the device is freed after it); one of 8 MiB more needs 16 beside
# the 10 left, and fits only without the fraction.
FRACTION_CHECKS = """
import numpy as np
with tp.device('/APU:0'):
  first = tp.nn.relu(tp.constant(np.zeros(10 << 18, np.float32)))
  first.numpy()
  try:
    tp.nn.relu(tp.constant(np.zeros(8 << 18, np.float32))).numpy()
    print("8 MiB more: fits")
  except tp.errors.ResourceExhaustedError:
    print("8 MiB more: ResourceExhaustedError")
"""


@pytest.fixture
def snippet():
    return run_snippet
