"""Reductions over axes: sum, mean, max, min, var, std, logsumexp; argmax/argmin (no gradient).

Every reduction takes `axis` (None for all, an int, or a tuple of ints; negatives allowed) and
`keepdims`. The functional forms normalise `axis` to a sorted tuple, so backward rules can always
re-insert the reduced dims with `expand_dims`.
"""

from __future__ import annotations

import builtins

import numpy as np

from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from .registry import Op, shape_of


def normalize_axis(axis, ndim: int, op: str) -> tuple[int, ...]:
    """axis (None, int or sequence) as a sorted tuple of distinct non-negative dims."""
    if axis is None:
        return tuple(range(ndim))
    try:
        axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    except TypeError:  # not iterable: a float, say
        raise DTypeError(f"{op}: axis must be an int or a tuple of ints, got {axis!r}") from None
    # (this module's max/min/sum/all/any are the ops: builtins of those names only as builtins.*)
    limit = ndim if ndim else 1  # a 0-d tensor accepts axis 0 / -1, as numpy does
    result = []
    for a in axes:
        if not isinstance(a, (int, np.integer)):
            raise DTypeError(f"{op}: axis must be ints, got {axis!r}")
        if not -limit <= a < limit:
            raise ShapeError(f"{op}: axis {a} is out of range for a tensor with {ndim} dims")
        result.append(int(a) % limit)
    if ndim == 0:
        return ()
    if len(set(result)) != len(result):
        raise ShapeError(f"{op}: axis {axis!r} repeats a dim")
    return tuple(sorted(result))


def _kept(ctx, grad):
    """The upstream gradient with the reduced dims back in place (size 1)."""
    return grad if ctx.keepdims else ctx.xp.expand_dims(grad, ctx.axis)


def _count(shape, axis) -> int:
    return int(np.prod([shape[a] for a in axis], dtype=np.int64))


class Sum(Op):
    name = "sum"
    inputs = ("x",)
    attrs = ("axis", "keepdims")

    @staticmethod
    def forward(ctx, x):
        return x.sum(axis=ctx.axis, keepdims=ctx.keepdims)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad broadcast back over the summed axes."""
        return ctx.xp.broadcast_to(_kept(ctx, grad), ctx.shapes[0])


class Mean(Op):
    name = "mean"
    inputs = ("x",)
    attrs = ("axis", "keepdims")

    @staticmethod
    def forward(ctx, x):
        return x.mean(axis=ctx.axis, keepdims=ctx.keepdims)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad / M broadcast back over the reduced axes, M the count of values averaged."""
        shape = ctx.shapes[0]
        return ctx.xp.broadcast_to(_kept(ctx, grad) / _count(shape, ctx.axis), shape)


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
        """dx = grad / k where x equals its slice's max (min), else 0; k: the ties in that slice."""
        hit = ctx.x == ctx.extreme
        if ctx.nan_takes_grad:
            hit |= ctx.xp.isnan(ctx.x)  # a NaN is only in a slice whose extreme is NaN
        ties = hit.sum(axis=ctx.axis, keepdims=True).astype(grad.dtype)
        with np.errstate(divide="ignore", invalid="ignore"):  # amax's NaN slice: no hit, 0 / 0
            return (_kept(ctx, grad) / ties) * hit


class Max(_Extreme):
    name = "max"
    reduce = "max"


class Min(_Extreme):
    name = "min"
    reduce = "min"


def _dof(ctx, shape) -> int:
    """var / std's degrees of freedom: the values reduced into each output less the correction."""
    return _count(shape, ctx.axis) - ctx.correction


def _centered_variance(ctx, x):
    """var / std's forward: x - mean(x), and the variance with the reduced dims kept (size 1)."""
    centered = x - x.mean(axis=ctx.axis, keepdims=True)
    return centered, (centered * centered).sum(axis=ctx.axis, keepdims=True) / _dof(ctx, x.shape)


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

        M: the number of values reduced into each output; x - mean(x) is saved as `centered`."""
        return _kept(ctx, grad) * (2 / _dof(ctx, ctx.shapes[0])) * ctx.centered


class Std(Op):
    """Standard deviation: sqrt(var(x)), var as in Var."""

    name = "std"
    inputs = ("x",)
    attrs = ("axis", "keepdims", "correction")
    saved = ("centered", "std")

    @staticmethod
    def forward(ctx, x):
        centered, variance = _centered_variance(ctx, x)
        std = ctx.xp.sqrt(variance)
        ctx.save(centered=centered, std=std)
        return std if ctx.keepdims else std.squeeze(axis=ctx.axis)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * (x - mean(x)) / ((M - correction) * std), and 0 where std = 0.

        There every x in the slice is equal and the derivative 0 / 0: 0 is a subgradient
        (PyTorch's choice too), where sqrt(var)'s chain rule would give inf * 0 = NaN."""
        zero = ctx.std == 0
        scale = ctx.xp.where(
            zero, 0, 1 / (_dof(ctx, ctx.shapes[0]) * ctx.xp.where(zero, 1, ctx.std))
        )
        return _kept(ctx, grad) * scale * ctx.centered


