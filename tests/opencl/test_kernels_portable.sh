#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Every program of the OpenCL plug-in is strict OpenCL C 1.2, with and without doubles, as
# clang's front end reads it pedantically: PoCL accepts clang's extensions (variadic macros,
# say) that a GPU vendor's compiler refuses, so PoCL passing proves too little. NVIDIA's
# compiler failed kernels/elementwise.cl on its variadic macro; this check would have caught it.
# Usage: test_kernels_portable.sh CLANG KERNELS_DIR
set -u
clang=$1 kernels=$2
failures=0

# Builds COMMON + FILE under OPTIONS; prints clang's complaint and returns 1 when it has one.
strict_build() {
    local file=$1 options=$2 complaint
    complaint=$(cat "$kernels/common.clh" "$file" |
        "$clang" -x cl -cl-std=CL1.2 $options -pedantic -Werror -fsyntax-only - 2>&1) && return 0
    echo "$complaint" | head -20
    return 1
}

# The check itself must be able to fail: a variadic macro, which PoCL takes, is refused.
probe=$(mktemp)
trap 'rm -f "$probe"' EXIT
printf '#define HEAD(name, ...) __kernel void name(__global int *z __VA_ARGS__)\nHEAD(k) { *z = 1; }\n' >"$probe"
if strict_build "$probe" "" >/dev/null; then
    echo "FAIL: a variadic macro passed the strict build, so this check proves nothing"
    exit 1
fi

count=0
for file in "$kernels"/*.cl; do
    for options in "" "-DTP_FP64"; do
        count=$((count + 1))
        if ! strict_build "$file" "$options"; then
            echo "FAIL: kernels/$(basename "$file") ${options:-without doubles} is not strict OpenCL C 1.2"
            failures=$((failures + 1))
        fi
    done
done
[ "$count" -ge 20 ] || { echo "FAIL: only $count builds: kernels missing from $kernels?"; exit 1; }
echo "$count strict OpenCL C 1.2 builds, $failures failed"
[ "$failures" -eq 0 ]
