"""Samples of ops/pointwise/masking.py: where, with broadcasting and a Python number."""

from __future__ import annotations

from op_samples import Sample, draws, mask, normal
from reference import torch

from minitrain import ops

SAMPLES: dict[str, list[Sample]] = {
    "where": [
        Sample(name, draws(*specs), ops.where, lambda c, a, b: torch.where(c, a, b))
        for name, specs in [
            ("same_shape", (mask(3, 4), normal(3, 4), normal(3, 4))),
            ("broadcast", (mask(3, 1), normal(1, 4), normal(4))),
            ("broadcast_cond", (mask(2, 3, 4), normal(3, 1), normal(4))),
            ("number_b", (mask(3, 4), normal(3, 4), 0.0)),
            ("zero_d_a", (mask(3, 4), normal(), normal(3, 4))),
        ]
    ],
}
