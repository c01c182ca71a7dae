#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs each test of a cmocka program alone, in a process of its own, so that no test passes
# only because an earlier one prepared the process (loaded plug-ins, logged a refusal).
# The program takes a test name as its argument. Usage: run_each_alone.sh PROGRAM SOURCE
set -u
program=$1
source_file=$2
names=$(sed -n 's/^ *cmocka_unit_test(\([a-z0-9_]*\)),.*/\1/p' "$source_file")
[ -n "$names" ] || { echo "no tests found in $source_file"; exit 1; }
failed=0
count=0
for name in $names; do
    count=$((count + 1))
    if ! out=$("$program" "$name" 2>&1); then
        failed=$((failed + 1))
        printf 'FAIL: %s alone\n%s\n' "$name" "$out"
    elif ! grep -q '^\[  PASSED  \] 1 test(s)\.$' <<<"$out"; then
        failed=$((failed + 1))
        printf 'FAIL: %s alone ran no test\n%s\n' "$name" "$out"
    fi
done
echo "$((count - failed)) of $count tests pass alone"
[ $failed -eq 0 ]
