"""Running reductions along one dim (the shape stays): cumprod, logcumsumexp, and cummax and
cummin, which return the running extreme and where it sits. (cumsum, the first scan, is in
reduction.py beside sum.)"""

from __future__ import annotations

import numpy as np

from ...errors import DTypeError
from ...tensor import Tensor
from ..core.checks import normalize_one_axis
from ..core.op import Op, as_tensor, shape_of
from ..pointwise import arithmetic as elementwise
from ..pointwise.masking import where
from ..shapes.shape import broadcast_to, flip, permute
from .reduction import cumsum
from .sorting import ValuesIndices, only_element, values_at

__all__ = ["cummax", "cummin", "cumprod", "logcumsumexp"]


def _scan_dim(input, dim, caller: str):  # noqa: A002
    """A scan's one int dim, non-negative; None for a 0-d input (its one element)."""
    return normalize_one_axis(dim, len(shape_of(input)), caller)


def _last(x, dim: int):
    """x (an array or a Tensor) with dim moved last, and the order that moves it back."""
    order = tuple(d for d in range(x.ndim) if d != dim) + (dim,)
    back = tuple(int(d) for d in np.argsort(order))
    if isinstance(x, Tensor):
        return permute(x, order), back
    return x.transpose(order), back


def _running(xp, ufunc: str, array, axis: int):
    """`ufunc` (maximum, minimum or logaddexp, by name) accumulated along axis: numpy's
    ufunc.accumulate on the CPU. CuPy accumulates only add and multiply, so elsewhere a
    Hillis-Steele scan: at step s (1, 2, 4, ...) each element combines with the one s before
    it, holding after it the combination of the 2s elements up to it; log2(n) whole-array
    steps, exact for these associative ufuncs up to the rounding of logaddexp."""
    combine = getattr(xp, ufunc)
    if xp is np:
        return combine.accumulate(array, axis=axis)
    out = array.copy()
    size, lead = array.shape[axis], (slice(None),) * axis
    step = 1
    while step < size:
        later, earlier = lead + (slice(step, None),), lead + (slice(0, size - step),)
        out[later] = combine(out[later], out[earlier])  # both read before the write
        step *= 2
    return out


def _reverse_cumsum(xp, values):
    """sum of values[..., j] for j >= i, at each i: the running sum taken from the end."""
    return xp.flip(xp.cumsum(xp.flip(values, -1), -1), -1)


