#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `tensorplug plugin-check` on the TensorFlow-style C plug-in: run through the adapter, its
# asynchronous device and its kernels pass every check that applies to one device, the
# ordering checks (held streams, events, host waits) included; the failing variant fails
# exactly its failing kernels' checks. Usage: test_plugin_check.sh TENSORPLUG PLUGIN_DIR
set -u
tensorplug=$1
plugins=$2
source "$(dirname "$0")/../cli/support.sh"
export TP_PLUGIN_PATH=

out=$("$tensorplug" plugin-check "$plugins/libtp_tfcompat_my_device.so"); rc=$?
check "MY_DEVICE passes (exit $rc)" $rc
expect_line "its run ends with 25 passed, 0 failed" "$out" "25 passed, 0 failed"
for name in load registrations "MY_DEVICE:0 allocate" "MY_DEVICE:0 round trips" \
            "MY_DEVICE:0 device-to-device copy" "MY_DEVICE:0 stream order" \
            "MY_DEVICE:0 events" "MY_DEVICE:0 host waits" "MY_DEVICE:0 two threads" \
            "kernel Relu on MY_DEVICE, float32" "kernel Relu on MY_DEVICE, float64" \
            "kernel MatMul on MY_DEVICE, float32" "kernel Add on MY_DEVICE, float32" \
            "kernel Add on MY_DEVICE, int32" "kernel Square on MY_DEVICE, float32" \
            "kernel Square on MY_DEVICE, float32, memory"; do
    grep -q "^pass  $name: " <<<"$out"
    check "MY_DEVICE passes '$name'" $?
done
device="My Device (tensorplug tfcompat test) by tensorplug tests, 64 MiB"
expect_text "the registrations are the device and five kernels" "$out" \
    "pass  registrations: device type MY_DEVICE (1 device: $device); 0 ops, 5 kernels"

out=$("$tensorplug" plugin-check "$plugins/libtp_tfcompat_failing_device.so"); rc=$?
[ $rc -ne 0 ]
check "FAILING_DEVICE fails (exit $rc)" $?
failed=$(grep '^FAIL ' <<<"$out" | sed 's/^FAIL  //; s/: .*//' | sort | tr '\n' ';')
neg="kernel Neg on FAILING_DEVICE, float32"
abs="kernel Abs on FAILING_DEVICE, float32"
expected="FAILING_DEVICE:0 two threads;$abs;$abs, errors;$abs, memory;"
expected+="$neg;$neg, errors;$neg, memory;"
[ "$failed" = "$expected" ]
check "FAILING_DEVICE fails Abs's and Neg's checks and nothing else (got: $failed)" $?
where="/job:localhost/replica:0/task:0/device:FAILING_DEVICE:0"
expect_text "Neg's failure is the plug-in's own status" "$out" \
    "FAIL  $neg: Neg: Neg on $where: Neg: FAILING_DEVICE's Neg always fails"
finish
