#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs a training example (digits_mlp, digits_cnn) and checks what it printed: one progress line
# per epoch, and a final test accuracy, reached by training in this run, of at least MIN percent.
# Usage: check_accuracy.sh PROGRAM MIN EPOCHS [LINE...]
# The program runs with --epochs EPOCHS and the words of EXAMPLE_ARGS, with the plug-ins of
# EXAMPLE_PLUGIN_PATH alone (none when empty). Every progress line and the final one must name
# the split EXAMPLE_SPLIT ("fixed split" when unset or empty; "shuffled split, seed 0" for
# --split shuffled). Each LINE must appear, whole, among the lines it printed on standard
# output or standard error (a placement, a replica's device).
set -u
program=$1
min=$2
epochs=$3
shift 3
split=${EXAMPLE_SPLIT:-fixed split}
err_file="${TMPDIR:-/tmp}/check_accuracy.$$.err"
# shellcheck disable=SC2086 # the arguments are words
out=$(TP_PLUGIN_PATH=${EXAMPLE_PLUGIN_PATH:-} TP_LOG_DEVICE_PLACEMENT='' "$program" \
      --epochs "$epochs" ${EXAMPLE_ARGS:-} 2>"$err_file")
rc=$?
err=$(cat "$err_file"); rm -f "$err_file"
echo "$out"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
if [ $rc -ne 0 ]; then fail "exit code $rc; stderr: $(tail -n 5 <<<"$err")"; fi

# "Epoch 3/20 (fixed split): loss 0.1028, train accuracy 97.29%, test accuracy 85.56%, 0.03 s,
# 42427 images/s". The split's name is letters, digits, commas and spaces: no ERE operators.
number='[0-9]+(\.[0-9]+)?'
progress="^Epoch [0-9]+/$epochs \\($split\\): loss $number, train accuracy $number%, test accuracy $number%, $number s, [0-9]+ images/s\$"
lines=$(grep -cE "$progress" <<<"$out")
if [ "$lines" -ne "$epochs" ]; then fail "$lines progress lines of the expected form, not $epochs"; fi
for epoch in $(seq 1 "$epochs"); do
    grep -qE "^Epoch $epoch/$epochs \\($split\\): " <<<"$out" || fail "no progress line for epoch $epoch"
done

# The final figure must be the last epoch's test accuracy, and reach MIN.
final=$(sed -nE "s/^Test accuracy \\($split\\): ([0-9]+\\.[0-9]+)%\$/\\1/p" <<<"$out")
last=$(grep -E "^Epoch $epochs/$epochs \\($split\\): " <<<"$out" | sed -nE 's/.*test accuracy ([0-9.]+)%.*/\1/p')
if [ -z "$final" ]; then
    fail "no final 'Test accuracy ($split): N%' line"
else
    [ "$final" = "$last" ] || fail "final test accuracy $final% is not the last epoch's ($last%)"
    awk -v a="$final" -v m="$min" 'BEGIN { exit !(a + 0 >= m + 0) }' ||
        fail "test accuracy $final% is below $min%"
fi

for line in "$@"; do
    grep -qxF -- "$line" <<<"$out"$'\n'"$err" || fail "the output lacks the line: $line"
done
# EXAMPLE_ALL_OPS_ON=DEVICE: every op the placement log names ran on DEVICE (the training step
# stays on an accelerator end to end, nothing falls back to the CPU).
if [ -n "${EXAMPLE_ALL_OPS_ON:-}" ]; then
    elsewhere=$(grep -E '^Executing op ' <<<"$err" | grep -vF " in device $EXAMPLE_ALL_OPS_ON" |
                sort -u | head -n 5)
    [ -z "$elsewhere" ] || fail "ops ran outside $EXAMPLE_ALL_OPS_ON: $elsewhere"
    grep -qE '^Executing op ' <<<"$err" || fail "no placement was logged"
fi
echo "test accuracy ${final:-none}% on the $split (at least $min% wanted); $failures failed"
[ $failures -eq 0 ]
