#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tp.distribute.MultiWorkerMirroredStrategy from the installed wheels: multi_worker_fit.py
# trains (Keras fit and a custom loop) in one process, then under mpirun -np N with each worker
# on its own rows of every global batch: every worker must end with the same bits, and those
# must equal the single process's weights to float rounding.
# Usage: test_multi_worker_python.sh MPIRUN N PYTHON VENV_DIR
# (VENV_DIR holds the wheels, installed by python/make_venv.sh.)
set -u
source "$(dirname "$0")/mpirun_common.sh"
here=$(cd "$(dirname "$0")" && pwd)
np=$2 python=$3 venv=$4
# The APU plug-in's wheel is installed too: its device would be the strategies' default.
export TP_APU_DEVICES=0
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1

"$venv/bin/python" "$here/multi_worker_fit.py" "$dir/one" >"$dir/one.out" 2>&1 \
    || fail "one process: exit status $? ($(tail -n 5 "$dir/one.out"))"
mpirun "$np" "$venv/bin/python" "$here/multi_worker_fit.py" "$dir/job" >"$dir/job.out" 2>&1 \
    || fail "mpirun -np $np: exit status $? ($(tail -n 8 "$dir/job.out"))"
for k in $(seq 0 $((np - 1))); do
    # Not anchored: mpirun may forward two workers' lines run together.
    grep -q "worker $k of $np: fit losses" "$dir/job.out" || fail "worker $k did not finish"
done

# 27 steps of Adam, 27 of gradient descent: differences stay near 1e-7.
check_job_weights "$python" "$here/compare_weights.py" "$dir/job" "$np" "$dir/one"
if [ "$failures" -ne 0 ]; then
    cat "$dir/one.out" "$dir/job.out"
    exit 1
fi
echo "PASS: $np workers of the Python package, each on its own shard, end bit-identical and" \
     "equal to one process"
