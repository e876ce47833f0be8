"""Ops that choose elements by a boolean mask: where, and masked_fill, tril and triu composed
over it."""

from __future__ import annotations

import math

import numpy as np

from ... import backend
from ...errors import ArgumentError, DTypeError, ShapeError
from ...tensor import Tensor
from ..core.op import Op, shape_of
from ..core.variants import variants
from .conversion import cast

__all__ = ["masked_fill", "tril", "triu", "where"]


class Where(Op):
    """cond ? a : b, elementwise; cond is boolean and gets no gradient."""

    name = "where"
    inputs = ("cond", "a", "b")
    saved = ("cond",)
    broadcast = True
    promoted = ("a", "b")

    @staticmethod
    def forward(ctx, cond, a, b):
        if getattr(cond, "dtype", None) != np.bool_:
            raise DTypeError(
                f"where: 'cond' must be boolean, got {getattr(cond, 'dtype', type(cond).__name__)}"
            )
        ctx.save(cond=cond)
        return ctx.xp.where(cond, a, b)

    @staticmethod
    def backward(ctx, grad):
        """da = grad where cond, else 0; db = grad where not cond, else 0; cond gets none.

        Each gradient is summed back over broadcast dims."""
        xp, cond = ctx.xp, ctx.cond
        zero = grad.dtype.type(0)
        return (
            None,
            xp.where(cond, grad, zero) if ctx.needs_grad[1] else None,
            xp.where(cond, zero, grad) if ctx.needs_grad[2] else None,
        )


def where(cond, a, b):
    """Elements of a where cond is True, of b elsewhere."""
    return Where.apply(cond, a, b)


def _fill_value(caller: str, value, dtype: np.dtype):
    """The number `value` as x's dtype, refused where PyTorch refuses it as overflowing: out of
    an integer dtype's range (a float in range fills truncated; a negative integer wraps into
    an unsigned dtype, as in PyTorch, down to -max), or finite and past a floating dtype's
    largest (an infinity stays one, a nan a nan)."""
    if backend.is_array(value):  # a 0-d array: its number
        value = value.item()
    if dtype.kind == "b" or isinstance(value, (bool, np.bool_)):
        return dtype.type(value)
    number = float(value) if isinstance(value, (float, np.floating)) else int(value)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        wraps = dtype.kind == "u" and isinstance(number, int)
        if math.isfinite(number) and (-info.max if wraps else info.min) <= number <= info.max:
            whole = math.trunc(number)
            return dtype.type(whole % (int(info.max) + 1) if wraps else whole)
    elif not math.isfinite(number) or math.fabs(number) <= float(np.finfo(dtype).max):
        return dtype.type(value)
    raise ArgumentError(
        f"{caller}: value {value!r} does not fit x's dtype {dtype} without overflow"
    )


@variants("function", "method", "inplace")
def masked_fill(input, mask, value):
    """`input` with `value` where the boolean mask is True (PyTorch's masked_fill): where(mask,
    value, `input`). mask broadcasts against `input`; value is a number or a 0-d tensor (which gets
    the gradient of the places it fills), and the result keeps `input`'s dtype (a float fills an int
    `input` truncated)."""
    x_shape, mask_shape = shape_of(input), shape_of(mask)
    if getattr(mask, "dtype", None) != np.bool_:
        raise DTypeError(
            f"masked_fill: mask must be boolean, got {getattr(mask, 'dtype', type(mask).__name__)}"
        )
    number = isinstance(value, (bool, int, float, np.generic))
    if not (number or isinstance(value, Tensor) or backend.is_array(value)):
        raise DTypeError(
            f"masked_fill: value must be a number or a 0-d tensor, got {type(value).__name__}"
        )
    if not number and shape_of(value) != ():
        raise ShapeError(
            f"masked_fill: value must be a number or a 0-d tensor, got shape {shape_of(value)}"
        )
    try:
        np.broadcast_shapes(x_shape, mask_shape)
    except ValueError:
        raise ShapeError(
            f"masked_fill: mask of shape {mask_shape} does not broadcast with x of shape {x_shape}"
        ) from None
    dtype = input.dtype
    if isinstance(value, Tensor):
        if value.dtype != dtype:
            _fill_value("masked_fill", value.array.item(), dtype)  # refused where PyTorch does
            value = cast(value, dtype)
    else:
        # a numpy number of x's dtype: it cannot change the result's
        value = _fill_value("masked_fill", value, dtype)
    return Where.apply(mask, value, input)


def _triangle(x, diagonal, name):
    """tril (name "tril") or triu of x: where over a constant mask of the last two dims."""
    shape = shape_of(x)
    if len(shape) < 2:
        raise ShapeError(f"{name}: needs a tensor with at least 2 dims, got shape {shape}")
    if isinstance(diagonal, bool) or not isinstance(diagonal, (int, np.integer)):
        raise DTypeError(f"{name}: diagonal must be an int, got {diagonal!r}")
    xp = backend.array_module(x.array if isinstance(x, Tensor) else x)
    rows, columns = shape[-2:]
    if name == "tril":  # tri(k)[i, j] is j <= i + k
        keep = xp.tri(rows, columns, int(diagonal), dtype=bool)
    else:
        keep = ~xp.tri(rows, columns, int(diagonal) - 1, dtype=bool)
    return Where.apply(keep, x, x.dtype.type(0))


@variants("function", "method", "inplace")
def tril(input, diagonal: int = 0):
    """The lower triangle of the last two dims, zeros above: elements (i, j) with
    j <= i + diagonal kept (where over a constant mask; the gradient passes where kept)."""
    return _triangle(input, diagonal, "tril")


@variants("function", "method", "inplace")
def triu(input, diagonal: int = 0):
    """The upper triangle of the last two dims, zeros below: elements (i, j) with
    j >= i + diagonal kept (where over a constant mask; the gradient passes where kept)."""
    return _triangle(input, diagonal, "triu")