class LogSumExp(Op):
    """log(sum(exp(x))), computed with the max subtracted so large x does not overflow."""

    name = "logsumexp"
    inputs = ("x",)
    attrs = ("axis", "keepdims")
    saved = ("x", "out")

    @staticmethod
    def forward(ctx, x):
        xp = ctx.xp
        if builtins.any(x.shape[a] == 0 for a in ctx.axis):  # an empty sum of exps: log(0) = -inf
            shift = xp.zeros([1 if i in ctx.axis else n for i, n in enumerate(x.shape)], x.dtype)
        else:
            shift = x.max(axis=ctx.axis, keepdims=True)
            shift = xp.where(xp.isfinite(shift), shift, 0)  # rows of -inf stay -inf, not nan
        with np.errstate(divide="ignore"):
            out = xp.log(xp.exp(x - shift).sum(axis=ctx.axis, keepdims=True)) + shift
        ctx.save(x=x, out=out)
        return out if ctx.keepdims else out.squeeze(ctx.axis)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * exp(x - out) = grad * softmax(x) over axis, out = logsumexp(x) (saved)."""
        # d/dx log(sum(exp(x))) = exp(x - logsumexp(x)): the softmax of x
        return _kept(ctx, grad) * ctx.xp.exp(ctx.x - ctx.out)


def _reduction(op, x, axis, keepdims, **attrs):
    ndim = len(shape_of(x))
    return op.apply(x, axis=normalize_axis(axis, ndim, op.name), keepdims=bool(keepdims), **attrs)


def _require_nonempty(x, axis, op: str) -> None:
    shape = shape_of(x)
    norm = normalize_axis(axis, len(shape), op)
    if builtins.any(shape[a] == 0 for a in norm):
        raise ShapeError(f"{op}: reducing over an empty dim (input shape {shape}, axis {axis!r})")


def sum(x, axis=None, keepdims: bool = False):  # noqa: A001 (the op's name)
    """Sum over axis."""
    return _reduction(Sum, x, axis, keepdims)


def mean(x, axis=None, keepdims: bool = False):
    """Mean over axis; an empty axis is an error, not nan."""
    _require_nonempty(x, axis, "mean")
    return _reduction(Mean, x, axis, keepdims)


def max(x, axis=None, keepdims: bool = False, *, nan_takes_grad: bool = False):  # noqa: A001
    """Maximum over axis (numpy's amax); tied maxima share the gradient equally. A slice holding
    NaN has maximum NaN and a NaN gradient (torch.amax); with `nan_takes_grad` its NaNs share the
    gradient instead (torch.max)."""
    _require_nonempty(x, axis, "max")
    return _reduction(Max, x, axis, keepdims, nan_takes_grad=nan_takes_grad)


def min(x, axis=None, keepdims: bool = False, *, nan_takes_grad: bool = False):  # noqa: A001
    """Minimum over axis (numpy's amin); tied minima share the gradient equally; NaN as in max."""
    _require_nonempty(x, axis, "min")
    return _reduction(Min, x, axis, keepdims, nan_takes_grad=nan_takes_grad)


def var(x, axis=None, keepdims: bool = False, correction: int = 1):
    """Variance over axis with `correction` (1: unbiased, PyTorch's default; 0: biased)."""
    return _spread(Var, x, axis, keepdims, correction)


def std(x, axis=None, keepdims: bool = False, correction: int = 1):
    """Standard deviation over axis, sqrt(var(x)) with var's `correction`; where it is 0 (every
    value equal) its gradient is 0, as in PyTorch."""
    return _spread(Std, x, axis, keepdims, correction)


def _spread(op, x, axis, keepdims, correction):
    shape = shape_of(x)
    norm = normalize_axis(axis, len(shape), op.name)
    count = _count(shape, norm)
    if count - correction <= 0:
        raise ShapeError(
            f"{op.name}: {count} elements per reduction with correction={correction} leaves no "
            f"degrees of freedom (input shape {shape}, axis {axis!r}); use correction=0 or more "
            "elements"
        )
    return op.apply(x, axis=norm, keepdims=bool(keepdims), correction=correction)


def logsumexp(x, axis=None, keepdims: bool = False):
    """log(sum(exp(x))) over axis, stable for large x; an empty axis gives -inf."""
    return _reduction(LogSumExp, x, axis, keepdims)


def _arg(name, x, axis, keepdims):
    array = x.data if isinstance(x, Tensor) else np.asarray(x)
    _require_nonempty(array, axis, name)
    if axis is not None:
        axes = normalize_axis(axis, array.ndim, name)
        if array.ndim and len(axes) != 1:
            raise ShapeError(f"{name}: takes one axis, got {axis!r}")
        axis = axes[0] if axes else None  # a 0-d tensor's axis 0 (or -1): its one element
    return Tensor(getattr(array, name)(axis=axis, keepdims=keepdims))


def _truth(name, x, axis, keepdims):
    array = x.data if isinstance(x, Tensor) else np.asarray(x)
    axes = normalize_axis(axis, array.ndim, name)
    return Tensor(getattr(array.astype(bool), name)(axis=axes, keepdims=bool(keepdims)))


def all(x, axis=None, keepdims: bool = False):  # noqa: A001 (PyTorch's name)
    """Whether every element along axis is nonzero (a bool tensor, outside the graph; True over
    no elements)."""
    return _truth("all", x, axis, keepdims)


def any(x, axis=None, keepdims: bool = False):  # noqa: A001 (PyTorch's name)
    """Whether some element along axis is nonzero (a bool tensor, outside the graph; False over
    no elements)."""
    return _truth("any", x, axis, keepdims)


def argmax(x, axis=None, keepdims: bool = False):
    """Index of the first maximum along axis (over the flattened tensor when None)."""
    return _arg("argmax", x, axis, keepdims)


def argmin(x, axis=None, keepdims: bool = False):
    """Index of the first minimum along axis (over the flattened tensor when None)."""
    return _arg("argmin", x, axis, keepdims)
