# SPDX-License-Identifier: Apache-2.0
# Checks shared by the shell tests (the command's, the install's, NumPy's); source it, then
# end with `finish`.
failures=0
passes=0

check() { # check NAME CONDITION-EXIT-CODE
    if [ "$2" -eq 0 ]; then passes=$((passes + 1)); else
        failures=$((failures + 1)); echo "FAIL: $1"; fi
}
expect_line() { # expect_line NAME TEXT LINE: TEXT has LINE as a whole line
    grep -qxF -- "$3" <<<"$2"; local rc=$?
    [ $rc -eq 0 ] || printf 'missing line: %s\nin:\n%s\n' "$3" "$2"
    check "$1" $rc
}
expect_text() { # expect_text NAME TEXT PART: TEXT has PART somewhere
    grep -qF -- "$3" <<<"$2"; local rc=$?
    [ $rc -eq 0 ] || printf 'missing: %s\nin:\n%s\n' "$3" "$2"
    check "$1" $rc
}
finish() {
    echo "$passes passed, $failures failed"
    [ $failures -eq 0 ]
}
expect_json() { # expect_json NAME JSON PYTHON: JSON parses, and PYTHON's asserts on it (d) hold
    local err rc
    err=$(/usr/bin/python3 -c "import json, os, sys
d = json.load(sys.stdin)
$3" <<<"$2" 2>&1); rc=$?
    [ $rc -eq 0 ] || printf '%s\nin:\n%s\n' "$err" "$(head -c 3000 <<<"$2")"
    check "$1" $rc
}
no_control_bytes() { # no_control_bytes NAME TEXT: TEXT holds no control byte but newlines
    ! LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' <<<"$2"
    check "$1" $?
}
