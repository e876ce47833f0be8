"""The reductions with a gradient: sum, mean, prod, var, std, logsumexp, norm, and the running
sum, cumsum (its scan siblings are in scans.py; max, min and the argument reductions in
extremes.py).

Each takes PyTorch's arguments (common.py): `dim` (None for all, an int, or a tuple of ints) and
`keepdim`, or their numpy spellings `axis` and `keepdims`, and `dtype` where PyTorch's does (the
input cast first, recorded). Each is declared once, as the top-level function and the Tensor
method (`minitrain.sum(x, 0)`, `x.sum(0)`).
"""

from __future__ import annotations

import builtins
import math
import warnings

import numpy as np

from ...arguments import dim_and_correction, dim_arg, keepdim_arg
from ...errors import ArgumentError, DTypeError
from ..core.checks import normalize_axis, normalize_one_axis, require_kind
from ..core.op import Op, shape_of, value_of
from ..core.variants import variants
from ..pointwise import arithmetic as elementwise
from ..pointwise.conversion import cast_first
from .common import accumulator, count_reduced, keep_reduced, over_dims
from .extremes import Max, Min, extreme

__all__ = ["cumsum", "logsumexp", "mean", "norm", "prod", "std", "sum", "var"]


class Sum(Op):
    """The sum over axis; integer and bool x sum to int64."""

    name = "sum"
    inputs = ("x",)
    attrs = ("axis", "keepdims")

    @staticmethod
    def forward(ctx, x):
        return x.sum(axis=ctx.axis, keepdims=ctx.keepdims, dtype=accumulator(x))

    @staticmethod
    def backward(ctx, grad):
        """dx = grad broadcast back over the summed axes."""
        return ctx.xp.broadcast_to(keep_reduced(ctx, grad), ctx.shapes[0])


@variants("function", "method")
def sum(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):  # noqa: A001, A002
    """The sum of the elements over `dim`: an int, a tuple of ints, or None for all.

    `keepdim=True` keeps each reduced dim with size 1. Integer and bool tensors sum to int64,
    as in PyTorch. `dtype` (a floating dtype, or int64) casts the tensor first, recorded. `axis`
    and `keepdims` are numpy's names for `dim` and `keepdim`."""
    x = cast_first(input, dtype, "sum", int64=True)
    return over_dims(Sum, x, dim, keepdim, axis, keepdims)


