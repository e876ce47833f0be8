"""Samples of ops/resampling/shuffle.py: pixel_shuffle and pixel_unshuffle, composed ops."""

from __future__ import annotations

from op_samples import Sample, draws, normal
from reference import torch

import minitrain as mt
from minitrain import ops
from minitrain.nn import functional

COMPOSED: dict[str, list[Sample]] = {
    "pixel_shuffle": [
        Sample(
            "4d",
            draws(normal(2, 8, 3, 2)),
            lambda x: ops.pixel_shuffle(x, 2),
            lambda x: torch.nn.functional.pixel_shuffle(x, 2),
        ),
        Sample(
            "3d_factor3",
            draws(normal(9, 2, 3)),
            lambda x: functional.pixel_shuffle(x, 3),
            lambda x: torch.nn.functional.pixel_shuffle(x, 3),
        ),
        Sample(
            "5d_batch_dims",
            draws(normal(2, 1, 4, 2, 2)),
            lambda x: mt.pixel_shuffle(x, 2),
            lambda x: torch.pixel_shuffle(x, 2),
        ),
    ],
    "pixel_unshuffle": [
        Sample(
            "4d",
            draws(normal(2, 2, 4, 6)),
            lambda x: ops.pixel_unshuffle(x, 2),
            lambda x: torch.nn.functional.pixel_unshuffle(x, 2),
        ),
        Sample(
            "3d_factor3",
            draws(normal(1, 6, 3)),
            lambda x: functional.pixel_unshuffle(x, 3),
            lambda x: torch.nn.functional.pixel_unshuffle(x, 3),
        ),
        Sample(
            "5d_batch_dims",
            draws(normal(2, 1, 2, 4, 2)),
            lambda x: mt.pixel_unshuffle(x, 2),
            lambda x: torch.pixel_unshuffle(x, 2),
        ),
    ],
}
