#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make package`'s Debian packages pass lintian: any error (E:) fails, one check per package;
# warnings are shown. Usage: test_lintian.sh PACKAGE_BUILD_DIR
set -u
build=$1
source "$(dirname "$0")/../cli/support.sh" # check, finish

if ! command -v lintian >/dev/null; then
    echo "FAIL: lintian is not installed (it is in packaging/debian-packages.txt: make deps)"
    exit 1
fi
shopt -s nullglob
packages=("$build"/*.deb)
[ ${#packages[@]} -ge 4 ]
check "make package made the packages (found: ${packages[*]})" $?
for package in "${packages[@]}"; do
    # lintian refuses to judge nothing: a package it cannot read is an error line of its own.
    report=$(lintian --tag-display-limit 0 "$package" 2>&1 | grep -v 'running with root privileges')
    errors=$(grep -c '^E: ' <<<"$report")
    [ -n "$report" ] && echo "$report"
    [ "$errors" -eq 0 ]
    check "lintian finds no error in $(basename "$package") ($errors)" $?
done
finish
