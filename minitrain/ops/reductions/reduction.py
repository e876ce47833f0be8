"""Reductions over axes: sum, mean, prod, max, min, var, std, logsumexp, norm; argmax/argmin
(no gradient); and the running sum, cumsum.

Every reduction takes `axis` (None for all, an int, or a tuple of ints; negatives allowed) and
`keepdims`. The functional forms normalise `axis` to a sorted tuple, so backward rules can always
re-insert the reduced dims with `expand_dims`. cumsum takes one axis and keeps the shape.
"""

from __future__ import annotations

import builtins
import math
import warnings
from collections import namedtuple

import numpy as np

from ...errors import ArgumentError, DTypeError, ShapeError
from ...tensor import Tensor
from ..core.checks import NOT_BOOL, normalize_axis, normalize_one_axis, require_kind
from ..core.op import Op, shape_of, value_of
from ..pointwise import arithmetic as elementwise
from ..pointwise import conversion
from ..shapes.indexing import gather

__all__ = [
    "all",
    "any",
    "argmax",
    "argmin",
    "cumsum",
    "logsumexp",
    "max",
    "mean",
    "min",
    "norm",
    "prod",
    "std",
    "sum",
    "var",
]


def _kept(ctx, grad):
    """The upstream gradient (or the saved output) with the reduced dims back in place (size
    1): an array, or a Tensor under create_graph."""
    if ctx.keepdims:
        return grad
    return grad.reshape(tuple(1 if d in ctx.axis else n for d, n in enumerate(ctx.shapes[0])))


def _count(shape, axis) -> int:
    """The number of values reduced into each output: the sizes of the axes, multiplied."""
    return int(np.prod([shape[a] for a in axis], dtype=np.int64))


def _accumulator(x):
    """The dtype sum, prod and cumsum give x: int64 for every integer and bool dtype, as in
    PyTorch (numpy gives uint64 for unsigned ones); None (x's own) for floating x."""
    return np.int64 if x.dtype.kind in "biu" else None


def _reduction(op, x, axis, keepdims, **attrs):
    """Run reduction op over axis (normalised to a sorted tuple)."""
    ndim = len(shape_of(x))
    return op.apply(x, axis=normalize_axis(axis, ndim, op.name), keepdims=bool(keepdims), **attrs)


def _require_nonempty(x, axis, caller: str) -> None:
    """Refuse a reduction over an empty dim (max of nothing, mean of nothing)."""
    shape = shape_of(x)
    norm = normalize_axis(axis, len(shape), caller)
    if builtins.any(shape[a] == 0 for a in norm):
        raise ShapeError(
            f"{caller}: reducing over an empty dim (input shape {shape}, axis {axis!r})"
        )


class Sum(Op):
    """The sum over axis; integer and bool x sum to int64."""

    name = "sum"
    inputs = ("x",)
    attrs = ("axis", "keepdims")

    @staticmethod
    def forward(ctx, x):
        return x.sum(axis=ctx.axis, keepdims=ctx.keepdims, dtype=_accumulator(x))

    @staticmethod
    def backward(ctx, grad):
        """dx = grad broadcast back over the summed axes."""
        return ctx.xp.broadcast_to(_kept(ctx, grad), ctx.shapes[0])


def sum(x, axis=None, keepdims: bool = False):  # noqa: A001 (the op's name)
    """Sum over axis; integer and bool x sum to int64, as in PyTorch."""
    return _reduction(Sum, x, axis, keepdims)


