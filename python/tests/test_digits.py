# SPDX-License-Identifier: Apache-2.0
"""The digits classifier of issue 19 in Python: tp.datasets.load_digits through the runtime's
loader, and examples/python/digits_mlp.py reaching the C example's accuracy on the same split,
step for step the same training as examples/digits_mlp.c."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tensorplug as tp

SOURCE = os.environ.get("TP_TEST_SOURCE_DIR")
BUILD = os.environ.get("TP_TEST_BUILD_DIR")
ENV = {"TP_APU_DEVICES": "", "TP_VISIBLE_DEVICES": "CPU:0", "TP_LOG_DEVICE_PLACEMENT": "0",
       "TP_PLUGIN_PATH": "", "TP_LOG_LEVEL": ""}


def digits_available():
    try:
        tp.datasets.load_digits()
        return True
    except tp.errors.NotFoundError:
        return False


needs_digits = pytest.mark.skipif(not digits_available(),
                                  reason="no digits file (python3-sklearn, or TP_DIGITS_PATH)")


@needs_digits
def test_load_digits_fixed_and_shuffled_splits():
    (x_train, y_train), (x_test, y_test) = tp.datasets.load_digits()
    assert x_train.shape == (1437, 64) and x_test.shape == (360, 64)
    assert x_train.dtype == np.float32 and y_train.dtype == np.int32
    assert x_train.min() == 0.0 and x_train.max() == 1.0
    assert np.all((x_train * 16) == np.round(x_train * 16))  # pixels 0..16 divided by 16
    assert set(np.unique(y_train)) == set(range(10))
    (sx_train, sy_train), (sx_test, sy_test) = tp.datasets.load_digits(split="shuffled")
    images = np.concatenate([x_train, x_test])
    order = tp.datasets.digits_shuffle(range(1797), 0, 0)
    assert sorted(order.tolist()) == list(range(1797)) and order.tolist() != list(range(1797))
    np.testing.assert_array_equal(np.concatenate([sx_train, sx_test]), images[order])
    again = tp.datasets.load_digits(split="shuffled", split_seed=0)[0][1]
    np.testing.assert_array_equal(again, sy_train)
    other = tp.datasets.load_digits(split="shuffled", split_seed=1)[0][1]
    assert not np.array_equal(other, sy_train)


def test_load_digits_errors(tmp_path):
    with pytest.raises(tp.errors.NotFoundError, match="nowhere.csv.gz"):
        tp.datasets.load_digits(str(tmp_path / "nowhere.csv.gz"))
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2,3\n")
    with pytest.raises(tp.errors.InvalidArgumentError):
        tp.datasets.load_digits(str(bad))
    with pytest.raises(ValueError, match="'fixed' or 'shuffled'"):
        tp.datasets.load_digits(split="random")


def run(command):
    environment = dict(os.environ)
    environment.update(ENV)
    result = subprocess.run(command, env=environment, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


@needs_digits
@pytest.mark.skipif(not SOURCE, reason="TP_TEST_SOURCE_DIR (set by ctest) names the examples")
def test_digits_mlp_example_reaches_the_c_example_accuracy():
    lines = run([sys.executable, os.path.join(SOURCE, "examples", "python", "digits_mlp.py"),
                 "--split", "shuffled", "--verbose", "2"])
    final = lines[-1]
    assert final.startswith("Test accuracy (shuffled split, seed 0): ")
    accuracy = float(final.rsplit(" ", 1)[1].rstrip("%"))
    assert accuracy >= 97.0  # tests/examples/check_accuracy.sh's bar for the C example
    assert sum(line.startswith("Epoch ") for line in lines) == 20
    c_program = os.path.join(BUILD or "", "examples", "digits_mlp")
    if BUILD and os.access(c_program, os.X_OK):
        # The same weights, batches and Adam steps: the same test accuracy as the C example.
        assert run([c_program, "--split", "shuffled"])[-1] == final


@needs_digits
@pytest.mark.skipif(not SOURCE, reason="TP_TEST_SOURCE_DIR (set by ctest) names the examples")
def test_digits_cnn_example_reaches_the_c_example_accuracy():
    lines = run([sys.executable, os.path.join(SOURCE, "examples", "python", "digits_cnn.py"),
                 "--split", "shuffled", "--verbose", "0"])
    final = lines[-1]
    assert final.startswith("Test accuracy (shuffled split, seed 0): ")
    assert float(final.rsplit(" ", 1)[1].rstrip("%")) >= 98.0  # check_accuracy.sh's bar
    c_program = os.path.join(BUILD or "", "examples", "digits_cnn")
    if BUILD and os.access(c_program, os.X_OK):
        assert run([c_program, "--split", "shuffled"])[-1] == final
