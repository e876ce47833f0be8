"""Resampling layers: Upsample (UpsamplingNearest2d, UpsamplingBilinear2d), Unfold, Fold,
PixelShuffle, PixelUnshuffle, ChannelShuffle and MaxUnpool1d/2d/3d, each holding PyTorch's options
and calling the functional form."""

from __future__ import annotations

import numpy as np

from ...tensor import Tensor
from .. import functional as F  # noqa: N812 (PyTorch's idiom)
from .module import Module


class Upsample(Module):
    """input resampled to `size` or by `scale_factor` (F.interpolate, with its modes)."""

    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ):
        super().__init__()
        self.size = size
        # PyTorch keeps the factors as floats (its repr shows them so)
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(factor) for factor in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Input (N, C, *spatial), 1 to 3 spatial dims -> (N, C, *size), or each spatial size times
        scale_factor (floored)."""
        return F.interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            return f"scale_factor={self.scale_factor!r}, mode={self.mode!r}"
        return f"size={self.size!r}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Upsample of (N, C, H, W) with mode 'nearest'."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Upsample of (N, C, H, W) with mode 'bilinear' and align_corners=True."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class Unfold(Module):
    """The sliding windows of (N, C, H, W) as columns (N, C*K, L) (F.unfold)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Input (N, C, H, W) or (C, H, W) -> (N, C * K, L) or (C * K, L): K = prod(kernel_size)
        taps per window, L windows."""
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )


class Fold(Module):
    """Columns (N, C*K, L) summed back into images (N, C, *output_size) (F.fold)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Input (N, C * K, L) or (C * K, L) -> (N, C, *output_size) or (C, *output_size), the
        values of overlapping windows added up."""
        return F.fold(
            input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride
        )

    def extra_repr(self) -> str:
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
            f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}"
        )


class PixelShuffle(Module):
    """(*, C * r^2, H, W) to (*, C, H * r, W * r), r = upscale_factor (F.pixel_shuffle)."""

    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Input `(*, C * r^2, H, W)` -> `(*, C, H * r, W * r)`, r = upscale_factor."""
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class ChannelShuffle(Module):
    """(N, C, *) with its channels, read as `groups` groups, interleaved (F.channel_shuffle)."""

    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Input `(N, C, *)` -> the same shape, channel g * (C / groups) + i moved to
        i * groups + g."""
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class PixelUnshuffle(Module):
    """(*, C, H * r, W * r) to (*, C * r^2, H, W), r = downscale_factor (F.pixel_unshuffle)."""

    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Input `(*, C, H * r, W * r)` -> `(*, C * r^2, H, W)`, r = downscale_factor."""
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


def _per_dim(value, dims: int) -> tuple:
    """An int or a sequence as a tuple of `dims` values (PyTorch's _single, _pair, _triple)."""
    return (value,) * dims if isinstance(value, (int, np.integer)) else tuple(value)


class _MaxUnpoolNd(Module):
    dims = 2
    function = staticmethod(F.max_unpool2d)

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        # PyTorch keeps the sizes as tuples (its repr shows them so)
        self.kernel_size = _per_dim(kernel_size, self.dims)
        self.stride = _per_dim(kernel_size if stride is None else stride, self.dims)
        self.padding = _per_dim(padding, self.dims)

    def forward(self, input: Tensor, indices, output_size=None) -> Tensor:  # noqa: A002
        """input and indices (N, C, *spatial) or (C, *spatial), as MaxPool with return_indices=True
        gives them -> zeros (N, C, *spatial_out) with input's values at indices. output_size (the
        spatial sizes, optionally after N and C) picks spatial_out where several fit, as after an
        odd input size."""
        return self.function(
            input, indices, self.kernel_size, self.stride, self.padding, output_size
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The inverse of MaxPool1d: (N, C, L) placed at its indices in zeros (F.max_unpool1d)."""

    dims = 1
    function = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """The inverse of MaxPool2d: (N, C, H, W) placed at its indices in zeros."""

    dims = 2
    function = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """The inverse of MaxPool3d: (N, C, D, H, W) placed at its indices in zeros."""

    dims = 3
    function = staticmethod(F.max_unpool3d)
