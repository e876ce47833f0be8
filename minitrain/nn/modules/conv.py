"""Convolution layers: Conv1d, Conv2d, Conv3d and the transposed ConvTranspose1d/2d/3d.

Conv1d/2d/3d take padding_mode 'zeros' or one of F.pad's modes; the transposed ones 'zeros' only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...errors import ArgumentError, DTypeError, ShapeError
from ...ops.convolution.transposed import check_output_padding
from ...ops.convolution.window import (
    check_padding_string,
    conv_padding,
    padding_pads,
    spatial_ints,
)
from ...tensor import Tensor
from .. import functional as F  # noqa: N812 (PyTorch's idiom)
from .. import init
from .linear import finish_parameters, layer_dtype
from .module import Module, Parameter

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    dims = 0
    transposed = False  # weight (in, out/groups, *kernel) instead of (out, in/groups, *kernel)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ):
        super().__init__()
        caller = type(self).__name__
        if padding_mode not in _PADDING_MODES:
            raise ArgumentError(
                f"{caller}: padding_mode must be one of {_PADDING_MODES}, got {padding_mode!r}"
            )
        dtype = layer_dtype(dtype, caller)
        in_channels, out_channels = (
            _count(value, name, caller, minimum=0)
            for value, name in ((in_channels, "in_channels"), (out_channels, "out_channels"))
        )
        groups = _count(groups, "groups", caller, minimum=1)
        if in_channels % groups or out_channels % groups:
            raise ArgumentError(
                f"{caller}: in_channels ({in_channels}) and out_channels ({out_channels}) must "
                f"both be divisible by groups ({groups})"
            )
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = spatial_ints(kernel_size, self.dims, "kernel_size", caller, minimum=1)
        self.stride = spatial_ints(stride, self.dims, "stride", caller, minimum=1)
        self.dilation = spatial_ints(dilation, self.dims, "dilation", caller, minimum=1)
        self.padding = _padding(padding, self.dims, caller)
        self.padding_mode = padding_mode
        if self.transposed:
            shape = (in_channels, out_channels // groups, *self.kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = Parameter(np.empty(shape, dtype))
        finish_parameters(self, bias, out_channels, dtype, device)

    def reset_parameters(self) -> None:
        """Re-draw weight and bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), in place, as the
        constructor does; fan_in = weight.shape[1] * prod(kernel_size)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))  # U(-1/sqrt(fan_in), 1/sqrt(fan_in))
        if self.bias is not None:
            fan_in, _ = init.fan_in_and_fan_out(self.weight)
            bound = 1.0 / math.sqrt(fan_in) if fan_in else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x: Tensor) -> Tensor:
        """Input (N, C_in, *spatial) or unbatched (C_in, *spatial) -> (N, C_out, *spatial_out). A
        padding_mode other than 'zeros' pads the input with F.pad's mode, then convolves unpadded.
        """
        conv = (F.conv1d, F.conv2d, F.conv3d)[self.dims - 1]
        if self.padding_mode == "zeros":
            padding = self.padding
        else:  # as PyTorch: pad the input with F.pad's mode, then convolve without padding
            x, padding = F.pad(x, self._pad_widths(x.shape), self.padding_mode), 0
        return conv(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)

    def _pad_widths(self, shape) -> tuple[int, ...]:
        """self.padding as F.pad's widths: (begin, end) per spatial dim, the last dim first."""
        spatial = shape[-self.dims :]
        pads = conv_padding(
            self.padding, spatial, self.kernel_size, self.stride, self.dilation, type(self).__name__
        )
        begins, ends = pads[: self.dims], pads[self.dims :]
        return tuple(w for b, e in zip(begins[::-1], ends[::-1], strict=True) for w in (b, e))

    def extra_repr(self) -> str:
        text = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * self.dims:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * self.dims:
            text += f", dilation={self.dilation}"
        if self.transposed and self.output_padding != (0,) * self.dims:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


