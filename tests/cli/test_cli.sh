#!/usr/bin/env bash
# The `tensorplug` command as a user runs it.
# Usage: test_cli.sh TENSORPLUG TEST_PLUGIN_DIR EXTRA_PLUGIN_DIR
set -u
tensorplug=$1
plugins=$2
extra=$3
source "$(dirname "$0")/support.sh"

export TP_PLUGIN_PATH=
out=$("$tensorplug" devices); rc=$?
check "devices exits 0" $rc
[ "$out" = "PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')" ]
check "devices without plug-ins prints exactly the CPU line (got: $out)" $?

out=$("$tensorplug" devices --json); rc=$?
check "devices --json exits 0" $rc
grep -q '"name": "/physical_device:CPU:0", "device_type": "CPU", "ordinal": 0' <<<"$out"
check "devices --json names the CPU" $?
grep -q '"memory_bytes": [1-9][0-9]*}' <<<"$out"
check "devices --json gives the CPU's memory" $?
cores=$(getconf _NPROCESSORS_ONLN)
grep -q "\"driver_version\": \"\", \"compute_units\": $cores, " <<<"$out"
check "devices --json gives the CPU's cores as compute units, and no driver ($cores expected)" $?

out=$(TP_PLUGIN_PATH=$plugins "$tensorplug" devices 2>/dev/null); rc=$?
check "devices with test plug-ins exits 0" $rc
expected="PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')
PhysicalDevice(name='/physical_device:XPU:0', device_type='XPU')
PhysicalDevice(name='/physical_device:XPU:1', device_type='XPU')
PhysicalDevice(name='/physical_device:OLDDEV:0', device_type='OLDDEV')"
[ "$out" = "$expected" ]
check "devices lists the good plug-ins' devices in order (got: $out)" $?

err=$(TP_PLUGIN_PATH=$plugins "$tensorplug" devices --type xpu 2>&1 >/dev/null)
[ "$(grep -c 'skipped plug-in' <<<"$err")" -eq 5 ]
check "each refused plug-in is one warning line (got: $err)" $?

out=$(TP_PLUGIN_PATH=$plugins "$tensorplug" devices --memory --type xpu 2>/dev/null); rc=$?
check "devices --memory exits 0" $rc
expect_line "devices --memory header" "$out" \
    "DEVICE                                         PHYSICAL DEVICE                 IN USE          PEAK      RESERVED         LIMIT       LARGEST ALLOCS"
expect_line "XPU:0 reserves 64 MiB less its reserve" "$out" \
    "/job:localhost/replica:0/task:0/device:XPU:0   /physical_device:XPU:0         0.0 MiB       0.0 MiB       0.0 MiB      48.0 MiB       0.0 MiB      0"
expect_line "XPU:1, of unknown size, has no limit" "$out" \
    "/job:localhost/replica:0/task:0/device:XPU:1   /physical_device:XPU:1         0.0 MiB       0.0 MiB       0.0 MiB     unlimited       0.0 MiB      0"

out=$(TP_VISIBLE_DEVICES=XPU:1 TP_FORCE_ALLOW_GROWTH=true TP_PLUGIN_PATH=$plugins \
      "$tensorplug" devices --memory --json --type XPU 2>/dev/null); rc=$?
check "devices --memory --json exits 0" $rc
grep -q '"name": "/job:localhost/replica:0/task:0/device:XPU:0", "physical_device": "/physical_device:XPU:1"' <<<"$out"
check "TP_VISIBLE_DEVICES renumbers XPU:1 as XPU:0 (got: $out)" $?
[ "$(grep -c '"name"' <<<"$out")" -eq 1 ]
check "TP_VISIBLE_DEVICES hides XPU:0 (got: $out)" $?

err=$(TP_VISIBLE_DEVICES=XPU:5 TP_PLUGIN_PATH=$plugins "$tensorplug" devices --memory 2>&1 >/dev/null)
rc=$?
[ $rc -eq 1 ]
check "a bad TP_VISIBLE_DEVICES fails the command (rc $rc)" $?
expect_line "a bad TP_VISIBLE_DEVICES says why" "$err" \
    "tensorplug: NOT_FOUND: tp_context_create: TP_VISIBLE_DEVICES: tp_context_set_visible_devices: no device 'XPU:5': there are 2 XPU devices, 0 to 1"

out=$(TP_PLUGIN_PATH=$plugins "$tensorplug" plugins 2>&1); rc=$?
check "plugins exits 0 although some are refused" $rc
expect_line "built-in cpu" "$out" \
    "<built-in>: loaded: cpu 0.1.0, ABI 1.6, device types CPU, 0 ops, 33 kernels, graph pass no"
expect_line "good loaded" "$out" \
    "$plugins/libtp_test_good.so: loaded: good 2.3.4, ABI 1.6, device types XPU, 1 ops, 0 kernels, graph pass no"
expect_line "old minor loaded" "$out" \
    "$plugins/libtp_test_old_minor.so: loaded: old_minor 1.0.0, ABI 1.0, device types OLDDEV, 0 ops, 0 kernels, graph pass no"
expect_line "no entry refused" "$out" \
    "$plugins/libtp_test_no_entry.so: refused: it exports no entry point 'tp_plugin_entry'"
expect_line "wrong major refused" "$out" \
    "$plugins/libtp_test_wrong_major.so: refused: it was built for plug-in ABI 2.0; this runtime speaks ABI 1.6, and major versions must match"
