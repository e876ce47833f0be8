"""Vectors compared along a dim: cosine_similarity, pairwise_distance and normalize, composed of
the norm and elementwise ops with PyTorch's formulas, so their gradients and second derivatives
are those of the formulas, as PyTorch's are."""

from __future__ import annotations

import math

import numpy as np

from ...errors import ArgumentError, DTypeError, ShapeError
from ...tensor import Tensor
from ..core.checks import normalize_one_axis
from ..core.op import array_of, shape_of
from ..core.promotion import result_type
from ..pointwise.arithmetic import abs, clip, pow
from ..pointwise.conversion import cast
from ..reductions.reduction import norm, sum
from ..shapes.shape import broadcast_to

__all__ = ["cosine_similarity", "normalize", "pairwise_distance"]


def _number(caller: str, name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise DTypeError(f"{caller}: {name} must be a number, got {value!r}")
    return float(value)


def _vector_norm(x, p: float, dim: int, keepdim: bool, caller: str) -> Tensor:
    """The p-norm of x along dim, as PyTorch's vector norm takes p: (sum |x|^p)^(1/p) for any p
    but 0 (negative p too), max |x| for inf, min |x| for -inf, and for p = 0 the count of
    nonzero elements (a constant: its gradient is 0, as PyTorch's)."""
    p = _number(caller, "p", p)
    if math.isnan(p):
        raise ArgumentError(f"{caller}: p must not be nan")
    if p > 0 or p == -math.inf:
        return norm(x, p, dim, keepdim)
    data = array_of(x)
    if p == 0:
        count = (data != 0).sum(axis=dim, keepdims=keepdim).astype(data.dtype)
        return Tensor(count)
    # negative p: PyTorch's formula as it stands (a zero element makes the norm 0)
    with np.errstate(divide="ignore"):
        return pow(sum(pow(abs(x), p), dim, keepdim), 1.0 / p)


def _clamped_norm(x, dim: int, eps: float) -> Tensor:
    """The 2-norm of x along dim (kept), raised to eps where it is smaller, as PyTorch's
    cosine_similarity clamps it: in value only, the gradient flowing through the unclamped
    norm (PyTorch clamps a copy in place under no_grad)."""
    total = norm(x, 2, dim, keepdims=True)
    if not (total.array < eps).any():
        return total
    unclamped = total.detach()
    return total + (clip(unclamped, min=eps) - unclamped)


def _common_floating(caller: str, x1, x2) -> tuple:
    """x1 and x2 in their result dtype, which must be floating point (PyTorch's rule)."""
    dtype = result_type([array_of(x1), array_of(x2)])
    if dtype.kind != "f":
        raise DTypeError(
            f"{caller}: x1 and x2 must have a floating common dtype, got "
            f"{array_of(x1).dtype} and {array_of(x2).dtype} (cast one, e.g. with .float())"
        )
    return tuple(v if array_of(v).dtype == dtype else cast(v, dtype) for v in (x1, x2))


def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between x1 and x2 along dim, as PyTorch's: each divided by its
    2-norm (raised to eps, in value only) and the products summed,

        sum(x1 / max(|x1|, eps) * x2 / max(|x2|, eps), dim)

    x1 and x2 broadcast against each other; their common dtype must be floating point."""
    caller = "cosine_similarity"
    eps = _number(caller, "eps", eps)
    x1, x2 = _common_floating(caller, x1, x2)
    try:
        shape = np.broadcast_shapes(shape_of(x1), shape_of(x2))
    except ValueError:
        raise ShapeError(
            f"{caller}: x1 {shape_of(x1)} and x2 {shape_of(x2)} do not broadcast"
        ) from None
    axis = normalize_one_axis(dim, len(shape), caller)
    x1 = x1 if shape_of(x1) == shape else broadcast_to(x1, shape)
    x2 = x2 if shape_of(x2) == shape else broadcast_to(x2, shape)
    unit1 = x1 / _clamped_norm(x1, axis, eps)
    unit2 = x2 / _clamped_norm(x2, axis, eps)
    return sum(unit1 * unit2, axis)


def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """The p-norm of x1 - x2 + eps along the last dim (PyTorch's formula, eps keeping the norm
    off its kink at 0), x1 and x2 broadcast against each other."""
    caller = "pairwise_distance"
    eps = _number(caller, "eps", eps)
    ndim = max(len(shape_of(x1)), len(shape_of(x2)))
    difference = x1 - x2 + eps
    return _vector_norm(difference, p, normalize_one_axis(-1, ndim, caller), keepdim, caller)


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:  # noqa: A002
    """input divided by its p-norm along dim, raised to eps where smaller, as PyTorch's
    F.normalize: input / max(norm(input, p, dim), eps). Floating input only."""
    caller = "normalize"
    eps = _number(caller, "eps", eps)
    data = array_of(input)
    if data.dtype.kind != "f":
        raise DTypeError(f"{caller}: input must be floating point, got {data.dtype}")
    axis = normalize_one_axis(dim, data.ndim, caller)
    return input / clip(_vector_norm(input, p, axis, True, caller), min=eps)
