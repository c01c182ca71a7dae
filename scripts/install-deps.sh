#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages listed in packaging/debian-packages.txt that are missing. As
# root it runs apt-get; otherwise it prints the command to run and fails.
set -eu
list="$(dirname "$0")/../packaging/debian-packages.txt"
if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "install-deps: not a Debian system; make sure these are installed:" \
         "$(grep -v '^#' "$list" | tr '\n' ' ')" >&2
    exit 0
fi
missing=""
for package in $(grep -v '^#' "$list"); do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $package"
    fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
    echo "install-deps: installing$missing"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
else
    echo "install-deps: missing Debian packages; run as root:" >&2
    echo "  apt-get install -y$missing" >&2
    exit 1
fi