expect_line "init failure refused" "$out" \
    "$plugins/libtp_test_init_fails.so: refused: its init failed: the test device's driver is not installed"
expect_line "duplicate type refused" "$out" \
    "$plugins/libtp_test_cpu_twin.so: refused: device type 'cpu' is already registered by the built-in plug-in cpu"
grep -qF "$plugins/libtp_test_bad_type_name.so: refused: invalid registration: device type name '9 bad/name' is invalid" <<<"$out"
check "bad type name refused" $?
expect_line "summary" "$out" "3 loaded, 5 refused"
[ "$(grep -c 'skipped plug-in' <<<"$out")" -eq 0 ]
check "plugins does not repeat refusals as log lines" $?

# Plug-ins that crash, exit or call back into the API while they load: each is loaded in a
# child process first and listed as refused; none ends or blocks the command.
misbehaving="$extra/crash_in_constructor.so:$extra/crash_in_init.so:$extra/exit_in_init.so"
misbehaving="$misbehaving:$extra/reenter_linked.so:$plugins/libtp_test_good.so"
out=$(TP_PLUGIN_PATH=$misbehaving timeout 60 "$tensorplug" plugins 2>&1); rc=$?
check "plugins outlives plug-ins that crash or exit while loading (rc $rc)" $rc
expect_line "a crash in a constructor is reported" "$out" \
    "$extra/crash_in_constructor.so: refused: it crashed with signal 11 (SIGSEGV) during init"
expect_line "a crash in init is reported" "$out" \
    "$extra/crash_in_init.so: refused: it crashed with signal 11 (SIGSEGV) during init"
expect_line "an exit in init is reported" "$out" \
    "$extra/exit_in_init.so: refused: it ended the process (exit status 3) during init"
expect_line "an init that creates a context is refused, not deadlocked" "$out" \
    "$extra/reenter_linked.so: refused: its init failed: tp_context_create: called from the init of plug-in 'misbehaving' ($extra/reenter_linked.so): plug-ins load one at a time, so a plug-in's init cannot create a context"
expect_line "the plug-ins after them load" "$out" "2 loaded, 4 refused"

# Files that are no plug-in, and folders and entries that cannot be trusted: one line each.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/folder" "$scratch/open"
head -c 4096 "$plugins/libtp_test_good.so" > "$scratch/folder/truncated.so"
mkfifo "$scratch/folder/fifo.so"
cp "$plugins/libtp_test_good.so" "$scratch/open/good.so"
chmod 0777 "$scratch/open"
out=$(TP_PLUGIN_PATH="relative/plugins:$scratch/folder:$scratch/open" timeout 20 \
      "$tensorplug" plugins 2>&1); rc=$?
check "plugins exits 0 beside files that are no plug-in (rc $rc)" $rc
expect_line "a relative search path entry is refused" "$out" \
    "tensorplug: skipped plug-in search path entry 'relative/plugins': it is not an absolute path"
expect_line "a FIFO is refused, without blocking" "$out" \
    "$scratch/folder/fifo.so: refused: it is a FIFO, not a regular file"
expect_text "a truncated file is refused, without SIGBUS" "$out" \
    "$scratch/folder/truncated.so: refused: its loadable segment "
expect_text "the truncated file's size is named" "$out" "but the file has 4096: it is truncated"
expect_line "a folder others can write is refused" "$out" \
    "tensorplug: skipped plug-in folder $scratch/open: it is writable by group and others (mode 0777)"
expect_line "nothing of them loads" "$out" "1 loaded, 2 refused"

out=$(TP_PLUGINS=none TP_PLUGIN_PATH=$plugins "$tensorplug" plugins 2>&1)
expect_line "TP_PLUGINS=none loads no plug-in file" "$out" "1 loaded, 0 refused"

out=$("$tensorplug" version); rc=$?
check "version exits 0" $rc
[ "$out" = "tensorplug 0.1.0 (plug-in ABI 1.6)" ]
check "version prints versions (got: $out)" $?

# Output that cannot be written is a failure, said on standard error.
for command in devices plugins version "devices --json" --help; do
    err=$(TP_PLUGIN_PATH=$plugins "$tensorplug" $command 2>&1 >/dev/full); rc=$?
    [ $rc -eq 1 ] && grep -q "^tensorplug: cannot write the output: No space left on device$" <<<"$err"
    check "'$command' to /dev/full exits 1 and says why (rc $rc: $err)" $?
done
err=$("$tensorplug" graph --text 2>&1 >/dev/full); rc=$?
[ $rc -eq 1 ] && grep -q "writing 'standard output' failed: No space left on device" <<<"$err"
check "'graph' to /dev/full exits 1 and says why (rc $rc: $err)" $?

for command in "" devices plugins graph version; do
    out=$("$tensorplug" $command --help); rc=$?
    check "'$command --help' exits 0" $rc
    grep -q '^usage: tensorplug' <<<"$out"
    check "'$command --help' prints usage" $?
done

"$tensorplug" frobnicate >/dev/null 2>&1
[ $? -eq 2 ]; check "an unknown command exits 2" $?
err=$("$tensorplug" devices --bogus 2>&1 >/dev/null)
[ $? -eq 2 ] && grep -q "unknown argument '--bogus'" <<<"$err"
check "an unknown argument exits 2 and names it" $?
"$tensorplug" >/dev/null 2>&1
[ $? -eq 2 ]; check "no command exits 2" $?

finish
