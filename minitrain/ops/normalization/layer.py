"""The layer-norm family (layer norm, invertible layer norm, RMS norm) and group norm on it.

Each op comes with its gradient kernel (docs/kernels.md section 3) and its functional form; the
three share one pair of numba row kernels. Group norm is composed on layer norm.

Dtypes follow the T/U/V scheme of normalization_common. Each op saves exactly what its gradient
kernel reads: LayerNorm x, scale (the weight), mean and inv_std; RMSNorm x, scale and inv_std;
the invertible layer norm its *output*, scale, bias and inv_std, so x can be freed. On the CPU
with numba enabled, float32 and float64 inputs run the fused row kernels instead of the generic
ones (rows in parallel for large inputs, see _PARALLEL_WORK).

Under create_graph each op's backward runs in tensor ops instead (normalization_common), its
statistics recomputed from x; the invertible layer norm, which keeps no x, takes inv_std's
derivative from x_hat instead (RowInvStd), so its second derivative costs no memory either.
"""

from __future__ import annotations

import functools
import math
from types import SimpleNamespace

import numpy as np

from ... import backend
from ...errors import ArgumentError, DTypeError, ShapeError
from ...tensor import Tensor
from ..core import numba_math
from ..core.checks import check_eps, check_floating, check_same_shape, check_shape, normalize_axis
from ..core.op import Op, array_of, as_tensor, input_place
from ..pointwise.arithmetic import add, mul
from ..shapes.shape import reshape
from .common import (
    FASTMATH,
    as_vector,
    needed_grads,
    param_dtype,
    row_blocks,
    scale_shift,
    tensor_normalization_grads,
    tensor_statistics,
    work_dtype,
)

__all__ = [
    "group_norm",
    "invertible_layer_norm_grad",
    "layer_norm",
    "layer_norm_grad",
    "rms_norm",
    "simplified_layer_norm_grad",
]

# Elements of X from which the numba row kernels run their parallel build; below it the serial
# one, as a parallel region can wait milliseconds for a core (see numba_math.loop).
_PARALLEL_WORK = 1 << 20


def _row_axis(caller: str, shape: tuple, axis, name: str = "x") -> int:
    """The layer-norm family's first normalized dim, checked and made non-negative: the rows
    it leaves must hold at least one value each (with one, layer norm's x_hat is 0 and RMS
    norm's x / sqrt(x^2 + eps), as in PyTorch)."""
    if not shape:
        raise ShapeError(f"{caller}: {name} must have at least one dim, got a 0-d tensor")
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise DTypeError(f"{caller}: axis must be one int, got {axis!r}")
    (axis,) = normalize_axis(axis, len(shape), caller)
    count = math.prod(shape[axis:])
    if count == 0:
        raise ShapeError(
            f"{caller}: normalizing over M = 0 values per row ({name} {tuple(shape)}, axis "
            f"{axis}); the normalized dims must hold at least one value"
        )
    return axis


def _normalized_axis(caller: str, shape: tuple, normalized_shape, axis) -> int:
    """The first normalized dim, from PyTorch's normalized_shape (the last dims of x) or an axis
    (default -1); checked, non-negative."""
    if normalized_shape is not None and axis is not None:
        raise ArgumentError(f"{caller}: give normalized_shape or axis, not both")
    if normalized_shape is None:
        return _row_axis(caller, shape, -1 if axis is None else axis)
    if isinstance(normalized_shape, (int, np.integer)):
        normalized_shape = (normalized_shape,)
    dims = tuple(normalized_shape)
    if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in dims):
        raise DTypeError(f"{caller}: normalized_shape must be ints, got {normalized_shape!r}")
    if not dims or len(dims) > len(shape) or tuple(shape[len(shape) - len(dims) :]) != dims:
        raise ShapeError(
            f"{caller}: normalized_shape {dims} must equal the last dims of x {tuple(shape)}"
        )
    return len(shape) - len(dims)


