#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `tensorplug graph`: the demo function's placed graph, as DOT and as text, with and without
# the APU. Usage: test_graph.sh TENSORPLUG APU_PLUGIN_DIR
set -u
tensorplug=$1
apu_plugins=$2
source "$(dirname "$0")/support.sh"
cpu=/job:localhost/replica:0/task:0/device:CPU:0
apu=/job:localhost/replica:0/task:0/device:APU:0
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT

export TP_PLUGIN_PATH=
out=$("$tensorplug" graph); rc=$?
check "graph exits 0" $rc
[ "$(head -n 1 <<<"$out")" = 'digraph "demo" {' ]
check "graph starts with digraph (got: $(head -n 1 <<<"$out"))" $?
[ "$(tail -n 1 <<<"$out")" = '}' ]
check "graph ends the digraph" $?
for node in randomuniform matmul add relu; do
    expect_text "the DOT has node $node" "$out" "\"$node\" [shape=box"
done
expect_text "the DOT names the CPU" "$out" "label=\"randomuniform\\nRandomUniform\\n$cpu\""
expect_text "without an APU, Relu goes where default placement puts it" "$out" \
    "label=\"relu\\nRelu\\n$cpu\""
expect_text "the DOT draws an edge into relu" "$out" '-> "relu" [label="float32(1, 10)"]'

out=$(TP_PLUGIN_PATH=$apu_plugins "$tensorplug" graph); rc=$?
check "graph with the APU exits 0" $rc
expect_text "with an APU, Relu is on it" "$out" "label=\"relu\\nRelu\\n$apu\""
expect_text "with an APU, the uniform values stay on the CPU" "$out" \
    "label=\"randomuniform\\nRandomUniform\\n$cpu\""

out=$(TP_PLUGIN_PATH=$apu_plugins "$tensorplug" graph --text); rc=$?
check "graph --text exits 0" $rc
grep -qx "relu = Relu(.*) T=float32 -> float32(1, 10) on $apu" <<<"$out"
check "graph --text has a line for relu on the APU (got: $out)" $?
grep -qx "randomuniform = RandomUniform() .* on $cpu" <<<"$out"
check "graph --text has a line for the uniform values on the CPU (got: $out)" $?
expect_line "graph --text ends with the result" "$out" "return relu:0"

stdout=$("$tensorplug" graph --output "$scratch/graph.dot"); rc=$?
check "graph --output exits 0" $rc
[ -z "$stdout" ] && [ "$(cat "$scratch/graph.dot")" = "$("$tensorplug" graph)" ]
check "graph --output writes the DOT to the file alone" $?

err=$("$tensorplug" graph --output "$scratch/missing/graph.dot" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ]; check "an unwritable --output fails (rc $rc)" $?
expect_text "an unwritable --output says why" "$err" \
    "tensorplug graph: cannot open '$scratch/missing/graph.dot': No such file or directory"

err=$("$tensorplug" graph --bogus 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ]; check "graph --bogus exits 2 (rc $rc)" $?
expect_line "graph names an unknown option" "$err" \
    "tensorplug graph: unknown option '--bogus' (see tensorplug graph --help)"
"$tensorplug" graph --output >/dev/null 2>&1
[ $? -eq 2 ]; check "graph --output without a file exits 2" $?

finish
