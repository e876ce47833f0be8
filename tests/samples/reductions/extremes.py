"""Samples of ops/reductions/extremes.py: amax and amin (the Max and Min ops) over every kind of
dim, with and without keepdim."""

from __future__ import annotations

from op_samples import Sample, distinct
from reference import torch
from samples.reductions.reduction import dims_of, reduction_samples

from minitrain import ops

SAMPLES: dict[str, list[Sample]] = {
    "max": reduction_samples(
        ops.amax, lambda x, a, k: torch.amax(x, dims_of(x, a), keepdim=k), values=distinct
    ),
    "min": reduction_samples(
        ops.amin, lambda x, a, k: torch.amin(x, dims_of(x, a), keepdim=k), values=distinct
    ),
}
