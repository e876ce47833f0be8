"""Samples of ops/resampling/unpooling.py: max_unpool."""

from __future__ import annotations

from op_samples import Draw, Sample, distinct
from reference import torch

import minitrain as mt
from minitrain import ops
from minitrain.nn import functional


def _pooled(shape, dims, kernel, stride=None, padding=0) -> Draw:
    """(values, indices): normal values of the max pooling's output shape and the indices
    max_pool gives for distinct values of `shape` (non-overlapping windows: no index twice)."""
    pool = getattr(functional, f"max_pool{dims}d")

    def draw(rng):
        source = distinct(*shape)(rng)
        _, indices = pool(mt.tensor(source), kernel, stride, padding, return_indices=True)
        return rng.standard_normal(indices.shape), indices.numpy()

    return Draw(draw)


def _max_unpool(name, shape, kernel, stride=None, padding=0, output_size=None, dims=None):
    """F.max_unpoolNd (PyTorch's arguments on both sides) of the indices of a max pooling."""
    dims = dims or len(shape) - 2
    draw = _pooled(shape, dims, kernel, stride, padding)
    ours = getattr(functional, f"max_unpool{dims}d")

    def reference(x, indices):
        unpool = getattr(torch.nn.functional, f"max_unpool{dims}d")
        return unpool(x, indices, kernel, stride, padding, output_size)

    return Sample(
        name,
        lambda rng: draw(rng),
        lambda x, indices: ours(x, indices, kernel, stride, padding, output_size),
        reference,
    )


SAMPLES: dict[str, list[Sample]] = {
    "max_unpool": [
        _max_unpool("1d", (2, 3, 8), 2),
        _max_unpool("2d", (2, 2, 6, 6), 2),
        _max_unpool("2d_stride_padding_output_size", (1, 2, 7, 7), 2, 2, 1, output_size=(7, 7)),
        _max_unpool("2d_unbatched", (3, 4, 6), 2, dims=2),
        _max_unpool("3d", (1, 2, 4, 4, 6), (2, 2, 3)),
        Sample(
            "ops_max_unpool_stride_padding",
            lambda rng: _pooled((1, 2, 7, 7), 2, 2, 2, 1)(rng),
            lambda x, indices: ops.max_unpool(x, indices, 2, 2, 1, (7, 7)),
            lambda x, indices: torch.nn.functional.max_unpool2d(x, indices, 2, 2, 1, (7, 7)),
        ),
        Sample(
            "ops_max_unpool_default_stride",
            lambda rng: _pooled((2, 2, 6, 4), 2, 2)(rng),
            lambda x, indices: ops.max_unpool(x, indices, 2),
            lambda x, indices: torch.nn.functional.max_unpool2d(x, indices, 2),
        ),
    ],
}
