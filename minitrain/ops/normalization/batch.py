"""Batch norm: its gradient kernel, its op with the numba kernels, and its functional forms.

batch_norm_grad is the kernel of docs/kernels.md section 2; batch_norm_composite composes batch
norm from primitive ops, the readable specification of the fused kernel.

Dtypes follow the T/U/V scheme of normalization_common. The op saves exactly what its gradient
kernel reads, under the kernel's argument names: x, scale (the weight), saved_mean and
saved_inv_std. On the CPU with numba enabled, float32 and float64 inputs run fused numba kernels
instead of the generic ones: by channel, or by rows for short runs (see _CHANNEL_RUN); in
parallel for large inputs (see _PARALLEL_WORK).
"""

from __future__ import annotations

import functools
import math
from types import SimpleNamespace

import numpy as np

from ... import backend
from ...errors import ArgumentError, ShapeError
from ...tensor import Tensor
from ..core import numba_math
from ..core.checks import check_eps, check_floating, check_real, check_same_shape, check_shape
from ..core.op import Op, array_of, as_tensor
from ..pointwise.arithmetic import add, div, mul, neg, sqrt
from ..pointwise.conversion import cast
from ..reductions import reduction
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

__all__ = ["batch_norm", "batch_norm_composite", "batch_norm_grad"]

# The numba kernels run channel by channel where a channel has at least this many values side by
# side (S = prod(spatial)), by rows of the (N, C * S) matrix below that: with shorter runs a
# channel's passes would read one value per cache line and wait on memory.
_CHANNEL_RUN = 3
# Elements of X from which the numba kernels run their parallel build; below it the serial one,
# as a parallel region can wait milliseconds for a core (see numba_math.loop).
_PARALLEL_WORK = 1 << 20


def _channel_layout(
    caller: str, shape: tuple, training: bool = True, name: str = "x"
) -> tuple[int, int]:
    """(C, M) of a batch-norm input (N, C, *spatial): channels, and values per channel, which
    training needs more than one of."""
    if not 2 <= len(shape) <= 5:
        raise ShapeError(
            f"{caller}: {name} must be (N, C) or (N, C, *spatial) with 1 to 3 spatial dims, got "
            f"shape {tuple(shape)}"
        )
    count = math.prod(shape[:1] + shape[2:])
    if training and count < 2:
        raise ShapeError(
            f"{caller}: training needs more than one value per channel, but {name} "
            f"{tuple(shape)} has M = {count} (N times the spatial size)"
        )
    return shape[1], count