def _stats_shape(shape: tuple, axis: int) -> tuple:
    """Per-row statistics kept so they broadcast: dims[:axis] + (1,) * k."""
    return tuple(shape[:axis]) + (1,) * (len(shape) - axis)


def _check_row_stats(caller: str, shape: tuple, axis: int, **stats) -> None:
    """Each named statistic (None skipped) must hold one value per row, shaped to broadcast."""
    expected = _stats_shape(shape, axis)
    for name, value in stats.items():
        check_shape(caller, name, value, expected, f"one per row of X {tuple(shape)}, axis {axis}")


def _check_rows(caller: str, x, weight, bias, axis: int) -> None:
    """Check a layer-norm family op's arrays (None: absent) and its (non-negative) axis."""
    check_floating(caller, x=x, weight=weight, bias=bias)
    axis = _row_axis(caller, x.shape, axis)
    context = f"the normalized dims of x {tuple(x.shape)} from axis {axis}"
    for name, value in (("weight", weight), ("bias", bias)):
        check_shape(caller, name, value, tuple(x.shape[axis:]), context)


def _layer_norm_forward(xp, x, scale, bias, eps: float, axis: int, centered: bool):
    """(Y, mean, inv_std) of layer norm over the dims from `axis` on (`centered`), or of RMS norm
    (mean None). Per row: mean = mean_row(X), inv_std = 1 / sqrt(mean_row((X - mean)^2) + eps)
    and Y = scale * (X - mean) * inv_std + bias; RMS norm takes mean = 0 and no bias."""
    work = work_dtype(x)
    row_axes = tuple(range(axis, x.ndim))
    x_hat = x.astype(work)  # a copy: normalized in place below
    mean = None
    if centered:
        mean = x_hat.mean(axis=row_axes, keepdims=True)
        x_hat -= mean
    inv_std = 1 / xp.sqrt(xp.square(x_hat).mean(axis=row_axes, keepdims=True) + eps)
    x_hat *= inv_std
    y = scale_shift(x_hat, scale, bias, x.shape[axis:], work)
    return y.astype(param_dtype(x.dtype, scale, bias), copy=False), mean, inv_std


def _row_grads(dY, x_hat, scale, inv_std, axis, work, dx_dtype, centered: bool):
    """The layer-norm family's (dX, dscale, dbias) from x_hat, a temporary in `work` that it
    overwrites. `centered`: layer norm (with the mean_row(B) term and dbias) rather than RMS."""
    row_axes, batch_axes = tuple(range(axis, dY.ndim)), tuple(range(axis))
    g = dY.astype(work, copy=False)
    dscale = (g * x_hat).sum(axis=batch_axes)
    dbias = g.sum(axis=batch_axes) if centered else None
    B = g * inv_std.astype(work, copy=False)
    if scale is not None:
        B *= scale.astype(work, copy=False)
    projection = (B * x_hat).mean(axis=row_axes, keepdims=True)
    if centered:  # x_hat = (X - mean) * inv_std also moves with X through the mean
        B -= B.mean(axis=row_axes, keepdims=True)
    x_hat *= projection
    B -= x_hat
    param = param_dtype(dY.dtype, scale)
    return (
        B.astype(dx_dtype, copy=False),
        dscale.astype(param),
        None if dbias is None else dbias.astype(param),
    )


