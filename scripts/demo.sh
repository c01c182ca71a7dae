#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The walk-through `make demo` runs: the runtime alone, then the APU package installed into a
# local prefix (no root needed), then the reference documents' examples. Usage: demo.sh BUILD
set -eu
# Absolute, since plug-in search paths must be.
build=$(cd "${1:-build}" && pwd)
prefix="$build/demo-prefix"
step() { printf '\n== %s\n' "$*"; }
unset TP_PLUGIN_PATH

step "1. The runtime alone: the libtensorplug1 and tensorplug-tools packages, unpacked into $prefix"
# CPack warns, for developers, that the plug-in modules have no soname (a plug-in needs none);
# the walk-through shows its output only if it fails.
(cd "$build" && cpack -G DEB >"$build/demo-cpack.log" 2>&1) || { cat "$build/demo-cpack.log"; exit 1; }
rm -rf "$prefix"
for package in libtensorplug1 tensorplug-tools; do
    dpkg-deb -x "$build"/${package}_*_amd64.deb "$prefix"
done
echo "\$ $prefix/usr/bin/tensorplug devices"
"$prefix/usr/bin/tensorplug" devices

step "2. Install the APU plug-in package (the C counterpart of pip install tensorflow-apu)"
echo "\$ dpkg-deb -x $(ls "$build"/tensorplug-apu_*_amd64.deb) $prefix"
dpkg-deb -x "$build"/tensorplug-apu_*_amd64.deb "$prefix"
echo "\$ $prefix/usr/bin/tensorplug devices"
"$prefix/usr/bin/tensorplug" devices
echo "\$ $prefix/usr/bin/tensorplug plugins"
"$prefix/usr/bin/tensorplug" plugins

step "3. examples/apu_relu: the plug-in page's snippet, with placement logging"
echo "   (a = random normal runs on the CPU, b = relu(a) on the APU, then /APU:0 and /CPU:0 scopes)"
TP_PLUGIN_PATH="$build/plugins" "$build/examples/apu_relu"

step "4. examples/memory_growth: tf.config.gpu.set_per_process_memory_growth(), on the APU"
TP_PLUGIN_PATH="$build/plugins" "$build/examples/memory_growth"
step "5. examples/memory_fraction: tf.config.gpu.set_per_process_memory_fraction(0.4)"
TP_PLUGIN_PATH="$build/plugins" "$build/examples/memory_fraction"
echo "\$ TP_PLUGIN_PATH=$build/plugins TP_APU_DEVICES=2 TP_VISIBLE_DEVICES=APU:1 tensorplug devices --memory"
TP_PLUGIN_PATH="$build/plugins" TP_APU_DEVICES=2 TP_VISIBLE_DEVICES=APU:1 \
    "$prefix/usr/bin/tensorplug" devices --memory

step "6. examples/multi_device: replication by hand on two logical CPUs, then on two APUs"
TP_PLUGIN_PATH="$build/plugins" TP_APU_DEVICES=2 "$build/examples/multi_device"

step "7. examples/mirrored_training: MirroredStrategy, Dense(1), MSE, gradient descent 0.2"
"$build/examples/mirrored_training"

for example in log_placement manual_placement unknown_device soft_placement; do
    step "examples/$example: the \"Using GPUs\" snippet in C"
    "$build/examples/$example"
done

step "8. Python: pip install the two wheels into a fresh virtual environment, as the plug-in page does"
dist="$build/python/dist"
source_dir=$(cd "$(dirname "$0")/.." && pwd)
if ls "$dist"/tensorplug_apu-*.whl >/dev/null 2>&1; then
    venv="$build/demo-venv"
    rm -rf "$venv"
    /usr/bin/python3 -m venv --system-site-packages "$venv"
    echo "\$ pip install $(cd "$dist" && ls tensorplug-*.whl tensorplug_apu-*.whl | tr '\n' ' ')"
    "$venv/bin/pip" install --no-index --no-deps --disable-pip-version-check \
        "$dist"/tensorplug-*.whl "$dist"/tensorplug_apu-*.whl | tail -n 1
    echo "\$ python3 examples/python/apu_relu.py"
    (cd "$venv" && TP_LOG_DEVICE_PLACEMENT=1 "$venv/bin/python" "$source_dir/examples/python/apu_relu.py")
else
    echo "(the wheels were not built: /usr/bin/python3 lacks python3-build or python3-numpy)"
fi
