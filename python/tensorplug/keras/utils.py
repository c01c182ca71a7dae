# SPDX-License-Identifier: Apache-2.0
"""tp.keras.utils: the seed that Keras' initializers and fit's shuffling draw from."""
import numpy as np

_rng = [np.random.RandomState()]


def set_random_seed(seed):
    """Seeds the initial weights of the layers made next and fit's batch shuffling, as
    tf.keras.utils.set_random_seed does."""
    _rng[0] = np.random.RandomState(int(seed))


def rng():
    """The generator initializers and fit draw from."""
    return _rng[0]
