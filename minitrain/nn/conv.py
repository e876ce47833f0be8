"""Convolution layers: Conv1d, Conv2d, Conv3d (padding_mode: 'zeros' or one of F.pad's modes)."""

from __future__ import annotations

import math

import numpy as np

from ..errors import ArgumentError, DTypeError
from ..ops.conv import auto_pads, spatial_ints, torch_pads
from ..tensor import Tensor
from . import functional as F  # noqa: N812 (PyTorch's idiom)
from . import init
from .linear import layer_dtype
from .module import Module, Parameter

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    dims = 0

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
        where = type(self).__name__
        if padding_mode not in _PADDING_MODES:
            raise ArgumentError(
                f"{where}: padding_mode must be one of {_PADDING_MODES}, got {padding_mode!r}"
            )
        dtype = layer_dtype(dtype, where)
        in_channels, out_channels = (
            _count(value, name, where, minimum=0)
            for value, name in ((in_channels, "in_channels"), (out_channels, "out_channels"))
        )
        groups = _count(groups, "groups", where, minimum=1)
        if in_channels % groups or out_channels % groups:
            raise ArgumentError(
                f"{where}: in_channels ({in_channels}) and out_channels ({out_channels}) must "
                f"both be divisible by groups ({groups})"
            )
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = spatial_ints(kernel_size, self.dims, "kernel_size", where, minimum=1)
        self.stride = spatial_ints(stride, self.dims, "stride", where, minimum=1)
        self.dilation = spatial_ints(dilation, self.dims, "dilation", where, minimum=1)
        self.padding = _padding(padding, self.dims, where)
        self.padding_mode = padding_mode
        shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = Parameter(np.empty(shape, dtype))
        if bias:
            self.bias = Parameter(np.empty(out_channels, dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()
        if device is not None:
            self.to(device)

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))  # U(-1/sqrt(fan_in), 1/sqrt(fan_in))
        if self.bias is not None:
            fan_in, _ = init.fan_in_and_fan_out(self.weight)
            bound = 1.0 / math.sqrt(fan_in) if fan_in else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x: Tensor) -> Tensor:
        conv = (F.conv1d, F.conv2d, F.conv3d)[self.dims - 1]
        if self.padding_mode == "zeros":
            padding = self.padding
        else:  # as PyTorch: pad the input with F.pad's mode, then convolve without padding
            x, padding = F.pad(x, self._pad_widths(x.shape), self.padding_mode), 0
        return conv(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)

    def _pad_widths(self, shape) -> tuple[int, ...]:
        """self.padding as F.pad's widths: (begin, end) per spatial dim, the last dim first."""
        where = type(self).__name__
        pads, auto_pad = torch_pads(self.padding, self.dims, where)
        if pads is None:  # 'same' or 'valid'
            spatial = shape[-self.dims :]
            pads = auto_pads(auto_pad, spatial, self.kernel_size, self.stride, self.dilation, where)
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
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


def _count(value, name: str, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise DTypeError(f"{where}: {name} must be an int, got {value!r}")
    if value < minimum:
        raise ArgumentError(f"{where}: {name} must be >= {minimum}, got {value!r}")
    return int(value)


def _padding(padding, dims: int, where: str):
    """padding as PyTorch keeps it: 'same' / 'valid', or a tuple per spatial dim (of ints, or
    of (begin, end) pairs), checked as F.conv*d will take it."""
    torch_pads(padding, dims, where)
    if isinstance(padding, str):
        return padding
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
