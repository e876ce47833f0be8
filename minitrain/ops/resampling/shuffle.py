"""pixel_shuffle and pixel_unshuffle: channels moved into space and back, composed of reshape
and permute."""

from __future__ import annotations

import numpy as np

from ...errors import ArgumentError, DTypeError, ShapeError
from ...tensor import Tensor
from ..core.op import shape_of
from ..shapes.shape import permute, reshape

__all__ = ["pixel_shuffle", "pixel_unshuffle"]


def _shuffle_factor(caller: str, name: str, factor) -> int:
    if isinstance(factor, bool) or not isinstance(factor, (int, np.integer)):
        raise DTypeError(f"{caller}: {name} must be an int, got {factor!r}")
    if factor < 1:
        raise ArgumentError(f"{caller}: {name} must be positive, got {factor}")
    return int(factor)


def pixel_shuffle(input, upscale_factor: int) -> Tensor:  # noqa: A002 (PyTorch's name)
    """(*, C * r^2, H, W) rearranged to (*, C, H * r, W * r), r = upscale_factor, as
    PyTorch's pixel_shuffle: out[..., c, h * r + i, w * r + j] = input[..., c * r^2 + i * r + j,
    h, w]. Composed of reshape and permute."""
    caller = "pixel_shuffle"
    r = _shuffle_factor(caller, "upscale_factor", upscale_factor)
    shape = shape_of(input)
    if len(shape) < 3:
        raise ShapeError(f"{caller}: input must have at least 3 dims (*, C, H, W), got {shape}")
    *lead, channels, height, width = shape
    if channels % (r * r):
        raise ShapeError(
            f"{caller}: input's channel dim ({channels}, of shape {shape}) must be a multiple "
            f"of upscale_factor^2 = {r * r}"
        )
    k = len(lead)
    split = reshape(input, (*lead, channels // (r * r), r, r, height, width))
    moved = permute(split, (*range(k), k, k + 3, k + 1, k + 4, k + 2))
    return reshape(moved, (*lead, channels // (r * r), height * r, width * r))


def pixel_unshuffle(input, downscale_factor: int) -> Tensor:  # noqa: A002 (PyTorch's name)
    """(*, C, H * r, W * r) rearranged to (*, C * r^2, H, W), r = downscale_factor: the
    inverse of pixel_shuffle, as PyTorch's pixel_unshuffle. Composed of reshape and permute."""
    caller = "pixel_unshuffle"
    r = _shuffle_factor(caller, "downscale_factor", downscale_factor)
    shape = shape_of(input)
    if len(shape) < 3:
        raise ShapeError(f"{caller}: input must have at least 3 dims (*, C, H, W), got {shape}")
    *lead, channels, height, width = shape
    if height % r or width % r:
        raise ShapeError(
            f"{caller}: input's height and width ({height}, {width}, of shape {shape}) must be "
            f"multiples of downscale_factor {r}"
        )
    k = len(lead)
    split = reshape(input, (*lead, channels, height // r, r, width // r, r))
    moved = permute(split, (*range(k), k, k + 2, k + 4, k + 1, k + 3))
    return reshape(moved, (*lead, channels * r * r, height // r, width // r))
