"""`F.dropout1d`, `F.dropout2d`, `F.dropout3d` (whole channels zeroed), `F.alpha_dropout` and
`F.feature_alpha_dropout` (SELU's dropout): each is x times a mask drawn on x's device, composed
of ops (mul, add) so the gradient is the mask's product."""

from __future__ import annotations

import warnings

import numpy as np

from ... import backend, ops
from ...errors import DTypeError, ShapeError
from ...ops.random.dropout import check_probability
from ...tensor import Tensor

__all__ = ["dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]

# SELU's scale * alpha: the value SELU tends to for very negative inputs, negated, which alpha
# dropout gives a dropped element before its affine correction (Klambauer et al., 2017)
_SELU_NEGATIVE_SATURATION = 1.7580993408473766


def _keep_mask(x: Tensor, p: float, per_channel: bool, caller: str):
    """1.0 where an element (or, per_channel, a whole (n, c) channel) is kept, drawn with
    probability 1 - p on x's device, in x's dtype; shape x's, or (N, C, 1, ...) per channel."""
    dtype = np.dtype(x.dtype)
    if dtype.kind != "f":
        raise DTypeError(f"{caller}: input must be a floating tensor, got dtype {dtype}")
    if per_channel and x.ndim < 2:
        raise ShapeError(
            f"{caller}: channel-wise dropout needs at least 2 dims (N, C, ...), got shape "
            f"{tuple(x.shape)}"
        )
    shape = x.shape[:2] + (1,) * (x.ndim - 2) if per_channel else x.shape
    drawn = backend.draw(x.device, "uniform", shape, np.float64)
    return (drawn >= p).astype(dtype)


def _scaled_dropout(x: Tensor, p: float, training: bool, per_channel: bool, caller: str) -> Tensor:
    """x times the kept mask / (1 - p): the identity out of training or for p == 0, zeros for
    p == 1, as PyTorch's."""
    check_probability(p, caller)
    if not training or p == 0 or x.numel() == 0:
        return x
    keep = _keep_mask(x, p, per_channel, caller)
    if p == 1:
        return x * 0.0
    return ops.mul(x, Tensor.wrap(keep * keep.dtype.type(1.0 / (1.0 - p))))


def _channel_dropout(x: Tensor, p, training: bool, spatial: int, caller: str) -> Tensor:
    """Channel-wise dropout of (N, C, *spatial) or unbatched (C, *spatial)."""
    check_probability(p, caller)
    if x.ndim == spatial + 1 and training and p != 0:  # unbatched: the channels of one sample
        return _scaled_dropout(x.unsqueeze(0), p, training, True, caller).squeeze(0)
    return _scaled_dropout(x, p, training, True, caller)


def dropout1d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:  # noqa: A002
    """Zero whole channels of (N, C, L) or (C, L) with probability p each and scale the rest by
    1 / (1 - p), in training; input itself otherwise. `inplace` is accepted and ignored (a new
    tensor is returned). Other ranks raise a ShapeError, as PyTorch's RuntimeError."""
    check_probability(p, "dropout1d")
    if input.ndim not in (2, 3):
        raise ShapeError(
            f"dropout1d: expected 2D or 3D input (C, L) or (N, C, L), got shape "
            f"{tuple(input.shape)}"
        )
    return _channel_dropout(input, p, training, 1, "dropout1d")


def dropout2d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:  # noqa: A002
    """Zero whole channels of (N, C, H, W) with probability p each and scale the rest by
    1 / (1 - p), in training; input itself otherwise. As in PyTorch, a 3-D input is read as
    (N, C, L) (1-D channel-wise dropout), with a warning, and other ranks warn and are read as
    (N, C, *)."""
    check_probability(p, "dropout2d")
    if input.ndim not in (3, 4):
        warnings.warn(
            f"dropout2d: received a {input.ndim}-D input, which is deprecated (use dropout); "
            "dropout2d is channel-wise dropout of 3-D or 4-D inputs",
            stacklevel=2,
        )
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: received a 3D input and assuming channel-wise 1D dropout is desired - "
            "the input is read as (N, C, L), as in PyTorch; use dropout1d for this",
            stacklevel=2,
        )
    return _scaled_dropout(input, p, training, True, "dropout2d")


def dropout3d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:  # noqa: A002
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability p each and scale
    the rest by 1 / (1 - p), in training; input itself otherwise. Other ranks warn and are read
    as (N, C, *), as in PyTorch."""
    check_probability(p, "dropout3d")
    if input.ndim not in (4, 5):
        warnings.warn(
            f"dropout3d: received a {input.ndim}-D input, which is deprecated (use dropout); "
            "dropout3d is channel-wise dropout of 4-D or 5-D inputs",
            stacklevel=2,
        )
    if input.ndim == 4:
        return _channel_dropout(input, p, training, 3, "dropout3d")
    return _scaled_dropout(input, p, training, True, "dropout3d")


def _alpha_dropout(x: Tensor, p: float, training: bool, per_channel: bool, caller: str) -> Tensor:
    """Dropped elements set to SELU's negative saturation -alpha', then a * out + b with a and b
    chosen so a zero-mean unit-variance input keeps its mean and variance (PyTorch's formula)."""
    check_probability(p, caller)
    if not training or p == 0 or x.numel() == 0:
        return x
    keep = _keep_mask(x, p, per_channel, caller)
    if p == 1:
        return x * 0.0
    alpha = _SELU_NEGATIVE_SATURATION
    scale = 1.0 / np.sqrt((alpha * alpha * p + 1.0) * (1.0 - p))
    # kept: scale * x + scale * alpha * p; dropped: scale * alpha * (p - 1)
    shift = (keep - 1.0) * (alpha * scale) + alpha * scale * p
    scaled_keep = keep * keep.dtype.type(scale)
    return ops.add(ops.mul(x, Tensor.wrap(scaled_keep)), Tensor.wrap(shift.astype(keep.dtype)))


def alpha_dropout(
    input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False
) -> Tensor:  # noqa: A002
    """Alpha dropout (for SELU networks), in training: each element dropped with probability p
    is set to SELU's negative saturation, then the result is scaled and shifted so the input's
    mean and variance are kept. training defaults to False, as in PyTorch; `inplace` is ignored."""
    return _alpha_dropout(input, p, training, False, "alpha_dropout")


def feature_alpha_dropout(
    input: Tensor,  # noqa: A002
    p: float = 0.5,
    training: bool = False,
    inplace: bool = False,
) -> Tensor:
    """Alpha dropout of whole channels of (N, C, *): each (n, c) channel dropped with
    probability p. training defaults to False, as in PyTorch; `inplace` is ignored."""
    return _alpha_dropout(input, p, training, True, "feature_alpha_dropout")
