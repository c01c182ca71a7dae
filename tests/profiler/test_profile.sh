#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# TP_PROFILE end to end: runs a program with it set and checks the profile with Python's JSON
# parser (check_trace.py). Usage: test_profile.sh workload|mirrored PROGRAM [ARGUMENTS...]
set -u
mode=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/tp-profile.XXXXXX")
trap 'rm -rf "$dir"' EXIT
profile="$dir/run.json"
if ! TP_PROFILE="$profile" TP_LOG_LEVEL= "$@" >"$dir/out" 2>"$dir/err"; then
    echo "FAIL: $* exited with $?"; cat "$dir/err"; exit 1
fi
if ! grep -q "TP_PROFILE: [0-9]* events written to '$profile'" "$dir/err"; then
    echo "FAIL: no line saying the profile was written; standard error was:"; cat "$dir/err"
    exit 1
fi
/usr/bin/python3 "$here/check_trace.py" "$mode" "$profile"
