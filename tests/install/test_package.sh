#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make package`'s Debian packages: their names, the plug-in packages' contents (a plug-in and
# its documentation alone), the OpenCL package's dependencies (the ICD loader and CLBlast, not
# PoCL), and that unpacking the runtime and a plug-in package into a fresh prefix is all it
# takes for its devices to appear; likewise the MPI package for a multi-worker strategy, whose
# absence a program is told by name. Usage: test_package.sh BUILD_DIR
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
for name in libtensorplug1 libtensorplug-dev tensorplug-tools tensorplug-apu tensorplug-opencl \
            tensorplug-mpi; do
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

mpi="$work/packages/tensorplug-mpi_${version}_amd64.deb"
files=$(dpkg-deb -c "$mpi" | awk '$1 !~ /^d/ {print $6}' | LC_ALL=C sort | tr '\n' ' ')
doc=./usr/share/doc/tensorplug-mpi
[ "$files" = "./usr/$libdir/tensorplug/libtensorplug_mpi.so $doc/changelog.gz $doc/copyright " ]
check "the MPI package holds the communication library, in the runtime's private folder, \
and its documentation alone (got: $files)" $?
depends=$(dpkg-deb -f "$mpi" Depends)
grep -q 'libopenmpi3' <<<"$depends" && grep -qF "libtensorplug1 (= $version)" <<<"$depends"
check "the MPI package depends on Open MPI and on this very runtime (got: $depends)" $?

# A program built against the unpacked development files that makes a multi-worker strategy:
# without the MPI package it is told which library is missing and where it was looked for;
# with it, it runs (outside mpirun) as the one worker of its own job.
dpkg-deb -x "$work/packages/libtensorplug-dev_${version}_amd64.deb" "$prefix"
cat >"$work/one_worker.c" <<'EOF'
#include <stdio.h>
#include <tensorplug/tensorplug.h>
#include <tensorplug/training.h>

int main(void) {
    tp_context_t *context;
    TP_CHECK(tp_context_create(NULL, &context));
    const char *device = "/cpu:0";
    tp_mirrored_strategy_t *strategy;
    tp_status_t *error =
        tp_multi_worker_mirrored_strategy_create(context, &device, 1, NULL, &strategy);
    if (error != NULL) {
        printf("%s\n", tp_status_message(error));
        tp_status_free(error);
        tp_context_destroy(context);
        return 1;
    }
    printf("worker %zu of %zu\n", tp_mirrored_strategy_worker_index(strategy),
           tp_mirrored_strategy_num_workers(strategy));
    tp_mirrored_strategy_destroy(strategy);
    tp_context_destroy(context);
    return 0;
}
EOF
cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
flags=$(PKG_CONFIG_PATH="$prefix/usr/$libdir/pkgconfig" pkg-config --cflags --libs tensorplug)
"$cc" -std=c11 -Wall -Werror "$work/one_worker.c" $flags -o "$work/one_worker"
check "a multi-worker program builds against the unpacked development package" $?
one_worker() {
    LD_LIBRARY_PATH="$prefix/usr/$libdir" TP_PLUGIN_PATH= TP_MPI_LIBRARY= OMPI_MCA_btl=self,vader \
        "$work/one_worker" 2>"$work/one_worker.log" # the OpenCL plug-in's notes
}
private=$(realpath "$prefix/usr/$libdir")/tensorplug/libtensorplug_mpi.so
out=$(one_worker)
rc=$?
[ $rc -ne 0 ] && grep -qF "cannot load the MPI communication library '$private'" <<<"$out" &&
    grep -q "install the tensorplug-mpi package" <<<"$out"
check "without the MPI package the program is told which library is missing (rc $rc, got: $out)" $?
dpkg-deb -x "$mpi" "$prefix"
out=$(one_worker)
[ "$out" = "worker 0 of 1" ]
check "after unpacking the MPI package, the program finds it and runs as one worker (got: $out)" $?

finish
