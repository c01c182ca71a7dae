#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs one example with no plug-in (or those in EXAMPLE_PLUGIN_PATH) and compares what it prints with the reference document's
# lines, kept in EXAMPLE.expected. Usage: run_example.sh PROGRAM EXPECTED [STDERR_LINE]
# EXAMPLE_SCRUB, a sed -E script, rewrites what varies from run to run (timings) first;
# EXAMPLE_ARGS are the program's arguments.
set -u
program=$1
expected=$2
stderr_line=${3:-}
# shellcheck disable=SC2086 # the arguments are words
out=$(TP_PLUGIN_PATH=${EXAMPLE_PLUGIN_PATH:-} TP_LOG_DEVICE_PLACEMENT= "$program" ${EXAMPLE_ARGS:-} \
      2>"${TMPDIR:-/tmp}/example.$$.err")
rc=$?
if [ -n "${EXAMPLE_SCRUB:-}" ]; then out=$(sed -E "$EXAMPLE_SCRUB" <<<"$out"); fi
err=$(cat "${TMPDIR:-/tmp}/example.$$.err"); rm -f "${TMPDIR:-/tmp}/example.$$.err"
failures=0
if [ $rc -ne 0 ]; then echo "FAIL: exit code $rc; stderr: $err"; failures=$((failures + 1)); fi
if [ "$out" != "$(cat "$expected")" ]; then
    echo "FAIL: output differs from $expected:"; diff <(echo "$out") "$expected"
    failures=$((failures + 1))
fi
if [ -n "$stderr_line" ] && ! grep -qF -- "$stderr_line" <<<"$err"; then
    echo "FAIL: standard error lacks: $stderr_line"; echo "it was: $err"
    failures=$((failures + 1))
fi
echo "$((3 - failures)) passed, $failures failed"
[ $failures -eq 0 ]
