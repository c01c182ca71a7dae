# SPDX-License-Identifier: Apache-2.0
"""Compares the weights in .npz files (members NAME.npy, as tp_checkpoint_save writes them).

    compare_weights.py identical A.npz B.npz ...   every file holds A's bits exactly
    compare_weights.py close TOL A.npz B.npz       |a - b| <= TOL * (1 + |a|) element by element

Prints one line per member compared, the largest difference first, and exits 1 on any
mismatch (different members, dtypes, shapes or values)."""
import sys

import numpy as np


def load(path):
    with np.load(path) as archive:
        return {name: archive[name] for name in archive.files}


def main(argv):
    mode, rest = argv[1], argv[2:]
    tolerance = None
    if mode == "close":
        tolerance, rest = float(rest[0]), rest[1:]
    elif mode != "identical":
        print(f"unknown mode {mode!r}")
        return 2
    reference = load(rest[0])
    failures = 0
    for path in rest[1:]:
        other = load(path)
        if sorted(other) != sorted(reference):
            print(f"FAIL {path}: members {sorted(other)} != {sorted(reference)} of {rest[0]}")
            failures += 1
            continue
        for name in sorted(reference):
            a, b = reference[name], other[name]
            if a.dtype != b.dtype or a.shape != b.shape:
                print(f"FAIL {path}:{name}: {b.dtype}{b.shape} != {a.dtype}{a.shape}")
                failures += 1
                continue
            worst = float(np.max(np.abs(a.astype(np.float64) - b), initial=0.0))
            if tolerance is None:
                same = a.tobytes() == b.tobytes()
                print(f"{'ok  ' if same else 'FAIL'} {path}:{name}: largest difference {worst:g}"
                      f"{'' if same else ' (bits differ)'}")
            else:
                bound = tolerance * (1.0 + np.abs(a.astype(np.float64)))
                same = bool(np.all(np.abs(a.astype(np.float64) - b) <= bound))
                print(f"{'ok  ' if same else 'FAIL'} {path}:{name}: largest difference {worst:g}"
                      f" (tolerance {tolerance:g} * (1 + |x|))")
            failures += 0 if same else 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
