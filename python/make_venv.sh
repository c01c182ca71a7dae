#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A fresh virtual environment holding the two wheels, installed offline, as a user installs
# them; it sees Debian's packages (numpy, pytest) but not the source tree. Used by run_tests.sh
# and the multi-worker Python test (tests/distribute/test_multi_worker_python.sh, through
# python/CMakeLists.txt).
#   make_venv.sh PYTHON DIST_DIR VENV_DIR
set -eu
python=$1 dist=$2 venv=$3
rm -rf "$venv"
"$python" -m venv --system-site-packages "$venv"
"$venv/bin/python" -m pip install --quiet --no-index --no-deps --disable-pip-version-check \
    "$dist"/tensorplug-*.whl "$dist"/tensorplug_apu-*.whl