def _channel_axes(ndim: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The axes batch norm reduces over, and the shape that broadcasts (C,) along axis 1."""
    return (0, *range(2, ndim)), (1, -1) + (1,) * (ndim - 2)


def _check_batch_norm(
    caller: str, x, weight, bias, running_mean=None, running_var=None, training: bool = True
) -> tuple[int, int]:
    """Check batch norm's arrays (None: absent) before anything runs; returns (C, M)."""
    check_floating(
        caller, x=x, weight=weight, bias=bias, running_mean=running_mean, running_var=running_var
    )
    channels, count = _channel_layout(caller, x.shape, training)
    context = f"one per channel of x {tuple(x.shape)}"
    for name, value in (
        ("weight", weight),
        ("bias", bias),
        ("running_mean", running_mean),
        ("running_var", running_var),
    ):
        check_shape(caller, name, value, (channels,), context)
    return channels, count


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
    check_same_shape(kernel, dY, X, "X")
    channels, count = _channel_layout(kernel, X.shape, name="X")
    context = f"one per channel of X {tuple(X.shape)}"
    for name, value in (
        ("scale", scale),
        ("saved_mean", saved_mean),
        ("saved_inv_std", saved_inv_std),
    ):
        check_shape(kernel, name, value, (channels,), context)
    work = work_dtype(dY, X, saved_inv_std)
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
    param = param_dtype(dY.dtype, scale)
    return dX.astype(X.dtype, copy=False), dscale.astype(param), dbias.astype(param)


def _batch_norm_forward(xp, x, scale, bias, eps: float):
    """(Y, mean, var, inv_std) of training-mode batch norm: per channel, over the M values of
    N and every spatial position, mean = sum(X) / M, var = sum((X - mean)^2) / M (biased) and
    Y = scale * (X - mean) * inv_std + bias with inv_std = 1 / sqrt(var + eps)."""
    work = work_dtype(x)
    axes, shape = _channel_axes(x.ndim)
    x_work = x.astype(work, copy=False)
    mean = x_work.mean(axis=axes)
    x_hat = x_work - mean.reshape(shape)
    var = xp.square(x_hat).mean(axis=axes)
    inv_std = 1 / xp.sqrt(var + eps)
    x_hat *= inv_std.reshape(shape)
    y = scale_shift(x_hat, scale, bias, shape, work)
    return y.astype(param_dtype(x.dtype, scale, bias), copy=False), mean, var, inv_std


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
    saved_as = {"scale": "weight"}  # the kernels' name for the weight
    attrs = ("eps", "momentum", "running_mean", "running_var")
    saved = ("x", "scale", "saved_mean", "saved_inv_std")
    grad_kernel = "BatchNormalizationGrad"
    exact_dtype = True
    fused_backward = "batch_norm2d 32x64x32x32"

    @staticmethod
    def forward(ctx, x, weight, bias):
        _, count = _check_batch_norm(
            BatchNorm.name, x, weight, bias, ctx.running_mean, ctx.running_var
        )
        y, mean, var, inv_std = _batch_norm_forward(ctx.xp, x, weight, bias, ctx.eps)
        return BatchNorm._finish(ctx, x, weight, y, mean, var, inv_std, count)

    @staticmethod
    def numba_forward(ctx, x, weight, bias):
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
        """dx = scale * inv_std * (grad - mean(grad) - x_hat * mean(grad * x_hat)), per channel.

        scale is the saved weight (None counts as 1); its gradient dscale = sum(grad * x_hat),
        and dbias = sum(grad): means and sums per channel, over N and the spatial dims; x_hat =
        (x - saved_mean) * inv_std (kernel: batch_norm_grad, with no N/(N-1) factor)."""
        grads = batch_norm_grad(grad, ctx.x, ctx.scale, ctx.saved_mean, ctx.saved_inv_std)
        return needed_grads(ctx, grads)

    @staticmethod
    def numba_backward(ctx, grad):
        grads = _numba_batch_norm_grad(grad, ctx.x, ctx.scale, ctx.saved_mean, ctx.saved_inv_std)
        return needed_grads(ctx, grads)

    @staticmethod
    def tensor_backward(ctx, grad):
        """backward in tensor ops, the channel statistics recomputed from x so that a second
        derivative sees them move with it (the running statistics play no part in training)."""
        axes, shape = _channel_axes(ctx.x.ndim)
        x_hat, inv_std = tensor_statistics(ctx.x, ctx.eps, axes, centered=True)
        grads = tensor_normalization_grads(
            grad, x_hat, inv_std, ctx.scale, axes, axes, shape, centered=True
        )
        return needed_grads(ctx, grads)


@functools.cache
def _batch_norm_kernels(parallel: bool) -> SimpleNamespace:
    """Batch norm's numba kernels for float32 or float64 arrays, defined on first use (importing
    minitrain must not import numba), in a parallel build and a serial one (see
    numba_math.loop); each inner sum runs in the arrays' dtype (its zero is `real(0)`, real the
    arrays' scalar type) so that it vectorizes.

    By channel (`channels_*`): C-contiguous (N, C, S) arrays (S = prod(spatial)), channels in
    parallel, each channel's passes (sum, centred squares, output) reading its values from memory
    once and then from cache; each inner sum runs over one (n, c) run of S values in the array's
    dtype and adds into a float64 total. By rows (`columns_*`): the (N, C * S) matrix, rows in
    parallel blocks, per-column sums kept per block (added up, and folded per channel, by the
    caller) and a per-column affine output pass.
    """
    loop = numba_math.loop(parallel)

    @backend.jit(parallel=parallel, fastmath=FASTMATH)
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

    @backend.jit(parallel=parallel, fastmath=FASTMATH)
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

    @backend.jit(parallel=parallel, fastmath=FASTMATH)
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

    @backend.jit(parallel=parallel, fastmath=FASTMATH)
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

    @backend.jit(parallel=parallel, fastmath=FASTMATH)
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
    )


def _as_channels(array):
    """A C-contiguous (N, C, *spatial) array as an (N, C, S) view."""
    return array.reshape(array.shape[0], array.shape[1], -1)


