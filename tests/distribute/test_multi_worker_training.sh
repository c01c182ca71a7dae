#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The digits MLP trained data-parallel by N workers under mpirun, each on its own shard of every
# global batch of 32, against one process training on whole batches: every worker must end with
# the same bits, and those must equal the single process's weights to float rounding.
# Usage: test_multi_worker_training.sh MPIRUN DIGITS_MLP N COMPARE_WEIGHTS_PY
set -u
source "$(dirname "$0")/mpirun_common.sh"
program=$2
np=$3
compare=$4
epochs=3
python=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$program" --epochs $epochs --save-weights "$dir/one" >"$dir/one.out" 2>&1 \
    || fail "one process: exit status $? ($(tail -n 3 "$dir/one.out"))"
mpirun "$np" "$program" --epochs $epochs --multi-worker --save-weights "$dir/job" \
    >"$dir/job.out" 2>&1 || fail "mpirun -np $np: exit status $? ($(tail -n 5 "$dir/job.out"))"
# Unanchored: mpirun forwards each worker's output in pieces, and two workers' lines can meet
# on one line of the job's output.
for k in $(seq 0 $((np - 1))); do
    grep -qF "Worker $k of $np: replica 0 on /job:worker/replica:0/task:$k/device:CPU:0" \
        "$dir/job.out" || fail "worker $k did not report its replica on task $k"
done
grep -qF "Test accuracy (fixed split): " "$dir/job.out" || fail "worker 0 printed no accuracy"

# 3 epochs of Adam (135 steps): differences stay near 1e-6.
check_job_weights "$python" "$compare" "$dir/job" "$np" "$dir/one"
if [ "$failures" -ne 0 ]; then
    cat "$dir/job.out"
    exit 1
fi
echo "PASS: $np workers, each on its own shard, end bit-identical and equal to one process"
