#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs one fuzz target for a fixed time over its corpus in the tree (read only) and a working
# corpus where new inputs go; a crash leaves its input beside the working corpus.
#   run_fuzz.sh [--fresh] FUZZER FUZZ_DIR WORK_DIR SECONDS [libFuzzer flags...]
# --fresh empties the working corpus first, as ctest wants; `make fuzz` keeps it between runs.
set -eu
fresh=false
if [ "$1" = --fresh ]; then fresh=true; shift; fi
fuzzer=$1 fuzz_dir=$2 work=$3 seconds=$4
shift 4
target=$(basename "$fuzzer" | sed 's/^fuzz_//')
corpus="$work/$target"
$fresh && rm -rf "$corpus"
mkdir -p "$corpus"
dict="$fuzz_dir/$target.dict"
if [ -f "$dict" ]; then set -- -dict="$dict" "$@"; fi
# -timeout: an input that runs for seconds is a hang, and a failure like any other.
exec "$fuzzer" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$work/$target-" "$@" "$corpus" "$fuzz_dir/corpus/$target"
