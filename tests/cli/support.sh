# Checks shared by the command's tests; source it, then end with `finish`.
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
