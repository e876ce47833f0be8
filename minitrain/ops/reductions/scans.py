"""Running reductions along one dim (the shape stays): cumprod, logcumsumexp, and cummax and
cummin, which return the running extreme and where it sits. (cumsum, the first scan, is in
reduction.py beside sum.)"""

from __future__ import annotations

import math

import numpy as np

from ...arguments import dim_arg
from ...errors import DTypeError
from ...tensor import Tensor
from ..core.checks import normalize_one_axis
from ..core.op import Op, as_tensor, shape_of
from ..core.variants import variants
from ..pointwise import arithmetic as elementwise
from ..pointwise import conversion
from .sorting import ValuesIndices, only_element, values_at

__all__ = ["cummax", "cummin", "cumprod", "logcumsumexp"]


def _scan_dim(input, dim, axis, caller: str):  # noqa: A002
    """A scan's one int dim (PyTorch's `dim` or numpy's `axis`), non-negative; None for a 0-d
    input (its one element)."""
    return normalize_one_axis(dim_arg(dim, axis, caller), len(shape_of(input)), caller)


def _last(xp, x, dim: int):
    """x (an array or a Tensor) with dim moved last, and the order that moves it back."""
    order = tuple(d for d in range(x.ndim) if d != dim) + (dim,)
    return xp.transpose(x, order), tuple(int(d) for d in np.argsort(order))


def _running(xp, ufunc: str, array, axis: int):
    """`ufunc` (maximum, minimum or logaddexp, by name) accumulated along axis: numpy's
    ufunc.accumulate on the CPU. CuPy accumulates only add and multiply, so elsewhere a
    Hillis-Steele scan: at step s (1, 2, 4, ...) each element combines with the one s before
    it, holding after it the combination of the 2s elements up to it; log2(n) whole-array
    steps, exact for these associative ufuncs up to the rounding of logaddexp. On a Tensor
    (logcumsumexp's backward under create_graph) logaddexp's is the logcumsumexp op, recorded:
    numpy has it only as a ufunc method, which the graph math cannot give."""
    if isinstance(array, Tensor):
        return logcumsumexp(array, axis)
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


