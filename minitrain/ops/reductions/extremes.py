"""The extremes over dims: max and min (the values with their indices along one dim, or the
elementwise extreme of two tensors), amax and amin (values over any dims), argmax and argmin, and
the truth reductions all and any (the last four outside the graph).

Max and Min are the ops: the gradient goes to the extreme elements, split evenly between ties.
max / min along one dim gather the values at the indices argmax / argmin return instead, so that
the gradient goes to the index returned, as in PyTorch. Arguments as in common.py.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ...arguments import dim_arg, keepdim_arg
from ...errors import ArgumentError, DTypeError, ShapeError
from ...tensor import Tensor
from ..core.checks import NOT_BOOL, normalize_axis, require_kind
from ..core.op import Op
from ..core.operands import array_step
from ..core.variants import variants
from ..pointwise import conversion
from ..pointwise.arithmetic import maximum, minimum
from ..shapes.indexing import gather
from .common import keep_reduced, over_dims, require_nonempty

__all__ = ["all", "amax", "amin", "any", "argmax", "argmin", "max", "min"]

MinMax = namedtuple("MinMax", ["values", "indices"])


class _Extreme(Op, register=False):
    """max / min: the gradient goes to the extreme elements, split evenly between ties (a
    subgradient whose shares sum to one). A slice holding NaN has NaN for its extreme: with
    `nan_takes_grad` its NaNs are the extreme elements (PyTorch's max / min); without, the
    slice's gradient is NaN (PyTorch's amax / amin)."""

    inputs = ("x",)
    attrs = ("axis", "keepdims", "nan_takes_grad")
    saved = ("x", "extreme")
    reduce = ""

    @classmethod
    def forward(cls, ctx, x):
        extreme = getattr(x, cls.reduce)(axis=ctx.axis, keepdims=True)
        ctx.save(x=x, extreme=extreme)
        return extreme if ctx.keepdims else extreme.squeeze(ctx.axis)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad / k where x equals its slice's max (min), else 0; k: the ties in that slice.

        The hits are constants (xp.equal: an array whatever x is): dx is linear in grad."""
        xp, x = ctx.xp, ctx.x
        hit = xp.equal(x, ctx.extreme)
        if ctx.nan_takes_grad:
            hit |= xp.isnan(x)  # a NaN is only in a slice whose extreme is NaN
        ties = hit.sum(axis=ctx.axis, keepdims=True).astype(grad.dtype)
        with np.errstate(divide="ignore", invalid="ignore"):  # amax's NaN slice: no hit, 0 / 0
            return (keep_reduced(ctx, grad) / ties) * hit


class Max(_Extreme):
    name = "max"
    reduce = "max"


class Min(_Extreme):
    name = "min"
    reduce = "min"


def extreme(op, x, dim, keepdim, *, nan_takes_grad: bool, caller: str):
    """Max or Min (op) over dims already resolved; an empty dim is refused, naming `caller`."""
    require_nonempty(x, dim, caller)
    return over_dims(op, x, dim, keepdim, nan_takes_grad=nan_takes_grad)


