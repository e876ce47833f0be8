"""Normalization: batch norm, layer norm, invertible layer norm and RMS norm, their gradient
kernels (KERNELS.md sections 2 and 3), their numba kernels, and batch norm composed from primitive
ops as the readable specification of the fused kernel.

Dtypes follow KERNELS.md's three-type scheme. T: the input X and dX. U: the statistics (mean,
inv_std) and every accumulation, float64 for float64 input and float32 otherwise, never float16.
V: the parameters (scale, bias), the output Y, dY and the parameter gradients; V is the
parameters' dtype, or X's without parameters. PyTorch returns Y in X's dtype instead: the two agree
whenever X and the parameters share a dtype.

Each op saves exactly what its gradient kernel reads: BatchNorm X, scale, saved_mean and
saved_inv_std; LayerNorm X, scale, mean and inv_std; RMSNorm X, scale and inv_std; the invertible
layer norm its *output* Y, scale, bias and inv_std, so X can be freed. On the CPU with numba
enabled, float32 and float64 inputs run fused numba kernels instead of the generic ones (batch norm
by channels, the layer norm family by rows; in parallel for large inputs, see _PARALLEL_WORK).
"""

from __future__ import annotations

import functools
import importlib
import math
from types import SimpleNamespace

import numpy as np

from .. import backend
from ..errors import ArgumentError, DTypeError, ShapeError
from ..tensor import Tensor
from . import numba_math, reduction
from .elementwise import add, div, mul, sqrt
from .reduction import normalize_axis
from .registry import Op
from .shape import reshape

_FLOAT64 = np.dtype(np.float64)


# --- dtypes and checks --------------------------------------------------------------------------


def _work_dtype(*arrays) -> np.dtype:
    """U: float64 when any of the arrays (None skipped) is float64, else float32."""
    if any(a is not None and a.dtype == _FLOAT64 for a in arrays):
        return _FLOAT64
    return np.dtype(np.float32)


def _param_dtype(fallback, *params) -> np.dtype:
    """V: the parameters' common dtype (None skipped), or `fallback` without parameters."""
    dtypes = [p.dtype for p in params if p is not None]
    return np.result_type(*dtypes) if dtypes else np.dtype(fallback)


def _data(value):
    """The array behind a Tensor; arrays and None as they are, anything else as an array."""
    if value is None or backend.is_array(value):
        return value
    return value.data if isinstance(value, Tensor) else np.asarray(value)


def _check_float(where: str, name: str, array) -> None:
    if array is not None and array.dtype.kind != "f":
        raise DTypeError(f"{where}: '{name}' must be floating point, got {array.dtype}")


def _check_eps(where: str, eps) -> float:
    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.integer, np.floating)):
        raise DTypeError(f"{where}: eps must be a number, got {type(eps).__name__}")
    if not (math.isfinite(eps) and eps >= 0):
        raise ArgumentError(f"{where}: eps must be finite and >= 0, got {eps}")
    return float(eps)


def _check_shape(where: str, name: str, value, expected: tuple, context: str) -> None:
    if value is not None and tuple(value.shape) != expected:
        raise ShapeError(
            f"{where}: {name} {tuple(value.shape)} must have shape {expected} ({context})"
        )


def _check_same_shape(where: str, dY, other, other_name: str) -> None:
    if dY.shape != other.shape:
        raise ShapeError(
            f"{where}: dY {tuple(dY.shape)} and {other_name} {tuple(other.shape)} must have the "
            f"same shape"
        )


def _channel_layout(
    where: str, shape: tuple, training: bool = True, name: str = "x"
) -> tuple[int, int]:
    """(C, M) of a batch-norm input (N, C, *spatial): channels, and values per channel, which
    training needs more than one of."""
    if not 2 <= len(shape) <= 5:
        raise ShapeError(
            f"{where}: {name} must be (N, C) or (N, C, *spatial) with 1 to 3 spatial dims, got "
            f"shape {tuple(shape)}"
        )
    count = math.prod(shape[:1] + shape[2:])
    if training and count < 2:
        raise ShapeError(
            f"{where}: training needs more than one value per channel, but {name} "
            f"{tuple(shape)} has M = {count} (N times the spatial size)"
        )
    return shape[1], count


