"""Samples of ops/shapes/scattering.py: scatter_reduce, each reduce, repeated indices."""

from __future__ import annotations

import numpy as np
from op_samples import Draw, Sample, draws, nonzero, normal, positive
from reference import torch

from minitrain import ops


def _fixed(array) -> Draw:
    return Draw(lambda rng: np.array(array))


def _apart(x_shape, src_shape) -> Draw:
    """x and src values at least 0.3 apart from one another, all of them (no ties for amax and
    amin), drawn together: a (x, src) pair, for `_make`."""

    def draw(rng):
        x_size, src_size = int(np.prod(x_shape)), int(np.prod(src_shape))
        values = rng.permutation(x_size + src_size) * 0.5 + rng.uniform(-0.1, 0.1)
        values = values - values.mean()
        return values[:x_size].reshape(x_shape), values[x_size:].reshape(src_shape)

    return Draw(draw)


def _make(x, index, src):
    """A `make` of (x, index, src): x and src each a Draw, or one `_apart` Draw of both."""

    def make(rng):
        if src is None:
            first, second = x(rng)
            return first, index(rng), second
        return x(rng), index(rng), src(rng)

    return make


# (name, x's shape, dim, index, src's shape): repeats in every index; src larger than index in
# the last two (its elements outside index take no part, and get zero gradient)
_LAYOUTS = [
    ("dim0", (3, 4), 0, [[0, 1, 2, 0], [2, 2, 1, 0]], (2, 4)),
    ("dim1_repeats", (2, 4), 1, [[3, 3, 0], [1, 1, 1]], (2, 3)),
    ("dim_minus1_src_larger", (3, 4), -1, [[0, 0], [3, 1], [2, 2]], (3, 5)),
    ("3d_dim1_src_larger", (2, 3, 2), 1, [[[0, 1], [0, 0]], [[2, 2], [1, 2]]], (2, 3, 3)),
]


def _cut(index):
    """src cut to index's shape: PyTorch's gradient of a src larger than index fails."""
    return tuple(slice(0, n) for n in np.shape(index))


def _scatter_reduce(reduce: str, include_self: bool) -> list[Sample]:
    samples = []
    for name, x_shape, dim, index, src_shape in _LAYOUTS:
        if reduce in ("amax", "amin"):
            make = _make(_apart(x_shape, src_shape), _fixed(index), None)
        elif reduce == "prod":  # (zeros: _prod_with_zeros)
            make = _make(nonzero(*x_shape), _fixed(index), nonzero(*src_shape))
        else:
            make = _make(normal(*x_shape), _fixed(index), normal(*src_shape))
        cut = _cut(index)
        samples.append(
            Sample(
                f"{reduce}_{name}_{'self' if include_self else 'no_self'}",
                make,
                lambda x, i, s, d=dim: ops.scatter_reduce(
                    x, d, i, s, reduce, include_self=include_self
                ),
                lambda x, i, s, d=dim, c=cut: torch.scatter_reduce(
                    x, d, i, s[c], reduce, include_self=include_self
                ),
            )
        )
    return samples


def _prod_with_zeros(name, x, src, include_self) -> Sample:
    """prod where zeros reach an element: x's own, one of src's (the product of the others is
    then no result / value, PyTorch's formula covers it)."""
    index = np.array([0, 1, 1, 2, 3, 3, 0])
    return Sample(
        name,
        draws(_fixed(x), index, _fixed(src)),
        lambda x, i, s: ops.scatter_reduce(x, 0, i, s, "prod", include_self=include_self),
        lambda x, i, s: torch.scatter_reduce(x, 0, i, s, "prod", include_self=include_self),
    )


# scatter_add, index_add and scatter's reduce= are scatter_reduce too; the selections composed
# of getitem, gather and setitem (index_select, masked_select, take_along_dim, scatter,
# masked_scatter) are checked in tests/ops/test_scatter.py.
SAMPLES: dict[str, list[Sample]] = {
    "scatter_reduce": [
        *(
            sample
            for reduce in ("sum", "prod", "mean", "amax", "amin")
            for include_self in (True, False)
            for sample in _scatter_reduce(reduce, include_self)
        ),
        _prod_with_zeros(
            "prod_zeros_self", [0.0, 2.0, 1.5, -0.5], [1.5, 0.0, 2.5, -1.5, 0.5, 0.7, 2.0], True
        ),
        _prod_with_zeros(
            "prod_zeros_no_self",
            [0.0, 2.0, 1.5, -0.5],
            [1.5, 0.0, 2.5, -1.5, 0.5, 0.0, 2.0],
            False,
        ),
        Sample(
            "scatter_add_dim1",
            _make(normal(3, 4), _fixed([[0, 0, 3], [1, 2, 1], [3, 3, 3]]), normal(3, 3)),
            lambda x, i, s: ops.scatter_add(x, 1, i, s),
            lambda x, i, s: torch.scatter_add(x, 1, i, s),
        ),
        Sample(
            "scatter_add_only_src",
            _make(normal(4), _fixed([1, 1, 0]), normal(3)),
            lambda x, i, s: ops.scatter_add(x, 0, i, s),
            lambda x, i, s: torch.scatter_add(x, 0, i, s),
            grad=(2,),
        ),
        Sample(
            "scatter_reduce_add",
            _make(normal(3, 4), _fixed([[0, 1, 2, 0], [0, 2, 1, 0]]), normal(2, 4)),
            lambda x, i, s: ops.scatter(x, 0, i, s, reduce="add"),
            lambda x, i, s: torch.scatter_add(x, 0, i, s),  # (torch's scatter(reduce=) has none)
        ),
        Sample(
            "scatter_reduce_multiply",
            _make(positive(3, 4), _fixed([[0, 1, 2, 0], [0, 2, 1, 0]]), positive(2, 4)),
            lambda x, i, s: ops.scatter(x, 0, i, s, reduce="multiply"),
            lambda x, i, s: torch.scatter_reduce(x, 0, i, s, "prod"),
        ),
        Sample(
            "index_add_alpha",
            _make(normal(3, 4), _fixed([0, 3, 0]), normal(3, 3)),
            lambda x, i, s: ops.index_add(x, 1, i, s, alpha=-1.5),
            lambda x, i, s: torch.index_add(x, 1, i, s, alpha=-1.5),
        ),
        Sample(
            "index_add_3d_dim0",
            _make(normal(2, 3, 2), _fixed([1, 1, 0, 1]), normal(4, 3, 2)),
            lambda x, i, s: ops.index_add(x, 0, i, s),
            lambda x, i, s: torch.index_add(x, 0, i, s),
        ),
        Sample(
            "index_add_zero_d",
            _make(normal(), _fixed([0]), normal()),
            lambda x, i, s: ops.index_add(x, 0, i, s),
            lambda x, i, s: torch.index_add(x, 0, i, s),
        ),
    ],
}
