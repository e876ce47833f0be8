"""Samples of ops/resampling/interpolation.py: interpolate, unpooling, patches."""

from __future__ import annotations

import numpy as np
from op_samples import Draw, Sample, distinct, draws, normal
from reference import torch

import minitrain as mt
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


def _windows_3d(x, kernel, strides):
    """PyTorch's F.unfold for 3 spatial dims, by Tensor.unfold: (N, C*K, L)."""
    n, c = x.shape[:2]
    for dim, (k, s) in enumerate(zip(kernel, strides, strict=True)):
        x = x.unfold(2 + dim, k, s)
    # (N, C, od, oh, ow, kd, kh, kw) -> (N, C, kd, kh, kw, od, oh, ow)
    return x.permute(0, 1, 5, 6, 7, 2, 3, 4).reshape(n, c * int(np.prod(kernel)), -1)


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
    "max_unpool": [
        _max_unpool("1d", (2, 3, 8), 2),
        _max_unpool("2d", (2, 2, 6, 6), 2),
        _max_unpool("2d_stride_padding_output_size", (1, 2, 7, 7), 2, 2, 1, output_size=(7, 7)),
        _max_unpool("2d_unbatched", (3, 4, 6), 2, dims=2),
        _max_unpool("3d", (1, 2, 4, 4, 6), (2, 2, 3)),
        Sample(
            "ops_max_unpool_onnx_names",
            lambda rng: _pooled((2, 2, 6, 4), 2, 2)(rng),
            lambda x, indices: ops.max_unpool(x, indices, 2, strides=2),
            lambda x, indices: torch.nn.functional.max_unpool2d(x, indices, 2),
        ),
    ],
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
            lambda x: ops.unfold_patches(x, 3, strides=2, pads=1, dilations=(1, 2)),
            lambda x: torch.nn.functional.unfold(x, 3, dilation=(1, 2), padding=1, stride=2),
        ),
        Sample(
            "1d",
            draws(normal(2, 3, 9)),
            lambda x: ops.unfold_patches(x, 3, strides=2, pads=1),
            lambda x: torch.nn.functional.unfold(x[:, :, None], (1, 3), padding=(0, 1), stride=2),
        ),
        Sample(
            "3d",
            draws(normal(1, 2, 4, 4, 5)),
            lambda x: ops.unfold_patches(x, 2, strides=(1, 2, 2)),
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
            lambda x: ops.fold_patches(x, (7, 6), 3, pads=1, dilations=(1, 2)),
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
