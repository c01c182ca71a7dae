#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# NumPy reads what tensorplug writes and tensorplug reads what NumPy writes: .npy files of every
# dtype (values, dtype, shape, header), a checkpoint's names and values, and numpy.save's,
# numpy.savez's and numpy.savez_compressed's files (big-endian, Fortran order, versions 2.0 and
# 3.0), compared value for value; the arrays tensorplug does not hold are refused by name.
# bfloat16, which NumPy lacks, is the record [('bfloat16', '<u2')] of its bits both ways.
# Usage: test_numpy_files.sh NUMPY_FILES_PROGRAM
set -u
program=$1
python=/usr/bin/python3
if ! "$python" -c 'import numpy' 2>/dev/null; then
    echo "FAIL: $python with NumPy is needed (python3-numpy, listed in" \
         "packaging/debian-packages.txt): run scripts/install-deps.sh"
    exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/../cli/support.sh" # check, finish

# The line NumPy's view of an array gives, as numpy_files prints tensorplug's.
canonical='
import numpy
def line(name, a):
    a = numpy.array(a, order="C")
    dtype_name = a.dtype.name
    if a.dtype.names == ("bfloat16",):
        dtype_name, a = "bfloat16", a["bfloat16"]
    little = a.astype(a.dtype.newbyteorder("<"))
    print(name, dtype_name, str(a.shape), little.tobytes().hex())
'

# ---- tensorplug writes, NumPy reads ----
mkdir "$work/tp"
"$program" write "$work/tp" | sort >"$work/tp.lines"
check "numpy_files write" "${PIPESTATUS[0]}"
"$python" - "$work/tp" >"$work/tp_by_numpy.lines" 2>"$work/python.err" <<PY
$canonical
import os, sys
folder = sys.argv[1]
for name in sorted(os.listdir(folder)):
    path = os.path.join(folder, name)
    if name.endswith(".npy"):
        line(name, numpy.load(path))
    else:
        with numpy.load(path) as archive:
            for key in archive.files:
                line(name + ":" + key, archive[key])
PY
rc=$?; check "NumPy loads every file tensorplug wrote ($(cat "$work/python.err"))" $rc
sort -o "$work/tp_by_numpy.lines" "$work/tp_by_numpy.lines"
diff "$work/tp.lines" "$work/tp_by_numpy.lines" >"$work/diff" 
rc=$?; check "NumPy reads the dtypes, shapes and values tensorplug wrote: $(cat "$work/diff")" $rc
[ "$(wc -l <"$work/tp.lines")" -eq 19 ]
rc=$?; check "19 arrays were compared (got $(wc -l <"$work/tp.lines"))" $rc

