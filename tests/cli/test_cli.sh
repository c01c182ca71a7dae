#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The `tensorplug` command as a user runs it.
# Usage: test_cli.sh TENSORPLUG TEST_PLUGIN_DIR EXTRA_PLUGIN_DIR APU_PLUGIN HOSTILE_TEXT_PLUGIN
set -u
tensorplug=$1
plugins=$2
extra=$3
apu=$4
hostile=$5
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
    "<built-in>: loaded: cpu 0.1.0, ABI 1.8, device types CPU, 0 ops, 127 kernels, graph pass no"
expect_line "good loaded" "$out" \
    "$plugins/libtp_test_good.so: loaded: good 2.3.4, ABI 1.8, device types XPU, 1 ops, 0 kernels, graph pass no"
expect_line "old minor loaded" "$out" \
    "$plugins/libtp_test_old_minor.so: loaded: old_minor 1.0.0, ABI 1.0, device types OLDDEV, 0 ops, 0 kernels, graph pass no"
expect_line "no entry refused" "$out" \
    "$plugins/libtp_test_no_entry.so: refused: it exports no entry point 'tp_plugin_entry'"
expect_line "wrong major refused" "$out" \
    "$plugins/libtp_test_wrong_major.so: refused: it was built for plug-in ABI 2.0; this runtime speaks ABI 1.8, and major versions must match"
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
[ "$out" = "tensorplug 0.1.0 (plug-in ABI 1.8)" ]
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

# --help and --version, of the tool and of every command; mistakes in the command line exit 2
# and are named on standard error.
version_line=$("$tensorplug" version)
for help in --help -h; do
    out=$("$tensorplug" $help); rc=$?
    check "'$help' exits 0" $rc
    [ "$(head -n 1 <<<"$out")" = "usage: tensorplug <command> [options] [arguments]" ]
    check "'$help' prints the usage (got: $(head -n 1 <<<"$out"))" $?
    for command in devices plugins graph plugin-check version; do
        grep -q "^  $command  *[a-z]" <<<"$out"
        check "'$help' lists $command" $?
    done
