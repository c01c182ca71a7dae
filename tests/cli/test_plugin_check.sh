#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `tensorplug plugin-check`: the APU and a correct asynchronous device pass every check, a
# synchronous one passes those that apply to it; each deliberately broken build of that device
# fails exactly the checks its defect belongs to, and nothing else. Usage: test_plugin_check.sh TENSORPLUG APU_PLUGIN_DIR CHECK_PLUGIN_DIR
set -u
tensorplug=$1
apu_plugin=$2/libtensorplug_apu.so
subjects=$3
source "$(dirname "$0")/support.sh"
export TP_PLUGIN_PATH=
unset TP_APU_FAIL_ALLOCATION TP_APU_FAIL_KERNEL TP_APU_FAIL_KERNEL_EVERY TP_APU_LATENCY_US \
    QDEV_DEVICES QDEV_FAIL_KERNEL

# The FAIL lines of a run, as "name: reason", sorted.
failures_of() { grep '^FAIL ' <<<"$1" | sed 's/^FAIL  //' | sort; }
# The names of the FAIL lines.
failed_names() { failures_of "$1" | sed 's/: .*//'; }

out=$(TP_APU_DEVICES=2 TP_APU_MEMORY=256M "$tensorplug" plugin-check "$apu_plugin"); rc=$?
check "the APU passes (exit $rc)" $rc
[ "$(tail -n 1 <<<"$out")" = "28 passed, 0 failed" ]
check "the APU's run ends with '28 passed, 0 failed' (got: $(tail -n 1 <<<"$out"))" $?
for name in load registrations "APU:0 allocate" "APU:0 empty tensor" "APU:0 allocate too much" \
            "APU:0 round trips" "APU:0 device-to-device copy" "APU:0 to APU:1 peer copy" \
            "APU:0 stream order" "APU:0 events" "APU:0 host waits" \
            "kernel Relu on APU, float32" "kernel Relu on APU, float32, errors" \
            "kernel Relu on APU, float32, memory" "APU:0 two threads" \
            "kernel Relu on APU, float16" "kernel Relu on APU, bfloat16" \
            "kernel Relu on APU, int8" "kernel Relu on APU, int16" "kernel Relu on APU, uint16" \
            "kernel Relu on APU, uint32" "kernel Relu on APU, uint64" \
            "kernel Relu on APU, float16, errors" "kernel Relu on APU, float16, memory" \
            "kernel Add on APU, float16" "kernel Add on APU, bfloat16" \
            "kernel Add on APU, float16, errors" "kernel Add on APU, float16, memory"; do
    grep -q "^pass  $name: " <<<"$out"
    check "the APU passes '$name'" $?
done
expect_text "the APU's registrations are described" "$out" \
    "pass  registrations: device type APU (2 devices: Awesome Processing Unit (simulated) by tensorplug, 256 MiB); 0 ops, 4 kernels, graph pass apu_relu_idempotence"
# Conv2D's window attributes cannot be made up from its schema: the check says it could not
# compare the APU's kernel (tests/apu/test_apu_conv.c compares it with the CPU's instead).
expect_text "the APU's Conv2D is not checked, and says why" "$out" \
    "n/a   kernel Conv2D on APU, float32: no call of Conv2D for float32 could be compared with the CPU (Conv2D needs attribute 'padding' without a default, of a kind the check cannot make up)"
expect_text "allocating more than the APU has is refused with its reason" "$out" \
    "its memory + 1 B refused (RESOURCE_EXHAUSTED: APU:0: cannot allocate 268435457 bytes of 268435456)"
expect_text "the kernel error names the op and the device" "$out" \
    "became the status \"Relu on /job:localhost/replica:0/task:0/device:APU:0: plugin-check refused"
expect_text "Relu is compared exactly, on a million elements and special values" "$out" \
    "pass  kernel Relu on APU, float32: 12 input shapes against the CPU, up to 1048577 elements, NaN, infinities, signed zeros and denormals among them: matched exactly, NaN only as NaN, +0 and -0 alike; "