# What a NumPy user checks by hand.
"$python" - "$work/tp" 2>"$work/python.err" <<'PY'
import sys, numpy
d = sys.argv[1]
a = numpy.load(d + "/float32.npy")
assert a.dtype == numpy.dtype("<f4") and a.shape == (2, 3), (a.dtype, a.shape)
assert a[0, 0] == 1.5 and a[0, 1] == 0 and numpy.signbit(a[0, 1]) and numpy.isnan(a[0, 2])
assert a[1, 0] == numpy.inf and a[1, 1] == -numpy.inf and a[1, 2] == numpy.float32(1e-45)
f = numpy.load(d + "/float64.npy")
assert f.dtype == numpy.dtype("<f8") and f.shape == (3, 2) and f[1, 1] == 1.7976931348623157e308
i = numpy.load(d + "/int64.npy")
assert i.dtype == numpy.dtype("<i8") and i.shape == (1, 2, 3)
assert i[0, 0, 0] == -2**63 and i[0, 0, 1] == 2**63 - 1
assert numpy.load(d + "/int32.npy").tolist() == [-2**31, 2**31 - 1, 0, -1, 1, 7]
assert numpy.load(d + "/uint8.npy").dtype == numpy.dtype("|u1")
b = numpy.load(d + "/bool.npy")
assert b.dtype == numpy.bool_ and b.tolist() == [[True, False, False], [True, True, False]]
s = numpy.load(d + "/scalar.npy")
assert s.shape == () and s == 0.1
assert numpy.load(d + "/empty.npy").shape == (0, 3)
assert numpy.load(d + "/large.npy")[299, 256] == (299 * 257 + 256) * 0.5 - 1000
h = numpy.load(d + "/float16.npy")
assert h.dtype == numpy.dtype("<f2") and h.shape == (2, 3), (h.dtype, h.shape)
assert h[0, 0] == 1.5 and numpy.signbit(h[0, 1]) and numpy.isnan(h[0, 2]) and h[1, 0] == numpy.inf
assert h[1, 1] == 65504 and h[1, 2] == numpy.float16(2.0**-24)
bf = numpy.load(d + "/bfloat16.npy")
assert bf.dtype == numpy.dtype([("bfloat16", "<u2")]) and bf.shape == (3, 2), (bf.dtype, bf.shape)
wide = (bf["bfloat16"].astype("<u4") << 16).view("<f4")
assert wide[0, 0] == 1.5 and numpy.signbit(wide[0, 1]) and numpy.isnan(wide[1, 0])
assert wide[1, 1] == -numpy.inf and wide[2, 0] == numpy.float32(3.3895314e38)
assert wide[2, 1] == numpy.float32(0.10009765625)
assert numpy.load(d + "/int8.npy").tolist() == [-128, 127, 0, -1, 1, 7]
assert numpy.load(d + "/int8.npy").dtype == numpy.dtype("|i1")
assert numpy.load(d + "/int16.npy").tolist() == [-2**15, 2**15 - 1, 0, -1, 1, 7]
assert numpy.load(d + "/uint16.npy").dtype == numpy.dtype("<u2")
assert numpy.load(d + "/uint32.npy").tolist() == [[0, 2**32 - 1, 1], [2**31 - 1, 2**31, 7]]
u = numpy.load(d + "/uint64.npy")
assert u.dtype == numpy.dtype("<u8") and u.tolist() == [0, 2**64 - 1, 1, 2**63, 2**63 - 1, 7]
# The header: version 1.0, C order, values at a multiple of 64 bytes.
with open(d + "/float32.npy", "rb") as f:
    assert numpy.lib.format.read_magic(f) == (1, 0)
    shape, fortran_order, dtype = numpy.lib.format.read_array_header_1_0(f)
    assert (shape, fortran_order, dtype) == ((2, 3), False, numpy.dtype("<f4"))
    assert f.tell() % 64 == 0, f.tell()
with numpy.load(d + "/checkpoint.npz") as z:
    assert sorted(z.files) == ["dense_0/bias", "dense_0/kernel", "step"], z.files
    assert z["step"].shape == () and z["step"] == 2**63 - 1
    assert z["dense_0/kernel"].dtype == numpy.dtype("<f4") and z["dense_0/kernel"].shape == (2, 3)
    assert z["dense_0/bias"].tolist() == [numpy.inf, -numpy.inf, numpy.float32(1e-45)]
PY
rc=$?; check "NumPy sees the values, dtypes, headers and checkpoint names: $(tail -n 1 "$work/python.err")" $rc

# ---- NumPy writes, tensorplug reads ----
mkdir "$work/np"
"$python" - "$work/np" >"$work/np.lines" 2>"$work/python.err" <<PY
$canonical
import sys
d = sys.argv[1]
nan, inf = numpy.nan, numpy.inf
arrays = {
    "np_float32": numpy.array([[1.5, -0.0, nan], [inf, -inf, 1e-45]], dtype="<f4"),
    "np_float64_big": numpy.array([0.1, -0.0, nan, 1.7976931348623157e308, 5e-324], dtype=">f8"),
    "np_int32_fortran": numpy.asfortranarray(numpy.arange(24, dtype="<i4").reshape(2, 3, 4) - 12),
    "np_int64_big": numpy.array([-2**63, 2**63 - 1, 0, -1], dtype=">i8"),
    "np_uint8_transposed": numpy.arange(256, dtype="u1").reshape(16, 16).T,
    "np_bool": numpy.array([[True, False, True], [False, False, True]]),
    "np_scalar": numpy.float32(3.5),
    "np_empty": numpy.zeros((0, 4), dtype="<i8"),
    "np_rank8": numpy.arange(2**8, dtype="<f8").reshape((2,) * 8),
    "np_float16": numpy.array([[0.1, -65504], [nan, 6e-8]], dtype="<f2"),
    "np_int8": numpy.array([-128, 127, 3], dtype="i1"),
    "np_int16_big": numpy.array([-32768, 32767, -2], dtype=">i2"),
    "np_uint16": numpy.array([0, 65535, 258], dtype="<u2"),
    "np_uint32_big": numpy.array([2**32 - 1, 2**31, 5], dtype=">u4"),
    "np_uint64": numpy.array([2**64 - 1, 2**63, 0], dtype="<u8"),
    "np_bfloat16": numpy.array([0x3fc0, 0xff80, 0x0001], dtype="<u2").view([("bfloat16", "<u2")]),
    "np_bfloat16_big": numpy.array([0x3fc0, 0x7f7f], dtype=">u2").view([("bfloat16", ">u2")]),
}
for name, a in arrays.items():
    numpy.save(d + "/" + name + ".npy", a)
    line(name + ".npy", a)