def _count(value, name: str, caller: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise DTypeError(f"{caller}: {name} must be an int, got {value!r}")
    if value < minimum:
        raise ArgumentError(f"{caller}: {name} must be >= {minimum}, got {value!r}")
    return int(value)


def _padding(padding, dims: int, caller: str):
    """padding as PyTorch keeps it: 'same' / 'valid', or a tuple per spatial dim (of ints, or
    of (begin, end) pairs), checked as F.conv*d will take it."""
    if isinstance(padding, str):
        check_padding_string(padding, caller)
        return padding
    padding_pads(padding, dims, caller)
    if isinstance(padding, (int, np.integer)):
        return (int(padding),) * dims
    return tuple(
        int(p) if isinstance(p, (int, np.integer)) else tuple(int(v) for v in p) for p in padding
    )


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L) (or unbatched (C, L)): weight (out, in/groups, k)."""

    dims = 1


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W) (or unbatched (C, H, W)): weight
    (out, in/groups, kh, kw). padding: an int, a pair, per-dim (begin, end) pairs, 'same' or
    'valid'."""

    dims = 2


class Conv3d(_ConvNd):
    """3-D convolution over (N, C, D, H, W) (or unbatched): weight (out, in/groups, kd, kh, kw)."""

    dims = 3


class _ConvTransposeNd(_ConvNd):
    transposed = True

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        bias: bool = True,
        dilation=1,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ):
        caller = type(self).__name__
        if padding_mode != "zeros":  # as PyTorch: the padding of a transposed conv crops
            raise ArgumentError(
                f"{caller}: only padding_mode='zeros' is supported for a transposed "
                f"convolution, got {padding_mode!r}"
            )
        padding = spatial_ints(padding, self.dims, "padding", caller, minimum=0)
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )
        self.output_padding = check_output_padding(
            output_padding, self.stride, self.dilation, caller
        )

    def forward(self, input: Tensor, output_size=None) -> Tensor:  # noqa: A002
        """The transposed conv of input; output_size (the spatial sizes, optionally with the
        batch and channel dims before them) picks output_padding, as in PyTorch."""
        conv_transpose = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)
        return conv_transpose[self.dims - 1](
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            self._output_padding(input, output_size),
            self.groups,
            self.dilation,
        )

    def _output_padding(self, input: Tensor, output_size) -> tuple[int, ...]:  # noqa: A002
        """self.output_padding, or what gives output_size: each size must lie between the
        output without output_padding and that plus stride - 1 (PyTorch's range)."""
        if output_size is None:
            return self.output_padding
        caller, dims = type(self).__name__, self.dims
        if input.ndim not in (dims + 1, dims + 2):
            raise ShapeError(
                f"{caller}: input must be (N, C, *spatial) or (C, *spatial) with {dims} "
                f"spatial dims, got shape {input.shape}"
            )
        leading = input.ndim - dims  # batch and channels, or channels alone
        sizes = tuple(output_size) if isinstance(output_size, Sequence) else (output_size,)
        if len(sizes) == leading + dims:
            sizes = sizes[leading:]
        if len(sizes) != dims:
            raise ShapeError(
                f"{caller}: for a {input.ndim}-D input, output_size must have {dims} or "
                f"{leading + dims} elements, got {len(sizes)}: {output_size!r}"
            )
        sizes = spatial_ints(sizes, dims, "output_size", caller, minimum=0)
        spatial = input.shape[leading:]
        smallest = [
            (n - 1) * s - 2 * p + d * (k - 1) + 1
            for n, s, p, d, k in zip(
                spatial, self.stride, self.padding, self.dilation, self.kernel_size, strict=True
            )
        ]
        largest = [low + s - 1 for low, s in zip(smallest, self.stride, strict=True)]
        if any(not low <= n <= high for n, low, high in zip(sizes, smallest, largest, strict=True)):
            raise ShapeError(
                f"{caller}: requested an output size of {list(sizes)}, but valid sizes range "
                f"from {smallest} to {largest} (for an input of {spatial})"
            )
        return tuple(n - low for n, low in zip(sizes, smallest, strict=True))


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution over (N, C, L) (or unbatched (C, L)), the adjoint of Conv1d:
    weight (in, out/groups, k); L_out = (L - 1) * stride - 2 * padding + dilation * (k - 1) +
    output_padding + 1."""

    dims = 1


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution over (N, C, H, W) (or unbatched (C, H, W)), the adjoint of
    Conv2d: weight (in, out/groups, kh, kw); per dim L_out = (L - 1) * stride - 2 * padding +
    dilation * (k - 1) + output_padding + 1."""

    dims = 2


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution over (N, C, D, H, W) (or unbatched), the adjoint of Conv3d:
    weight (in, out/groups, kd, kh, kw)."""

    dims = 3
