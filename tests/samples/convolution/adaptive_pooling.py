"""Samples of ops/convolution/adaptive_pooling.py: adaptive_avg_pool."""

from __future__ import annotations

from op_samples import Sample, draws, normal
from reference import torch

from minitrain import ops
from minitrain.nn import functional

SAMPLES: dict[str, list[Sample]] = {
    "adaptive_avg_pool": [
        Sample(
            "1d_global",
            draws(normal(2, 3, 7)),
            lambda x: ops.adaptive_avg_pool(x, 1),
            lambda x: torch.nn.functional.adaptive_avg_pool1d(x, 1),
        ),
        Sample(
            "1d_uneven_windows",
            draws(normal(2, 3, 7)),
            lambda x: ops.adaptive_avg_pool(x, 3),
            lambda x: torch.nn.functional.adaptive_avg_pool1d(x, 3),
        ),
        Sample(
            "2d_3x4",
            draws(normal(2, 2, 7, 9)),
            lambda x: ops.adaptive_avg_pool(x, (3, 4)),
            lambda x: torch.nn.functional.adaptive_avg_pool2d(x, (3, 4)),
        ),
        Sample(
            "2d_global",
            draws(normal(2, 3, 5, 4)),
            lambda x: ops.adaptive_avg_pool(x, 1),
            lambda x: torch.nn.functional.adaptive_avg_pool2d(x, 1),
        ),
        Sample(
            "2d_larger_than_input",
            draws(normal(1, 2, 3, 4)),
            lambda x: ops.adaptive_avg_pool(x, (5, 6)),
            lambda x: torch.nn.functional.adaptive_avg_pool2d(x, (5, 6)),
        ),
        Sample(
            "3d_none_keeps_a_dim",
            draws(normal(1, 2, 5, 4, 6)),
            lambda x: ops.adaptive_avg_pool(x, (2, None, 4)),
            lambda x: torch.nn.functional.adaptive_avg_pool3d(x, (2, None, 4)),
        ),
        Sample(
            "F_adaptive_avg_pool2d",
            draws(normal(2, 3, 6, 5)),
            lambda x: functional.adaptive_avg_pool2d(x, (2, 3)),
            lambda x: torch.nn.functional.adaptive_avg_pool2d(x, (2, 3)),
        ),
        Sample(
            "F_adaptive_avg_pool3d_global",
            draws(normal(2, 2, 3, 4, 3)),
            lambda x: functional.adaptive_avg_pool3d(x, 1),
            lambda x: torch.nn.functional.adaptive_avg_pool3d(x, 1),
        ),
    ],
}
