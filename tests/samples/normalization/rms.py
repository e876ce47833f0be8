"""Samples of ops/normalization/rms.py: rms_norm."""

from __future__ import annotations

from op_samples import Sample, draws, normal
from reference import torch
from samples.normalization.rows import ROWS, rows_sample

from minitrain import ops


def _torch_rms_norm(*args, **kw):
    return torch.nn.functional.rms_norm(*args, **kw)


SAMPLES: dict[str, list[Sample]] = {
    "rms_norm": [
        rows_sample(ops.rms_norm, _torch_rms_norm, name, shape, dims, min(params, 1), **kw)
        for name, shape, dims, params, kw in ROWS
        if "weight_only" not in name
    ]
    + [
        Sample(
            "axis_1_of_3d",
            draws(normal(2, 3, 4), normal(3, 4)),
            lambda x, w: ops.rms_norm(x, None, w, axis=1),
            lambda x, w: torch.nn.functional.rms_norm(x, (3, 4), w),
        )
    ],
}
