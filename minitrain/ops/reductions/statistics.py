"""Statistics of a tensor's values: median (its own op over all elements; along a dim, the
element picked), quantile, std_mean, var_mean, aminmax, and count_nonzero (outside the graph).

The order statistics pick elements by a stable sort (sorting.py): the value is the element
itself, gathered, so the gradient goes to the element picked, as PyTorch's does.
"""

from __future__ import annotations

import builtins
from collections import namedtuple

import numpy as np

from ... import backend
from ...arguments import dim_and_correction, dim_arg, keepdim_arg
from ...errors import ArgumentError, DeviceError, DTypeError, ShapeError
from ...tensor import Tensor
from ..core.checks import normalize_axis, normalize_one_axis, require_kind
from ..core.op import Op, array_of, as_tensor
from ..core.variants import variants
from ..pointwise.masking import where
from ..shapes.shape import permute, reshape
from . import extremes, reduction
from .sorting import ValuesIndices, only_element, order_input, stable_order, take_along, values_at

__all__ = ["aminmax", "count_nonzero", "median", "quantile", "std_mean", "var_mean"]


class Median(Op):
    """The lower median of all of x's elements (the ((n - 1) // 2)-th smallest; NaN where x
    holds a NaN, and for an empty x)."""

    name = "median"
    inputs = ("x",)
    saved = ("share",)  # the part of the gradient each element of x receives

    @staticmethod
    def forward(ctx, x):
        xp, flat = ctx.xp, x.reshape(-1)
        middle = (flat.size - 1) // 2
        if flat.size == 0 or (x.dtype.kind == "f" and xp.isnan(flat).any()):
            out = xp.asarray(np.nan, x.dtype)
        else:
            out = xp.partition(flat, middle)[middle]
        if ctx.records:
            hit = xp.isnan(x) if xp.isnan(out) else x == out
            ctx.save(share=(hit / max(int(hit.sum()), 1)).astype(x.dtype))
        return xp.asarray(out)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad / k at the k elements equal to the median (at the NaNs, if any), else 0.

        Tied elements share the gradient evenly (PyTorch's evenly_distribute_backward for
        median without a dim): a subgradient whose shares sum to one."""
        return grad * ctx.share


@variants("function", "method")
def median(input, dim: int | None = None, keepdim: bool = False):  # noqa: A002
    """The lower median: the ((n - 1) // 2)-th smallest of n values, NaN where a NaN is among
    them (PyTorch's median; nanmedian skips them).

    With dim None, of all elements, a 0-d tensor (NaN for an empty input), its gradient split
    evenly among the elements equal to it. Along an int dim, (values, indices): the index is
    the element's in a stable sort (PyTorch leaves which of equal elements unspecified), a
    slice's first NaN where it holds any; the gradient goes to that index."""
    x = order_input(input, "median", bool_ok=False)
    if dim is None:
        if keepdim:
            raise ArgumentError("median: keepdim goes with a dim; median of all elements has none")
        if x.array.size == 0 and x.dtype.kind != "f":
            raise ShapeError(f"median: an empty {x.dtype} input has no median (shape {x.shape})")
        return Median.apply(x)
    dim = normalize_one_axis(dim, x.ndim, "median")
    if dim is None:  # a 0-d tensor: its one element
        return only_element(x)
    array, size = x.array, x.shape[dim]
    if size == 0:
        raise ShapeError(f"median: reducing over an empty dim (input shape {x.shape}, dim {dim})")
    middle = (size - 1) // 2
    indices = take_along(stable_order(array, dim), dim, middle, middle + 1)
    if array.dtype.kind == "f":  # a slice holding NaN: its median is its first NaN
        xp = x.xp
        nan = xp.isnan(array)
        indices = xp.where(nan.any(dim, keepdims=True), nan.argmax(dim, keepdims=True), indices)
    values = values_at(x, dim, indices)
    if keepdim:
        return ValuesIndices(values, Tensor(indices))
    return ValuesIndices(values.squeeze(dim), Tensor(indices.squeeze(dim)))


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_levels(q, x) -> tuple:
    """quantile's q as (levels, an array of x's dtype of one dim; the Tensor when q is one
    that requires grad, else None; whether q is a scalar), checked as PyTorch checks it."""
    if isinstance(q, (int, float, np.integer, np.floating)) and not isinstance(q, bool):
        levels, tensor, scalar = np.array([q], x.dtype), None, True
    elif isinstance(q, Tensor) or backend.is_array(q):
        array = array_of(q)
        if backend.device_of(array) != x.device:
            raise DeviceError(
                f"quantile: q is on {backend.device_of(array)} but input is on {x.device}; "
                f"they must be on one device"
            )
        if array.ndim > 1:
            raise ShapeError(f"quantile: q must be a number or a 1-D tensor, got shape {q.shape}")
        if array.dtype != x.dtype:
            raise DTypeError(
                f"quantile: q must have the input's dtype {x.dtype}, got {array.dtype}"
            )
        tensor = q if isinstance(q, Tensor) and q.requires_grad else None
        levels, scalar = array.reshape(-1), array.ndim == 0
    else:
        raise DTypeError(f"quantile: q must be a number or a tensor, got {type(q).__name__}")
    if not ((levels >= 0) & (levels <= 1)).all():
        raise ArgumentError(f"quantile: q must be in [0, 1], got {levels.tolist()}")
    return levels, tensor, scalar


@variants("function", "method")
def quantile(input, q, dim: int | None = None, keepdim: bool = False, *, interpolation="linear"):  # noqa: A002
    """The q-th quantiles of input along dim (of all elements when None), q a number or a 1-D
    tensor in [0, 1] (its quantiles then lead the result's dims), as PyTorch's quantile.

    The sorted values v_0 <= ... <= v_{n-1} are read at rank r = q (n - 1): `linear` gives
    v_i + (r - i)(v_j - v_i) for i = floor(r), j = ceil(r); `lower` v_i, `higher` v_j,
    `midpoint` (v_i + v_j) / 2, `nearest` v at r rounded half to even. A slice holding NaN
    gives NaN. The gradient goes to the elements read (and to q, where it is a tensor that
    requires grad, for `linear`)."""
    x = as_tensor(input)
    require_kind("quantile", x, "f", "floating point", "float")
    if x.array.size == 0:
        raise ShapeError(f"quantile: input must not be empty, got shape {x.shape}")
    if interpolation not in _INTERPOLATIONS:
        raise ArgumentError(
            f"quantile: interpolation must be one of {', '.join(_INTERPOLATIONS)}, got "
            f"{interpolation!r}"
        )
    levels, q_tensor, scalar = _quantile_levels(q, x)
    if dim is None:
        work, along = reshape(x, (-1,)), 0
        kept = (1,) * x.ndim
        reduced = ()
    else:
        along = normalize_one_axis(dim, x.ndim, "quantile")
        if along is None:  # a 0-d tensor
            work, along, kept, reduced = reshape(x, (1,)), 0, (), ()
        else:
            work = x
            kept = x.shape[:along] + (1,) + x.shape[along + 1 :]
            reduced = x.shape[:along] + x.shape[along + 1 :]
    array, xp = work.array, work.xp
    levels = xp.asarray(levels)  # a number's level is made on the host
    size = array.shape[along]
    # the ranks, shaped as the result before the levels move to the front: work's shape with
    # the levels along the reduced dim; a slice holding NaN reads its last (NaN) value
    level_shape = [1] * array.ndim
    level_shape[along] = len(levels)
    shape = list(array.shape)
    shape[along] = len(levels)
    has_nan = xp.isnan(array).any(along, keepdims=True)
    ranks = xp.where(has_nan, size - 1, levels.reshape(level_shape) * (size - 1))
    ranks = xp.broadcast_to(ranks, shape).astype(x.dtype)
    if interpolation in ("lower", "higher", "nearest"):
        rounding = {"lower": xp.floor, "higher": xp.ceil, "nearest": xp.round}
        ranks = rounding[interpolation](ranks)  # round: half to even
    order = stable_order(array, along)
    below = xp.floor(ranks)  # in x's dtype, as the weights computed from it

    def read(at):  # the sorted values at ranks `at`, gathered from work
        return values_at(work, along, xp.take_along_axis(order, at.astype(np.int64), along))

    out = read(below)
    if interpolation in ("linear", "midpoint"):
        above = read(xp.ceil(ranks))
        if interpolation == "midpoint":
            weight = 0.5
        elif q_tensor is not None:  # the weight r - floor(r) in q's graph (0 beside a NaN)
            weight = where(has_nan, 0.0, q_tensor.reshape(level_shape) * (size - 1) - below)
        else:
            weight = ranks - below
        out = out + (above - out) * weight  # the Tensor first: weight may be a device array
    if scalar:
        return reshape(out, kept if keepdim else reduced)
    if along:
        out = permute(out, (along,) + tuple(d for d in range(array.ndim) if d != along))
    return reshape(out, (len(levels),) + (kept if keepdim else reduced))


def _spread_mean(  # noqa: A002
    spread, caller: str, input, dim, unbiased, keepdim, correction, axis, keepdims
) -> tuple:
    dim, correction = dim_and_correction(dim, unbiased, correction, caller)
    dim, keepdim = dim_arg(dim, axis, caller), keepdim_arg(keepdim, keepdims)
    x = as_tensor(input)
    require_kind(caller, x, "f", "floating point", "float")  # as in PyTorch
    return (
        spread(x, dim, keepdim=bool(keepdim), correction=correction),
        reduction.mean(x, dim, bool(keepdim)),
    )


def std_mean(  # noqa: A002
    input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None, axis=None,
    keepdims=None,
) -> tuple:  # fmt: skip
    """(std, mean) over dim (all elements by default; numpy's axis and keepdims spellings too,
    as PyTorch takes them): std with `correction` (default 1) or the older `unbiased`, as
    Tensor.std takes them."""
    return _spread_mean(
        reduction.std, "std_mean", input, dim, unbiased, keepdim, correction, axis, keepdims
    )


def var_mean(  # noqa: A002
    input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None, axis=None,
    keepdims=None,
) -> tuple:  # fmt: skip
    """(var, mean) over dim (all elements by default): see std_mean."""
    return _spread_mean(
        reduction.var, "var_mean", input, dim, unbiased, keepdim, correction, axis, keepdims
    )


# what aminmax returns, as torch.return_types.aminmax
MinAndMax = namedtuple("MinAndMax", ["min", "max"])


@variants("function", "method")
def aminmax(input, *, dim: int | None = None, keepdim: bool = False):  # noqa: A002
    """(min, max) of all elements, or along one int dim: amin's and amax's, their gradients
    split evenly among tied extremes (a NaN makes both NaN), as PyTorch's aminmax."""
    x = as_tensor(input)
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, (int, np.integer))):
        raise DTypeError(f"aminmax: dim must be an int or None, got {dim!r}")
    axes = normalize_axis(dim, x.ndim, "aminmax")
    if builtins.any(x.shape[a] == 0 for a in axes):
        raise ShapeError(
            f"aminmax: reducing over an empty dim (input shape {x.shape}, dim {dim!r}): there is "
            "no minimum or maximum"
        )
    return MinAndMax(extremes.amin(x, dim, keepdim), extremes.amax(x, dim, keepdim))


@variants("function", "method")
def count_nonzero(input, dim=None) -> Tensor:  # noqa: A002
    """The number of nonzero elements (NaN counts) over dim (an int, a tuple, or None for all
    elements): an int64 tensor outside the graph."""
    array = array_of(input)
    axes = normalize_axis(dim, array.ndim, "count_nonzero")
    return Tensor((array != 0).sum(axis=axes, dtype=np.int64))