class Mean(Op):
    name = "mean"
    inputs = ("x",)
    attrs = ("axis", "keepdims")

    @staticmethod
    def forward(ctx, x):
        if not _count(x.shape, ctx.axis):  # the mean of nothing: nan, as in PyTorch
            return x.sum(axis=ctx.axis, keepdims=ctx.keepdims) * np.nan
        return x.mean(axis=ctx.axis, keepdims=ctx.keepdims)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad / M broadcast back over the reduced axes, M the count of values averaged
        (none: x is empty, and so is dx)."""
        shape = ctx.shapes[0]
        count = _count(shape, ctx.axis) or 1  # none: the broadcast is empty, whatever it holds
        return ctx.xp.broadcast_to(_kept(ctx, grad) / count, shape)


def mean(x, axis=None, keepdims: bool = False):
    """Mean over axis; over no elements nan, as in PyTorch. Floating x only, as in PyTorch."""
    require_kind("mean", x, "f", "floating point", "float")
    return _reduction(Mean, x, axis, keepdims)


class Prod(Op):
    """The product over axis; integer and bool x multiply in int64."""

    name = "prod"
    inputs = ("x",)
    attrs = ("axis", "keepdims")
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return x.prod(axis=ctx.axis, keepdims=ctx.keepdims, dtype=_accumulator(x))

    @staticmethod
    def backward(ctx, grad):
        """dx_i = grad * (the product of the other elements of x_i's slice over axis).

        Not grad * out / x_i, which is 0 / 0 at a zero: with one zero in a slice, only that
        element gets a gradient (the product of the rest); with two or more, none does. The
        product of the others is a polynomial in x (running products, no division), so its
        own derivatives are exact at zeros too."""
        return _kept(ctx, grad) * _product_of_the_others(ctx.xp, ctx.x, ctx.axis)


def _product_of_the_others(xp, x, axis):
    """For each element of x, the product of the other elements of its slice over `axis`,
    without division: the product of those before it times the product of those after it."""
    if not math.prod(x.shape):
        return xp.zeros_like(x)
    kept = [d for d in range(x.ndim) if d not in axis]
    order = kept + list(axis)  # the reduced dims last, then merged into one of n elements
    moved = xp.transpose(x, order)
    rows = moved.reshape(moved.shape[: len(kept)] + (-1,))
    one = xp.ones_like(rows[..., :1])
    before = xp.cumprod(xp.concatenate([one, rows[..., :-1]], axis=-1), axis=-1)
    after = xp.cumprod(xp.concatenate([one, rows[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    back = tuple(int(d) for d in np.argsort(order))
    return xp.transpose((before * after).reshape(moved.shape), back)


def prod(x, axis=None, keepdims: bool = False):
    """Product over axis (1 over no elements); exact gradients where x holds zeros. Integer and
    bool x multiply in int64, as in PyTorch."""
    return _reduction(Prod, x, axis, keepdims)


class CumSum(Op):
    """The running sum along one axis: out[..., i, ...] = sum of x[..., j, ...] for j <= i;
    integer and bool x sum in int64."""

    name = "cumsum"
    inputs = ("x",)
    attrs = ("axis",)

    @staticmethod
    def forward(ctx, x):
        # axis is None only for a 0-d x: numpy then sums its one element into shape (1,)
        wide = elementwise.widened(x)
        total = ctx.xp.cumsum(wide, axis=ctx.axis, dtype=_accumulator(x)).reshape(x.shape)
        return total.astype(np.float16) if x.dtype == np.float16 else total

    @staticmethod
    def backward(ctx, grad):
        """dx_i = sum of grad_j for j >= i along axis: the running sum of grad taken backwards."""
        xp, axis = ctx.xp, ctx.axis
        if axis is None:  # a 0-d x: out is its one element
            return grad
        total = xp.cumsum(xp.flip(elementwise.widened(grad), axis), axis=axis)
        return xp.flip(total, axis)  # (the engine casts float16 back)


def cumsum(x, axis: int):
    """The running sum along one axis; the shape stays. Integer and bool x sum in int64, as in
    PyTorch."""
    return CumSum.apply(x, axis=normalize_one_axis(axis, len(shape_of(x)), "cumsum"))


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
            return (_kept(ctx, grad) / ties) * hit


class Max(_Extreme):
    name = "max"
    reduce = "max"


def max(x, axis=None, keepdims: bool = False, *, nan_takes_grad: bool = False):  # noqa: A001
    """Maximum over axis (numpy's amax); tied maxima share the gradient equally. A slice holding
    NaN has maximum NaN and a NaN gradient (torch.amax); with `nan_takes_grad` its NaNs share the
    gradient instead (torch.max)."""
    _require_nonempty(x, axis, "max")
    return _reduction(Max, x, axis, keepdims, nan_takes_grad=nan_takes_grad)


class Min(_Extreme):
    name = "min"
    reduce = "min"


def min(x, axis=None, keepdims: bool = False, *, nan_takes_grad: bool = False):  # noqa: A001
    """Minimum over axis (numpy's amin); tied minima share the gradient equally; NaN as in max."""
    _require_nonempty(x, axis, "min")
    return _reduction(Min, x, axis, keepdims, nan_takes_grad=nan_takes_grad)


class Norm(Op):
    """The p-norm over axis, (sum |x|^p)^(1/p), for a finite p > 0 (p = 2: Euclidean)."""

    name = "norm"
    inputs = ("x",)
    attrs = ("p", "axis", "keepdims")
    saved = ("x", "out")  # out: the norm; under create_graph this op's output, moving with x

    @staticmethod
    def forward(ctx, x):
        xp, p = ctx.xp, ctx.p
        wide = elementwise.widened(x)  # float16's squares overflow at 256
        if p == 2:
            total = xp.sqrt((wide * wide).sum(axis=ctx.axis, keepdims=True))
        else:
            total = (xp.abs(wide) ** p).sum(axis=ctx.axis, keepdims=True) ** (1 / p)
        out = (total if ctx.keepdims else total.squeeze(ctx.axis)).astype(x.dtype, copy=False)
        ctx.save(x=x, out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * sign(x) |x|^(p-1) / out^(p-1) (p = 2: grad * x / out), 0 where out = 0.

        A slice whose norm is 0 is all zeros, where the norm has no derivative: 0 is taken, as
        PyTorch does (and so is 0 at x = 0 for p < 1, where |x|^(p-1) is infinite). Where a
        value is discarded, the power and the division read a stand-in of 1 instead of the 0,
        so that their derivatives (create_graph) stay finite there too; sign(x) is 0 at x = 0."""
        xp, x, p = ctx.xp, elementwise.widened(ctx.x), ctx.p
        total = _kept(ctx, elementwise.widened(ctx.out))
        zero = xp.equal(total, 0)
        with np.errstate(divide="ignore", invalid="ignore"):  # inf and NaN in x or grad
            scale = xp.where(zero, 0, _kept(ctx, grad) / xp.where(zero, 1, total) ** (p - 1))
            if p == 2:
                return scale * x
            return scale * (xp.sign(x) * xp.where(xp.equal(x, 0), 1, xp.abs(x)) ** (p - 1))


def norm(x, p=2, axis=None, keepdims: bool = False):
    """The p-norm over axis: (sum |x|^p)^(1/p) for p > 0, max |x| for p = inf, min |x| for
    p = -inf (as abs then max / min: tied extremes share the gradient). Where a slice is all
    zeros the gradient is 0, as in PyTorch. Floating x only."""
    dtype = getattr(x, "dtype", None)
    if dtype is None or dtype.kind != "f":
        raise DTypeError(f"norm: x must be a floating-point tensor, got dtype {dtype}")
    number = isinstance(p, (int, float, np.integer, np.floating)) and not isinstance(p, bool)
    if not number or not (p > 0 or p == -math.inf):
        raise ArgumentError(f"norm: p must be a number > 0, inf or -inf, got {p!r}")
    if math.isinf(p):
        reduce = max if p > 0 else min
        return reduce(elementwise.abs(x), axis, keepdims, nan_takes_grad=True)
    return _reduction(Norm, x, axis, keepdims, p=float(p))


def _dof(ctx, shape) -> int:
    """var / std's degrees of freedom: the values reduced into each output less the correction,
    and 0 where that is not positive (PyTorch's: the variance is then nan or inf)."""
    return builtins.max(_count(shape, ctx.axis) - ctx.correction, 0)


def _over_dof(ctx, numerator: float) -> float:
    """numerator / the degrees of freedom, inf where there are none."""
    dof = _dof(ctx, ctx.shapes[0])
    return numerator / dof if dof else math.inf


def _centered_variance(ctx, x):
    """var / std's forward: x - mean(x), and the variance with the reduced dims kept (size 1);
    nan (no elements, or 0 / 0) or inf where there are no degrees of freedom, as in PyTorch."""
    if _count(x.shape, ctx.axis):
        centered = x - x.mean(axis=ctx.axis, keepdims=True)
    else:
        centered = x - x.sum(axis=ctx.axis, keepdims=True) * np.nan  # empty, as x is
    squares = (centered * centered).sum(axis=ctx.axis, keepdims=True)
    dof = _dof(ctx, x.shape)
    if dof:
        return centered, squares / dof
    with np.errstate(divide="ignore", invalid="ignore"):
        return centered, squares / dof


def _centered(ctx):
    """var's and std's saved x - mean(x): the array itself in a first-order backward; under
    create_graph (whose ctx knows the node, which `value_of` needs) a Tensor that moves with x
    (`value_of`, so x need not be kept): it is linear in x, with derivative grad - mean(grad)."""
    if getattr(ctx, "node", None) is None:
        return ctx.centered
    axis = ctx.axis

    def centering(grad, centered):
        if not _count(grad.shape, axis):  # no elements to center
            return grad
        return grad - grad.mean(axis=axis, keepdims=True)

    return value_of(ctx, 0, ctx.centered, centering)


def _spread(op, x, axis, keepdims, correction):
    require_kind(op.name, x, "f", "floating point", "float")  # as in PyTorch
    shape = shape_of(x)
    norm = normalize_axis(axis, len(shape), op.name)
    count = _count(shape, norm)
    if count - correction <= 0:
        warnings.warn(
            f"{op.name}(): degrees of freedom is <= 0: {count} elements per reduction with "
            f"correction={correction} (input shape {shape}, axis {axis!r}); the result is nan or "
            f"inf, as in PyTorch",
            UserWarning,
            stacklevel=3,
        )
    return op.apply(x, axis=norm, keepdims=bool(keepdims), correction=correction)


class Var(Op):
    """Variance: sum((x - mean)^2) / (M - correction); correction=1 is the unbiased estimate."""

    name = "var"
    inputs = ("x",)
    attrs = ("axis", "keepdims", "correction")
    saved = ("centered",)

    @staticmethod
    def forward(ctx, x):
        centered, variance = _centered_variance(ctx, x)
        ctx.save(centered=centered)
        return variance if ctx.keepdims else variance.squeeze(axis=ctx.axis)

    @staticmethod
    def backward(ctx, grad):
        """dx = 2 * grad * (x - mean(x)) / (M - correction), with grad broadcast back over axis.

        M: the number of values reduced into each output; x - mean(x) is saved as `centered`.
        With no degrees of freedom, inf and nan, as PyTorch's."""
        with np.errstate(invalid="ignore"):  # inf * 0 where there are no degrees of freedom
            return _kept(ctx, grad) * _over_dof(ctx, 2.0) * _centered(ctx)


def var(x, axis=None, keepdims: bool = False, correction: int = 1):
    """Variance over axis with `correction` (1: unbiased, PyTorch's default; 0: biased).
    Floating x only, as in PyTorch."""
    return _spread(Var, x, axis, keepdims, correction)


class Std(Op):
    """Standard deviation: sqrt(var(x)), var as in Var."""

    name = "std"
    inputs = ("x",)
    attrs = ("axis", "keepdims", "correction")
    saved = ("centered", "out")  # out: the std; under create_graph this op's output

    @staticmethod
    def forward(ctx, x):
        centered, variance = _centered_variance(ctx, x)
        std = ctx.xp.sqrt(variance)
        out = std if ctx.keepdims else std.squeeze(axis=ctx.axis)
        ctx.save(centered=centered, out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * (x - mean(x)) / ((M - correction) * std), and 0 where std = 0.

        There every x in the slice is equal and the derivative 0 / 0: 0 is a subgradient
        (PyTorch's choice too), where sqrt(var)'s chain rule would give inf * 0 = NaN. The
        division reads a stand-in of 1 there, so that its derivative (create_graph) is finite."""
        xp, std = ctx.xp, _kept(ctx, ctx.out)
        zero = xp.equal(std, 0)
        with np.errstate(divide="ignore", invalid="ignore"):  # no degrees of freedom: nan
            scale = xp.where(zero, 0, 1 / (_dof(ctx, ctx.shapes[0]) * xp.where(zero, 1, std)))
            return _kept(ctx, grad) * scale * _centered(ctx)


def std(x, axis=None, keepdims: bool = False, correction: int = 1):
    """Standard deviation over axis, sqrt(var(x)) with var's `correction`; where it is 0 (every
    value equal) its gradient is 0, as in PyTorch. Floating x only, as in PyTorch."""
    return _spread(Std, x, axis, keepdims, correction)


class LogSumExp(Op):
    """log(sum(exp(x))), computed with the max subtracted so large x does not overflow."""

    name = "logsumexp"
    inputs = ("x",)
    attrs = ("axis", "keepdims")
    saved = ("x", "out")  # out: under create_graph this op's output, moving with x

    @staticmethod
    def forward(ctx, x):
        xp = ctx.xp
        if x.dtype.kind != "f":  # integers and bools in float32, as PyTorch
            x = x.astype(np.float32)
        if builtins.any(x.shape[a] == 0 for a in ctx.axis):  # an empty sum of exps: log(0) = -inf
            shift = xp.zeros([1 if i in ctx.axis else n for i, n in enumerate(x.shape)], x.dtype)
        else:
            shift = x.max(axis=ctx.axis, keepdims=True)
            shift = xp.where(xp.isfinite(shift), shift, 0)  # rows of -inf stay -inf, not nan
        with np.errstate(divide="ignore"):
            out = xp.log(xp.exp(x - shift).sum(axis=ctx.axis, keepdims=True)) + shift
        out = out if ctx.keepdims else out.squeeze(ctx.axis)
        ctx.save(x=x, out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * exp(x - out) = grad * softmax(x) over axis, out = logsumexp(x)."""
        # d/dx log(sum(exp(x))) = exp(x - logsumexp(x)): the softmax of x
        return _kept(ctx, grad) * ctx.xp.exp(ctx.x - _kept(ctx, ctx.out))


def logsumexp(x, axis=None, keepdims: bool = False):
    """log(sum(exp(x))) over axis, stable for large x; an empty axis gives -inf."""
    return _reduction(LogSumExp, x, axis, keepdims)


def _arg(name, x, axis, keepdims):
    """argmax / argmin (name), outside the graph: one axis, or the flattened tensor."""
    array = x.data if isinstance(x, Tensor) else np.asarray(x)
    require_kind(name, array, "iuf", NOT_BOOL, "int")  # as in PyTorch
    _require_nonempty(array, axis, name)
    if axis is not None:
        axes = normalize_axis(axis, array.ndim, name)
        if array.ndim and len(axes) != 1:
            raise ShapeError(f"{name}: takes one axis, got {axis!r}")
        axis = axes[0] if axes else None  # a 0-d tensor's axis 0 (or -1): its one element
    return Tensor(getattr(array, name)(axis=axis, keepdims=keepdims))


def argmax(x, axis=None, keepdims: bool = False):
    """Index of the first maximum along axis (over the flattened tensor when None); bool x is
    refused, as in PyTorch."""
    return _arg("argmax", x, axis, keepdims)


def argmin(x, axis=None, keepdims: bool = False):
    """Index of the first minimum along axis (over the flattened tensor when None); bool x is
    refused, as in PyTorch."""
    return _arg("argmin", x, axis, keepdims)


def _truth(name, x, axis, keepdims):
    """all / any (name) over axis, outside the graph."""
    array = x.data if isinstance(x, Tensor) else np.asarray(x)
    axes = normalize_axis(axis, array.ndim, name)
    truth = getattr(array.astype(bool), name)(axis=axes, keepdims=bool(keepdims))
    # PyTorch keeps uint8 for uint8 x (0 or 1), its masks' dtype before bool
    return Tensor(truth.astype(np.uint8) if array.dtype == np.uint8 else truth)


def all(x, axis=None, keepdims: bool = False):  # noqa: A001 (PyTorch's name)
    """Whether every element along axis is nonzero (a bool tensor, outside the graph; True over
    no elements; uint8 for uint8 x, as in PyTorch)."""
    return _truth("all", x, axis, keepdims)


def any(x, axis=None, keepdims: bool = False):  # noqa: A001 (PyTorch's name)
    """Whether some element along axis is nonzero (a bool tensor, outside the graph; False over
    no elements; uint8 for uint8 x, as in PyTorch)."""
    return _truth("any", x, axis, keepdims)


MinMax = namedtuple("MinMax", ["values", "indices"])


def values_and_indices(x, which: str, dim, keepdim: bool):
    """PyTorch's max / min of x (`which`, "max" or "min"): with dim None the reduction over all
    elements; along one int dim a MinMax of the values and the indices where they sit, the values
    gathered at the indices so that the gradient goes to the index returned, as in PyTorch
    (where the all-dims form splits it among ties)."""
    reduce, arg = (max, argmax) if which == "max" else (min, argmin)
    if dim is None:
        return reduce(x, None, False, nan_takes_grad=True)
    # PyTorch's argmax / argmin refuse bool, but its max / min along a dim take it
    keys = conversion.cast(x, np.uint8) if x.dtype == np.bool_ else x
    if not isinstance(dim, (int, np.integer)):
        raise DTypeError(
            f"{which}: takes one int dim (and returns values and indices); "
            f"use a{which}(dim=...) to reduce over several dims"
        )
    if x.ndim == 0:
        return MinMax(reduce(x, dim, keepdim, nan_takes_grad=True), arg(keys, dim, keepdim))
    indices = arg(keys, dim, True)
    values = gather(x, dim, indices)
    if keepdim:
        return MinMax(values, indices)
    return MinMax(values.squeeze(dim), indices.squeeze(dim))
