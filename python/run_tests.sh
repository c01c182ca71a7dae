#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The Python front's tests as a user meets the package: a fresh virtual environment, the two
# wheels installed offline (make_venv.sh), then pytest on python/tests/. The environment sees
# Debian's packages (numpy, pytest, and torch where python3-torch is installed) but not the
# source tree.
#   run_tests.sh PYTHON DIST_DIR VENV_DIR TESTS_DIR [pytest arguments]
set -eu
python=$1 dist=$2 venv=$3 tests=$4
shift 4
sh "$(dirname "$0")/make_venv.sh" "$python" "$dist" "$venv"
# Run from the venv, never from the source folder, so that `import tensorplug` is the wheel's.
cd "$venv"
unset TP_PLUGIN_PATH
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$tests" "$@"
