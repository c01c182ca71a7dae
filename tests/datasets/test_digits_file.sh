#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The digits file python3-sklearn installs, read by tp_digits_load, is what zcat shows of it:
# every image's pixels (* 16) and label, in order; the split's train part is the file's first
# 1,437 lines and its test part its last 360. The library finds the file by its default path,
# and TP_DIGITS_PATH moves it.
#   test_digits_file.sh DIGITS_ROWS DEFAULT_PATH
set -u
program=$1 file=$2
failures=0
check() { # description status
    if [ "$2" -eq 0 ]; then echo "ok: $1"; else echo "FAILED: $1"; failures=$((failures + 1)); fi
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset TP_DIGITS_PATH

zcat "$file" >"$work/expected.csv"
check "zcat reads $file (python3-sklearn installed?)" $?
[ "$(wc -l <"$work/expected.csv")" -eq 1797 ]
check "the file has 1797 lines" $?

# No path: the default one.
"$program" all >"$work/all.csv" 2>"$work/all.err"
check "tp_digits_load reads the default path $(head -c 300 "$work/all.err")" $?
[ "$(wc -l <"$work/all.csv")" -eq 1797 ]
check "1797 images" $?
head -1 "$work/all.csv" | cmp -s - <(head -1 "$work/expected.csv")
check "the first image and label are the file's first line: $(head -1 "$work/all.csv")" $?
cmp -s "$work/all.csv" "$work/expected.csv"
check "every image and label is the file's, in order" $?

"$program" train "$file" >"$work/train.csv"
check "tp_digits_load_split reads it" $?
[ "$(wc -l <"$work/train.csv")" -eq 1437 ]
check "1437 training images" $?
cmp -s "$work/train.csv" <(head -n 1437 "$work/expected.csv")
check "the training images are the first 1437 lines" $?
"$program" test "$file" >"$work/test.csv"
[ "$(wc -l <"$work/test.csv")" -eq 360 ]
check "360 test images" $?
cmp -s "$work/test.csv" <(tail -n 360 "$work/expected.csv")
check "the test images are the last 360 lines" $?
[ "$(cut -d, -f65 "$work/test.csv" | sort -u | tr '\n' ' ')" = "0 1 2 3 4 5 6 7 8 9 " ]
check "the test images hold every label 0..9" $?

TP_DIGITS_PATH="$work/moved.csv.gz" "$program" all >/dev/null 2>"$work/moved.err"
grep -q "^NOT_FOUND: tp_digits_load: '$work/moved.csv.gz': opening it" "$work/moved.err"
check "TP_DIGITS_PATH moves the file; a missing one is NOT_FOUND, named" $?
cp "$file" "$work/moved.csv.gz"
TP_DIGITS_PATH="$work/moved.csv.gz" "$program" all | cmp -s - "$work/expected.csv"
check "the file read from TP_DIGITS_PATH is the same" $?
exit $((failures > 0))