def _reverse_recurrence(xp, coefficients, values):
    """s with s_i = values_i + coefficients_i * s_(i+1) along the last dim (nothing past the
    end), without division: a Hillis-Steele scan of these affine maps. At step k (1, 2, 4, ...)
    s_i = values_i + coefficients_i * s_(i+k) holds, and substituting s_(i+k) doubles k, so
    log2(n) steps of whole-array products and sums: a polynomial in the coefficients, its
    derivatives exact everywhere. The last coefficient is never read."""
    n = values.shape[-1]
    step = 1
    while step < n:
        head = values[..., : n - step] + coefficients[..., : n - step] * values[..., step:]
        values = xp.concatenate([head, values[..., n - step :]], axis=-1)
        if 2 * step < n:  # the coefficients of the next step (the last step needs none)
            head = coefficients[..., : n - step] * coefficients[..., step:]
            coefficients = xp.concatenate([head, coefficients[..., n - step :]], axis=-1)
        step *= 2
    return values


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

        Without zeros in x that is (sum over j >= k of grad_j out_j) / x_k, out recomputed.
        With zeros, without division: p_k s_k, p_k the product of the x_m before k and s_k =
        sum over j >= k of grad_j * (the product of x_m for k < m <= j), the recurrence s_k =
        grad_k + x_(k+1) s_(k+1) scanned in log2(n) steps. Both are exact, and so are their
        own derivatives (create_graph), being polynomials in x (rational without zeros), where
        PyTorch's O(n) first derivative at zeros (masks cut at the first zero) is exact to the
        first order only. Whether x holds a zero is read on the host, as PyTorch reads it."""
        xp = ctx.xp
        if ctx.dim is None:  # a 0-d x: out = x
            return grad
        if not math.prod(ctx.x.shape):
            return xp.zeros_like(ctx.x, dtype=grad.dtype)
        x, back = _last(xp, elementwise.widened(ctx.x), ctx.dim)
        grad, _ = _last(xp, elementwise.widened(grad), ctx.dim)
        if not xp.equal(x, 0).any():
            return xp.transpose(_reverse_cumsum(xp, grad * xp.cumprod(x, -1)) / x, back)
        one = xp.ones_like(x[..., :1])
        before = xp.cumprod(xp.concatenate([one, x[..., :-1]], axis=-1), -1)
        after = _reverse_recurrence(xp, xp.concatenate([x[..., 1:], one], axis=-1), grad)
        return xp.transpose(before * after, back)


@variants("function", "method")
def cumprod(input, dim=None, *, dtype=None, axis=None):  # noqa: A002
    """The running product along dim; the shape stays. Integer and bool input multiplies in
    int64, as in PyTorch; `dtype` casts input first. The gradient is exact where input holds
    zeros."""
    x = conversion.cast_first(as_tensor(input), dtype, "cumprod", int64=True)
    return CumProd.apply(x, dim=_scan_dim(x, dim, axis, "cumprod"))


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
        exp(x_i + reverse logcumsumexp(log grad_j - out_j)), each exponent at most log |grad|.
        The running logaddexp is this op's own kernel, and under create_graph the op itself."""
        if ctx.dim is None:
            return grad
        xp, dim = ctx.xp, ctx.dim
        grad = elementwise.widened(grad)
        x, out = elementwise.widened(ctx.x), elementwise.widened(ctx.out)
        lowest = _lowest(x.dtype)
        parts = []
        # log 0 where grad is 0 is replaced by `lowest`, and log reads 1 there, so that its
        # derivative (create_graph) is finite too; an out of -inf (every x so far -inf) gives
        # NaN, as in PyTorch; `lowest` plus a very negative x (as the second derivative reads
        # them) is -inf, whose exp is the 0 meant
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            log_size = xp.log(xp.where(xp.equal(grad, 0), 1, xp.abs(grad)))
            for sign in (xp.greater(grad, 0), xp.less(grad, 0)):
                logs = xp.where(sign, log_size, lowest) - out
                reverse = xp.flip(_running(xp, "logaddexp", xp.flip(logs, dim), dim), dim)
                parts.append(xp.exp(reverse + x))
        return parts[0] - parts[1]


@variants("function", "method")
def logcumsumexp(input, dim=None, *, axis=None):  # noqa: A002
    """The running log(sum(exp(input))) along dim, without overflow; the shape stays. Floating
    input only, as in PyTorch."""
    x = as_tensor(input)
    if x.dtype.kind != "f":
        raise DTypeError(f"logcumsumexp: input must be floating point, got {x.dtype}")
    return LogCumSumExp.apply(x, dim=_scan_dim(x, dim, axis, "logcumsumexp"))


def _running_extreme(caller: str, input, dim, axis, accumulate):  # noqa: A002
    """cummax / cummin: (values, indices) along dim, `accumulate` "maximum" or "minimum"."""
    x = as_tensor(input)
    if x.dtype.kind not in "biuf":
        raise DTypeError(f"{caller}: input must be numeric or bool, got {x.dtype}")
    dim = _scan_dim(x, dim, axis, caller)
    if dim is None:
        return only_element(x)
    array, xp = x.array, x.xp
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


@variants("function", "method")
def cummax(input, dim=None, *, axis=None):  # noqa: A002
    """(values, indices): the running maximum along dim and the index where it sits, the last
    of equal maxima, NaN the maximum from where it first appears (as PyTorch). The values'
    gradient goes to those indices; the indices are outside the graph."""
    return _running_extreme("cummax", input, dim, axis, "maximum")


@variants("function", "method")
def cummin(input, dim=None, *, axis=None):  # noqa: A002
    """(values, indices): the running minimum along dim and where it sits: see cummax."""
    return _running_extreme("cummin", input, dim, axis, "minimum")