class CumProd(Op):
    """The running product along one dim: out[..., i, ...] = the product of x[..., j, ...] for
    j <= i; integer and bool x multiply in int64."""

    name = "cumprod"
    inputs = ("x",)
    attrs = ("dim",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        # dim is None only for a 0-d x: numpy then multiplies its one element into shape (1,)
        accumulator = np.int64 if x.dtype.kind in "biu" else None  # PyTorch's, not uint64
        total = ctx.xp.cumprod(elementwise.widened(x), axis=ctx.dim, dtype=accumulator)
        total = total.reshape(x.shape)
        return total.astype(np.float16) if x.dtype == np.float16 else total

    @staticmethod
    def backward(ctx, grad):
        """dx_k = sum over j >= k of grad_j * (the product of x_m for m <= j, m != k).

        Without zeros that is (sum over j >= k of grad_j out_j) / x_k. Along a slice whose
        first zero is at z: before z it still is (the terms j >= z hold the zero), after z every
        term holds x_z = 0, and at z it is out_{z-1} * sum over j >= z of grad_j * (the product
        of x_m for z < m <= j): exact, with no division by zero (PyTorch's rule)."""
        xp = ctx.xp
        if ctx.dim is None:  # a 0-d x: out = x
            return grad
        if ctx.x.size == 0:
            return xp.zeros(ctx.x.shape, grad.dtype)
        x, back = _last(elementwise.widened(ctx.x), ctx.dim)
        grad, _ = _last(elementwise.widened(grad), ctx.dim)
        position = xp.arange(x.shape[-1])
        zero = x == 0
        first_zero = xp.where(zero.any(-1), zero.argmax(-1), x.shape[-1])[..., None]
        before = position < first_zero
        safe = xp.where(before, x, 1)
        prefix = xp.cumprod(safe, -1)  # out_j before the first zero, then out_{z-1}
        dx = xp.where(before, _reverse_cumsum(xp, xp.where(before, grad * prefix, 0)) / safe, 0)
        # at the first zero: out_{z-1} times the running products of what follows it
        following = xp.cumprod(xp.where(position > first_zero, x, 1), -1)
        at_zero = prefix[..., -1:] * xp.where(position >= first_zero, grad * following, 0).sum(
            -1, keepdims=True
        )
        dx = xp.where(position == first_zero, at_zero, dx)
        return dx.transpose(back)

    @staticmethod
    def tensor_backward(ctx, grad):
        """backward's rule in tensor ops. Without zeros in x: dx_j = sum over i >= j of
        grad_i out_i / x_j, a running sum taken from the end, out recomputed in the graph. With
        zeros: for each k, the running product of x with x_k set to 1 (an n x n grid per slice,
        O(n^2) as prod's), read at j >= k: exact there, and differentiable again."""
        if ctx.dim is None:
            return grad.reshape(())
        x, back = _last(ctx.x, ctx.dim)
        grad, _ = _last(grad, ctx.dim)
        n = x.shape[-1]
        if n == 0:
            return permute(x * 0, back)
        if not (x.data == 0).any():
            later = flip(cumsum(flip(grad * cumprod(x, -1), -1), -1), -1)
            return permute(later / x, back)
        eye = ctx.xp.eye(n, dtype=bool)  # [k, j]: j is k, whose x is left out
        grid = broadcast_to(x.unsqueeze(-2), x.shape[:-1] + (n, n))
        others = cumprod(where(eye, 1.0, grid), -1)  # [k, j]: product of x_m, m <= j, m != k
        later = ctx.xp.triu(ctx.xp.ones((n, n), dtype=bool))  # j >= k
        dx = where(later, grad.unsqueeze(-2) * others, 0.0).sum(-1)
        return permute(dx, back)


def cumprod(input, dim: int, *, dtype=None):  # noqa: A002
    """The running product along dim; the shape stays. Integer and bool input multiplies in
    int64, as in PyTorch; `dtype` casts input first. The gradient is exact where input holds
    zeros."""
    x = elementwise.cast_first(as_tensor(input), dtype, "cumprod", int64=True)
    return CumProd.apply(x, dim=_scan_dim(x, dim, "cumprod"))


# the most negative finite float: log(0) in logcumsumexp's backward, where -inf would give NaN
def _lowest(dtype):
    return np.finfo(dtype).min


class LogCumSumExp(Op):
    """The running log(sum(exp(x))) along one dim: out[..., i, ...] = log of the sum of
    exp(x[..., j, ...]) for j <= i, with no overflow (numpy's logaddexp, accumulated)."""

    name = "logcumsumexp"
    inputs = ("x",)
    attrs = ("dim",)
    saved = ("x", "out")

    @staticmethod
    def forward(ctx, x):
        if ctx.dim is None:  # a 0-d x: out = x
            out = x.copy()
        else:
            wide = elementwise.widened(x)
            with np.errstate(
                invalid="ignore"
            ):  # numpy warns at NaN and inf; its results are PyTorch's
                out = _running(ctx.xp, "logaddexp", wide, ctx.dim)
            out = out.astype(x.dtype, copy=False)
        ctx.save(x=x, out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx_i = sum over j >= i of grad_j exp(x_i - out_j): softmax weights of the prefixes.

        Summed in log space, the positive and negative parts of grad apart (PyTorch's rule):
        exp(x_i + reverse logcumsumexp(log grad_j - out_j)), each exponent at most log |grad|."""
        if ctx.dim is None:
            return grad
        xp, dim = ctx.xp, ctx.dim
        grad = elementwise.widened(grad)
        x, out = elementwise.widened(ctx.x), elementwise.widened(ctx.out)
        lowest = _lowest(x.dtype)
        parts = []
        # log 0 where grad is 0 is replaced by `lowest`; an out of -inf (every x so far -inf)
        # gives NaN, as in PyTorch; `lowest` plus a very negative x (as the second derivative
        # reads them) is -inf, whose exp is the 0 meant
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            log_size = xp.log(xp.abs(grad))
            for sign in (grad > 0, grad < 0):
                logs = xp.where(sign, log_size, lowest) - out
                reverse = xp.flip(_running(xp, "logaddexp", xp.flip(logs, dim), dim), dim)
                parts.append(xp.exp(reverse + x))
        return parts[0] - parts[1]

    @staticmethod
    def tensor_backward(ctx, grad):
        if ctx.dim is None:
            return grad.reshape(())
        x, out, dim = ctx.x, ctx.out, ctx.dim
        zero = grad.data == 0
        log_size = elementwise.log(where(zero, 1.0, elementwise.abs(grad)))  # finite everywhere
        lowest = _lowest(x.dtype)
        parts = []
        for sign in (grad.data > 0, grad.data < 0):
            logs = where(sign, log_size, lowest) - out
            with np.errstate(over="ignore"):  # -inf, as in backward
                parts.append(elementwise.exp(flip(logcumsumexp(flip(logs, dim), dim), dim) + x))
        return parts[0] - parts[1]


def logcumsumexp(input, dim: int):  # noqa: A002
    """The running log(sum(exp(input))) along dim, without overflow; the shape stays. Floating
    input only, as in PyTorch."""
    x = as_tensor(input)
    if x.dtype.kind != "f":
        raise DTypeError(f"logcumsumexp: input must be floating point, got {x.dtype}")
    return LogCumSumExp.apply(x, dim=_scan_dim(x, dim, "logcumsumexp"))


def _running_extreme(caller: str, input, dim, accumulate):  # noqa: A002
    """cummax / cummin: (values, indices) along dim, `accumulate` "maximum" or "minimum"."""
    x = as_tensor(input)
    if x.dtype.kind not in "biuf":
        raise DTypeError(f"{caller}: input must be numeric or bool, got {x.dtype}")
    dim = _scan_dim(x, dim, caller)
    if dim is None:
        return only_element(x)
    array, xp = x.data, x.xp
    running = _running(xp, accumulate, array, dim)  # NaN, once met, stays (numpy's rule)
    # The index of the running extreme is the last position where x equals it: a new extreme,
    # or a tie, which PyTorch's cummax / cummin take too; a NaN is the extreme from then on,
    # and each later NaN takes the index.
    hit = array == running
    if array.dtype.kind == "f":
        hit |= xp.isnan(array)
    shape = [1] * array.ndim
    shape[dim] = array.shape[dim]
    positions = xp.arange(array.shape[dim]).reshape(shape)
    indices = _running(xp, "maximum", xp.where(hit, positions, 0), dim)
    return ValuesIndices(values_at(x, dim, indices), Tensor(indices))


def cummax(input, dim: int):  # noqa: A002
    """(values, indices): the running maximum along dim and the index where it sits, the last
    of equal maxima, NaN the maximum from where it first appears (as PyTorch). The values'
    gradient goes to those indices; the indices are outside the graph."""
    return _running_extreme("cummax", input, dim, "maximum")


def cummin(input, dim: int):  # noqa: A002
    """(values, indices): the running minimum along dim and where it sits: see cummax."""
    return _running_extreme("cummin", input, dim, "minimum")
