# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures. Each test module that needs another device set (two APUs, the OpenCL GPU)
runs its snippets in a subprocess with that environment (see run_snippet), because the
runtime, like TensorFlow, configures its devices once per process."""
import os
import subprocess
import sys
import textwrap

import pytest


def run_snippet(code, env=None, check=True):
    """Runs `code` in a fresh interpreter; returns (stdout, stderr)."""
    environment = dict(os.environ)
    environment.update(env or {})
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=environment,
                            capture_output=True, text=True, timeout=600)
    if check and result.returncode != 0:
        raise AssertionError("snippet failed (%d):\n%s\n%s" % (result.returncode, result.stdout,
                                                                result.stderr))
    return result.stdout, result.stderr


@pytest.fixture
def snippet():
    return run_snippet
