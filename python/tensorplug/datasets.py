# SPDX-License-Identifier: Apache-2.0
"""tp.datasets: the UCI handwritten digits (1,797 images of 8x8 pixels), read by the runtime's
loader (tp_digits_load: TP_DIGITS_PATH, else python3-sklearn's digits.csv.gz)."""
import numpy as np

from . import _tensorplug

TRAIN_ROWS = 1437  # the project's split: the file's first 1,437 images train, its last 360 test


def digits_shuffle(order, seed, stream):
    """`order` permuted as the C examples permute it (examples/digits_common.c: Fisher-Yates
    driven by SplitMix64 seeded with seed * 1000003 + stream): their shuffled split is stream 0
    of the identity order, and epoch e's batches are stream e applied to the previous epoch's
    order. A new array; Python and C then cut the same images in the same batches."""
    mask = (1 << 64) - 1
    state = (int(seed) * 1000003 + int(stream)) & mask
    order = [int(i) for i in order]
    rows = len(order)
    for i in range(rows - 1, 0, -1):
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        j = z % (i + 1)
        order[i], order[j] = order[j], order[i]
    return np.asarray(order)


def load_digits(path=None, split="fixed", split_seed=0):
    """((x_train, y_train), (x_test, y_test)) as NumPy arrays, as Keras' load_data returns
    them: float32 images (n, 64) with pixels in [0, 1], int32 labels (n,). split 'fixed': the
    file's first 1,437 images train and its last 360 test; 'shuffled': the images permuted
    first by the C examples' seeded shuffle (--split shuffled --split-seed N), then cut the
    same way."""
    images, labels = _tensorplug._load_digits(path)
    images, labels = images.numpy(), labels.numpy()
    if split == "shuffled":
        order = digits_shuffle(range(len(images)), split_seed, 0)
        images, labels = images[order], labels[order]
    elif split != "fixed":
        raise ValueError("split must be 'fixed' or 'shuffled', not %r" % (split,))
    if len(images) != TRAIN_ROWS + 360:
        raise ValueError("the digits file holds %d images, not the data set's 1797"
                         % len(images))
    return ((images[:TRAIN_ROWS], labels[:TRAIN_ROWS]),
            (images[TRAIN_ROWS:], labels[TRAIN_ROWS:]))
