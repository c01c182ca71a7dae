#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# examples/plugin-minimal as a vendor builds it: against the runtime's installed development
# files alone (the runtime, dev and tools components in a temporary prefix), then checked by
# the installed `tensorplug plugin-check`, installed into the prefix's plug-in folder, seen by
# `tensorplug devices`, and packaged by cpack as tensorplug-minimal.
# Usage: test_plugin_minimal.sh BUILD_DIR SOURCE_DIR C_COMPILER
set -u
umask 022 # the runtime refuses plug-in folders that others may write to
build=$1
source=$2
cc=$3
example="$source/examples/plugin-minimal"
prefix=$(mktemp -d)
work=$(mktemp -d)
trap 'rm -rf "$prefix" "$work"' EXIT
source "$(dirname "$0")/../cli/support.sh" # check, finish
# The installed command, as a user runs it: only the prefix's plug-in folder is searched.
tensorplug() {
    env -u TP_PLUGINS -u TP_VISIBLE_DEVICES LD_LIBRARY_PATH="$libdir" TP_PLUGIN_PATH= \
        "$prefix/bin/tensorplug" "$@"
}

for component in runtime dev tools; do
    cmake --install "$build" --prefix "$prefix" --component $component >>"$work/install.log" 2>&1
    check "cmake --install --component $component" $?
done
libdir=$(dirname "$(find "$prefix" -name 'libtensorplug.so' | head -n 1)")
plugindir=$(realpath -m "$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --variable=plugindir tensorplug)")

lines=$(wc -l <"$example/minimal_plugin.c")
[ "$lines" -le 250 ]; check "the minimal plug-in is at most 250 lines (it is $lines)" $?

cmake -S "$example" -B "$work/build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS=-Werror \
      -DCMAKE_PREFIX_PATH="$prefix" >"$work/cmake.log" 2>&1 &&
    cmake --build "$work/build" >>"$work/cmake.log" 2>&1
rc=$?; [ $rc -eq 0 ] || cat "$work/cmake.log"
check "the example builds against the installed development files" $rc
plugin="$work/build/libtensorplug_minimal.so"

bash "$source/tests/check_plugin_symbols.sh" "$libdir/libtensorplug.so" "$work/build" \
    >"$work/symbols.log" 2>&1
rc=$?; [ $rc -eq 0 ] || cat "$work/symbols.log"
check "the plug-in needs no symbol of the runtime" $rc

out=$(tensorplug plugin-check "$plugin" 2>&1)
rc=$?
summary=$(tail -n 1 <<<"$out")
[ $rc -eq 0 ] && grep -qE '^[0-9]+ passed, 0 failed$' <<<"$summary" &&
    grep -q '^pass  kernel Add on MINI, float32: ' <<<"$out" &&
    ! grep -q '^FAIL' <<<"$out"
rc=$?; [ $rc -eq 0 ] || echo "$out"
check "tensorplug plugin-check passes the plug-in (got: $summary)" $rc

cmake --install "$work/build" >>"$work/install.log" 2>&1
check "cmake --install of the example" $?
[ -f "$plugindir/libtensorplug_minimal.so" ]
check "the plug-in is installed in the plug-in folder $plugindir" $?
out=$(tensorplug devices 2>&1)
[ "$out" = "PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')
PhysicalDevice(name='/physical_device:MINI:0', device_type='MINI')" ]
check "once installed, MINI:0 appears (got: $out)" $?
out=$(tensorplug plugins 2>&1)
grep -qF "$plugindir/libtensorplug_minimal.so: loaded: minimal 1.0.0" <<<"$out"
check "tensorplug plugins lists it as loaded (got: $out)" $?

(cd "$work/build" && cpack -G DEB) >"$work/cpack.log" 2>&1
rc=$?; [ $rc -eq 0 ] || cat "$work/cpack.log"
check "cpack makes a Debian package" $rc
deb=$(find "$work/build" -maxdepth 1 -name 'tensorplug-minimal_1.0.0_*.deb' | head -n 1)
[ -n "$deb" ]; check "the package is tensorplug-minimal_1.0.0_<arch>.deb" $?
if [ -n "$deb" ]; then
    files=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}')
    [ "$files" = ".$plugindir/libtensorplug_minimal.so" ]
    check "the package holds the plug-in alone, in the plug-in folder (got: $files)" $?
    depends=$(dpkg-deb -f "$deb" Depends)
    grep -q '^libtensorplug1 (>= ' <<<"$depends"
    check "the package depends on libtensorplug1 (got: $depends)" $?
fi

finish