def _numba_batch_norm_forward(x, weight, bias, eps: float):
    """(X contiguous, Y, mean, var, inv_std) of training-mode batch norm by the numba kernels,
    for arrays that `BatchNorm.numba_applies` took. By channel where a channel has runs of S >=
    _CHANNEL_RUN values side by side; (N, C) and other short runs by rows, summing per column and
    folding the sums per channel."""
    dtype = x.dtype
    x = np.ascontiguousarray(x)
    batch, channels, spatial = _as_channels(x).shape
    count = batch * spatial
    kernels = _batch_norm_kernels(x.size >= _PARALLEL_WORK)
    gain, shift = as_vector(weight, channels, 1, dtype), as_vector(bias, channels, 0, dtype)
    y = np.empty_like(x)
    if spatial >= _CHANNEL_RUN:
        mean, var, inv_std = np.empty((3, channels), dtype)
        kernels.channels_forward(
            _as_channels(x), gain, shift, eps, _as_channels(y), mean, var, inv_std
        )
        return x, y, mean, var, inv_std
    matrix = x.reshape(batch, -1)
    parts = np.empty((row_blocks(batch), 2) + matrix.shape[1:], dtype)
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
    """(dX, dscale, dbias) of batch norm by the numba kernels, laid out as the forward's (which
    ran them, so the arrays share x's dtype)."""
    dtype = x.dtype
    x, grad = np.ascontiguousarray(x), np.ascontiguousarray(grad)
    batch, channels, spatial = _as_channels(x).shape
    count = batch * spatial
    kernels = _batch_norm_kernels(x.size >= _PARALLEL_WORK)
    gain = as_vector(scale, channels, 1, dtype)
    mean, inv_std = (
        as_vector(saved_mean, channels, 0, dtype),
        as_vector(saved_inv_std, channels, 1, dtype),
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
    parts = np.empty((row_blocks(batch), 2) + matrix.shape[1:], dtype)
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
    caller = "batch_norm"
    x = as_tensor(x)
    eps, momentum = check_eps(caller, eps), check_real(caller, "momentum", momentum)
    if (running_mean is None) != (running_var is None):
        raise ArgumentError(f"{caller}: give both running_mean and running_var, or neither")
    if training or running_mean is None:
        return BatchNorm.apply(
            x,
            weight,
            bias,
            eps=eps,
            momentum=momentum,
            running_mean=array_of(running_mean),
            running_var=array_of(running_var),
        )
    _check_batch_norm(
        caller,
        x.array,
        array_of(weight),
        array_of(bias),
        array_of(running_mean),
        array_of(running_var),
        training=False,
    )
    _, shape = _channel_axes(x.ndim)
    dtype = param_dtype(x.dtype, array_of(weight), array_of(bias))
    # ops on the running statistics themselves, not numpy on their arrays: a compiled
    # module's replay reads them as they are then (after load_state_dict, after training)
    running_mean, running_var = as_tensor(running_mean), as_tensor(running_var)
    gain = cast(div(1.0, sqrt(add(running_var, eps))), dtype)
    if weight is not None:
        gain = mul(weight, gain)
    shift = mul(neg(cast(running_mean, dtype)), gain)
    if bias is not None:
        shift = add(shift, bias)
    return add(mul(x, reshape(gain, shape)), reshape(shift, shape))


def batch_norm_composite(x, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Training-mode batch norm composed from primitive ops: the readable specification of the
    fused `batch_norm`, with equal values and gradients (up to rounding).

    Autograd through these ops runs, per channel, exactly the corrected step-by-step derivation of
    nGraph's BatchNormTrainingBackprop (docs/kernels.md section 2; d is the upstream gradient, M
    the number of values per channel). Read the forward down and its gradients up:

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
    caller = "batch_norm_composite"
    x = as_tensor(x)
    _check_batch_norm(caller, x.array, array_of(weight), array_of(bias))
    axes, shape = _channel_axes(x.ndim)
    centered = x - reduction.mean(x, axes, keepdims=True)
    var = reduction.mean(centered * centered, axes, keepdims=True)
    invsqrt = div(1.0, sqrt(add(var, check_eps(caller, eps))))
    gmul = invsqrt if weight is None else mul(reshape(weight, shape), invsqrt)
    normed = centered * gmul
    return normed if bias is None else add(normed, reshape(bias, shape))
