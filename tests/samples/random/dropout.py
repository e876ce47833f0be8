"""Samples of ops/random/dropout.py: dropout, seeded."""

from __future__ import annotations

import numpy as np
from op_samples import Sample, draws, normal
from reference import torch

import minitrain as mt
from minitrain import ops


def _dropout(p: float):
    """Dropout with a fixed seed, so every call (gradcheck calls many) draws the same mask; the
    PyTorch twin applies the mask numpy's generator gives for that seed (u >= p, kept)."""

    def call(x):
        mt.manual_seed(7)
        return ops.dropout(x, p)

    def ref(x):
        keep = np.random.default_rng(7).random(tuple(x.shape)) >= p
        return x * torch.from_numpy(keep) / (1.0 - p)

    return call, ref


SAMPLES: dict[str, list[Sample]] = {
    "dropout": [
        Sample(name, draws(normal(*shape)), *_dropout(p))
        for name, shape, p in [
            ("p0.3", (4, 5), 0.3),
            ("p0.9_3d", (2, 3, 4), 0.9),
            ("p0.5", (7,), 0.5),
        ]
    ],
}
