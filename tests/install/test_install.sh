#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the build into a temporary prefix and builds the README's example against it, once
# with pkg-config and once with CMake's find_package, with the shared and static library.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR C_COMPILER
set -u
build=$1
source=$2
cc=$3
prefix=$(mktemp -d)
work=$(mktemp -d)
trap 'rm -rf "$prefix" "$work"' EXIT
source "$(dirname "$0")/../cli/support.sh" # check, finish

# The runtime, development files and command first, as libtensorplug1, libtensorplug-dev and
# tensorplug-tools hold them.
for component in runtime dev tools; do
    cmake --install "$build" --prefix "$prefix" --component $component >>"$work/install.log" 2>&1
    check "cmake --install --component $component" $?
done
for file in include/tensorplug/tensorplug.h include/tensorplug/plugin.h \
            include/tensorplug/training.h include/tensorplug/float16.h bin/tensorplug; do
    [ -e "$prefix/$file" ]; check "installed $file" $?
done
libdir=$(dirname "$(find "$prefix" -name 'libtensorplug.so' | head -n 1)")
[ -e "$libdir/libtensorplug.a" ]; check "installed the static library" $?
[ -e "$libdir/pkgconfig/tensorplug.pc" ]; check "installed tensorplug.pc" $?

out=$(LD_LIBRARY_PATH="$libdir" TP_PLUGIN_PATH= "$prefix/bin/tensorplug" devices)
[ "$out" = "PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')" ]
check "the installed command runs (got: $out)" $?
# With its manual page, compressed as Debian wants it, and its bash completion.
man_page=$(find "$prefix" -path '*/man1/tensorplug.1.gz')
[ -n "$man_page" ] && gzip -dc "$man_page" | cmp -s - "$source/docs/man/tensorplug.1"
check "installed man1/tensorplug.1.gz, the manual page compressed (got: $man_page)" $?
[ -n "$man_page" ] && [ "$(od -An -tx1 -j4 -N4 "$man_page" | tr -d ' ')" = 00000000 ]
check "the manual page's gzip header has no time stamp (gzip -n)" $?
[ -f "$prefix/share/bash-completion/completions/tensorplug" ]
check "installed share/bash-completion/completions/tensorplug" $?

# A TensorFlow plug-in's unchanged source builds against the installed compatibility headers
# alone, and the installed runtime runs it through its adapter.
[ -e "$libdir/tensorplug/libtensorplug_tfcompat.so.1" ]
check "the TensorFlow adapter is in the runtime's private folder" $?
tfcompat="$prefix/include/tensorplug/tfcompat"
[ -e "$tfcompat/tensorflow/c/kernels.h" ]; check "installed the TensorFlow C API headers" $?
mkdir -p "$work/tf_plugins"
tf_sources=$source/tests/tfcompat/plugins
$cc -std=c11 -Wall -Werror -shared -fPIC -pthread -I"$tfcompat" "$tf_sources/my_device.c" \
    "$tf_sources/my_kernels.c" "$tf_sources/my_pool.c" "$tf_sources/my_queue.c" \
    -o "$work/tf_plugins/libmy_device.so"
check "a TensorFlow plug-in builds against the installed headers" $?
out=$(LD_LIBRARY_PATH="$libdir" TP_PLUGIN_PATH="$work/tf_plugins" TP_TFCOMPAT_LIBRARY= \
      "$prefix/bin/tensorplug" devices 2>"$work/tf_log")
[ "$out" = "PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')
PhysicalDevice(name='/physical_device:MY_DEVICE:0', device_type='MY_DEVICE')" ]
check "the installed runtime runs the TensorFlow plug-in (got: $out)" $?
grep -q "skipped TensorFlow kernel 'Conv3D'" "$work/tf_log"
check "the kernel it cannot honour is named on standard error" $?

# Then the APU package alone: nothing else is needed for the device to appear.
cmake --install "$build" --prefix "$prefix" --component apu >>"$work/install.log" 2>&1
check "cmake --install --component apu" $?
[ -e "$libdir/tensorplug/plugins/libtensorplug_apu.so" ]
check "the APU plug-in is in the installed plug-in folder" $?
out=$(LD_LIBRARY_PATH="$libdir" TP_PLUGIN_PATH= "$prefix/bin/tensorplug" devices)
[ "$out" = "PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')
PhysicalDevice(name='/physical_device:APU:0', device_type='APU')" ]
check "with the APU installed, the device appears (got: $out)" $?

expected="tp.Tensor(
[[22. 28.]
 [49. 64.]], shape=(2, 2), dtype=float32)"
flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs tensorplug)
check "pkg-config knows tensorplug" $?
plugindir=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --variable=plugindir tensorplug)
[ "$(realpath -m "$plugindir")" = "$(realpath "$libdir/tensorplug/plugins")" ]
check "pkg-config's plugindir is the installed plug-in folder (got: $plugindir)" $?
$cc -std=c11 -Wall -Werror "$source/examples/hello_tensor.c" $flags -o "$work/hello_pc"
check "the example builds with pkg-config" $?
out=$(LD_LIBRARY_PATH="$libdir" TP_PLUGIN_PATH= "$work/hello_pc")
grep -qF "$expected" <<<"$out"; check "the pkg-config build runs (got: $out)" $?

mkdir -p "$work/app"
cp "$source/examples/hello_tensor.c" "$source/examples/resume_training.c" "$work/app/"
cat >"$work/app/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(app C)
find_package(tensorplug 0.1 REQUIRED)
add_executable(hello_shared hello_tensor.c)
target_link_libraries(hello_shared tensorplug::tensorplug)
add_executable(hello_static hello_tensor.c)
target_link_libraries(hello_static tensorplug::tensorplug_static)
file(WRITE ${CMAKE_BINARY_DIR}/plugin_dir.txt "${tensorplug_PLUGIN_DIR}")
# Checkpoints need libzip, which a static build links itself.
add_executable(resume_static resume_training.c)
target_link_libraries(resume_static tensorplug::tensorplug_static)
CMAKE
cmake -S "$work/app" -B "$work/app/build" -DCMAKE_C_COMPILER="$cc" \
      -DCMAKE_PREFIX_PATH="$prefix" >"$work/cmake.log" 2>&1 &&
    cmake --build "$work/app/build" >>"$work/cmake.log" 2>&1
rc=$?; [ $rc -eq 0 ] || cat "$work/cmake.log"
check "the example builds with find_package" $rc
plugindir=$(cat "$work/app/build/plugin_dir.txt")
[ "$plugindir" = "$(realpath "$libdir/tensorplug/plugins")" ]
check "find_package's tensorplug_PLUGIN_DIR is the installed plug-in folder (got: $plugindir)" $?
for variant in shared static; do
    out=$(LD_LIBRARY_PATH="$libdir" TP_PLUGIN_PATH= "$work/app/build/hello_$variant")
    grep -qF "$expected" <<<"$out"; check "the find_package $variant build runs (got: $out)" $?
done

out=$(LD_LIBRARY_PATH="$libdir" TP_PLUGIN_PATH= "$work/app/build/resume_static" "$work/run.npz")
grep -qF "Restored: w 1.6294, b 0.9906" <<<"$out"
check "the static build saves and restores a checkpoint (got: $out)" $?

finish
