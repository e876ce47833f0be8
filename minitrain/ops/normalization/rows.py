"""What the layer-norm family (layer norm, its invertible form, RMS norm) shares: the checks of
its axis, rows and statistics, the generic forward and gradients over rows, the numba row kernels
(one pair for the three ops) and the backward in tensor ops.

A row is the values from `axis` on, normalized together: X is R rows of M values. Dtypes follow
the T/U/V scheme of normalization_common. On the CPU with numba enabled, float32 and float64
inputs run the fused row kernels instead of the generic ones (rows in parallel for large inputs,
see _PARALLEL_WORK).
"""

from __future__ import annotations

import functools
import math
from types import SimpleNamespace

import numpy as np

from ... import backend
from ...errors import ArgumentError, DTypeError, ShapeError
from ..core import numba_math
from ..core.checks import check_floating, check_shape, normalize_axis
from .common import (
    FASTMATH,
    as_vector,
    param_dtype,
    row_blocks,
    scale_shift,
    tensor_normalization_grads,
    tensor_statistics,
    work_dtype,
)

__all__ = [
    "check_row_stats",
    "check_rows",
    "layer_norm_forward",
    "normalized_axis",
    "numba_row_grads",
    "numba_rows_forward",
    "row_axis",
    "row_grads",
    "tensor_row_grads",
]

# Elements of X from which the numba row kernels run their parallel build; below it the serial
# one, as a parallel region can wait milliseconds for a core (see numba_math.loop).
_PARALLEL_WORK = 1 << 20


def row_axis(caller: str, shape: tuple, axis, name: str = "x") -> int:
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


def normalized_axis(caller: str, shape: tuple, normalized_shape, axis) -> int:
    """The first normalized dim, from PyTorch's normalized_shape (the last dims of x) or an axis
    (default -1); checked, non-negative."""
    if normalized_shape is not None and axis is not None:
        raise ArgumentError(f"{caller}: give normalized_shape or axis, not both")
    if normalized_shape is None:
        return row_axis(caller, shape, -1 if axis is None else axis)
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


def check_row_stats(caller: str, shape: tuple, axis: int, **stats) -> None:
    """Each named statistic (None skipped) must hold one value per row, shaped to broadcast."""
    expected = _stats_shape(shape, axis)
    for name, value in stats.items():
        check_shape(caller, name, value, expected, f"one per row of X {tuple(shape)}, axis {axis}")


def check_rows(caller: str, x, weight, bias, axis: int) -> None:
    """Check a layer-norm family op's arrays (None: absent) and its (non-negative) axis."""
    check_floating(caller, x=x, weight=weight, bias=bias)
    axis = row_axis(caller, x.shape, axis)
    context = f"the normalized dims of x {tuple(x.shape)} from axis {axis}"
    for name, value in (("weight", weight), ("bias", bias)):
        check_shape(caller, name, value, tuple(x.shape[axis:]), context)


def layer_norm_forward(xp, x, scale, bias, eps: float, axis: int, centered: bool):
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


def row_grads(dY, x_hat, scale, inv_std, axis, work, dx_dtype, centered: bool):
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


def numba_rows_forward(x, weight, bias, eps: float, axis: int, centered: bool):
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


def numba_row_grads(grad, src, scale, inv_std, axis: int, *, mean=None, bias=None, output=False):
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


def tensor_row_grads(ctx, grad, centered: bool) -> tuple:
    """(dx, dscale, dbias) of layer norm (`centered`) or RMS norm in tensor ops, from the saved
    x and scale as Tensors: the family's tensor_backward."""
    x, axis = ctx.x, ctx.axis
    row_axes, batch_axes = tuple(range(axis, x.ndim)), tuple(range(axis))
    x_hat, inv_std = tensor_statistics(x, ctx.eps, row_axes, centered)
    return tensor_normalization_grads(
        grad, x_hat, inv_std, ctx.scale, row_axes, batch_axes, None, centered
    )
