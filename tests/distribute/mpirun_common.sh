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
# A job's weights against one process's: every worker's JOB-workerK.npz must hold worker 0's
# bits, and worker 0's must equal ONE-worker0.npz to float rounding (compare_weights.py close
# 1e-5: float32 sums taken in another order).
#   check_job_weights PYTHON COMPARE_WEIGHTS_PY JOB NP ONE
check_job_weights() {
    local python=$1 compare=$2 job=$3 np=$4 one=$5 others=() k
    for k in $(seq 1 $((np - 1))); do others+=("$job-worker$k.npz"); done
    "$python" "$compare" identical "$job-worker0.npz" "${others[@]}" \
        || fail "the workers' weights differ"
    "$python" "$compare" close 1e-5 "$one-worker0.npz" "$job-worker0.npz" \
        || fail "the job's weights are not the single process's"
}