# The dtypes of ABI 1.7: the 16-bit floats with their special values, rounded once as the CPU
# rounds them; the integers bit for bit.
expect_text "Add of float16 is compared exactly, special values included" "$out" \
    "pass  kernel Add on APU, float16: 10 input shapes against the CPU, up to 1048577 elements, NaN, infinities, signed zeros and denormals among them: matched exactly, results below the smallest normal number allowed to flush to zero; "
expect_text "Relu of uint64 is compared bit for bit" "$out" \
    "pass  kernel Relu on APU, uint64: 9 input shapes against the CPU, up to 1048577 elements: matched bit for bit"

out=$("$tensorplug" plugin-check "$apu_plugin"); rc=$?
check "one APU passes too (exit $rc)" $rc
expect_line "with one APU, peer copies do not apply" "$out" \
    "n/a   APU:0 to APU:1 peer copy: needs two APU devices; one is present"
expect_line "with one APU, 27 checks pass" "$out" "27 passed, 0 failed"

# --json: the same verdicts for a JSON parser, from which the lines of the run are rebuilt word
# for word; the exit status is the same as without it.
same_as_lines() { # same_as_lines NAME JSON LINES PASSED FAILED NOT-APPLICABLE
    LINES=$3 COUNTS="$4 $5 $6" expect_json "$1" "$2" '
marks = {"passed": "pass", "failed": "FAIL", "not_applicable": "n/a"}
rebuilt = ["plugin-check " + d["plugin"]]
rebuilt += ["%-5s %s: %s" % (marks[c["result"]], c["name"], c["message"]) for c in d["checks"]]
rebuilt.append("%d passed, %d failed" % (d["passed"], d["failed"]))
lines = os.environ["LINES"].split("\n")
assert rebuilt == lines, [(r, l) for r, l in zip(rebuilt, lines) if r != l] or (rebuilt, lines)
counts = [d["passed"], d["failed"], d["not_applicable"]]
assert counts == [int(n) for n in os.environ["COUNTS"].split()], counts
assert counts == [sum(c["result"] == r for c in d["checks"]) for r in marks], d'
}
json=$("$tensorplug" plugin-check --json "$apu_plugin"); rc=$?
check "plugin-check --json: one APU passes (exit $rc)" $rc
same_as_lines "plugin-check --json says what the lines say, n/a included" "$json" "$out" 27 0 4
PLUGIN=$apu_plugin expect_json "plugin-check --json: the plug-in, and the check that does not apply" \
    "$json" '
assert d["plugin"] == os.environ["PLUGIN"], d["plugin"]
peer = [c for c in d["checks"] if c["name"] == "APU:0 to APU:1 peer copy"]
assert peer == [{"name": "APU:0 to APU:1 peer copy", "result": "not_applicable",
                 "message": "needs two APU devices; one is present"}], peer'
lines=$("$tensorplug" plugin-check "$subjects/broken_kernel.so")
json=$("$tensorplug" plugin-check "$subjects/broken_kernel.so" --json); rc=$?
[ $rc -eq 1 ]
check "plugin-check --json exits 1 when a check fails (got $rc)" $?
same_as_lines "plugin-check --json of a failing run says what its lines say" "$json" "$lines" 23 1 0
expect_json "plugin-check --json names the failed check and why" "$json" '
failed = [c for c in d["checks"] if c["result"] == "failed"]
assert [c["name"] for c in failed] == ["kernel Relu on QDEV, float32"], failed
assert failed[0]["message"].startswith("Relu: on (2, 3) inputs, output 0 element"), failed'
err=$("$tensorplug" plugin-check --json "$subjects/missing.so" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] && [ -z "$("$tensorplug" plugin-check --json "$subjects/missing.so" 2>/dev/null)" ]
check "plugin-check --json of a missing file exits 1 and writes no JSON (got $rc)" $?
expect_text "plugin-check --json: a missing file is named" "$err" \
    "tensorplug: NOT_FOUND: plugin-check: cannot read '$subjects/missing.so': No such file"