@functools.cache
def _row_kernels(parallel: bool) -> SimpleNamespace:
    """The layer-norm family's numba row kernels for float32 or float64 arrays, defined on first
    use (importing minitrain must not import numba), in a parallel build and a serial one (see
    numba_math.loop). C-contiguous (R, M) rows in parallel, each row's passes in L1; each inner
    sum runs in the arrays' dtype (its zero is `real(0)`, real the arrays' scalar type) so that it
    vectorizes; the parameter gradients are summed per row block and the blocks added by the
    caller."""
    loop = numba_math.loop(parallel)

    @backend.jit(parallel=parallel, fastmath=FASTMATH)
    def rows_forward(x, scale, bias, eps, centered, y, mean, inv_std):
        real = x.dtype.type
        zero = real(0)
        rows, cols = x.shape
        for i in loop(rows):
            row, out = x[i], y[i]
            mu = zero
            if centered:
                total = zero
                for j in range(cols):
                    total += row[j]
                mu = real(total / cols)
            total = zero
            for j in range(cols):
                shifted = row[j] - mu
                total += shifted * shifted
            r = real(1.0 / math.sqrt(total / cols + eps))
            for j in range(cols):
                out[j] = (row[j] - mu) * r * scale[j] + bias[j]
            mean[i], inv_std[i] = mu, r

    @backend.jit(parallel=parallel, fastmath=FASTMATH)
    def rows_backward(
        dy, src, scale, inv_std, row_shift, row_mult, col_shift, col_mult, centered, dx, parts
    ):
        real = src.dtype.type
        zero = real(0)
        rows, cols = src.shape
        blocks = parts.shape[0]
        for k in loop(blocks):
            dscale, dbias = parts[k, 0], parts[k, 1]
            dscale[:] = 0
            dbias[:] = 0
            for i in range(k * rows // blocks, (k + 1) * rows // blocks):
                g_row, s_row, out = dy[i], src[i], dx[i]
                shift, mult, r = row_shift[i], row_mult[i], inv_std[i]
                sum_b = sum_bx = zero
                for j in range(cols):
                    x_hat = (s_row[j] - shift - col_shift[j]) * (mult * col_mult[j])
                    b = g_row[j] * scale[j]
                    sum_b += b
                    sum_bx += b * x_hat
                # B = dY scale r: mean_row(B) = r sum_b / M, mean_row(B x_hat) = r sum_bx / M
                mean_b = real(r * sum_b / cols) if centered else zero
                projection = real(r * sum_bx / cols)
                for j in range(cols):
                    x_hat = (s_row[j] - shift - col_shift[j]) * (mult * col_mult[j])
                    g = g_row[j]
                    out[j] = g * scale[j] * r - mean_b - x_hat * projection
                    dscale[j] += g * x_hat
                    dbias[j] += g

    return SimpleNamespace(rows_forward=rows_forward, rows_backward=rows_backward)


def _numba_rows_forward(x, weight, bias, eps: float, axis: int, centered: bool):
    """(X contiguous, Y, mean, inv_std) of layer norm (`centered`) or RMS norm by the numba row
    kernel, for arrays that the op's `numba_applies` took; the statistics shaped as the generic
    forward's."""
    dtype = x.dtype
    x = np.ascontiguousarray(x)
    cols = math.prod(x.shape[axis:])
    rows = x.size // cols
    y = np.empty_like(x)
    mean, inv_std = np.empty((2, rows), dtype)
    _row_kernels(x.size >= _PARALLEL_WORK).rows_forward(
        x.reshape(rows, cols),
        as_vector(weight, cols, 1, dtype),
        as_vector(bias, cols, 0, dtype),
        eps,
        centered,
        y.reshape(rows, cols),
        mean,
        inv_std,
    )
    shape = _stats_shape(x.shape, axis)
    return x, y, mean.reshape(shape), inv_std.reshape(shape)


def _numba_row_grads(grad, src, scale, inv_std, axis: int, *, mean=None, bias=None, output=False):
    """(dX, dscale, dbias) of the layer-norm family by the numba row kernel, whose forward ran (so
    the arrays share src's dtype). src is X, with x_hat = (X - mean) * inv_std (mean None: RMS
    norm, x_hat = X * inv_std and no dbias), or with `output` the forward output Y, x_hat =
    (Y - bias) / scale."""
    dtype = src.dtype
    cols = math.prod(src.shape[axis:])
    rows = src.size // cols
    centered = output or mean is not None
    if output:  # per-column shift and multiplier
        row_shift, row_mult = np.zeros(rows, dtype), np.ones(rows, dtype)
        col_shift = as_vector(bias, cols, 0, dtype)
        col_mult = np.ones(cols, dtype) if scale is None else 1 / as_vector(scale, cols, 1, dtype)
    else:  # per-row shift and multiplier
        row_shift, row_mult = as_vector(mean, rows, 0, dtype), as_vector(inv_std, rows, 1, dtype)
        col_shift, col_mult = np.zeros(cols, dtype), np.ones(cols, dtype)
    dx = np.empty(src.shape, dtype)
    parts = np.empty((row_blocks(rows), 2, cols), dtype)
    _row_kernels(src.size >= _PARALLEL_WORK).rows_backward(
        np.ascontiguousarray(grad).reshape(rows, cols),
        np.ascontiguousarray(src).reshape(rows, cols),
        as_vector(scale, cols, 1, dtype),
        as_vector(inv_std, rows, 1, dtype),
        row_shift,
        row_mult,
        col_shift,
        col_mult,
        centered,
        dx.reshape(rows, cols),
        parts,
    )
    dscale, dbias = parts.sum(axis=0).reshape((2,) + src.shape[axis:])
    return dx, dscale, dbias if centered else None


def _tensor_row_grads(ctx, grad, centered: bool) -> tuple:
    """(dx, dscale, dbias) of layer norm (`centered`) or RMS norm in tensor ops, from the saved
    x and scale as Tensors: the family's tensor_backward."""
    x, axis = ctx.x, ctx.axis
    row_axes, batch_axes = tuple(range(axis, x.ndim)), tuple(range(axis))
    x_hat, inv_std = tensor_statistics(x, ctx.eps, row_axes, centered)
    return tensor_normalization_grads(
        grad, x_hat, inv_std, ctx.scale, row_axes, batch_axes, None, centered
    )


def layer_norm_grad(dY, X, scale, mean, inv_std, axis: int = -1):
    """LayerNormalizationGrad: (dX, dscale, dbias) of layer norm over the dims from `axis` on.

    X and dY: R rows of M = prod(X.shape[axis:]) values; scale: X.shape[axis:] (None means 1);
    mean and inv_std: one per row, shaped X.shape[:axis] + (1,) * k. With x_hat = (X - mean) *
    inv_std and B = dY * scale * inv_std, per row:

        dX     = B - mean_row(B) - x_hat * mean_row(B * x_hat)
        dscale = sum over rows(dY * x_hat)
        dbias  = sum over rows(dY)
    """
    kernel = "layer_norm_grad"
    check_same_shape(kernel, dY, X, "X")
    axis = _row_axis(kernel, X.shape, axis, "X")
    check_shape(kernel, "scale", scale, X.shape[axis:], f"X {tuple(X.shape)}, axis {axis}")
    _check_row_stats(kernel, X.shape, axis, mean=mean, inv_std=inv_std)
    work = work_dtype(dY, X, inv_std)
    x_hat = X.astype(work, copy=False) - mean.astype(work, copy=False)
    x_hat *= inv_std.astype(work, copy=False)
    return _row_grads(dY, x_hat, scale, inv_std, axis, work, X.dtype, centered=True)


class LayerNorm(Op):
    """Layer normalization of x over its dims from `axis` on (see `layer_norm`). On the CPU with
    numba enabled, a fused row kernel runs instead (rows in parallel for large inputs)."""

    name = "layer_norm"
    inputs = ("x", "weight", "bias")
    saved_as = {"scale": "weight"}  # the kernels' name for the weight
    attrs = ("axis", "eps")
    saved = ("x", "scale", "mean", "inv_std")
    grad_kernel = "LayerNormalizationGrad"
    exact_dtype = True
    fused_backward = "layer_norm 8192x768"

    @staticmethod
    def forward(ctx, x, weight, bias):
        _check_rows(LayerNorm.name, x, weight, bias, ctx.axis)
        y, mean, inv_std = _layer_norm_forward(ctx.xp, x, weight, bias, ctx.eps, ctx.axis, True)
        ctx.save(x=x, scale=weight, mean=mean, inv_std=inv_std)
        return y

    @staticmethod
    def numba_forward(ctx, x, weight, bias):
        _check_rows(LayerNorm.name, x, weight, bias, ctx.axis)
        x, y, mean, inv_std = _numba_rows_forward(x, weight, bias, ctx.eps, ctx.axis, True)
        ctx.save(x=x, scale=weight, mean=mean, inv_std=inv_std)
        return y

    @staticmethod
    def backward(ctx, grad):
        """dx = B - mean_row(B) - x_hat * mean_row(B * x_hat), with B = grad * scale * inv_std.

        scale is the saved weight (None counts as 1); its gradient dscale = sum over rows(grad *
        x_hat), and dbias = sum over rows(grad); x_hat = (x - mean) * inv_std (kernel:
        layer_norm_grad)."""
        grads = layer_norm_grad(grad, ctx.x, ctx.scale, ctx.mean, ctx.inv_std, ctx.axis)
        return needed_grads(ctx, grads)

    @staticmethod
    def numba_backward(ctx, grad):
        grads = _numba_row_grads(grad, ctx.x, ctx.scale, ctx.inv_std, ctx.axis, mean=ctx.mean)
        return needed_grads(ctx, grads)

    @staticmethod
    def tensor_backward(ctx, grad):
        """backward in tensor ops, mean and inv_std recomputed from x so that a second
        derivative sees them move with it."""
        return needed_grads(ctx, _tensor_row_grads(ctx, grad, centered=True))


def _check_no_zero(caller: str, name: str, scale) -> None:
    """The invertible layer norm divides by scale: refuse a zero (never return inf or nan)."""
    if scale is not None and bool((scale == 0).any()):
        index = tuple(int(i) for i in np.argwhere(backend.to_device(scale == 0, backend.CPU))[0])
        raise ArgumentError(
            f"{caller}: {name} {tuple(scale.shape)} has a zero at {index}, so x_hat = (Y - bias) "
            f"/ {name} cannot be rebuilt from Y; use the standard layer norm, which keeps X"
        )


def invertible_layer_norm_grad(dY, Y, scale, bias, inv_std, axis: int = -1):
    """InvertibleLayerNormalizationGrad: layer_norm_grad from the forward *output* Y.

    The same (dX, dscale, dbias) as `layer_norm_grad`, with x_hat = (Y - bias) / scale rebuilt
    from Y (bias None means 0, scale None means 1), so the forward need not keep X. A zero in
    scale makes that undefined: it raises ValueError rather than return inf or nan. dX comes back
    in Y's dtype (X's is not known here).
    """
    kernel = "invertible_layer_norm_grad"
    check_same_shape(kernel, dY, Y, "Y")
    axis = _row_axis(kernel, Y.shape, axis, "Y")
    context = f"Y {tuple(Y.shape)}, axis {axis}"
    check_shape(kernel, "scale", scale, Y.shape[axis:], context)
    check_shape(kernel, "bias", bias, Y.shape[axis:], context)
    _check_row_stats(kernel, Y.shape, axis, inv_std=inv_std)
    _check_no_zero(kernel, "scale", scale)
    work = work_dtype(dY, Y, inv_std)
    x_hat = Y.astype(work) if bias is None else Y.astype(work) - bias.astype(work, copy=False)
    if scale is not None:
        x_hat /= scale.astype(work, copy=False)
    return _row_grads(dY, x_hat, scale, inv_std, axis, work, Y.dtype, centered=True)


class InvertibleLayerNorm(Op):
    """Layer normalization that saves its output instead of x: backward rebuilds x_hat =
    (out - bias) / weight, so x can be freed. Refuses a weight with a zero (`layer_norm` falls
    back to LayerNorm there). On the CPU with numba enabled, fused row kernels run instead.
    Higher derivatives need no x either: only its place in the graph (tensor_backward)."""

    name = "invertible_layer_norm"
    inputs = ("x", "weight", "bias")
    saved_as = {"scale": "weight"}  # the kernels' name for the weight
    attrs = ("axis", "eps")
    saved = ("out", "scale", "bias", "inv_std")
    grad_kernel = "InvertibleLayerNormalizationGrad"
    exact_dtype = True
    fused_backward = "layer_norm 8192x768"  # its numba row kernel is layer norm's

    @staticmethod
    def forward(ctx, x, weight, bias):
        _check_rows(InvertibleLayerNorm.name, x, weight, bias, ctx.axis)
        _check_no_zero(InvertibleLayerNorm.name, "weight", weight)
        y, _, inv_std = _layer_norm_forward(ctx.xp, x, weight, bias, ctx.eps, ctx.axis, True)
        ctx.save(out=y, scale=weight, bias=bias, inv_std=inv_std)
        return y

    @staticmethod
    def numba_forward(ctx, x, weight, bias):
        _check_rows(InvertibleLayerNorm.name, x, weight, bias, ctx.axis)
        _check_no_zero(InvertibleLayerNorm.name, "weight", weight)
        _, y, _, inv_std = _numba_rows_forward(x, weight, bias, ctx.eps, ctx.axis, True)
        ctx.save(out=y, scale=weight, bias=bias, inv_std=inv_std)
        return y

    @staticmethod
    def backward(ctx, grad):
        """dx = B - mean_row(B) - x_hat * mean_row(B * x_hat), with B = grad * scale * inv_std.

        As layer_norm's, with x_hat = (out - bias) / scale rebuilt from the saved output out:
        dscale (the weight's gradient) = sum over rows(grad * x_hat), dbias = sum over rows(grad)
        (kernel: invertible_layer_norm_grad)."""
        grads = invertible_layer_norm_grad(
            grad, ctx.out, ctx.scale, ctx.bias, ctx.inv_std, ctx.axis
        )
        return needed_grads(ctx, grads)

    @staticmethod
    def numba_backward(ctx, grad):
        grads = _numba_row_grads(
            grad, ctx.out, ctx.scale, ctx.inv_std, ctx.axis, bias=ctx.bias, output=True
        )
        return needed_grads(ctx, grads)

    @staticmethod
    def tensor_backward(ctx, grad):
        """backward in tensor ops without x: x_hat = (out - bias) / scale, which moves with x,
        scale and bias through out (its derivatives in scale and bias cancel to 0, as they
        should), and inv_std as a RowInvStd on x's place in the graph."""
        x_hat = ctx.out if ctx.bias is None else ctx.out - ctx.bias
        if ctx.scale is not None:
            x_hat = x_hat / ctx.scale
        row_axes, batch_axes = tuple(range(ctx.axis, x_hat.ndim)), tuple(range(ctx.axis))
        grads = tensor_normalization_grads(
            grad, x_hat, _inv_std_of_x(ctx, x_hat), ctx.scale, row_axes, batch_axes, None, True
        )
        return needed_grads(ctx, grads)


class RowInvStd(Op, register=False):
    """The invertible layer norm's inv_std = 1 / sqrt(var_row(x) + eps) for its tensor_backward,
    which has no x: the value is the forward's (the attribute inv_std), and the derivative
    comes from x_hat, rebuilt from the output. Input x stands for x's place in the graph: its
    values are not read, so it may be a placeholder without memory."""

    name = "row_inv_std"
    inputs = ("x", "x_hat")
    attrs = ("inv_std", "count")
    saved = ("out", "x_hat")
    exact_dtype = True

    @staticmethod
    def forward(ctx, x, x_hat):
        ctx.save(out=ctx.inv_std, x_hat=x_hat)
        return ctx.inv_std

    @staticmethod
    def backward(ctx, grad):
        """dx = -grad * out^2 * x_hat / M; x_hat gets none (it only gives x's direction).

        From dvar_row/dx = 2 (x - mean) / M and out = (var_row + eps)^(-1/2): dout/dx = -out^3
        (x - mean) / M = -out^2 x_hat / M, per row of M = count values."""
        return -(grad * ctx.out * ctx.out * ctx.x_hat) / ctx.count, None

    # arithmetic on grad, out and x_hat, Tensors under create_graph: differentiable again


def _inv_std_of_x(ctx, x_hat) -> Tensor:
    """inv_std of an invertible layer norm's tensor_backward (ctx), as a Tensor that moves with
    x: a RowInvStd on x's place in the graph (`input_place`: the invertible norm keeps no x);
    the saved constant where x needs no gradient."""
    place = input_place(ctx, 0)
    if place is None:
        return Tensor.wrap(ctx.inv_std)
    count = math.prod(ctx.shapes[0][ctx.axis :])
    return RowInvStd.apply(place, x_hat, inv_std=ctx.inv_std, count=count)


def layer_norm(
    x,
    normalized_shape=None,
    weight=None,
    bias=None,
    eps: float = 1e-5,
    *,
    axis: int | None = None,
    invertible: bool = False,
) -> Tensor:
    """Layer normalization over the last dims of x: those of `normalized_shape` (PyTorch's), or
    every dim from `axis` on (default -1); at least one value per row (one gives x_hat = 0).

    Per row: Y = weight * (x - mean) / sqrt(var + eps) + bias, var biased. weight and bias have
    the normalized shape and are optional (PyTorch's elementwise_affine=False, bias=False); one
    op (LayerNormalizationGrad). `invertible=True` saves the output instead of x and rebuilds
    x_hat = (Y - bias) / weight in backward (InvertibleLayerNormalizationGrad), so x can be freed;
    where weight has a zero (a zero-initialised gain, say) that is undefined, and the standard op
    runs instead.
    """
    caller = "layer_norm"
    x = as_tensor(x)
    axis = _normalized_axis(caller, x.shape, normalized_shape, axis)
    op = LayerNorm
    if invertible:
        gain = array_of(weight)
        op = LayerNorm if gain is not None and bool((gain == 0).any()) else InvertibleLayerNorm
    return op.apply(x, weight, bias, axis=axis, eps=check_eps(caller, eps))


def simplified_layer_norm_grad(dY, X, scale, inv_std, axis: int = -1):
    """SimplifiedLayerNormalizationGrad: (dX, dscale) of RMS norm over the dims from `axis` on.

    inv_std = 1 / sqrt(mean_row(X^2) + eps), one per row (X.shape[:axis] + (1,) * k); with
    x_hat = X * inv_std and B = dY * scale * inv_std:

        dX     = B - x_hat * mean_row(B * x_hat)        (no mean_row(B) term: nothing centred)
        dscale = sum over rows(dY * x_hat)
    """
    kernel = "simplified_layer_norm_grad"
    check_same_shape(kernel, dY, X, "X")
    axis = _row_axis(kernel, X.shape, axis, "X")
    check_shape(kernel, "scale", scale, X.shape[axis:], f"X {tuple(X.shape)}, axis {axis}")
    _check_row_stats(kernel, X.shape, axis, inv_std=inv_std)
    work = work_dtype(dY, X, inv_std)
    x_hat = X.astype(work) * inv_std.astype(work, copy=False)
    dX, dscale, _ = _row_grads(dY, x_hat, scale, inv_std, axis, work, X.dtype, centered=False)
    return dX, dscale


class RMSNorm(Op):
    """RMS normalization of x over its dims from `axis` on (see `rms_norm`). On the CPU with numba
    enabled, a fused row kernel runs instead (rows in parallel for large inputs)."""

    name = "rms_norm"
    inputs = ("x", "weight")
    saved_as = {"scale": "weight"}  # the kernels' name for the weight
    attrs = ("axis", "eps")
    saved = ("x", "scale", "inv_std")
    grad_kernel = "SimplifiedLayerNormalizationGrad"
    exact_dtype = True
    fused_backward = "rms_norm 8192x768"

    @staticmethod
    def forward(ctx, x, weight):
        _check_rows(RMSNorm.name, x, weight, None, ctx.axis)
        y, _, inv_std = _layer_norm_forward(ctx.xp, x, weight, None, ctx.eps, ctx.axis, False)
        ctx.save(x=x, scale=weight, inv_std=inv_std)
        return y

    @staticmethod
    def numba_forward(ctx, x, weight):
        _check_rows(RMSNorm.name, x, weight, None, ctx.axis)
        x, y, _, inv_std = _numba_rows_forward(x, weight, None, ctx.eps, ctx.axis, False)
        ctx.save(x=x, scale=weight, inv_std=inv_std)
        return y

    @staticmethod
    def backward(ctx, grad):
        """dx = B - x_hat * mean_row(B * x_hat), with B = grad * scale * inv_std.

        scale is the saved weight (None counts as 1); its gradient dscale = sum over rows(grad *
        x_hat); x_hat = x * inv_std. No mean_row(B) term: nothing is centred (kernel:
        simplified_layer_norm_grad)."""
        grads = simplified_layer_norm_grad(grad, ctx.x, ctx.scale, ctx.inv_std, ctx.axis)
        return needed_grads(ctx, grads)

    @staticmethod
    def numba_backward(ctx, grad):
        grads = _numba_row_grads(grad, ctx.x, ctx.scale, ctx.inv_std, ctx.axis)
        return needed_grads(ctx, grads[:2])

    @staticmethod
    def tensor_backward(ctx, grad):
        """backward in tensor ops, inv_std recomputed from x so that a second derivative sees
        it move with x."""
        return needed_grads(ctx, _tensor_row_grads(ctx, grad, centered=False)[:2])


def rms_norm(
    x, normalized_shape=None, weight=None, eps: float | None = None, *, axis: int | None = None
) -> Tensor:
    """RMS normalization over the last dims of x (`normalized_shape`, PyTorch's) or every dim from
    `axis` on (default -1): Y = weight * x / sqrt(mean_row(x^2) + eps), at least one value per row;
    one op (SimplifiedLayerNormalizationGrad). weight is optional. eps=None is PyTorch's default,
    the machine epsilon of the dtype the statistics are computed in: float32's for float16 and
    float32 input, float64's for float64.
    """
    caller = "rms_norm"
    x = as_tensor(x)
    axis = _normalized_axis(caller, x.shape, normalized_shape, axis)
    eps = float(np.finfo(work_dtype(x.data)).eps) if eps is None else check_eps(caller, eps)
    return RMSNorm.apply(x, weight, axis=axis, eps=eps)


def group_norm(x, num_groups: int, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Group normalization (PyTorch's GroupNorm) of x (N, C, *): each sample's channels in
    num_groups groups of C / num_groups, each group normalized over its channels and positions
    (biased variance), then per-channel weight and bias (C,), both optional.

    The statistics are those of a layer norm over the rows of x viewed as (N, num_groups, C /
    num_groups * positions), so it runs as the LayerNorm op (LayerNormalizationGrad) on that
    view; the per-channel affine is a broadcast multiply and add.
    """
    caller = "group_norm"
    x = as_tensor(x)
    if x.ndim < 2:
        raise ShapeError(f"{caller}: x must be (N, C, *), got shape {x.shape}")
    if isinstance(num_groups, bool) or not isinstance(num_groups, (int, np.integer)):
        raise DTypeError(f"{caller}: num_groups must be an int, got {num_groups!r}")
    channels = x.shape[1]
    if num_groups < 1 or channels % num_groups:
        raise ArgumentError(
            f"{caller}: num_groups ({num_groups}) must be >= 1 and divide the channels of x "
            f"{x.shape} ({channels})"
        )
    for name, value in (("weight", weight), ("bias", bias)):
        if value is not None:
            check_shape(caller, name, value, (channels,), f"for x {x.shape}")
    eps = check_eps(caller, eps)
    per_group = channels // num_groups * math.prod(x.shape[2:])
    y = x  # no positions: nothing to normalize, as in PyTorch
    if per_group:
        rows = layer_norm(reshape(x, (x.shape[0], int(num_groups), per_group)), eps=eps)
        y = reshape(rows, x.shape)
    per_channel = (channels,) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = mul(y, reshape(weight, per_channel))
    return y if bias is None else add(y, reshape(bias, per_channel))
