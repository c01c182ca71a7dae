#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds the two wheels, tensorplug (the extension module and the runtime library it bundles)
# and tensorplug_apu (the APU plug-in, installed into site-packages/tensorplug-plugins/), with
# `python -m build --no-isolation` in staged copies of python/ and python/apu/, so that the
# source tree is never written to. MPI_LIBRARY, libtensorplug_mpi.so where the build made one,
# goes beside the runtime, where a multi-worker strategy loads it from.
#   build_wheels.sh PYTHON SOURCE_DIR INCLUDE_DIR RUNTIME_LIBRARY APU_PLUGIN OUT_DIR [MPI_LIBRARY]
set -eu
python=$1 source=$2 include=$3 runtime=$4 apu=$5 out=$6 mpi=${7:-}
stage=$out/stage
rm -rf "$stage" "$out/dist"
mkdir -p "$stage" "$out/dist"

cp -R "$source/pyproject.toml" "$source/setup.py" "$source/README.md" "$source/src" \
      "$source/tensorplug" "$stage/"
find "$stage" -name __pycache__ -prune -exec rm -rf {} +
# The runtime under its SONAME, which the extension's NEEDED entry names, and the linker name
# the build links with.
soname=$(objdump -p "$runtime" | sed -n 's/^ *SONAME *//p')
cp "$runtime" "$stage/tensorplug/$soname"
ln -sf "$soname" "$stage/tensorplug/libtensorplug.so"
if [ -n "$mpi" ]; then
    cp "$mpi" "$stage/tensorplug/libtensorplug_mpi.so"
fi
(cd "$stage" && TP_INCLUDE_DIR=$include "$python" -m build --no-isolation --wheel \
     --outdir "$out/dist" . >"$out/build-tensorplug.log" 2>&1) ||
    { cat "$out/build-tensorplug.log"; exit 1; }

mkdir -p "$stage/apu/tensorplug-plugins"
cp "$source/apu/pyproject.toml" "$source/apu/setup.py" "$source/apu/README.md" "$stage/apu/"
cp "$apu" "$stage/apu/tensorplug-plugins/libtensorplug_apu.so"
(cd "$stage/apu" && "$python" -m build --no-isolation --wheel --outdir "$out/dist" . \
     >"$out/build-apu.log" 2>&1) || { cat "$out/build-apu.log"; exit 1; }
ls "$out/dist"