def _channel_axes(ndim: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The axes batch norm reduces over, and the shape that broadcasts (C,) along axis 1."""
    return (0, *range(2, ndim)), (1, -1) + (1,) * (ndim - 2)


def _row_axis(where: str, shape: tuple, axis, name: str = "x") -> int:
    """The layer-norm family's first normalized dim, checked and made non-negative: the rows
    it leaves must hold at least one value each (with one, layer norm's x_hat is 0 and RMS
    norm's x / sqrt(x^2 + eps), as in PyTorch)."""
    if not shape:
        raise ShapeError(f"{where}: {name} must have at least one dim, got a 0-d tensor")
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise DTypeError(f"{where}: axis must be one int, got {axis!r}")
    (axis,) = normalize_axis(axis, len(shape), where)
    count = math.prod(shape[axis:])
    if count == 0:
        raise ShapeError(
            f"{where}: normalizing over M = 0 values per row ({name} {tuple(shape)}, axis "
            f"{axis}); the normalized dims must hold at least one value"
        )
    return axis


def _stats_shape(shape: tuple, axis: int) -> tuple:
    """Per-row statistics kept so they broadcast: dims[:axis] + (1,) * k."""
    return tuple(shape[:axis]) + (1,) * (len(shape) - axis)


def _check_row_stats(where: str, shape: tuple, axis: int, **stats) -> None:
    expected = _stats_shape(shape, axis)
    for name, value in stats.items():
        _check_shape(where, name, value, expected, f"one per row of X {tuple(shape)}, axis {axis}")


def _check_no_zero(where: str, name: str, scale) -> None:
    """The invertible layer norm divides by scale: refuse a zero (never return inf or nan)."""
    if scale is not None and bool((scale == 0).any()):
        index = tuple(int(i) for i in np.argwhere(backend.to_device(scale == 0, backend.CPU))[0])
        raise ArgumentError(
            f"{where}: {name} {tuple(scale.shape)} has a zero at {index}, so x_hat = (Y - bias) / "
            f"{name} cannot be rebuilt from Y; use the standard layer norm, which keeps X"
        )


# --- kernels ------------------------------------------------------------------------------------


def batch_norm_grad(dY, X, scale, saved_mean, saved_inv_std):
    """BatchNormalizationGrad: (dX, dscale, dbias) of training-mode batch norm.

    X and dY: (N, C) or (N, C, *spatial) with 1 to 3 spatial dims; scale, saved_mean and
    saved_inv_std: (C,) (scale None means 1: the layer without affine parameters). Per channel,
    over the M = N * prod(spatial) values, with x_hat = (X - saved_mean) * saved_inv_std:

        dbias  = sum(dY)
        dscale = sum(dY * x_hat)
        dX     = scale * saved_inv_std * (dY - mean(dY) - x_hat * mean(dY * x_hat))

    There is no N/(N-1) factor (it fails a gradient check); eps is already in saved_inv_std.
    Accumulates in float32 (float64 when an input is float64); dX comes back in X's dtype, dscale
    and dbias in scale's (dY's without scale).
    """
    kernel = "batch_norm_grad"
    _check_same_shape(kernel, dY, X, "X")
    channels, count = _channel_layout(kernel, X.shape, name="X")
    context = f"one per channel of X {tuple(X.shape)}"
    for name, value in (
        ("scale", scale),
        ("saved_mean", saved_mean),
        ("saved_inv_std", saved_inv_std),
    ):
        _check_shape(kernel, name, value, (channels,), context)
    work = _work_dtype(dY, X, saved_inv_std)
    axes, shape = _channel_axes(X.ndim)
    inv_std = saved_inv_std.astype(work, copy=False).reshape(shape)
    x_hat = X.astype(work, copy=False) - saved_mean.astype(work, copy=False).reshape(shape)
    x_hat *= inv_std
    g = dY.astype(work, copy=False)
    dbias = g.sum(axis=axes)
    dscale = (g * x_hat).sum(axis=axes)
    gain = inv_std if scale is None else scale.astype(work, copy=False).reshape(shape) * inv_std
    x_hat *= (dscale / count).reshape(shape)
    dX = gain * (g - (dbias / count).reshape(shape) - x_hat)
    param = _param_dtype(dY.dtype, scale)
    return dX.astype(X.dtype, copy=False), dscale.astype(param), dbias.astype(param)


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
    _check_same_shape(kernel, dY, X, "X")
    axis = _row_axis(kernel, X.shape, axis, "X")
    _check_shape(kernel, "scale", scale, X.shape[axis:], f"X {tuple(X.shape)}, axis {axis}")
    _check_row_stats(kernel, X.shape, axis, mean=mean, inv_std=inv_std)
    work = _work_dtype(dY, X, inv_std)
    x_hat = X.astype(work, copy=False) - mean.astype(work, copy=False)
    x_hat *= inv_std.astype(work, copy=False)
    return _row_grads(dY, x_hat, scale, inv_std, axis, work, X.dtype, centered=True)


def invertible_layer_norm_grad(dY, Y, scale, bias, inv_std, axis: int = -1):
    """InvertibleLayerNormalizationGrad: layer_norm_grad from the forward *output* Y.

    The same (dX, dscale, dbias) as `layer_norm_grad`, with x_hat = (Y - bias) / scale rebuilt
    from Y (bias None means 0, scale None means 1), so the forward need not keep X. A zero in
    scale makes that undefined: it raises ValueError rather than return inf or nan. dX comes back
    in Y's dtype (X's is not known here).
    """
    kernel = "invertible_layer_norm_grad"
    _check_same_shape(kernel, dY, Y, "Y")
    axis = _row_axis(kernel, Y.shape, axis, "Y")
    context = f"Y {tuple(Y.shape)}, axis {axis}"
    _check_shape(kernel, "scale", scale, Y.shape[axis:], context)
    _check_shape(kernel, "bias", bias, Y.shape[axis:], context)
    _check_row_stats(kernel, Y.shape, axis, inv_std=inv_std)
    _check_no_zero(kernel, "scale", scale)
    work = _work_dtype(dY, Y, inv_std)
    x_hat = Y.astype(work) if bias is None else Y.astype(work) - bias.astype(work, copy=False)
    if scale is not None:
        x_hat /= scale.astype(work, copy=False)
    return _row_grads(dY, x_hat, scale, inv_std, axis, work, Y.dtype, centered=True)


def simplified_layer_norm_grad(dY, X, scale, inv_std, axis: int = -1):
    """SimplifiedLayerNormalizationGrad: (dX, dscale) of RMS norm over the dims from `axis` on.

    inv_std = 1 / sqrt(mean_row(X^2) + eps), one per row (X.shape[:axis] + (1,) * k); with
    x_hat = X * inv_std and B = dY * scale * inv_std:

        dX     = B - x_hat * mean_row(B * x_hat)        (no mean_row(B) term: nothing centred)
        dscale = sum over rows(dY * x_hat)
    """
    kernel = "simplified_layer_norm_grad"
    _check_same_shape(kernel, dY, X, "X")
    axis = _row_axis(kernel, X.shape, axis, "X")
    _check_shape(kernel, "scale", scale, X.shape[axis:], f"X {tuple(X.shape)}, axis {axis}")
    _check_row_stats(kernel, X.shape, axis, inv_std=inv_std)
    work = _work_dtype(dY, X, inv_std)
    x_hat = X.astype(work) * inv_std.astype(work, copy=False)
    dX, dscale, _ = _row_grads(dY, x_hat, scale, inv_std, axis, work, X.dtype, centered=False)
    return dX, dscale


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
    param = _param_dtype(dY.dtype, scale)
    return (
        B.astype(dx_dtype, copy=False),
        dscale.astype(param),
        None if dbias is None else dbias.astype(param),
    )


# --- generic forwards ---------------------------------------------------------------------------


def _batch_norm_forward(xp, x, scale, bias, eps: float):
    """(Y, mean, var, inv_std) of training-mode batch norm: per channel, over the M values of
    N and every spatial position, mean = sum(X) / M, var = sum((X - mean)^2) / M (biased) and
    Y = scale * (X - mean) * inv_std + bias with inv_std = 1 / sqrt(var + eps)."""
    work = _work_dtype(x)
    axes, shape = _channel_axes(x.ndim)
    x_work = x.astype(work, copy=False)
    mean = x_work.mean(axis=axes)
    x_hat = x_work - mean.reshape(shape)
    var = xp.square(x_hat).mean(axis=axes)
    inv_std = 1 / xp.sqrt(var + eps)
    x_hat *= inv_std.reshape(shape)
    y = _scale_shift(x_hat, scale, bias, shape, work)
    return y.astype(_param_dtype(x.dtype, scale, bias), copy=False), mean, var, inv_std


def _layer_norm_forward(xp, x, scale, bias, eps: float, axis: int, centered: bool):
    """(Y, mean, inv_std) of layer norm over the dims from `axis` on (`centered`), or of RMS norm
    (mean None). Per row: mean = mean_row(X), inv_std = 1 / sqrt(mean_row((X - mean)^2) + eps)
    and Y = scale * (X - mean) * inv_std + bias; RMS norm takes mean = 0 and no bias."""
    work = _work_dtype(x)
    row_axes = tuple(range(axis, x.ndim))
    x_hat = x.astype(work)  # a copy: normalized in place below
    mean = None
    if centered:
        mean = x_hat.mean(axis=row_axes, keepdims=True)
        x_hat -= mean
    inv_std = 1 / xp.sqrt(xp.square(x_hat).mean(axis=row_axes, keepdims=True) + eps)
    x_hat *= inv_std
    y = _scale_shift(x_hat, scale, bias, x.shape[axis:], work)
    return y.astype(_param_dtype(x.dtype, scale, bias), copy=False), mean, inv_std


def _scale_shift(x_hat, scale, bias, shape, work):
    """x_hat * scale + bias in place (None parameters skipped), the parameters as `shape`."""
    if scale is not None:
        x_hat *= scale.astype(work, copy=False).reshape(shape)
    if bias is not None:
        x_hat += bias.astype(work, copy=False).reshape(shape)
    return x_hat


# --- numba kernels ------------------------------------------------------------------------------

# "reassoc" lets LLVM split each sum into vector lanes and "contract" fuse multiply-adds; NaN and
# inf keep their meaning.
_FASTMATH = {"reassoc", "contract"}
# Batch norm runs channel by channel where a channel has at least this many values side by side
# (S = prod(spatial)), row by row over the (N, C * S) matrix below that: one value per cache line
# would make a channel's passes latency-bound (measured on 2 cores: (32768, 64) runs 7x slower
# by channel than by rows; from S = 3 on, by channel is the faster).
_CHANNEL_RUN = 3
# Elements of X from which batch norm's and the layer-norm family's kernels run their parallel
# build; below it the serial one, as a parallel region can wait ~2 ms for a core (see
# numba_math.loop): the CNN benchmark's batch norms (800k and 400k elements) run serially.
_PARALLEL_WORK = {"batch_norm": 1 << 20, "rows": 1 << 20}


@functools.cache
def _numba_kernels(parallel: bool) -> SimpleNamespace:
    """The numba kernels for float32 or float64 arrays, defined on first use (importing
    minitrain must not import numba), in a parallel build and a serial one (see
    numba_math.loop); each inner sum runs in the arrays' dtype (its zero is `real(0)`, real
    the arrays' scalar type) so that it vectorizes.

    Batch norm, by channel (`channels_*`): C-contiguous (N, C, S) arrays (S = prod(spatial)),
    channels in parallel, each channel's passes (sum, centred squares, output) reading its values
    from memory once and then from cache; each inner sum runs over one (n, c) run of S values in
    the array's dtype and adds into a float64 total. Batch norm, by rows (`columns_*`): the
    (N, C * S) matrix, rows in parallel blocks, per-column sums kept per block (added up, and
    folded per channel, by the caller) and a per-column affine output pass. The layer-norm family
    (`rows_*`): C-contiguous (R, M) rows in parallel, each row's passes in L1; the parameter
    gradients summed per row block and the blocks added by the caller.
    """
    loop = numba_math.loop(parallel)

    @backend.jit(parallel=parallel, fastmath=_FASTMATH)
    def channels_forward(x, scale, bias, eps, y, mean, var, inv_std):
        real = x.dtype.type
        zero = real(0)
        batch, channels, spatial = x.shape
        count = batch * spatial
        for c in loop(channels):
            total = 0.0
            for n in range(batch):
                part = zero
                for s in range(spatial):
                    part += x[n, c, s]
                total += part
            mu = real(total / count)
            total = 0.0
            for n in range(batch):
                part = zero
                for s in range(spatial):
                    centered = x[n, c, s] - mu
                    part += centered * centered
                total += part
            r = real(1.0 / math.sqrt(total / count + eps))
            gain, shift = scale[c] * r, bias[c]
            for n in range(batch):
                for s in range(spatial):
                    y[n, c, s] = (x[n, c, s] - mu) * gain + shift
            mean[c], var[c], inv_std[c] = mu, total / count, r

    @backend.jit(parallel=parallel, fastmath=_FASTMATH)
    def channels_backward(dy, x, scale, mean, inv_std, dx, dscale, dbias):
        real = x.dtype.type
        zero = real(0)
        batch, channels, spatial = x.shape
        count = batch * spatial
        for c in loop(channels):
            mu, r = mean[c], inv_std[c]
            sum_g = sum_gc = 0.0
            for n in range(batch):
                part_g = part_gc = zero
                for s in range(spatial):
                    g = dy[n, c, s]
                    part_g += g
                    part_gc += g * (x[n, c, s] - mu)
                sum_g += part_g
                sum_gc += part_gc
            # dX = k (dY - mean(dY) - x_hat mean(dY x_hat)) with k = scale r, x_hat = (X - mu) r:
            # k dY - slope (X - mu) - shift, slope = k r^2 sum_gc / M, shift = k sum_g / M
            gain = scale[c] * r
            slope = real(gain * r * r * sum_gc / count)
            shift = real(gain * sum_g / count)
            for n in range(batch):
                for s in range(spatial):
                    dx[n, c, s] = gain * dy[n, c, s] - slope * (x[n, c, s] - mu) - shift
            dscale[c] = sum_gc * r
            dbias[c] = sum_g

    @backend.jit(parallel=parallel, fastmath=_FASTMATH)
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

    @backend.jit(parallel=parallel, fastmath=_FASTMATH)
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

    @backend.jit(parallel=parallel, fastmath=_FASTMATH)
    def columns_sums(x, center, parts):
        rows, cols = x.shape
        blocks = parts.shape[0]
        for k in loop(blocks):
            first, second = parts[k, 0], parts[k, 1]
            first[:] = 0
            second[:] = 0
            for i in range(k * rows // blocks, (k + 1) * rows // blocks):
                row = x[i]
                for j in range(cols):
                    centered = row[j] - center[j]
                    first[j] += centered
                    second[j] += centered * centered

    @backend.jit(parallel=parallel, fastmath=_FASTMATH)
    def columns_grad_sums(dy, x, center, parts):
        rows, cols = x.shape
        blocks = parts.shape[0]
        for k in loop(blocks):
            first, second = parts[k, 0], parts[k, 1]
            first[:] = 0
            second[:] = 0
            for i in range(k * rows // blocks, (k + 1) * rows // blocks):
                g_row, x_row = dy[i], x[i]
                for j in range(cols):
                    first[j] += g_row[j]
                    second[j] += g_row[j] * (x_row[j] - center[j])

    @backend.jit(parallel=parallel, fastmath=_FASTMATH)
    def columns_combine(u, x, center, u_gain, x_gain, shift, out):
        rows, cols = x.shape
        for i in loop(rows):
            u_row, x_row, out_row = u[i], x[i], out[i]
            for j in range(cols):
                out_row[j] = u_gain[j] * u_row[j] + x_gain[j] * (x_row[j] - center[j]) + shift[j]

    return SimpleNamespace(
        channels_forward=channels_forward,
        channels_backward=channels_backward,
        columns_sums=columns_sums,
        columns_grad_sums=columns_grad_sums,
        columns_combine=columns_combine,
        rows_forward=rows_forward,
        rows_backward=rows_backward,
    )


def _numba_dtype(*arrays):
    """The dtype the numba kernels run in for these arrays (None skipped): float32 or float64 when
    all share it and the first is not empty; None elsewhere (float16, mixed dtypes, empty
    tensors), where the generic kernels run."""
    present = [a for a in arrays if a is not None]
    dtype = present[0].dtype
    if dtype not in (np.float32, np.float64) or present[0].size == 0:
        return None
    return dtype if all(a.dtype == dtype for a in present) else None


def _vector(value, size: int, fill: float, dtype):
    """A parameter or statistic as a contiguous 1-D array of `dtype`; `fill` where it is None."""
    if value is None:
        return np.full(size, fill, dtype)
    return np.ascontiguousarray(value, dtype=dtype).reshape(-1)


def _as_channels(array):
    """A C-contiguous (N, C, *spatial) array as an (N, C, S) view."""
    return array.reshape(array.shape[0], array.shape[1], -1)


def _blocks(rows: int) -> int:
    """Row blocks for the kernels that sum per block: one per numba thread, at most one per row."""
    return min(rows, importlib.import_module("numba").get_num_threads())


def _numba_batch_norm_forward(x, weight, bias, eps: float):
    """(X contiguous, Y, mean, var, inv_std) of training-mode batch norm by the numba kernels,
    for arrays that `_numba_dtype` accepts. By channel where a channel has runs of S >=
    _CHANNEL_RUN values side by side; (N, C) and other short runs by rows, summing per column and
    folding the sums per channel."""
    dtype = x.dtype
    x = np.ascontiguousarray(x)
    batch, channels, spatial = _as_channels(x).shape
    count = batch * spatial
    kernels = _numba_kernels(x.size >= _PARALLEL_WORK["batch_norm"])
    gain, shift = _vector(weight, channels, 1, dtype), _vector(bias, channels, 0, dtype)
    y = np.empty_like(x)
    if spatial >= _CHANNEL_RUN:
        mean, var, inv_std = np.empty((3, channels), dtype)
        kernels.channels_forward(
            _as_channels(x), gain, shift, eps, _as_channels(y), mean, var, inv_std
        )
        return x, y, mean, var, inv_std
    matrix = x.reshape(batch, -1)
    parts = np.empty((_blocks(batch), 2) + matrix.shape[1:], dtype)
    kernels.columns_sums(matrix, np.zeros(matrix.shape[1], dtype), parts)
    mean = parts[:, 0].sum(axis=0, dtype=np.float64).reshape(channels, spatial).sum(axis=1) / count
    kernels.columns_sums(matrix, np.repeat(mean.astype(dtype), spatial), parts)
    sums = parts.sum(axis=0, dtype=np.float64).reshape(2, channels, spatial).sum(axis=2)
    # corrected two-pass: sum(x - mean) is 0 but for rounding, and subtracting it makes up for it
    var = (sums[1] - sums[0] * sums[0] / count) / count
    inv_std = 1 / np.sqrt(var + eps)
    mean, var, inv_std = (a.astype(dtype) for a in (mean, var, inv_std))
    kernels.columns_combine(
        matrix,
        matrix,
        np.repeat(mean, spatial),
        np.zeros(matrix.shape[1], dtype),
        np.repeat(gain * inv_std, spatial),
        np.repeat(shift, spatial),
        y.reshape(batch, -1),
    )
    return x, y, mean, var, inv_std


def _numba_batch_norm_grad(grad, x, scale, saved_mean, saved_inv_std):
    """(dX, dscale, dbias) of batch norm by the numba kernels (laid out as the forward's); None
    where numba does not apply."""
    dtype = _numba_dtype(x, grad, scale, saved_mean, saved_inv_std)
    if dtype is None:
        return None
    x, grad = np.ascontiguousarray(x), np.ascontiguousarray(grad)
    batch, channels, spatial = _as_channels(x).shape
    count = batch * spatial
    kernels = _numba_kernels(x.size >= _PARALLEL_WORK["batch_norm"])
    gain = _vector(scale, channels, 1, dtype)
    mean, inv_std = (
        _vector(saved_mean, channels, 0, dtype),
        _vector(saved_inv_std, channels, 1, dtype),
    )
    dx = np.empty_like(x)
    if spatial >= _CHANNEL_RUN:
        dscale, dbias = np.empty((2, channels), dtype)
        kernels.channels_backward(
            _as_channels(grad),
            _as_channels(x),
            gain,
            mean,
            inv_std,
            _as_channels(dx),
            dscale,
            dbias,
        )
        return dx, dscale, dbias
    matrix, g_matrix = x.reshape(batch, -1), grad.reshape(batch, -1)
    parts = np.empty((_blocks(batch), 2) + matrix.shape[1:], dtype)
    kernels.columns_grad_sums(g_matrix, matrix, np.repeat(mean, spatial), parts)
    sum_g, sum_gc = parts.sum(axis=0, dtype=np.float64).reshape(2, channels, spatial).sum(axis=2)
    # as channels_backward: dX = k dY - slope (X - mean) - shift with k = scale inv_std
    k = gain.astype(np.float64) * inv_std
    slope, shift = k * inv_std * inv_std * sum_gc / count, k * sum_g / count
    kernels.columns_combine(
        g_matrix,
        matrix,
        np.repeat(mean, spatial),
        np.repeat(k.astype(dtype), spatial),
        np.repeat(-slope.astype(dtype), spatial),
        np.repeat(-shift.astype(dtype), spatial),
        dx.reshape(batch, -1),
    )
    return dx, (sum_gc * inv_std).astype(dtype), sum_g.astype(dtype)


def _numba_rows_forward(x, weight, bias, eps: float, axis: int, centered: bool):
    """(X contiguous, Y, mean, inv_std) of layer norm (`centered`) or RMS norm by the numba row
    kernel, for arrays that `_numba_dtype` accepts; the statistics shaped as the generic
    forward's."""
    dtype = x.dtype
    x = np.ascontiguousarray(x)
    cols = math.prod(x.shape[axis:])
    rows = x.size // cols
    y = np.empty_like(x)
    mean, inv_std = np.empty((2, rows), dtype)
    _numba_kernels(x.size >= _PARALLEL_WORK["rows"]).rows_forward(
        x.reshape(rows, cols),
        _vector(weight, cols, 1, dtype),
        _vector(bias, cols, 0, dtype),
        eps,
        centered,
        y.reshape(rows, cols),
        mean,
        inv_std,
    )
    shape = _stats_shape(x.shape, axis)
    return x, y, mean.reshape(shape), inv_std.reshape(shape)


def _numba_row_grads(grad, src, scale, inv_std, axis: int, *, mean=None, bias=None, output=False):
    """(dX, dscale, dbias) of the layer-norm family by the numba row kernel; None where numba does
    not apply. src is X, with x_hat = (X - mean) * inv_std (mean None: RMS norm, x_hat = X *
    inv_std and no dbias), or with `output` the forward output Y, x_hat = (Y - bias) / scale."""
    dtype = _numba_dtype(src, grad, scale, bias, inv_std, mean)
    if dtype is None:
        return None
    cols = math.prod(src.shape[axis:])
    rows = src.size // cols
    centered = output or mean is not None
    if output:  # per-column shift and multiplier
        row_shift, row_mult = np.zeros(rows, dtype), np.ones(rows, dtype)
        col_shift = _vector(bias, cols, 0, dtype)
        col_mult = np.ones(cols, dtype) if scale is None else 1 / _vector(scale, cols, 1, dtype)
    else:  # per-row shift and multiplier
        row_shift, row_mult = _vector(mean, rows, 0, dtype), _vector(inv_std, rows, 1, dtype)
        col_shift, col_mult = np.zeros(cols, dtype), np.ones(cols, dtype)
    dx = np.empty(src.shape, dtype)
    parts = np.empty((_blocks(rows), 2, cols), dtype)
    _numba_kernels(src.size >= _PARALLEL_WORK["rows"]).rows_backward(
        np.ascontiguousarray(grad).reshape(rows, cols),
        np.ascontiguousarray(src).reshape(rows, cols),
        _vector(scale, cols, 1, dtype),
        _vector(inv_std, rows, 1, dtype),
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


# --- ops ----------------------------------------------------------------------------------------


def _needed(ctx, grads) -> tuple:
    """The gradients, None where the input needs none."""
    return tuple(g if need else None for g, need in zip(grads, ctx.needs_grad, strict=True))


def _check_batch_norm(
    where: str, x, weight, bias, running_mean=None, running_var=None, training: bool = True
) -> tuple[int, int]:
    """Check batch norm's arrays (None: absent) before anything runs; returns (C, M)."""
    for name, value in (
        ("x", x),
        ("weight", weight),
        ("bias", bias),
        ("running_mean", running_mean),
        ("running_var", running_var),
    ):
        _check_float(where, name, value)
    channels, count = _channel_layout(where, x.shape, training)
    context = f"one per channel of x {tuple(x.shape)}"
    for name, value in (
        ("weight", weight),
        ("bias", bias),
        ("running_mean", running_mean),
        ("running_var", running_var),
    ):
        _check_shape(where, name, value, (channels,), context)
    return channels, count


def _check_rows(where: str, x, weight, bias, axis: int) -> None:
    """Check a layer-norm family op's arrays (None: absent) and its (non-negative) axis."""
    for name, value in (("x", x), ("weight", weight), ("bias", bias)):
        _check_float(where, name, value)
    axis = _row_axis(where, x.shape, axis)
    context = f"the normalized dims of x {tuple(x.shape)} from axis {axis}"
    for name, value in (("weight", weight), ("bias", bias)):
        _check_shape(where, name, value, tuple(x.shape[axis:]), context)


def _update_running(running_mean, running_var, momentum: float, mean, var, count: int) -> None:
    """PyTorch's convention, in place: running = (1 - momentum) * running + momentum * batch, the
    variance unbiased (var * M / (M - 1)). (ONNX's runs the other way: running = momentum *
    running + (1 - momentum) * batch, with default momentum 0.9.)"""
    if running_mean is None:
        return
    running_mean *= 1 - momentum
    running_mean += momentum * mean
    running_var *= 1 - momentum
    running_var += (momentum * count / (count - 1)) * var


class BatchNorm(Op):
    """Training-mode batch normalization of x (N, C, *spatial) over N and every spatial position,
    per channel (see `batch_norm`). Updates running_mean / running_var in place when given (the
    attributes hold the arrays). On the CPU with numba enabled, fused kernels run instead: per
    channel, two sums and the output in one parallel loop over channels (by rows for (N, C))."""

    name = "batch_norm"
    inputs = ("x", "weight", "bias")
    attrs = ("eps", "momentum", "running_mean", "running_var")
    saved = ("x", "scale", "saved_mean", "saved_inv_std")
    grad_kernel = "BatchNormalizationGrad"
    exact_dtype = True

    @staticmethod
    def forward(ctx, x, weight, bias):
        _, count = _check_batch_norm(
            BatchNorm.name, x, weight, bias, ctx.running_mean, ctx.running_var
        )
        y, mean, var, inv_std = _batch_norm_forward(ctx.xp, x, weight, bias, ctx.eps)
        return BatchNorm._finish(ctx, x, weight, y, mean, var, inv_std, count)

    @staticmethod
    def numba_forward(ctx, x, weight, bias):
        if _numba_dtype(x, weight, bias) is None:
            return BatchNorm.forward(ctx, x, weight, bias)
        _, count = _check_batch_norm(
            BatchNorm.name, x, weight, bias, ctx.running_mean, ctx.running_var
        )
        x, y, mean, var, inv_std = _numba_batch_norm_forward(x, weight, bias, ctx.eps)
        return BatchNorm._finish(ctx, x, weight, y, mean, var, inv_std, count)

    @staticmethod
    def _finish(ctx, x, weight, y, mean, var, inv_std, count):
        _update_running(ctx.running_mean, ctx.running_var, ctx.momentum, mean, var, count)
        ctx.save(x=x, scale=weight, saved_mean=mean, saved_inv_std=inv_std)
        return y

    @staticmethod
    def backward(ctx, grad):
        """dx = weight * inv_std * (grad - mean(grad) - x_hat * mean(grad * x_hat)), per channel.

        dweight = sum(grad * x_hat), dbias = sum(grad): means and sums per channel, over N and
        the spatial dims; x_hat = (x - saved_mean) * inv_std; weight None counts as 1 (kernel:
        batch_norm_grad, with no N/(N-1) factor)."""
        grads = batch_norm_grad(grad, ctx.x, ctx.scale, ctx.saved_mean, ctx.saved_inv_std)
        return _needed(ctx, grads)

    @staticmethod
    def numba_backward(ctx, grad):
        grads = _numba_batch_norm_grad(grad, ctx.x, ctx.scale, ctx.saved_mean, ctx.saved_inv_std)
        return BatchNorm.backward(ctx, grad) if grads is None else _needed(ctx, grads)


class LayerNorm(Op):
    """Layer normalization of x over its dims from `axis` on (see `layer_norm`). On the CPU with
    numba enabled, a fused row kernel runs instead
    (rows in parallel for large inputs)."""

    name = "layer_norm"
    inputs = ("x", "weight", "bias")
    attrs = ("axis", "eps")
    saved = ("x", "scale", "mean", "inv_std")
    grad_kernel = "LayerNormalizationGrad"
    exact_dtype = True

    @staticmethod
    def forward(ctx, x, weight, bias):
        _check_rows(LayerNorm.name, x, weight, bias, ctx.axis)
        y, mean, inv_std = _layer_norm_forward(ctx.xp, x, weight, bias, ctx.eps, ctx.axis, True)
        ctx.save(x=x, scale=weight, mean=mean, inv_std=inv_std)
        return y

    @staticmethod
    def numba_forward(ctx, x, weight, bias):
        if _numba_dtype(x, weight, bias) is None:
            return LayerNorm.forward(ctx, x, weight, bias)
        _check_rows(LayerNorm.name, x, weight, bias, ctx.axis)
        x, y, mean, inv_std = _numba_rows_forward(x, weight, bias, ctx.eps, ctx.axis, True)
        ctx.save(x=x, scale=weight, mean=mean, inv_std=inv_std)
        return y

    @staticmethod
    def backward(ctx, grad):
        """dx = B - mean_row(B) - x_hat * mean_row(B * x_hat), with B = grad * weight * inv_std.

        dweight = sum over rows(grad * x_hat), dbias = sum over rows(grad); x_hat = (x - mean) *
        inv_std, weight None counts as 1 (kernel: layer_norm_grad)."""
        return _needed(
            ctx, layer_norm_grad(grad, ctx.x, ctx.scale, ctx.mean, ctx.inv_std, ctx.axis)
        )

    @staticmethod
    def numba_backward(ctx, grad):
        grads = _numba_row_grads(grad, ctx.x, ctx.scale, ctx.inv_std, ctx.axis, mean=ctx.mean)
        return LayerNorm.backward(ctx, grad) if grads is None else _needed(ctx, grads)


class InvertibleLayerNorm(Op):
    """Layer normalization that saves its output Y instead of x: backward rebuilds x_hat =
    (Y - bias) / weight, so x can be freed. Refuses a weight with a zero (`layer_norm` falls back
    to LayerNorm there). On the CPU with numba enabled, fused row kernels run instead."""

    name = "invertible_layer_norm"
    inputs = ("x", "weight", "bias")
    attrs = ("axis", "eps")
    saved = ("out", "scale", "bias", "inv_std")
    grad_kernel = "InvertibleLayerNormalizationGrad"
    exact_dtype = True

    @staticmethod
    def forward(ctx, x, weight, bias):
        _check_rows(InvertibleLayerNorm.name, x, weight, bias, ctx.axis)
        _check_no_zero(InvertibleLayerNorm.name, "weight", weight)
        y, _, inv_std = _layer_norm_forward(ctx.xp, x, weight, bias, ctx.eps, ctx.axis, True)
        ctx.save(out=y, scale=weight, bias=bias, inv_std=inv_std)
        return y

    @staticmethod
    def numba_forward(ctx, x, weight, bias):
        if _numba_dtype(x, weight, bias) is None:
            return InvertibleLayerNorm.forward(ctx, x, weight, bias)
        _check_rows(InvertibleLayerNorm.name, x, weight, bias, ctx.axis)
        _check_no_zero(InvertibleLayerNorm.name, "weight", weight)
        _, y, _, inv_std = _numba_rows_forward(x, weight, bias, ctx.eps, ctx.axis, True)
        ctx.save(out=y, scale=weight, bias=bias, inv_std=inv_std)
        return y

    @staticmethod
    def backward(ctx, grad):
        """dx = B - mean_row(B) - x_hat * mean_row(B * x_hat), with B = grad * weight * inv_std.

        As layer_norm's, with x_hat = (out - bias) / weight rebuilt from the saved output out:
        dweight = sum over rows(grad * x_hat), dbias = sum over rows(grad) (kernel:
        invertible_layer_norm_grad)."""
        grads = invertible_layer_norm_grad(
            grad, ctx.out, ctx.scale, ctx.bias, ctx.inv_std, ctx.axis
        )
        return _needed(ctx, grads)

    @staticmethod
    def numba_backward(ctx, grad):
        grads = _numba_row_grads(
            grad, ctx.out, ctx.scale, ctx.inv_std, ctx.axis, bias=ctx.bias, output=True
        )
        return InvertibleLayerNorm.backward(ctx, grad) if grads is None else _needed(ctx, grads)


class RMSNorm(Op):
    """RMS normalization of x over its dims from `axis` on (see `rms_norm`). On the CPU with numba
    enabled, a fused row kernel runs instead
    (rows in parallel for large inputs)."""

    name = "rms_norm"
    inputs = ("x", "weight")
    attrs = ("axis", "eps")
    saved = ("x", "scale", "inv_std")
    grad_kernel = "SimplifiedLayerNormalizationGrad"
    exact_dtype = True

    @staticmethod
    def forward(ctx, x, weight):
        _check_rows(RMSNorm.name, x, weight, None, ctx.axis)
        y, _, inv_std = _layer_norm_forward(ctx.xp, x, weight, None, ctx.eps, ctx.axis, False)
        ctx.save(x=x, scale=weight, inv_std=inv_std)
        return y

    @staticmethod
    def numba_forward(ctx, x, weight):
        if _numba_dtype(x, weight) is None:
            return RMSNorm.forward(ctx, x, weight)
        _check_rows(RMSNorm.name, x, weight, None, ctx.axis)
        x, y, _, inv_std = _numba_rows_forward(x, weight, None, ctx.eps, ctx.axis, False)
        ctx.save(x=x, scale=weight, inv_std=inv_std)
        return y

    @staticmethod
    def backward(ctx, grad):
        """dx = B - x_hat * mean_row(B * x_hat), with B = grad * weight * inv_std.

        dweight = sum over rows(grad * x_hat); x_hat = x * inv_std. No mean_row(B) term: nothing is
        centred (kernel: simplified_layer_norm_grad)."""
        grads = simplified_layer_norm_grad(grad, ctx.x, ctx.scale, ctx.inv_std, ctx.axis)
        return _needed(ctx, grads)

    @staticmethod
    def numba_backward(ctx, grad):
        grads = _numba_row_grads(grad, ctx.x, ctx.scale, ctx.inv_std, ctx.axis)
        return RMSNorm.backward(ctx, grad) if grads is None else _needed(ctx, grads[:2])


# --- functional forms ---------------------------------------------------------------------------


def _as_tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor(x)


def _check_momentum(where: str, momentum) -> float:
    if isinstance(momentum, bool) or not isinstance(
        momentum, (int, float, np.integer, np.floating)
    ):
        raise DTypeError(f"{where}: momentum must be a number, got {type(momentum).__name__}")
    if not math.isfinite(momentum):
        raise ArgumentError(f"{where}: momentum must be finite, got {momentum}")
    return float(momentum)


def _normalized_axis(where: str, shape: tuple, normalized_shape, axis) -> int:
    """The first normalized dim, from PyTorch's normalized_shape (the last dims of x) or an axis
    (default -1); checked, non-negative."""
    if normalized_shape is not None and axis is not None:
        raise ArgumentError(f"{where}: give normalized_shape or axis, not both")
    if normalized_shape is None:
        return _row_axis(where, shape, -1 if axis is None else axis)
    if isinstance(normalized_shape, (int, np.integer)):
        normalized_shape = (normalized_shape,)
    dims = tuple(normalized_shape)
    if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in dims):
        raise DTypeError(f"{where}: normalized_shape must be ints, got {normalized_shape!r}")
    if not dims or len(dims) > len(shape) or tuple(shape[len(shape) - len(dims) :]) != dims:
        raise ShapeError(
            f"{where}: normalized_shape {dims} must equal the last dims of x {tuple(shape)}"
        )
    return len(shape) - len(dims)


def batch_norm(
    x,
    weight=None,
    bias=None,
    eps: float = 1e-5,
    *,
    running_mean=None,
    running_var=None,
    training: bool = True,
    momentum: float = 0.1,
) -> Tensor:
    """Batch normalization of x (N, C) or (N, C, *spatial) with 1 to 3 spatial dims, per channel.

    Training (or without running statistics): each channel is normalized with the mean and the
    biased variance of its M = N * prod(spatial) values (M > 1), Y = weight * (x - mean) /
    sqrt(var + eps) + bias, in one op (BatchNormalizationGrad). weight and bias (C,) are optional
    (None: PyTorch's affine=False). running_mean and running_var (C,), Tensors or arrays, both or
    neither, are then updated in place with PyTorch's convention: running = (1 - momentum) *
    running + momentum * batch, the variance unbiased (var * M / (M - 1)). ONNX runs the other
    way: running = momentum * running + (1 - momentum) * batch, with momentum 0.9.

    Evaluation (training=False with running statistics): Y = x * a + b with a = weight /
    sqrt(running_var + eps) and b = bias - running_mean * a, recorded as ordinary mul and add ops.
    """
    where = "batch_norm"
    x = _as_tensor(x)
    eps, momentum = _check_eps(where, eps), _check_momentum(where, momentum)
    if (running_mean is None) != (running_var is None):
        raise ArgumentError(f"{where}: give both running_mean and running_var, or neither")
    running_mean, running_var = _data(running_mean), _data(running_var)
    if training or running_mean is None:
        return BatchNorm.apply(
            x,
            weight,
            bias,
            eps=eps,
            momentum=momentum,
            running_mean=running_mean,
            running_var=running_var,
        )
    _check_batch_norm(
        where, x.data, _data(weight), _data(bias), running_mean, running_var, training=False
    )
    _, shape = _channel_axes(x.ndim)
    dtype = _param_dtype(x.dtype, _data(weight), _data(bias))
    gain = (1 / x.xp.sqrt(running_var + eps)).astype(dtype)
    if weight is not None:
        gain = mul(weight, gain)
    shift = mul(-running_mean.astype(dtype), gain)
    if bias is not None:
        shift = add(shift, bias)
    return add(mul(x, reshape(gain, shape)), reshape(shift, shape))


def batch_norm_composite(x, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Training-mode batch norm composed from primitive ops: the readable specification of the
    fused `batch_norm`, with equal values and gradients (up to rounding).

    Autograd through these ops runs, per channel, exactly the corrected step-by-step derivation of
    nGraph's BatchNormTrainingBackprop (KERNELS.md section 2; d is the upstream gradient, M the
    number of values per channel). Read the forward down and its gradients up:

        forward                            backward
        mean = sum(x) / M                  input_delta = centered_delta + mean_delta / M
        centered = x - mean                mean_delta = -sum(centered_delta)
        var = sum(centered^2) / M          centered_delta += 2 * centered * var_delta / M
        invsqrt = 1 / sqrt(var + eps)      var_delta = -invsqrt_delta * invsqrt / (2 * (var + eps))
        gmul = gamma * invsqrt             invsqrt_delta = gamma * gmul_delta
                                           gamma_delta = gmul_delta * invsqrt
        normed = centered * gmul + beta    centered_delta = d * gmul
                                           gmul_delta = sum(d * centered)
                                           beta_delta = sum(d)
    """
    x = _as_tensor(x)
    _check_batch_norm("batch_norm_composite", x.data, _data(weight), _data(bias))
    axes, shape = _channel_axes(x.ndim)
    centered = x - reduction.mean(x, axes, keepdims=True)
    var = reduction.mean(centered * centered, axes, keepdims=True)
    invsqrt = div(1.0, sqrt(add(var, _check_eps("batch_norm_composite", eps))))
    gmul = invsqrt if weight is None else mul(reshape(weight, shape), invsqrt)
    normed = centered * gmul
    return normed if bias is None else add(normed, reshape(bias, shape))


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
    where = "layer_norm"
    x = _as_tensor(x)
    axis = _normalized_axis(where, x.shape, normalized_shape, axis)
    op = LayerNorm
    if invertible:
        gain = _data(weight)
        op = LayerNorm if gain is not None and bool((gain == 0).any()) else InvertibleLayerNorm
    return op.apply(x, weight, bias, axis=axis, eps=_check_eps(where, eps))


def rms_norm(
    x, normalized_shape=None, weight=None, eps: float | None = None, *, axis: int | None = None
) -> Tensor:
    """RMS normalization over the last dims of x (`normalized_shape`, PyTorch's) or every dim from
    `axis` on (default -1): Y = weight * x / sqrt(mean_row(x^2) + eps), at least one value per row;
    one op (SimplifiedLayerNormalizationGrad). weight is optional. eps=None is PyTorch's default,
    the machine epsilon of the dtype the statistics are computed in: float32's for float16 and
    float32 input, float64's for float64.
    """
    where = "rms_norm"
    x = _as_tensor(x)
    axis = _normalized_axis(where, x.shape, normalized_shape, axis)
    eps = float(np.finfo(_work_dtype(x.data)).eps) if eps is None else _check_eps(where, eps)
    return RMSNorm.apply(x, weight, axis=axis, eps=eps)


def group_norm(x, num_groups: int, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Group normalization (PyTorch's GroupNorm) of x (N, C, *): each sample's channels in
    num_groups groups of C / num_groups, each group normalized over its channels and positions
    (biased variance), then per-channel weight and bias (C,), both optional.

    The statistics are those of a layer norm over the rows of x viewed as (N, num_groups, C /
    num_groups * positions), so it runs as the LayerNorm op (LayerNormalizationGrad) on that
    view; the per-channel affine is a broadcast multiply and add.
    """
    where = "group_norm"
    x = _as_tensor(x)
    if x.ndim < 2:
        raise ShapeError(f"{where}: x must be (N, C, *), got shape {x.shape}")
    if isinstance(num_groups, bool) or not isinstance(num_groups, (int, np.integer)):
        raise DTypeError(f"{where}: num_groups must be an int, got {num_groups!r}")
    channels = x.shape[1]
    if num_groups < 1 or channels % num_groups:
        raise ArgumentError(
            f"{where}: num_groups ({num_groups}) must be >= 1 and divide the channels of x "
            f"{x.shape} ({channels})"
        )
    for name, value in (("weight", weight), ("bias", bias)):
        if value is not None:
            _check_shape(where, name, value, (channels,), f"for x {x.shape}")
    eps = _check_eps(where, eps)
    per_group = channels // num_groups * math.prod(x.shape[2:])
    y = x  # no positions: nothing to normalize, as in PyTorch
    if per_group:
        rows = layer_norm(reshape(x, (x.shape[0], int(num_groups), per_group)), eps=eps)
        y = reshape(rows, x.shape)
    per_channel = (channels,) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = mul(y, reshape(weight, per_channel))
    return y if bias is None else add(y, reshape(bias, per_channel))
