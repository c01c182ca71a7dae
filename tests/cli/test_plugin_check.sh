#!/usr/bin/env bash
# `tensorplug plugin-check`: the APU and a correct asynchronous device pass every check; each
# deliberately broken build of that device fails exactly the check its defect belongs to, and
# nothing else. Usage: test_plugin_check.sh TENSORPLUG APU_PLUGIN_DIR CHECK_PLUGIN_DIR
set -u
tensorplug=$1
apu_plugin=$2/libtensorplug_apu.so
subjects=$3
source "$(dirname "$0")/support.sh"
export TP_PLUGIN_PATH= TP_APU_FAIL_ALLOCATION= TP_APU_FAIL_KERNEL= TP_APU_LATENCY_US=

# The FAIL lines of a run, as "name: reason", sorted.
failures_of() { grep '^FAIL ' <<<"$1" | sed 's/^FAIL  //' | sort; }
# The names of the FAIL lines.
failed_names() { failures_of "$1" | sed 's/: .*//'; }

out=$(TP_APU_DEVICES=2 TP_APU_MEMORY=256M "$tensorplug" plugin-check "$apu_plugin"); rc=$?
check "the APU passes (exit $rc)" $rc
[ "$(tail -n 1 <<<"$out")" = "14 passed, 0 failed" ]
check "the APU's run ends with '14 passed, 0 failed' (got: $(tail -n 1 <<<"$out"))" $?
for name in load registrations "APU:0 allocate" "APU:0 empty tensor" "APU:0 allocate too much" \
            "APU:0 round trips" "APU:0 device-to-device copy" "APU:0 to APU:1 peer copy" \
            "APU:0 stream order" "APU:0 events" "APU:0 host waits" \
            "kernel Relu on APU, float32" "kernel Relu on APU, float32, errors" \
            "APU:0 two threads"; do
    grep -q "^pass  $name: " <<<"$out"
    check "the APU passes '$name'" $?
done
expect_text "the APU's registrations are described" "$out" \
    "pass  registrations: device type APU (2 devices: Awesome Processing Unit (simulated) by tensorplug, 256 MiB); 0 ops, 1 kernel, graph pass apu_relu_idempotence"
expect_text "allocating more than the APU has is refused with its reason" "$out" \
    "its memory + 1 B refused (RESOURCE_EXHAUSTED: APU:0: cannot allocate 268435457 bytes of 268435456)"
expect_text "the kernel error names the op and the device" "$out" \
    "became the status \"Relu on /job:localhost/replica:0/task:0/device:APU:0: plugin-check refused"

out=$("$tensorplug" plugin-check "$apu_plugin"); rc=$?
check "one APU passes too (exit $rc)" $rc
expect_line "with one APU, peer copies do not apply" "$out" \
    "n/a   APU:0 to APU:1 peer copy: needs two APU devices; one is present"
expect_line "with one APU, 13 checks pass" "$out" "13 passed, 0 failed"

out=$("$tensorplug" plugin-check "$subjects/queued_ok.so"); rc=$?
check "the correct queued device passes (exit $rc)" $rc
expect_line "the correct queued device passes all" "$out" "14 passed, 0 failed"
expect_text "both of its dtypes are compared" "$out" "pass  kernel Relu on QDEV, float64: "

# Each defect and the one check it must fail.
expect_only() { # expect_only SUBJECT CHECK-NAME REASON-PART
    local out rc
    out=$("$tensorplug" plugin-check "$subjects/$1.so"); rc=$?
    [ $rc -eq 1 ]
    check "$1: plugin-check exits 1 (got $rc)" $?
    [ "$(failed_names "$out")" = "$2" ]
    check "$1 fails exactly '$2' (got: $(failed_names "$out" | tr '\n' '|'))" $?
    expect_text "$1: the reason" "$(failures_of "$out")" "$3"
    expect_line "$1: the count" "$out" "13 passed, 1 failed"
}
expect_only broken_kernel "kernel Relu on QDEV, float32" \
    "Relu: on (2, 3) inputs, output 0 element"
expect_only early_event "QDEV:0 events" \
    "event_query said the event was complete while the work recorded before it was held"
expect_only unordered_copy "QDEV:0 stream order" \
    "memcpy_device_to_host wrote the host buffer while the work queued before it was held"
expect_only ignores_errors "kernel Relu on QDEV, float32, errors" \
    "Relu returned success although kernel_input and kernel_output failed"
expect_only crashing_copy "QDEV:0 device-to-device copy" "the check crashed with signal 6"

# Choosing a device type, and mistakes.
out=$("$tensorplug" plugin-check "$subjects/queued_ok.so" --device qdev --seed 7); rc=$?
check "--device is case-insensitive and --seed takes a number (exit $rc)" $rc
out=$("$tensorplug" plugin-check "$subjects/queued_ok.so" --device XPU); rc=$?
[ $rc -eq 1 ]
check "an unknown --device fails the run" $?
expect_text "an unknown --device is named" "$out" \
    "FAIL  registrations: the plug-in registers no device type XPU"
err=$("$tensorplug" plugin-check "$subjects/missing.so" 2>&1); rc=$?
[ $rc -eq 1 ]
check "a missing file exits 1" $?
expect_text "a missing file is named" "$err" \
    "tensorplug: NOT_FOUND: plugin-check: cannot read '$subjects/missing.so': No such file"
err=$("$tensorplug" plugin-check "$apu_plugin" --seed x 2>&1); rc=$?
[ $rc -eq 2 ]
check "a bad --seed is a usage error" $?
expect_text "a bad --seed is named" "$err" "--seed wants a number"
err=$("$tensorplug" plugin-check 2>&1); rc=$?
[ $rc -eq 2 ]
check "no plug-in is a usage error" $?

finish