class Mean(Op):
    name = "mean"
    inputs = ("x",)
    attrs = ("axis", "keepdims")

    @staticmethod
    def forward(ctx, x):
        if not count_reduced(x.shape, ctx.axis):  # the mean of nothing: nan, as in PyTorch
            return x.sum(axis=ctx.axis, keepdims=ctx.keepdims) * np.nan
        return x.mean(axis=ctx.axis, keepdims=ctx.keepdims)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad / M broadcast back over the reduced axes, M the count of values averaged
        (none: x is empty, and so is dx)."""
        shape = ctx.shapes[0]
        count = (
            count_reduced(shape, ctx.axis) or 1
        )  # none: the broadcast is empty, whatever it holds
        return ctx.xp.broadcast_to(keep_reduced(ctx, grad) / count, shape)


@variants("function", "method")
def mean(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):  # noqa: A002
    """The mean of the elements over `dim`: an int, a tuple of ints, or None for all.

    Floating tensors only, as in PyTorch: an integer one needs `dtype=` (a floating dtype, cast
    first, recorded). Over no elements it is NaN. `keepdim`, `axis` and `keepdims` as in `sum`."""
    x = cast_first(input, dtype, "mean")
    require_kind("mean", x, "f", "floating point", "float")
    return over_dims(Mean, x, dim, keepdim, axis, keepdims)


class Prod(Op):
    """The product over axis; integer and bool x multiply in int64."""

    name = "prod"
    inputs = ("x",)
    attrs = ("axis", "keepdims")
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return x.prod(axis=ctx.axis, keepdims=ctx.keepdims, dtype=accumulator(x))

    @staticmethod
    def backward(ctx, grad):
        """dx_i = grad * (the product of the other elements of x_i's slice over axis).

        Not grad * out / x_i, which is 0 / 0 at a zero: with one zero in a slice, only that
        element gets a gradient (the product of the rest); with two or more, none does. The
        product of the others is a polynomial in x (running products, no division), so its
        own derivatives are exact at zeros too."""
        return keep_reduced(ctx, grad) * _product_of_the_others(ctx.xp, ctx.x, ctx.axis)


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


@variants("function", "method")
def prod(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):  # noqa: A002
    """The product of the elements over `dim`: an int, a tuple of ints, or None for all (1
    over no elements).

    Integer and bool tensors multiply in int64, as in PyTorch; the gradient is exact where
    elements are zero. `dtype` (a floating dtype, or int64) casts the tensor first, recorded.
    `keepdim`, `axis` and `keepdims` as in `sum`."""
    x = cast_first(input, dtype, "prod", int64=True)
    return over_dims(Prod, x, dim, keepdim, axis, keepdims)


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
        total = ctx.xp.cumsum(wide, axis=ctx.axis, dtype=accumulator(x)).reshape(x.shape)
        return total.astype(np.float16) if x.dtype == np.float16 else total

    @staticmethod
    def backward(ctx, grad):
        """dx_i = sum of grad_j for j >= i along axis: the running sum of grad taken backwards."""
        xp, axis = ctx.xp, ctx.axis
        if axis is None:  # a 0-d x: out is its one element
            return grad
        total = xp.cumsum(xp.flip(elementwise.widened(grad), axis), axis=axis)
        return xp.flip(total, axis)  # (the engine casts float16 back)


@variants("function", "method")
def cumsum(input, dim=None, *, dtype=None, axis=None):  # noqa: A002
    """The running sum along one dim (`dim` or numpy's `axis`, which must be given); the shape
    stays. Integer and bool tensors sum in int64, as in PyTorch; `dtype` casts first."""
    x = cast_first(input, dtype, "cumsum", int64=True)
    dim = normalize_one_axis(dim_arg(dim, axis, "cumsum"), len(shape_of(x)), "cumsum")
    return CumSum.apply(x, axis=dim)


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
        if count_reduced(x.shape, ctx.axis) == 1:  # |x| itself (the reduced dims are all 1),
            total = xp.abs(wide)  # as PyTorch: x * x would overflow above 1.34e154
        elif p == 2:
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
        if count_reduced(ctx.shapes[0], ctx.axis) == 1:  # the norm is |x|: abs's derivative
            return keep_reduced(ctx, grad) * xp.sign(x)  # (grad / |x| overflows below 5e-309)
        total = keep_reduced(ctx, elementwise.widened(ctx.out))
        zero = xp.equal(total, 0)
        with np.errstate(divide="ignore", invalid="ignore"):  # inf and NaN in x or grad
            scale = xp.where(zero, 0, keep_reduced(ctx, grad) / xp.where(zero, 1, total) ** (p - 1))
            if p == 2:
                return scale * x
            return scale * (xp.sign(x) * xp.where(xp.equal(x, 0), 1, xp.abs(x)) ** (p - 1))


@variants("function", "method")
def norm(input, p="fro", dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A002
    """The p-norm over `dim` (all elements by default): 'fro' (the default) and 2 are the
    Euclidean norm, p > 0 (sum |x|^p)^(1/p), inf / -inf the max / min of |x| (as abs then
    max / min: tied extremes share the gradient). Where a slice is all zeros the gradient is 0,
    as in PyTorch. Floating tensors only."""
    dtype = getattr(input, "dtype", None)
    if dtype is None or dtype.kind != "f":
        raise DTypeError(f"norm: input must be a floating-point tensor, got dtype {dtype}")
    if isinstance(p, str):
        if p != "fro":
            raise ArgumentError(f"norm: p={p!r} is not supported; use 'fro', a number or inf")
        p = 2
    number = isinstance(p, (int, float, np.integer, np.floating)) and not isinstance(p, bool)
    if not number or not (p > 0 or p == -math.inf):
        raise ArgumentError(f"norm: p must be a number > 0, inf or -inf, got {p!r}")
    if math.isinf(p):
        dim, keepdim = dim_arg(dim, axis, "norm"), keepdim_arg(keepdim, keepdims)
        op = Max if p > 0 else Min
        return extreme(op, elementwise.abs(input), dim, keepdim, nan_takes_grad=True, caller="norm")
    return over_dims(Norm, input, dim, keepdim, axis, keepdims, p=float(p))


def _dof(ctx, shape) -> int:
    """var / std's degrees of freedom: the values reduced into each output less the correction,
    and 0 where that is not positive (PyTorch's: the variance is then nan or inf)."""
    return builtins.max(count_reduced(shape, ctx.axis) - ctx.correction, 0)


def _over_dof(ctx, numerator: float) -> float:
    """numerator / the degrees of freedom, inf where there are none."""
    dof = _dof(ctx, ctx.shapes[0])
    return numerator / dof if dof else math.inf


def _centered_variance(ctx, x):
    """var / std's forward: x - mean(x), and the variance with the reduced dims kept (size 1),
    in float64 for a narrower x (the caller casts it, std after its square root); nan (no
    elements, or 0 / 0) or inf where there are no degrees of freedom, as in PyTorch."""
    if count_reduced(x.shape, ctx.axis):
        centered = x - x.mean(axis=ctx.axis, keepdims=True)
    else:
        centered = x - x.sum(axis=ctx.axis, keepdims=True) * np.nan  # empty, as x is
    # squared and summed in float64 for a narrower float, as PyTorch's CPU kernels accumulate:
    # in float32, values near 2e19 overflow to inf where PyTorch's variance is finite
    wide = centered if centered.dtype.itemsize >= 8 else centered.astype(np.float64)
    squares = (wide * wide).sum(axis=ctx.axis, keepdims=True)
    dof = _dof(ctx, x.shape)
    with np.errstate(divide="ignore", invalid="ignore"):  # no degrees of freedom: inf and nan
        return centered, squares / dof


def _centered(ctx):
    """var's and std's saved x - mean(x): the array itself in a first-order backward; under
    create_graph (whose ctx knows the node, which `value_of` needs) a Tensor that moves with x
    (`value_of`, so x need not be kept): it is linear in x, with derivative grad - mean(grad)."""
    if getattr(ctx, "node", None) is None:
        return ctx.centered
    axis = ctx.axis

    def centering(grad, centered):
        if not count_reduced(grad.shape, axis):  # no elements to center
            return grad
        return grad - grad.mean(axis=axis, keepdims=True)

    return value_of(ctx, 0, ctx.centered, centering)


def _spread(op, input, dim, unbiased, keepdim, correction, axis, keepdims):  # noqa: A002
    """var or std (op) with PyTorch's arguments: `correction` (default 1, Bessel's) or the older
    `unbiased` (True is correction 1, False 0), which may also come alone in dim's place."""
    dim, correction = dim_and_correction(dim, unbiased, correction, op.name)
    dim, keepdim = dim_arg(dim, axis, op.name), keepdim_arg(keepdim, keepdims)
    require_kind(op.name, input, "f", "floating point", "float")  # as in PyTorch
    shape = shape_of(input)
    dims = normalize_axis(dim, len(shape), op.name)
    count = count_reduced(shape, dims)
    if count - correction <= 0:
        warnings.warn(
            f"{op.name}(): degrees of freedom is <= 0: {count} elements per reduction with "
            f"correction={correction} (input shape {shape}, dim {dim!r}); the result is nan or "
            f"inf, as in PyTorch",
            UserWarning,
            stacklevel=3,
        )
    return op.apply(input, axis=dims, keepdims=keepdim, correction=correction)


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
        variance = variance.astype(x.dtype, copy=False)
        return variance if ctx.keepdims else variance.squeeze(axis=ctx.axis)

    @staticmethod
    def backward(ctx, grad):
        """dx = 2 * grad * (x - mean(x)) / (M - correction), with grad broadcast back over axis.

        M: the number of values reduced into each output; x - mean(x) is saved as `centered`.
        With no degrees of freedom, inf and nan, as PyTorch's."""
        with np.errstate(invalid="ignore"):  # inf * 0 where there are no degrees of freedom
            return keep_reduced(ctx, grad) * _over_dof(ctx, 2.0) * _centered(ctx)


@variants("function", "method")
def var(  # noqa: A002
    input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None
):
    """The variance over `dim` (all elements by default), as PyTorch's: `correction` (default
    1, Bessel's; 0 the biased estimate) or the older `unbiased` (True is correction 1, False 0),
    which may also come alone in dim's place, as in x.var(False). Floating tensors only."""
    return _spread(Var, input, dim, unbiased, keepdim, correction, axis, keepdims)


class Std(Op):
    """Standard deviation: sqrt(var(x)), var as in Var."""

    name = "std"
    inputs = ("x",)
    attrs = ("axis", "keepdims", "correction")
    saved = ("centered", "out")  # out: the std; under create_graph this op's output

    @staticmethod
    def forward(ctx, x):
        centered, variance = _centered_variance(ctx, x)
        std = ctx.xp.sqrt(variance).astype(x.dtype, copy=False)
        out = std if ctx.keepdims else std.squeeze(axis=ctx.axis)
        ctx.save(centered=centered, out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * (x - mean(x)) / ((M - correction) * std), and 0 where std = 0.

        There every x in the slice is equal and the derivative 0 / 0: 0 is a subgradient
        (PyTorch's choice too), where sqrt(var)'s chain rule would give inf * 0 = NaN. The
        division reads a stand-in of 1 there, so that its derivative (create_graph) is finite."""
        xp, std = ctx.xp, keep_reduced(ctx, ctx.out)
        zero = xp.equal(std, 0)
        with np.errstate(divide="ignore", invalid="ignore"):  # no degrees of freedom: nan
            scale = xp.where(zero, 0, 1 / (_dof(ctx, ctx.shapes[0]) * xp.where(zero, 1, std)))
            return keep_reduced(ctx, grad) * scale * _centered(ctx)


@variants("function", "method")
def std(  # noqa: A002
    input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None
):
    """The standard deviation, sqrt(var(input)), with var's arguments; where it is 0 (every
    value equal) its gradient is 0, as in PyTorch. Floating tensors only."""
    return _spread(Std, input, dim, unbiased, keepdim, correction, axis, keepdims)


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
        return keep_reduced(ctx, grad) * ctx.xp.exp(ctx.x - keep_reduced(ctx, ctx.out))


@variants("function", "method")
def logsumexp(input, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A002
    """`log(sum(exp(x)))` over `dim`, without overflow: an int, a tuple of ints, or None for
    all elements (PyTorch requires a dim). Integer and bool tensors compute in float32; over no
    elements it is -inf. `keepdim`, `axis` and `keepdims` as in `sum`."""
    return over_dims(LogSumExp, input, dim, keepdim, axis, keepdims)
