#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The OpenCL plug-in as a user meets it through `tensorplug`: which OpenCL devices become GPUs
# (TP_OPENCL_DEVICE_TYPES, a malformed value warned about), what `devices --json` says of them,
# a machine without any OpenCL platform (one line, the process goes on), the program cache
# (written once, a damaged entry rebuilt and never trusted), and plugin-check on PoCL passing
# every check. Usage: test_opencl_cli.sh TENSORPLUG OPENCL_PLUGIN RELU_ON_GPU
set -u
tensorplug=$1
plugin=$2
relu_on_gpu=$3
source "$(dirname "$0")/../cli/support.sh"
export TP_PLUGIN_PATH=$plugin TP_LOG_LEVEL=info
unset TP_VISIBLE_DEVICES

out=$(TP_OPENCL_DEVICE_TYPES=cpu "$tensorplug" devices 2>&1)
expect_line "PoCL's CPU device is GPU:0 with TP_OPENCL_DEVICE_TYPES=cpu" "$out" \
    "PhysicalDevice(name='/physical_device:GPU:0', device_type='GPU')"
json=$(TP_OPENCL_DEVICE_TYPES=CPU,gpu "$tensorplug" devices --json --type gpu 2>&1)
expect_text "devices --json gives the OpenCL version and driver" "$json" \
    '"driver_version": "OpenCL '
grep -q '"compute_units": [1-9]' <<<"$json"
check "devices --json gives the compute units (got: $json)" $?

# Without cpu, PoCL's device is not a GPU: one line says why, and the CPU is still there.
out=$(TP_OPENCL_DEVICE_TYPES=gpu,accelerator "$tensorplug" devices 2>&1); rc=$?
check "no GPU is not an error (exit $rc)" $rc
expect_line "one line says why there is no GPU" "$out" \
    "tensorplug info: [opencl] no OpenCL device of the types TP_OPENCL_DEVICE_TYPES asks for (default gpu,accelerator; add cpu for devices such as PoCL's): no GPU device"
expect_line "the CPU is listed" "$out" \
    "PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')"
[ "$(grep -c GPU <<<"$out")" -eq 1 ]
check "no GPU is listed" $?

out=$(TP_OPENCL_DEVICE_TYPES='gpu,tpu' "$tensorplug" devices 2>&1)
expect_line "a malformed TP_OPENCL_DEVICE_TYPES is one warning naming it" "$out" \
    "tensorplug warning: [opencl] TP_OPENCL_DEVICE_TYPES='gpu,tpu' is not a comma-separated list of gpu, accelerator, cpu and all; using the default gpu,accelerator"

# No OpenCL platform at all: the ICD loader finds no vendor file.
empty=$(mktemp -d)
out=$(OCL_ICD_VENDORS=$empty TP_OPENCL_DEVICE_TYPES=all "$tensorplug" devices 2>&1); rc=$?
rmdir "$empty"
check "no OpenCL platform is not an error (exit $rc)" $rc
expect_line "one line says there is no OpenCL platform" "$out" \
    "tensorplug info: [opencl] no OpenCL platform is installed (CL_PLATFORM_NOT_FOUND_KHR): no GPU device"
expect_line "the CPU is still listed" "$out" \
    "PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')"

# The program cache: a fresh folder gets one entry for the one program a Relu needs; a damaged
# entry (bytes flipped, or cut short) is rebuilt, and the rebuilt entry is whole again.
cache=$(mktemp -d)
relu() { TP_OPENCL_CACHE_DIR=$cache TP_OPENCL_DEVICE_TYPES=cpu "$relu_on_gpu" 2>&1; }
expected="tp.Tensor([0. 3.], shape=(2,), dtype=float32)"
out=$(relu)
expect_line "Relu on GPU:0 with an empty cache" "$out" "$expected"
entries=("$cache"/*.bin)
[ ${#entries[@]} -eq 1 ] && [ -s "${entries[0]}" ]
check "one cache entry is written (got: ${entries[*]})" $?
entry=${entries[0]}
size=$(stat -c %s "$entry")
# An entry is whole when the binary size its header declares (8 bytes after the 8-byte magic)
# is what follows the 24-byte header. The rebuilt binary's size may differ from the first one's:
# PoCL embeds its own kernel cache, which a first build on a fresh machine fills.
whole() { [ "$(od -An -t u8 -j 8 -N 8 "$1" | tr -d ' ')" -eq $(($(stat -c %s "$1") - 24)) ]; }
whole "$entry"
check "the entry's header declares the binary that follows it" $?
[ "$(ls -A "$cache" | wc -l)" -eq 1 ]
check "no temporary file is left beside the entry" $?
printf '\xde\xad\xbe\xef\xde\xad\xbe\xef' | dd of="$entry" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
out=$(relu)
expect_line "Relu is right from a cache entry with flipped bytes" "$out" "$expected"
whole "$entry" && ! grep -q $'\xde\xad\xbe\xef\xde\xad\xbe\xef' "$entry"
check "the damaged entry is rewritten whole" $?
truncate -s 20 "$entry"
out=$(relu)
expect_line "Relu is right from a cache entry cut short" "$out" "$expected"
[ "$(stat -c %s "$entry")" -gt 24 ] && whole "$entry"
check "the cut entry is rewritten whole" $?
rm -rf "$cache"
out=$(TP_OPENCL_CACHE_DIR=none TP_OPENCL_DEVICE_TYPES=cpu "$relu_on_gpu" 2>&1)
expect_line "TP_OPENCL_CACHE_DIR=none builds without a cache" "$out" "$expected"

out=$(TP_OPENCL_DEVICE_TYPES=cpu TP_LOG_LEVEL= "$tensorplug" plugin-check "$plugin" 2>&1); rc=$?
check "plugin-check passes on PoCL (exit $rc)" $rc
last=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' <<<"$out")
grep -qE '^[0-9]+ passed, 0 failed$' <<<"$last"
check "plugin-check ends with no failure (got: $last)" $?
for dtype in float32 float64 int32 int64 uint8 bool; do
    grep -q "^pass  kernel Cast on GPU, $dtype: " <<<"$out"
    check "plugin-check compares Cast from $dtype with the CPU" $?
done
[ $rc -eq 0 ] || grep -v '^pass' <<<"$out"
finish