done
out=$("$tensorplug" --version); rc=$?
[ $rc -eq 0 ] && [ "$out" = "$version_line" ]
check "--version prints the line of 'version' (rc $rc, got: $out)" $?
err=$("$tensorplug" --bogus 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [ "$err" = "tensorplug: unknown option '--bogus' (see tensorplug --help)" ]
check "the tool names an unknown option of its own (rc $rc: $err)" $?

declare -A own_options=([devices]="--memory --json --type" [plugins]="--json"
                        [graph]="--text --output" [plugin-check]="--device --seed --timeout --json"
                        [version]="")
for command in devices plugins graph plugin-check version; do
    out=$("$tensorplug" $command --help); rc=$?
    check "'$command --help' exits 0" $rc
    grep -q "^usage: tensorplug $command" <<<"$out"
    check "'$command --help' prints its usage" $?
    for option in ${own_options[$command]}; do
        grep -q -- "^  $option\b" <<<"$out"
        check "'$command --help' describes $option" $?
    done
    [ "$("$tensorplug" $command -h)" = "$out" ]
    check "'$command -h' is --help" $?
    out=$("$tensorplug" $command --version); rc=$?
    [ $rc -eq 0 ] && [ "$out" = "$version_line" ]
    check "'$command --version' prints the version line (rc $rc, got: $out)" $?
    err=$("$tensorplug" $command --bogus 2>&1 >/dev/null); rc=$?
    [ $rc -eq 2 ] && [ "$err" = "tensorplug $command: unknown option '--bogus' (see tensorplug $command --help)" ]
    check "'$command --bogus' exits 2 and names it (rc $rc: $err)" $?
    err=$("$tensorplug" $command -x 2>&1 >/dev/null); rc=$?
    [ $rc -eq 2 ] && [ "$err" = "tensorplug $command: unknown option '-x' (see tensorplug $command --help)" ]
    check "'$command -x' exits 2 and names it (rc $rc: $err)" $?
done

usage_error() { # usage_error MESSAGE ARGUMENT...: the command exits 2 with exactly MESSAGE
    local expected=$1 err rc
    shift
    err=$("$tensorplug" "$@" 2>&1 >/dev/null); rc=$?
    [ $rc -eq 2 ] && [ "$err" = "$expected" ]
    check "'$*' exits 2 saying '$expected' (rc $rc: $err)" $?
}
usage_error "tensorplug devices: option '--type' needs a value (see tensorplug devices --help)" \
    devices --type
usage_error "tensorplug devices: option '--type' needs a value (see tensorplug devices --help)" \
    devices --type=
usage_error "tensorplug devices: option '--json' takes no value (see tensorplug devices --help)" \
    devices --json=yes
usage_error "tensorplug devices: unexpected argument 'CPU' (see tensorplug devices --help)" \
    devices CPU
usage_error "tensorplug graph: option '--output' needs a value (see tensorplug graph --help)" \
    graph --output
usage_error "tensorplug plugin-check: which plug-in? (see tensorplug plugin-check --help)" \
    plugin-check --json
usage_error "tensorplug plugin-check: unexpected argument 'b.so' (see tensorplug plugin-check --help)" \
    plugin-check a.so b.so
usage_error "tensorplug version: unexpected argument 'now' (see tensorplug version --help)" \
    version now
for command in devices plugins version "devices --help"; do
    err=$("$tensorplug" $command --version 2>&1 >/dev/full); rc=$?
    [ $rc -eq 1 ] && grep -q "^tensorplug: cannot write the output: No space left on device$" <<<"$err"
    check "'$command --version' to /dev/full exits 1 and says why (rc $rc: $err)" $?
done

"$tensorplug" frobnicate >/dev/null 2>&1
[ $? -eq 2 ]; check "an unknown command exits 2" $?
"$tensorplug" >/dev/null 2>&1
[ $? -eq 2 ]; check "no command exits 2" $?

# --type, as --type=TYPE or --type TYPE, in any case, or abbreviated.
xpus="PhysicalDevice(name='/physical_device:XPU:0', device_type='XPU')
PhysicalDevice(name='/physical_device:XPU:1', device_type='XPU')"
for arguments in "--type=XPU" "--type xpu" "--ty=Xpu"; do
    out=$(TP_PLUGIN_PATH=$plugins "$tensorplug" devices $arguments 2>/dev/null); rc=$?
    [ $rc -eq 0 ] && [ "$out" = "$xpus" ]
    check "devices $arguments lists the XPUs alone (rc $rc, got: $out)" $?
done
out=$(TP_PLUGIN_PATH=$plugins "$tensorplug" devices --type=OLDDEV 2>/dev/null)
[ "$out" = "PhysicalDevice(name='/physical_device:OLDDEV:0', device_type='OLDDEV')" ]
check "devices --type=OLDDEV lists OLDDEV:0 alone (got: $out)" $?
out=$(TP_PLUGIN_PATH=$plugins "$tensorplug" devices --type=GPU 2>/dev/null); rc=$?
[ $rc -eq 0 ] && [ -z "$out" ]
check "devices --type of a type with no device lists nothing (rc $rc, got: $out)" $?
out=$(TP_PLUGIN_PATH=$plugins "$tensorplug" devices --mem --type=xpu 2>/dev/null)
[ "$(wc -l <<<"$out")" -eq 3 ] && grep -q "^/job:localhost/replica:0/task:0/device:XPU:1 " <<<"$out"
check "devices --memory --type=xpu has a header and the two XPUs (got: $out)" $?

# JSON, read by a JSON parser: the same devices and plug-ins as the lines, with their details.
out=$("$tensorplug" devices --json)
CORES=$(getconf _NPROCESSORS_ONLN) expect_json "devices --json is the CPU alone, with its details" "$out" '
assert isinstance(d, list) and len(d) == 1, d
cpu = d[0]
assert cpu["name"] == "/physical_device:CPU:0" and cpu["device_type"] == "CPU", cpu
assert cpu["ordinal"] == 0 and cpu["full_name"] == "/job:localhost/replica:0/task:0/device:CPU:0", cpu
assert cpu["compute_units"] == int(os.environ["CORES"]) and cpu["memory_bytes"] > 0, cpu
assert cpu["hardware_name"] != "" and cpu["driver_version"] == "", cpu'
lines=$(TP_PLUGIN_PATH=$plugins "$tensorplug" devices 2>/dev/null)
out=$(TP_PLUGIN_PATH=$plugins "$tensorplug" devices --json 2>/dev/null)
LINES=$lines expect_json "devices --json has the devices of the lines, in their order" "$out" '
lines = ["PhysicalDevice(name=%r, device_type=%r)" % (x["name"], x["device_type"]) for x in d]
assert lines == os.environ["LINES"].split("\n"), lines'
out=$(TP_PLUGIN_PATH=$plugins "$tensorplug" devices --json --type xpu 2>/dev/null)
expect_json "devices --json --type xpu: the test plug-in's two XPUs, their vendor and memory" "$out" '
assert [x["name"] for x in d] == ["/physical_device:XPU:0", "/physical_device:XPU:1"], d
assert all(x["vendor"] == "tensorplug tests" and x["hardware_name"] == "Test Device" for x in d), d
assert [x["memory_bytes"] for x in d] == [64 << 20, 0], d'
out=$(TP_PLUGIN_PATH=$plugins "$tensorplug" devices --json --type=GPU 2>/dev/null)
expect_json "devices --json of a type with no device is an empty array" "$out" 'assert d == [], d'
out=$(TP_PLUGIN_PATH=$plugins "$tensorplug" devices --memory --json 2>/dev/null)
expect_json "devices --memory --json: the logical devices' statistics" "$out" '
assert [x["name"].rsplit("/", 1)[1] for x in d] == ["device:CPU:0", "device:XPU:0", "device:XPU:1", "device:OLDDEV:0"], d
xpu0 = d[1]
assert xpu0["physical_device"] == "/physical_device:XPU:0" and xpu0["bytes_limit"] == 48 << 20, xpu0
assert d[2]["bytes_limit"] == 2**64 - 1 and xpu0["num_allocations"] == 0, d'

# plugins --json: one object per line of `plugins`, which is rebuilt from it word for word.
search="$plugins:$apu"
lines=$(TP_PLUGIN_PATH=$search "$tensorplug" plugins 2>/dev/null)
out=$(TP_PLUGIN_PATH=$search "$tensorplug" plugins --json 2>/dev/null); rc=$?
check "plugins --json exits 0 although some are refused (rc $rc)" $rc
LINES=$lines PLUGINS=$plugins APU=$apu VERSION=${version_line#tensorplug } expect_json \
    "plugins --json says what the lines say" "$out" '
def line(p):
    if not p["loaded"]:
        return "%s: refused: %s" % (p["path"], p["reason"])
    return "%s: loaded: %s %s, ABI %d.%d, device types %s, %d ops, %d kernels, graph pass %s" % (
        p["path"], p["name"], p["version"], p["abi_major"], p["abi_minor"],
        ",".join(p["device_types"]) or "none", p["num_ops"], p["num_kernels"],
        "yes" if p["has_graph_pass"] else "no")
rebuilt = [line(p) for p in d["plugins"]] + ["%d loaded, %d refused" % (d["loaded"], d["refused"])]
assert rebuilt == os.environ["LINES"].split("\n"), rebuilt
assert (d["loaded"], d["refused"]) == (4, 5), d
assert d["loaded"] == sum(p["loaded"] for p in d["plugins"]), d
by_path = {p["path"]: p for p in d["plugins"]}
apu = by_path[os.environ["APU"]]
assert apu["loaded"] and apu["name"] == "apu" and apu["reason"] == "", apu
assert apu["version"] == os.environ["VERSION"].split(" ")[0], apu
assert apu["device_types"] == ["APU"] and apu["num_kernels"] == 4 and apu["has_graph_pass"], apu
good = by_path[os.environ["PLUGINS"] + "/libtp_test_good.so"]
assert (good["name"], good["version"], good["device_types"], good["num_ops"]) == ("good", "2.3.4", ["XPU"], 1), good
wrong = by_path[os.environ["PLUGINS"] + "/libtp_test_wrong_major.so"]
assert not wrong["loaded"] and (wrong["abi_major"], wrong["abi_minor"]) == (2, 0), wrong
assert wrong["reason"].startswith("it was built for plug-in ABI 2.0; "), wrong'

# Text a plug-in and its file name put in the JSON comes back exactly: quotes, backslashes,
# non-ASCII letters, and the control bytes of an init's failure as the runtime escapes them.
mkdir "$scratch/hostile \"quoted\" back\\slash"
hostile_copy="$scratch/hostile \"quoted\" back\\slash/q\"b\\s é.so"
cp "$hostile" "$hostile_copy"
out=$(TP_PLUGIN_PATH=$(dirname "$hostile_copy") "$tensorplug" plugins --json 2>/dev/null); rc=$?
check "plugins --json exits 0 beside a plug-in with a hostile name (rc $rc)" $rc
no_control_bytes "plugins --json writes no control byte" "$out"
HOSTILE=$hostile_copy expect_json "a hostile plug-in's path and reason round-trip through JSON" "$out" '
p = d["plugins"][1]
assert p["path"] == os.environ["HOSTILE"], (p["path"], os.environ["HOSTILE"])
assert chr(92) in p["path"] and "\"" in p["path"] and "é" in p["path"], p
assert p["reason"] == r"its init failed: no driver\x0D\x1B[2J\x1B[31mcleared", p["reason"]
assert p["name"] == "hostile_text" and not p["loaded"], p'
out=$(TP_PLUGINS=none TP_PLUGIN_PATH=$plugins "$tensorplug" plugins --json 2>/dev/null)
expect_json "TP_PLUGINS=none: plugins --json has the built-in CPU alone" "$out" '
assert [p["path"] for p in d["plugins"]] == ["<built-in>"] and d["refused"] == 0, d'

finish
