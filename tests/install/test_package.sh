#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make package`'s Debian packages: their names, the plug-in packages' contents (a plug-in and
# its documentation alone), the OpenCL package's dependencies (the ICD loader and CLBlast, not
# PoCL), and that unpacking the runtime and a plug-in package into a fresh prefix is all it
# takes for its devices to appear. Usage: test_package.sh BUILD_DIR
set -u
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/../cli/support.sh" # check, finish

cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/packages" >"$work/cpack.log" 2>&1
rc=$?; [ $rc -eq 0 ] || cat "$work/cpack.log"
check "cpack" $rc
# lib, or Debian's multiarch lib/x86_64-linux-gnu in a build for /usr such as make package's.
libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:[A-Z]*=//p' "$build/CMakeCache.txt")
version=$(sed -n 's/^tensorplug \([0-9.]*\) .*/\1/p' <<<"$("$build/bin/tensorplug" version)")
for name in libtensorplug1 libtensorplug-dev tensorplug-tools tensorplug-apu tensorplug-opencl; do
    [ -e "$work/packages/${name}_${version}_amd64.deb" ]
    check "${name}_${version}_amd64.deb is made" $?
done
apu="$work/packages/tensorplug-apu_${version}_amd64.deb"
files=$(dpkg-deb -c "$apu" | awk '$1 !~ /^d/ {print $6}' | LC_ALL=C sort | tr '\n' ' ')
[ "$files" = "./usr/$libdir/tensorplug/plugins/libtensorplug_apu.so ./usr/share/doc/tensorplug-apu/README.md ./usr/share/doc/tensorplug-apu/changelog.gz ./usr/share/doc/tensorplug-apu/copyright " ]
check "the APU package holds the plug-in and its documentation alone (got: $files)" $?

prefix="$work/prefix"
for name in libtensorplug1 tensorplug-tools; do
    dpkg-deb -x "$work/packages/${name}_${version}_amd64.deb" "$prefix"
done
out=$(TP_PLUGIN_PATH= "$prefix/usr/bin/tensorplug" devices)
[ "$out" = "PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')" ]
check "the runtime package alone shows the CPU (got: $out)" $?
dpkg-deb -x "$apu" "$prefix"
out=$(TP_PLUGIN_PATH= "$prefix/usr/bin/tensorplug" devices)
[ "$out" = "PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')
PhysicalDevice(name='/physical_device:APU:0', device_type='APU')" ]
check "after unpacking the APU package, APU:0 appears (got: $out)" $?

opencl="$work/packages/tensorplug-opencl_${version}_amd64.deb"
files=$(dpkg-deb -c "$opencl" | awk '$1 !~ /^d/ {print $6}' | LC_ALL=C sort | tr '\n' ' ')
[ "$files" = "./usr/$libdir/tensorplug/plugins/libtensorplug_opencl.so ./usr/share/doc/tensorplug-opencl/README.md ./usr/share/doc/tensorplug-opencl/changelog.gz ./usr/share/doc/tensorplug-opencl/copyright " ]
check "the OpenCL package holds the plug-in and its documentation alone (got: $files)" $?
depends=$(dpkg-deb -f "$opencl" Depends)
grep -q 'ocl-icd-libopencl1' <<<"$depends" && grep -q 'libclblast1' <<<"$depends" &&
    ! grep -q pocl <<<"$depends"
check "the OpenCL package depends on the ICD loader and CLBlast, not on PoCL (got: $depends)" $?
dpkg-deb -x "$opencl" "$prefix"
out=$(TP_PLUGIN_PATH= TP_OPENCL_DEVICE_TYPES=cpu TP_OPENCL_CACHE_DIR=none "$prefix/usr/bin/tensorplug" devices --type GPU 2>&1)
[ "$out" = "PhysicalDevice(name='/physical_device:GPU:0', device_type='GPU')" ]
check "after unpacking the OpenCL package, PoCL's device appears as GPU:0 (got: $out)" $?

finish