@variants("function", "method")
def amax(input, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A002
    """The maximum over `dim` (an int, a tuple of ints, or None for all), values only.

    Tied maxima share the gradient evenly; a slice holding NaN has maximum NaN and a NaN
    gradient. An empty dim is refused (ShapeError). `axis` and `keepdims` are numpy's names for
    `dim` and `keepdim`."""
    dim, keepdim = dim_arg(dim, axis, "amax"), keepdim_arg(keepdim, keepdims)
    return extreme(Max, input, dim, keepdim, nan_takes_grad=False, caller="amax")


@variants("function", "method")
def amin(input, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A002
    """The minimum over `dim`, values only: see `amax`."""
    dim, keepdim = dim_arg(dim, axis, "amin"), keepdim_arg(keepdim, keepdims)
    return extreme(Min, input, dim, keepdim, nan_takes_grad=False, caller="amin")


def _max_or_min(which, input, dim, keepdim, other, axis, keepdims):  # noqa: A002
    """PyTorch's max / min (`which`): over all elements, the gradient split evenly among tied
    extremes (a NaN is the extreme and takes it); along one int dim a MinMax of the values and
    their indices, the values gathered at the indices so that the gradient goes to the index
    returned, as in PyTorch; with a second tensor (in dim's place, or `other`) the elementwise
    extreme."""
    if isinstance(dim, Tensor):
        if other is not None:
            raise ArgumentError(f"{which}: other given twice, in dim's place and by name")
        dim, other = None, dim
    dim, keepdim = dim_arg(dim, axis, which), keepdim_arg(keepdim, keepdims)
    if other is not None:
        if keepdim:
            raise ArgumentError(f"{which}: keepdim goes with a dim, not with a second tensor")
        if dim is not None:
            raise ArgumentError(f"{which}: give a dim or a second tensor (other), not both")
        return (maximum if which == "max" else minimum)(input, other)
    op, arg = (Max, argmax) if which == "max" else (Min, argmin)
    if dim is None:
        return extreme(op, input, None, False, nan_takes_grad=True, caller=which)
    if not isinstance(dim, (int, np.integer)):
        raise DTypeError(
            f"{which}: takes one int dim (and returns values and indices); "
            f"use a{which}(dim=...) to reduce over several dims"
        )
    # PyTorch's argmax / argmin refuse bool, but its max / min along a dim take it
    keys = conversion.cast(input, np.uint8) if input.dtype == np.bool_ else input
    if input.ndim == 0:
        values = extreme(op, input, dim, keepdim, nan_takes_grad=True, caller=which)
        return MinMax(values, arg(keys, dim, keepdim))
    indices = arg(keys, dim, True)
    values = gather(input, dim, indices)
    if keepdim:
        return MinMax(values, indices)
    return MinMax(values.squeeze(dim), indices.squeeze(dim))


@variants("function", "method")
def max(input, dim=None, keepdim=False, *, other=None, axis=None, keepdims=None):  # noqa: A001, A002
    """The maximum of all elements, its gradient split evenly among tied maxima; with one int
    `dim`, (values, indices) along it, the gradient going to the index returned; with a second
    tensor, in dim's place or as `other`, the elementwise maximum (torch.max(a, b)). A NaN is
    the maximum and takes the gradient. `amax` takes several dims (and gives a slice holding NaN
    a NaN gradient)."""
    return _max_or_min("max", input, dim, keepdim, other, axis, keepdims)


@variants("function", "method")
def min(input, dim=None, keepdim=False, *, other=None, axis=None, keepdims=None):  # noqa: A001, A002
    """The minimum: see `max`."""
    return _max_or_min("min", input, dim, keepdim, other, axis, keepdims)


def _arg(name, x, dim, keepdim):
    """argmax / argmin (name), outside the graph: one dim, or the flattened tensor."""
    array = x.array if isinstance(x, Tensor) else np.asarray(x)
    require_kind(name, array, "iuf", NOT_BOOL, "int")  # as in PyTorch
    require_nonempty(array, dim, name)
    if dim is not None:
        dims = normalize_axis(dim, array.ndim, name)
        if array.ndim and len(dims) != 1:
            raise ShapeError(f"{name}: takes one dim, got {dim!r}")
        dim = dims[0] if dims else None  # a 0-d tensor's dim 0 (or -1): its one element
    # outside the ops: a step of a compiled program of its own (array_step)
    return Tensor(array_step(_arg_of, array, name, dim, keepdim))


def _arg_of(array, name: str, dim, keepdim: bool):
    return getattr(array, name)(axis=dim, keepdims=keepdim)


@variants("function", "method")
def argmax(input, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A002
    """The index of the first maximum along one int `dim`, or in the flattened tensor where
    `dim` is None: an int64 tensor, outside the graph. A NaN counts as the maximum; a bool
    tensor is refused, as in PyTorch."""
    return _arg("argmax", input, dim_arg(dim, axis, "argmax"), keepdim_arg(keepdim, keepdims))


@variants("function", "method")
def argmin(input, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A002
    """The index of the first minimum along one int `dim`, or in the flattened tensor where
    `dim` is None: see `argmax`."""
    return _arg("argmin", input, dim_arg(dim, axis, "argmin"), keepdim_arg(keepdim, keepdims))


def _truth(name, x, dim, keepdim):
    """all / any (name) over dims, outside the graph."""
    array = x.array if isinstance(x, Tensor) else np.asarray(x)
    dims = normalize_axis(dim, array.ndim, name)
    truth = getattr(array.astype(bool), name)(axis=dims, keepdims=keepdim)
    # PyTorch keeps uint8 for uint8 x (0 or 1), its masks' dtype before bool
    return Tensor(truth.astype(np.uint8) if array.dtype == np.uint8 else truth)


@variants("function", "method")
def all(input, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A001, A002
    """Whether every element over `dim` (an int, a tuple of ints, or None for all) is
    nonzero: a bool tensor, outside the graph; True over no elements; uint8 for a uint8 tensor,
    as in PyTorch."""
    return _truth("all", input, dim_arg(dim, axis, "all"), keepdim_arg(keepdim, keepdims))


@variants("function", "method")
def any(input, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A001, A002
    """Whether some element over `dim` is nonzero: a bool tensor, outside the graph; False over
    no elements; uint8 for a uint8 tensor, as in PyTorch."""
    return _truth("any", input, dim_arg(dim, axis, "any"), keepdim_arg(keepdim, keepdims))
