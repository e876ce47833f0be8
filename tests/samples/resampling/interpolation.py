"""Samples of ops/resampling/interpolation.py: interpolate."""

from __future__ import annotations

from op_samples import Sample, draws, normal
from reference import torch

from minitrain import ops
from minitrain.nn import functional


def _interpolate(name, shape, **kw) -> Sample:
    """ops.interpolate of a normal x with PyTorch's keywords, against F.interpolate."""
    return Sample(
        name,
        draws(normal(*shape)),
        lambda x: ops.interpolate(x, **kw),
        lambda x: torch.nn.functional.interpolate(x, **kw),
    )


SAMPLES: dict[str, list[Sample]] = {
    "interpolate": [
        _interpolate("nearest_1d_size", (2, 3, 5), size=8),
        _interpolate("nearest_2d_scale2", (2, 2, 4, 5), scale_factor=2),
        _interpolate("nearest_2d_scale_down", (1, 2, 7, 9), scale_factor=0.6),
        _interpolate("nearest_3d_size", (1, 2, 3, 4, 2), size=(5, 3, 4)),
        _interpolate("nearest_exact_2d", (1, 2, 5, 4), size=(7, 9), mode="nearest-exact"),
        _interpolate("linear_1d_scale", (2, 3, 5), scale_factor=2.5, mode="linear"),
        _interpolate(
            "linear_1d_align_corners", (2, 3, 6), size=11, mode="linear", align_corners=True
        ),
        _interpolate("bilinear_2d", (2, 2, 4, 5), scale_factor=(2, 1.5), mode="bilinear"),
        _interpolate(
            "bilinear_align_corners_down",
            (1, 2, 7, 6),
            size=(4, 3),
            mode="bilinear",
            align_corners=True,
        ),
        _interpolate(
            "bilinear_recompute_scale_factor",
            (1, 2, 5, 5),
            scale_factor=1.7,
            mode="bilinear",
            recompute_scale_factor=True,
        ),
        _interpolate("bilinear_one_dim_kept", (1, 2, 4, 5), size=(4, 8), mode="bilinear"),
        _interpolate("trilinear", (1, 2, 3, 4, 3), scale_factor=2, mode="trilinear"),
        _interpolate(
            "trilinear_align_corners",
            (1, 1, 3, 3, 4),
            size=(4, 5, 2),
            mode="trilinear",
            align_corners=True,
        ),
        _interpolate("bicubic", (1, 2, 4, 5), scale_factor=2, mode="bicubic"),
        _interpolate(
            "bicubic_align_corners_down",
            (1, 2, 7, 6),
            size=(5, 4),
            mode="bicubic",
            align_corners=True,
        ),
        Sample(
            "F_interpolate_bilinear",
            draws(normal(2, 3, 4, 4)),
            lambda x: functional.interpolate(x, scale_factor=2, mode="bilinear"),
            lambda x: torch.nn.functional.interpolate(x, scale_factor=2, mode="bilinear"),
        ),
    ],
}
