"""What max and average pooling share: float16 computed in float32, the (N*C, D, H, W) planes
the numba kernels take, the padding that holds every window, and the input's dtype check."""

from __future__ import annotations

import math

import numpy as np

from ..core.checks import check_floating
from .window import Window, cover_ends

__all__ = ["as_planes", "check_pool_float", "is_half", "pad_to_windows"]


def is_half(array) -> bool:
    """Whether `array` is float16, which pooling computes in float32 and rounds once: every
    float16 is a float32 exactly, the window sums then run in float32 as PyTorch's do, and the
    numba kernels, which have no float16 loops, apply (numpy's loop over the taps took 26 s for a
    600 x 600 max-pool window)."""
    return array.dtype == np.float16


def as_planes(array, spatial_dims: int):
    """(N, C, *spatial) as C-contiguous (N*C, D, H, W): leading size-1 dims fill in up to 3."""
    return np.ascontiguousarray(array).reshape(
        (math.prod(array.shape[:2]),) + (1,) * (3 - spatial_dims) + array.shape[2:]
    )


def check_pool_float(caller: str, x) -> None:
    """A pool's input x (a Tensor, an array or a nested list) must be floating point."""
    check_floating(caller, input=x if hasattr(x, "dtype") else np.asarray(x))


def pad_to_windows(xp, x, window: Window, value):
    """x padded with `value` so that every window lies inside it."""
    ends = cover_ends(window, x.shape[2:])
    pad_width = ((0, 0), (0, 0)) + tuple(zip(window.pads_begin, ends, strict=True))
    return xp.pad(x, pad_width, constant_values=value)
