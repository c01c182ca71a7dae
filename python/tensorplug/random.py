# SPDX-License-Identifier: Apache-2.0
"""tp.random: random tensors, reproducible by seed.

    tp.random.normal(shape, mean=0.0, stddev=1.0, dtype=tp.float32, seed=None)
    tp.random.uniform(shape, minval=0, maxval=None, dtype=tp.float32, seed=None)
    tp.random.set_seed(seed)

Which values a call draws (tp.nn.dropout follows the same rule):

- A call without seed= draws the next values of the process's sequence. After
  tp.random.set_seed(s) that sequence is the same at every run of the program; without a global
  seed it starts from a value drawn at import, so every run differs.
- A call with seed=k draws the next values of k's own sequence: the same k gives new values at
  each call, and the same values, call for call, at every run. Without a global seed, k's
  sequence starts from TensorFlow's default global seed, so seed=k alone is reproducible.
- tp.random.set_seed (with any value; None removes the global seed) restarts every sequence, so
  the calls after it repeat the values the same calls drew after the last set_seed(s).

The values are Philox-4x32-10 draws of the runtime (the same on every device); they are not
TensorFlow's values for the same seeds.
"""
from ._tensorplug import random_normal as normal  # noqa: F401
from ._tensorplug import random_set_seed as set_seed  # noqa: F401
from ._tensorplug import random_uniform as uniform  # noqa: F401
