#!/bin/sh
# The walk-through `make demo` runs. Usage: demo.sh BUILD_DIR
set -eu
build=${1:-build}
step() { printf '\n== %s\n' "$*"; }

step "The devices a context sees with no plug-in installed"
TP_PLUGIN_PATH= "$build/bin/tensorplug" devices

step "The plug-ins found, and why any was refused"
TP_PLUGIN_PATH= "$build/bin/tensorplug" plugins

step "With TP_PLUGIN_PATH=$build/tests/plugins: the test plug-ins, good and deliberately broken"
TP_PLUGIN_PATH="$build/tests/plugins" "$build/bin/tensorplug" plugins
TP_PLUGIN_PATH="$build/tests/plugins" "$build/bin/tensorplug" devices 2>/dev/null

step "examples/hello_tensor: a tensor made from host data and printed"
TP_PLUGIN_PATH= "$build/examples/hello_tensor"

for example in log_placement manual_placement unknown_device soft_placement; do
    step "examples/$example: the \"Using GPUs\" snippet in C"
    TP_PLUGIN_PATH= "$build/examples/$example"
done
