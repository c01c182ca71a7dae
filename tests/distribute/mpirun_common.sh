# SPDX-License-Identifier: Apache-2.0
# Sourced by the multi-worker tests: skips (77) with one line where mpirun is missing (CMake
# passes none when it built no MPI library either), and runs jobs on this machine as root too,
# more workers than cores.
# shellcheck shell=bash
mpirun_path=$1
if [ -z "$mpirun_path" ] || [ "$mpirun_path" = "TP_MPIRUN-NOTFOUND" ] ||
    [ ! -x "$mpirun_path" ]; then
    echo "SKIP: mpirun or libtensorplug_mpi.so missing (install openmpi-bin and libopenmpi-dev)"
    exit 77
fi
# Workers on this machine inherit the test's environment from mpirun.
mpirun() {
    local np=$1
    shift
    "$mpirun_path" --allow-run-as-root --oversubscribe --bind-to none -np "$np" "$@"
}
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
