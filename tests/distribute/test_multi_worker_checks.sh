#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs multi_worker_checks MODE alone and under mpirun, and checks every worker's verdicts.
# Usage: test_multi_worker_checks.sh MPIRUN PROGRAM names|collectives|deadline
set -u
source "$(dirname "$0")/mpirun_common.sh"
program=$2
mode=$3

# Every worker 0..N-1 printed "[worker K] PASS ..." lines and no FAIL.
expect_passes() {
    local out=$1 workers=$2 what=$3
    if grep -q "FAIL" <<<"$out"; then fail "$what: $(grep FAIL <<<"$out" | head -n 5)"; fi
    for k in $(seq 0 $((workers - 1))); do
        grep -q "^\[worker $k\] PASS" <<<"$out" || fail "$what: no verdict of worker $k"
    done
}

case $mode in
names)
    out=$("$program" names 2>&1) || fail "alone: exit status $?"
    expect_passes "$out" 1 "alone"
    grep -q "Executing op Relu in device /job:localhost/replica:0/task:0/device:CPU:0" <<<"$out" \
        || fail "alone: no placement log line on /job:localhost/replica:0/task:0"
    out=$(mpirun 2 "$program" names 2>&1) || fail "mpirun -np 2: exit status $?"
    expect_passes "$out" 2 "mpirun -np 2"
    for k in 0 1; do
        grep -q "Executing op Relu in device /job:worker/replica:0/task:$k/device:CPU:0" <<<"$out" \
            || fail "mpirun -np 2: no placement log line on task $k"
    done
    ;;
collectives)
    out=$("$program" collectives 2>&1) || fail "alone: exit status $?"
    expect_passes "$out" 1 "alone"
    for np in 2 4; do
        out=$(mpirun "$np" "$program" collectives 2>&1) || fail "mpirun -np $np: exit status $?"
        expect_passes "$out" "$np" "mpirun -np $np"
        for k in $(seq 0 $((np - 1))); do
            grep -q "^\[worker $k\] ALL PASSED" <<<"$out" ||
                fail "mpirun -np $np: worker $k did not finish"
        done
    done
    ;;
deadline)
    # Worker 0 leaves without finishing MPI (its collective is still in flight), so mpirun
    # ends the job with an error status: only the verdicts count here.
    out=$(mpirun 2 "$program" deadline 2>&1)
    expect_passes "$out" 1 "mpirun -np 2"
    grep -q "^\[worker 0\] PASS an all-reduce a worker skips ends at the deadline" <<<"$out" \
        || fail "worker 0 did not see the deadline"
    grep -q "^\[worker 0\] ALL PASSED" <<<"$out" || fail "worker 0 did not finish"
    ;;
*)
    echo "usage: $0 MPIRUN PROGRAM names|collectives|deadline"
    exit 2
    ;;
esac
if [ "$failures" -ne 0 ]; then
    echo "$out"
    exit 1
fi
echo "PASS: multi_worker_checks $mode"
