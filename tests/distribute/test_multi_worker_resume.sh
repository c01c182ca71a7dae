#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A worker killed mid-run: two workers train the digits MLP with a checkpoint every 20 steps;
# the last one kills itself before step 50. The job must end with mpirun naming the killed
# process; the rerun must resume from the checkpoint of step 40 and end with the weights of an
# uninterrupted run, to the bit, on every worker.
# Usage: test_multi_worker_resume.sh MPIRUN DIGITS_MLP COMPARE_WEIGHTS_PY
set -u
source "$(dirname "$0")/mpirun_common.sh"
program=$2
compare=$3
python=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
args=(--epochs 3 --multi-worker --checkpoint-every 20)

mpirun 2 "$program" "${args[@]}" --checkpoint "$dir/whole.npz" --save-weights "$dir/whole" \
    >"$dir/whole.out" 2>&1 ||
    fail "uninterrupted run: exit status $? ($(tail -n 5 "$dir/whole.out"))"

if mpirun 2 "$program" "${args[@]}" --checkpoint "$dir/run.npz" --kill-at-step 50 \
    >"$dir/killed.out" 2>&1; then
    fail "the job went on after a worker died"
fi
grep -q "worker 1 kills itself before step 50" "$dir/killed.out" || fail "the worker did not die"
grep -Eq "rank 1 .*(signal 9|Killed)" "$dir/killed.out" \
    || fail "mpirun did not say which worker died: $(tail -n 8 "$dir/killed.out")"
[ -f "$dir/run.npz" ] || fail "no checkpoint was left"
ls "$dir"/run.npz?* >/dev/null 2>&1 && fail "a partial checkpoint file was left beside run.npz"

mpirun 2 "$program" "${args[@]}" --checkpoint "$dir/run.npz" --save-weights "$dir/resumed" \
    >"$dir/resumed.out" 2>&1 || fail "rerun: exit status $? ($(tail -n 5 "$dir/resumed.out"))"
grep -q "^Resuming from checkpoint $dir/run.npz at step 40\$" "$dir/resumed.out" \
    || fail "the rerun did not resume from step 40: $(head -n 5 "$dir/resumed.out")"

"$python" "$compare" identical "$dir/whole-worker0.npz" "$dir/resumed-worker0.npz" \
    "$dir/resumed-worker1.npz" || fail "the resumed weights differ from the uninterrupted run's"
if [ "$failures" -ne 0 ]; then
    cat "$dir/killed.out"
    exit 1
fi
echo "PASS: a worker killed at step 50 ended the job; the rerun resumed at step 40 and ended" \
     "bit-identical to an uninterrupted run"
