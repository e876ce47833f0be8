"""`F.lp_pool1d`, `F.lp_pool2d`, `F.lp_pool3d`: power-average pooling, (sum of x^p over each
window)^(1/p), composed of average pooling as PyTorch's is (max pooling of |x| for p = inf)."""

from __future__ import annotations

import math

from ... import ops
from ...errors import ArgumentError
from ...tensor import Tensor
from .convolution import avg_pool1d, avg_pool2d, avg_pool3d, max_pool1d, max_pool2d, max_pool3d

__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d"]

_POOLS = {1: (avg_pool1d, max_pool1d), 2: (avg_pool2d, max_pool2d), 3: (avg_pool3d, max_pool3d)}


def _lp_pool(caller: str, dims: int, input, norm_type, kernel_size, stride, ceil_mode):  # noqa: A002
    if isinstance(norm_type, bool) or not isinstance(norm_type, (int, float)) or norm_type == 0:
        raise ArgumentError(f"{caller}: norm_type must be a non-zero number, got {norm_type!r}")
    average, maximum = _POOLS[dims]
    if math.isinf(norm_type):  # the limit: the largest |x| of each window (or the smallest)
        pooled = maximum(ops.abs(input) * math.copysign(1, norm_type), kernel_size, stride, 0,
                         1, ceil_mode)  # fmt: skip
        return pooled if norm_type > 0 else -pooled
    sizes = (kernel_size,) * dims if isinstance(kernel_size, int) else tuple(kernel_size)
    out = average(input**norm_type, kernel_size, stride, 0, ceil_mode)
    # sign(out) * relu(|out|) is out, written as PyTorch's so that its gradient at 0 is too
    out = ops.sign(out) * ops.relu(ops.abs(out))
    return (out * math.prod(sizes)) ** (1.0 / norm_type)


def lp_pool1d(
    input: Tensor,  # noqa: A002
    norm_type: float,
    kernel_size: int,
    stride=None,
    ceil_mode: bool = False,
) -> Tensor:
    """(sum of x^p over each window)^(1/p), p = norm_type, for input (N, C, L) or (C, L);
    stride defaults to kernel_size. p = inf is the max of |x|; p = 1 sum pooling."""
    return _lp_pool("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(
    input: Tensor,  # noqa: A002
    norm_type: float,
    kernel_size,
    stride=None,
    ceil_mode: bool = False,
) -> Tensor:
    """(sum of x^p over each window)^(1/p), p = norm_type, for input (N, C, H, W) or (C, H,
    W); kernel_size an int or (kH, kW), stride defaulting to it."""
    return _lp_pool("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(
    input: Tensor,  # noqa: A002
    norm_type: float,
    kernel_size,
    stride=None,
    ceil_mode: bool = False,
) -> Tensor:
    """(sum of x^p over each window)^(1/p), p = norm_type, for input (N, C, D, H, W) or (C, D,
    H, W); kernel_size an int or (kD, kH, kW), stride defaulting to it."""
    return _lp_pool("lp_pool3d", 3, input, norm_type, kernel_size, stride, ceil_mode)
