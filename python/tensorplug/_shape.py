# SPDX-License-Identifier: Apache-2.0
"""TensorShape: what Tensor.shape returns, a tuple of ints that prints as TensorFlow's."""


class TensorShape(tuple):
    """The dimensions of a tensor: t.shape[0], len(t.shape), t.shape.as_list()."""

    __slots__ = ()

    def __new__(cls, dims=()):
        return super().__new__(cls, (int(d) for d in dims))

    @property
    def rank(self):
        return len(self)

    @property
    def ndims(self):
        return len(self)

    def as_list(self):
        return list(self)

    def num_elements(self):
        count = 1
        for d in self:
            count *= d
        return count

    def __repr__(self):
        return "TensorShape(%s)" % list(self)

    def __str__(self):
        return "(%s)" % ", ".join(str(d) for d in self) if len(self) != 1 else "(%d,)" % self[0]
