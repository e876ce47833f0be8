"""group_norm, composed on layer norm: the LayerNorm op over each group's rows, then the
per-channel affine."""

from __future__ import annotations

import math

import numpy as np

from ...errors import ArgumentError, DTypeError, ShapeError
from ...tensor import Tensor
from ..core.checks import check_eps, check_shape
from ..core.op import as_tensor
from ..pointwise.arithmetic import add, mul
from ..shapes.shape import reshape
from .layer import layer_norm

__all__ = ["group_norm"]


def group_norm(x, num_groups: int, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Group normalization (PyTorch's GroupNorm) of x (N, C, *): each sample's channels in
    num_groups groups of C / num_groups, each group normalized over its channels and positions
    (biased variance), then per-channel weight and bias (C,), both optional.

    The statistics are those of a layer norm over the rows of x viewed as (N, num_groups, C /
    num_groups * positions), so it runs as the LayerNorm op (LayerNormalizationGrad) on that
    view; the per-channel affine is a broadcast multiply and add.
    """
    caller = "group_norm"
    x = as_tensor(x)
    if x.ndim < 2:
        raise ShapeError(f"{caller}: x must be (N, C, *), got shape {x.shape}")
    if isinstance(num_groups, bool) or not isinstance(num_groups, (int, np.integer)):
        raise DTypeError(f"{caller}: num_groups must be an int, got {num_groups!r}")
    channels = x.shape[1]
    if num_groups < 1 or channels % num_groups:
        raise ArgumentError(
            f"{caller}: num_groups ({num_groups}) must be >= 1 and divide the channels of x "
            f"{x.shape} ({channels})"
        )
    for name, value in (("weight", weight), ("bias", bias)):
        if value is not None:
            check_shape(caller, name, value, (channels,), f"for x {x.shape}")
    eps = check_eps(caller, eps)
    per_group = channels // num_groups * math.prod(x.shape[2:])
    y = x  # no positions: nothing to normalize, as in PyTorch
    if per_group:
        rows = layer_norm(reshape(x, (x.shape[0], int(num_groups), per_group)), eps=eps)
        y = reshape(rows, x.shape)
    per_channel = (channels,) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = mul(y, reshape(weight, per_channel))
    return y if bias is None else add(y, reshape(bias, per_channel))