assert numpy.lib.format.read_magic(open(d + "/np_int32_fortran.npy", "rb")) == (1, 0)
for version in [(2, 0), (3, 0)]:
    name = "np_version_%d.npy" % version[0]
    a = numpy.arange(6, dtype="<f4").reshape(2, 3)
    with open(d + "/" + name, "wb") as f:
        numpy.lib.format.write_array(f, a, version=version)
    line(name, a)
refused = {
    "np_object": numpy.array([1, "a"], dtype=object),
    "np_structured": numpy.zeros(3, dtype=[("x", "<f4"), ("y", "<i4")]),
    "np_void2": numpy.zeros(3, dtype="V2"),
    "np_complex": numpy.zeros(3, dtype="<c8"),
    "np_strings": numpy.array(["abc", "de"]),
    "np_float128": numpy.zeros(3, dtype=numpy.longdouble),
}
for name, a in refused.items():
    numpy.save(d + "/" + name + ".npy", a, allow_pickle=True)
variables = {
    "dense_0/kernel": numpy.asfortranarray(numpy.array([[1, -2, 3], [4, 5, -6]], dtype=">f4")),
    "dense_0/bias": numpy.array([0.5, -0.0, nan], dtype="<f4"),
    "step": numpy.int64(-7),
}
numpy.savez(d + "/np_savez.npz", notes=numpy.arange(3), **variables)
numpy.savez_compressed(d + "/np_compressed.npz", **variables)
for archive in ["np_savez.npz", "np_compressed.npz"]:
    for name, a in variables.items():
        line(archive + ":" + name, numpy.asarray(a))
PY
rc=$?; check "NumPy writes its files ($(tail -n 1 "$work/python.err"))" $rc
sort -o "$work/np.lines" "$work/np.lines"
"$program" read "$work"/np/np_*.npy >"$work/np_by_tp.all"
check "numpy_files read" $?
grep -v ' refused: ' "$work/np_by_tp.all" | sort >"$work/np_by_tp.lines"
for archive in np_savez.npz np_compressed.npz; do
    "$program" restore "$work/np/$archive" dense_0/kernel:float32:2,3 dense_0/bias:float32:3 \
        step:int64: >>"$work/np_by_tp.lines"
    check "numpy_files restore $archive" $?
done
sort -o "$work/np_by_tp.lines" "$work/np_by_tp.lines"
diff "$work/np.lines" "$work/np_by_tp.lines" >"$work/diff"
rc=$?; check "tensorplug reads the dtypes, shapes and values NumPy wrote: $(cat "$work/diff")" $rc
[ "$(wc -l <"$work/np.lines")" -eq 25 ]
rc=$?; check "25 arrays were compared (got $(wc -l <"$work/np.lines"))" $rc

refusal() {  # FILE FRAGMENT
    grep -qF "$1 refused: INVALID_ARGUMENT: tp_tensor_load_npy: '$work/np/$1': $2" "$work/np_by_tp.all"
    rc=$?; check "$1 is refused with '$2' (got: $(grep -F "$1 refused" "$work/np_by_tp.all"))" $rc
}
refusal np_object.npy "its dtype '|O' holds pickled Python objects"
refusal np_structured.npy "its dtype is structured"
refusal np_void2.npy "its dtype '|V2' is raw bytes, which say nothing of what they hold"
refusal np_complex.npy "its dtype '<c8' is not one tensorplug holds"
refusal np_strings.npy "its dtype '<U3' is not one tensorplug holds"
refusal np_float128.npy "its dtype '<f16' is not one tensorplug holds"

out=$("$program" restore "$work/np/np_savez.npz" absent:float32:1 dense_0/bias:float32:3)
[ "$out" = "np_savez.npz refused: NOT_FOUND: tp_checkpoint_load: '$work/np/np_savez.npz': variable 'absent': the checkpoint has no member 'absent.npy' (it holds 'notes', 'dense_0/kernel', 'dense_0/bias', 'step')" ]
check "a name the archive lacks is refused, naming what it holds (got: $out)" $?

finish
