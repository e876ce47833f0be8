"""Samples of ops/resampling/patches.py: unfold_patches and fold_patches."""

from __future__ import annotations

import numpy as np
from op_samples import Sample, draws, normal
from reference import torch

from minitrain import ops
from minitrain.nn import functional


def _windows_3d(x, kernel, strides):
    """PyTorch's F.unfold for 3 spatial dims, by Tensor.unfold: (N, C*K, L)."""
    n, c = x.shape[:2]
    for dim, (k, s) in enumerate(zip(kernel, strides, strict=True)):
        x = x.unfold(2 + dim, k, s)
    # (N, C, od, oh, ow, kd, kh, kw) -> (N, C, kd, kh, kw, od, oh, ow)
    return x.permute(0, 1, 5, 6, 7, 2, 3, 4).reshape(n, c * int(np.prod(kernel)), -1)


SAMPLES: dict[str, list[Sample]] = {
    "unfold_patches": [
        Sample(
            "2d",
            draws(normal(2, 3, 5, 6)),
            lambda x: ops.unfold_patches(x, (2, 3)),
            lambda x: torch.nn.functional.unfold(x, (2, 3)),
        ),
        Sample(
            "2d_stride_pads_dilations",
            draws(normal(1, 2, 7, 6)),
            lambda x: ops.unfold_patches(x, 3, dilation=(1, 2), padding=1, stride=2),
            lambda x: torch.nn.functional.unfold(x, 3, dilation=(1, 2), padding=1, stride=2),
        ),
        Sample(
            "1d",
            draws(normal(2, 3, 9)),
            lambda x: ops.unfold_patches(x, 3, padding=1, stride=2),
            lambda x: torch.nn.functional.unfold(x[:, :, None], (1, 3), padding=(0, 1), stride=2),
        ),
        Sample(
            "3d",
            draws(normal(1, 2, 4, 4, 5)),
            lambda x: ops.unfold_patches(x, 2, stride=(1, 2, 2)),
            lambda x: _windows_3d(x, (2, 2, 2), (1, 2, 2)),
        ),
        Sample(
            "F_unfold_unbatched",
            draws(normal(3, 5, 5)),
            lambda x: functional.unfold(x, 2, 1, 1, 2),
            lambda x: torch.nn.functional.unfold(x, 2, 1, 1, 2),
        ),
    ],
    "fold_patches": [
        Sample(
            "2d",
            draws(normal(2, 18, 16)),
            lambda x: ops.fold_patches(x, (5, 6), (2, 3)),
            lambda x: torch.nn.functional.fold(x, (5, 6), (2, 3)),
        ),
        Sample(
            "2d_overlapping_pads_dilations",
            draws(normal(1, 18, 28)),
            lambda x: ops.fold_patches(x, (7, 6), 3, dilation=(1, 2), padding=1),
            lambda x: torch.nn.functional.fold(x, (7, 6), 3, dilation=(1, 2), padding=1),
        ),
        Sample(
            "F_fold_unbatched_stride",
            draws(normal(8, 9)),
            lambda x: functional.fold(x, (6, 6), 2, 1, 0, 2),
            lambda x: torch.nn.functional.fold(x, (6, 6), 2, 1, 0, 2),
        ),
    ],
}