# The path is the user's own text: any bytes. ESC, a newline and quotes come back exactly, a
# byte that is no UTF-8 as U+FFFD, and nothing reaches the terminal raw.
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
hostile="$scratch/x"$'\x1b[31m\n\xff"'"'.so"
cp "$apu_plugin" "$hostile"
json=$("$tensorplug" plugin-check --json "$hostile"); rc=$?
[ $rc -eq 1 ]
check "plugin-check --json of a path the runtime refuses exits 1 (got $rc)" $?
no_control_bytes "plugin-check --json writes no control byte" "$json"
HOSTILE=$hostile expect_json "plugin-check --json: a hostile path round-trips" "$json" '
expected = os.fsencode(os.environ["HOSTILE"]).decode("utf-8", "replace")
assert d["plugin"] == expected, (d["plugin"], expected)
assert "\x1b[31m\n\ufffd\"\x27.so" in d["plugin"], d["plugin"]
assert [c["result"] for c in d["checks"]] == ["failed", "not_applicable"], d'

out=$("$tensorplug" plugin-check "$subjects/queued_ok.so"); rc=$?
check "the correct queued device passes (exit $rc)" $rc
expect_line "the correct queued device passes all" "$out" "24 passed, 0 failed"
expect_text "both of its dtypes are compared" "$out" "pass  kernel Relu on QDEV, float64: "
expect_text "its peer copies are checked" "$out" "pass  QDEV:0 to QDEV:1 peer copy: "
expect_text "Neg is compared bit for bit" "$out" \
    "pass  kernel Neg on QDEV, float32: 12 input shapes against the CPU, up to 1048577 elements, NaN, infinities, signed zeros and denormals among them: matched bit for bit, any NaN matching any NaN; "
expect_text "Exp is compared within a few ulp" "$out" "matched within 16 ulp + 16 eps (at worst "
expect_text "a million float64 elements do not fit twice into 64 MiB" "$out" \
    "the (1048577,) inputs were left out: QDEV:0 has 64 MiB"
expect_text "the memory of its launches comes back" "$out" \
    "pass  kernel Relu on QDEV, float32, memory: 8 launches gave back all they took: the plug-in's free memory, the runtime's raw allocations and its live tensors were where they had been"

# A device whose work is done when each call returns may say so, and skips the ordering checks.
out=$("$tensorplug" plugin-check "$subjects/queued_sync.so"); rc=$?
check "the synchronous queued device passes (exit $rc)" $rc
expect_line "the synchronous queued device: 21 pass" "$out" "21 passed, 0 failed"
for name in "stream order" events "host waits"; do
    expect_text "the synchronous device skips '$name', saying why" "$out" \
        "n/a   QDEV:0 $name: QDEV declares itself synchronous (TP_DEVICE_SYNCHRONOUS): its work is done when each call returns, so nothing is pending for"
done

# Each defect and the checks it must fail, with the reason.
expect_failures() { # expect_failures SUBJECT COUNT-LINE REASON-PART CHECK-NAME...
    local subject=$1 count=$2 reason=$3 out rc
    shift 3
    out=$("$tensorplug" plugin-check "$subjects/$subject.so"); rc=$?
    [ $rc -eq 1 ]
    check "$subject: plugin-check exits 1 (got $rc)" $?
    [ "$(failed_names "$out")" = "$(printf '%s\n' "$@" | sort)" ]
    check "$subject fails exactly '$*' (got: $(failed_names "$out" | tr '\n' '|'))" $?
    expect_text "$subject: the reason" "$(failures_of "$out")" "$reason"
    expect_line "$subject: the count" "$out" "$count"
}
expect_failures broken_kernel "23 passed, 1 failed" "Relu: on (2, 3) inputs, output 0 element" \
    "kernel Relu on QDEV, float32"
