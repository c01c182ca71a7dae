# SPDX-License-Identifier: Apache-2.0
"""Builds the tensorplug wheel: the extension module _tensorplug (C, against the CPython C API
and tensorplug.h) and the runtime library it links, bundled beside it.

Run by python/build_wheels.sh, which stages this folder with a copy of the runtime library
(libtensorplug.so.N) in tensorplug/ and says where the headers are in TP_INCLUDE_DIR. The
extension finds the library through its RPATH, $ORIGIN, so the installed wheel needs nothing
else from the build."""
import glob
import os

from setuptools import Extension, find_packages, setup

here = os.path.dirname(os.path.abspath(__file__))
include_dir = os.environ.get("TP_INCLUDE_DIR", os.path.join(here, "..", "include"))
warnings = ["-std=c11", "-Wall", "-Wextra", "-Wshadow", "-Wstrict-prototypes",
            "-Wmissing-prototypes", "-Wvla", "-Werror"]
if os.environ.get("TP_WERROR", "ON") != "ON":
    warnings.remove("-Werror")

extension = Extension(
    "tensorplug._tensorplug",
    sources=sorted(glob.glob(os.path.join("src", "*.c"))),
    include_dirs=[include_dir, "src"],
    library_dirs=["tensorplug"],
    libraries=["tensorplug"],
    extra_compile_args=warnings + ["-fvisibility=hidden", "-D_XOPEN_SOURCE=700"],
    extra_link_args=["-Wl,-rpath,$ORIGIN"],
)

setup(
    packages=find_packages(include=["tensorplug", "tensorplug.*"]),
    # libtensorplug_mpi.so, where the build made it: what a multi-worker strategy loads from
    # the runtime's folder.
    package_data={"tensorplug": ["libtensorplug.so.*", "libtensorplug_mpi.so"]},
    ext_modules=[extension],
)
