#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# No plug-in may need a symbol of the core: it reaches the runtime only through the host
# function table. Usage: check_plugin_symbols.sh LIBTENSORPLUG PLUGIN_DIR...
set -u
core=$1
shift
core_symbols=$(nm -D --defined-only "$core" | awk '{print $3}' | sort -u)
[ -n "$core_symbols" ] || { echo "no exported symbols read from $core"; exit 1; }
checked=0
failed=0
for dir in "$@"; do
    for plugin in "$dir"/*.so; do
        [ -e "$plugin" ] || continue
        checked=$((checked + 1))
        needed=$(nm -D --undefined-only "$plugin" | awk '{print $2}' | sed 's/@.*//' | sort -u)
        shared=$(comm -12 <(echo "$core_symbols") <(echo "$needed"))
        if [ -n "$shared" ]; then
            echo "FAIL: $plugin needs symbols of the core: $shared"
            failed=$((failed + 1))
        else
            echo "ok: $plugin"
        fi
    done
done
[ $checked -gt 0 ] || { echo "no plug-in found in $*"; exit 1; }
echo "$((checked - failed)) passed, $failed failed"
[ $failed -eq 0 ]