expect_failures unordered_copy "23 passed, 1 failed" \
    "memcpy_device_to_host wrote the host buffer while the work queued before it was held" \
    "QDEV:0 stream order"
expect_failures ignores_errors "23 passed, 1 failed" \
    "Relu returned success although kernel_input and kernel_output failed" \
    "kernel Relu on QDEV, float32, errors"
expect_failures crashing_copy "23 passed, 1 failed" "the check crashed with signal 6" \
    "QDEV:0 device-to-device copy"
expect_failures queued_no_callback "21 passed, 3 failed" \
    "QDEV:0's stream cannot be held: QDEV has no host_callback and the device does not declare TP_DEVICE_SYNCHRONOUS, so whether" \
    "QDEV:0 stream order" "QDEV:0 events" "QDEV:0 host waits"
expect_failures leaky_relu "23 passed, 1 failed" \
    "the CPU gives 0 (Relu's float32 results must match exactly, NaN only as NaN, +0 and -0 alike)" \
    "kernel Relu on QDEV, float32"
expect_failures scaled_exp "23 passed, 1 failed" \
    "(Exp's float32 results must match within 16 ulp + 16 eps)" "kernel Exp on QDEV, float32"
expect_failures tiled_relu "23 passed, 1 failed" \
    "Relu: on (65537,) inputs, output 0 element 8192 is" "kernel Relu on QDEV, float32"
expect_failures nan_relu "23 passed, 1 failed" "is 0; the CPU gives nan (Relu's float32 results" \
    "kernel Relu on QDEV, float32"
expect_failures signed_zero_neg "23 passed, 1 failed" \
    "is 0 (bits 0x00000000); the CPU gives -0 (bits 0x80000000) (Neg's float32 results must match bit for bit" \
    "kernel Neg on QDEV, float32"
expect_failures leaks_memory "23 passed, 1 failed" \
    "8 launches of Relu took 32768 bytes of QDEV:0 that they did not give back: memory_usage said" \
    "kernel Relu on QDEV, float32, memory"
expect_failures crashing_constructor "0 passed, 1 failed" \
    "the check crashed with signal 11 during init (Segmentation fault, while the runtime loaded the plug-in" \
    load
out=$("$tensorplug" plugin-check "$subjects/crashing_constructor.so")
expect_line "a plug-in that crashes while it loads is not checked further" "$out" \
    "n/a   registrations: the plug-in did not load"

# Events and the synchronous flag are what the runtime trusts to reuse memory, so a device that
# lies about them spoils its kernels' checks too; the check the lie belongs to names it.
expect_fails() { # expect_fails SUBJECT CHECK-NAME REASON-PART
    local out rc
    out=$("$tensorplug" plugin-check "$subjects/$1.so" 2>/dev/null); rc=$?
    [ $rc -eq 1 ]
    check "$1: plugin-check exits 1 (got $rc)" $?
    expect_text "$1 fails '$2' with the reason" "$(failures_of "$out")" "$2: $3"
}
expect_fails early_event "QDEV:0 events" \
    "event_query said the event was complete while the work recorded before it was held"
expect_fails false_synchronous "QDEV:0 stream order" \
    "QDEV declares TP_DEVICE_SYNCHRONOUS, but host_callback returned before it had called back: its work is queued"

# A run that could check no device and no kernel fails rather than vouch for them.
out=$(QDEV_DEVICES=0 "$tensorplug" plugin-check "$subjects/queued_ok.so"); rc=$?
[ $rc -eq 1 ]
check "with no device present, plugin-check exits 1 (got $rc)" $?
expect_line "with no device present, nothing was checked" "$out" \
    "FAIL  coverage: nothing was checked: every device and kernel check was n/a (no QDEV device is present)"
expect_line "with no device present, the count" "$out" "2 passed, 1 failed"

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
