"""Resampling: interpolate (nearest, nearest-exact, linear in 1 to 3 dims, bicubic, area).

interpolate resamples one spatial dim at a time, the last first. Along a dim, output position j
reads K input positions index[j, t] with weights weight[j, t] (K = 1 nearest, 2 linear, 4
cubic), as PyTorch's kernels compute them, and sums the products in tap order. PyTorch nests
the dims the same way (bilinear: h0 (w0 x00 + w1 x01) + h1 (w0 x10 + w1 x11)), so the values
agree with its in float64 to the last bits (in float32, to a few ulps: its vectorised kernels
round some weights differently). interpolate is linear in x: its backward sends each gradient
back along the same taps, the last dim resampled first being the last sent back.

Where a scale_factor leaves a dim its size (10 * 1.07 -> 10), PyTorch's 2-D nearest copies it,
and so does this; its 1-D and 3-D nearest and its bicubic move the samples in forward but pass
the gradient straight through in backward, which is not the gradient of that forward: ours is
(the one deliberate difference).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ... import backend
from ...errors import ArgumentError, DTypeError, ShapeError
from ...tensor import Tensor
from ..convolution.adaptive_pooling import adaptive_avg_pool_as
from ..convolution.window import check_rank, spatial_ints
from ..core import numba_math
from ..core.checks import check_floating
from ..core.op import Op, array_of, shape_of
from ..core.promotion import dtype_of
from ..shapes.indexing import getitem_grad

__all__ = ["interpolate"]

# Outputs from which the numba kernels run in parallel (below it, waking threads costs more).
_PARALLEL_WORK = 1 << 16

# interpolate's modes: the spatial dims each needs (None: any of 1 to 3) and its taps' kind
_MODES = {
    "nearest": (None, "nearest"),
    "nearest-exact": (None, "nearest-exact"),
    "linear": (1, "linear"),
    "bilinear": (2, "linear"),
    "trilinear": (3, "linear"),
    "bicubic": (2, "cubic"),
    "area": (None, "area"),
}
# the modes PyTorch resamples uint8 images in (any other integer dtype, or mode, it refuses)
_UINT8_MODES = ("nearest", "nearest-exact", "bilinear", "bicubic")
_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) cubic convolution constant


def _compute_dtype(dtype) -> np.dtype:
    """interpolate's dtype of computation: float16's is float32 (PyTorch's opmath), uint8's
    float64 (its weights, then made integers: see _uint8_along), others' their own."""
    dtype = np.dtype(dtype)
    return {np.float16: np.dtype(np.float32), np.uint8: np.dtype(np.float64)}.get(dtype.type, dtype)


@functools.lru_cache(maxsize=256)
def _taps(
    kind: str, length: int, out: int, scale, align_corners: bool, dtype: np.dtype, spatial: int
):
    """Where each of the `out` positions of one dim reads the `length` inputs, and with what
    weights: (index (out, K) int64, weight (out, K) of dtype), read-only; None where the dim is
    copied as it is (linear to its own size, whatever the scale says, as in PyTorch).

    PyTorch's rules, in its arithmetic: the ratio is 1 / scale where a scale is given, else
    length / out (align_corners: (length - 1) / (out - 1)); nearest reads floor(j * ratio) in
    float32 whatever the dtype, nearest-exact floor((j + 0.5) * ratio) (below); linear and cubic
    read around ratio * (j + 0.5) - 0.5 (align_corners: ratio * j), in `dtype`, linear clamping
    it at 0, with weights 1 - t and t for the fraction t (cubic: Keys' with a = -0.75, its four
    taps clamped to the input)."""
    j = np.arange(out)
    if kind in ("nearest", "nearest-exact"):
        # nearest: in float32 whatever the dtype; nearest-exact: the ratio in `dtype`, times
        # j + 0.5 in double, floored as a float32 (PyTorch's floorf)
        real = np.float32 if kind == "nearest" else dtype.type
        ratio = real(1.0 / scale) if scale else real(length) / real(out)
        if kind == "nearest":
            source = np.floor(j.astype(np.float32) * ratio)
        else:
            source = np.floor(((j + 0.5) * np.float64(ratio)).astype(np.float32))
        index = np.minimum(source.astype(np.int64), length - 1)[:, None]
        if out == length and ((index[:, 0] == j).all() or (kind == "nearest" and spatial == 2)):
            return None  # (PyTorch's 2-D nearest copies a dim kept its size, whatever the scale)
        weight = np.ones((out, 1), dtype)
    else:
        if kind == "linear" and out == length:
            return None
        real = dtype.type
        if align_corners:
            ratio = real(length - 1) / real(out - 1) if out > 1 else real(0)
            source = ratio * j.astype(dtype)
        else:
            ratio = real(1.0 / scale) if scale else real(length) / real(out)
            source = ratio * (j.astype(dtype) + real(0.5)) - real(0.5)
            if kind == "linear":
                source = np.where(source < 0, real(0), source)
        base = np.minimum(np.floor(source).astype(np.int64), length - 1)
        t = np.clip(source - base.astype(dtype), real(0), real(1))
        if kind == "linear":
            index = np.stack([base, base + (base < length - 1)], axis=1)
            weight = np.stack([real(1) - t, t], axis=1)
        else:
            index = np.clip(base[:, None] + np.arange(-1, 3), 0, length - 1)
            weight = np.stack(_cubic_weights(t, real(_CUBIC_A), real(1)), axis=1)
    index, weight = np.ascontiguousarray(index), np.ascontiguousarray(weight, dtype)
    index.flags.writeable = weight.flags.writeable = False
    return index, weight


def _cubic_weights(t, a, one) -> tuple:
    """The four cubic convolution weights of the taps at -1, 0, 1, 2 for a fraction t, as
    PyTorch's get_cubic_upsample_coefficients writes them: |x| <= 1: ((a + 2) |x| - (a + 3))
    x^2 + 1; 1 < |x| < 2: ((a |x| - 5a) |x| + 8a) |x| - 4a."""

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + one

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return far(t + one), near(t), near(one - t), far((one - t) + one)


def _plan(ctx, shape, dtype) -> list[tuple]:
    """(axis, input length, index, weight) for each spatial dim of an input of `shape` that
    interpolate changes, the first dim first; the tables as ctx's arrays (CuPy's on a GPU)."""
    plan = []
    for dim, (length, out, scale) in enumerate(zip(shape[2:], ctx.size, ctx.scales, strict=True)):
        taps = _taps(
            ctx.kind, length, out, scale, ctx.align_corners, _compute_dtype(dtype), len(shape) - 2
        )
        if taps is not None:
            plan.append((2 + dim, length, ctx.xp.asarray(taps[0]), ctx.xp.asarray(taps[1])))
    return plan


def _along(x, axis: int, index, weight):
    """x resampled along axis: out[..., j, ...] = sum over t of x[..., index[j, t], ...] *
    weight[j, t], the products added in tap order."""
    xp = backend.array_module(x)
    column = (-1,) + (1,) * (x.ndim - 1 - axis)
    out = None
    for t in range(index.shape[1]):
        term = xp.take(x, index[:, t], axis=axis) * weight[:, t].reshape(column)
        out = term if out is None else out + term
    return out


def _along_adjoint(grad, axis: int, length: int, index, weight):
    """The adjoint of _along: dx (grad's shape with `length` along axis) with
    dx[..., index[j, t], ...] += weight[j, t] * grad[..., j, ...]."""
    xp = backend.array_module(grad)
    column = (-1,) + (1,) * (grad.ndim - 1 - axis)
    dx = xp.zeros(grad.shape[:axis] + (length,) + grad.shape[axis + 1 :], weight.dtype)
    for t in range(index.shape[1]):
        shares = xp.moveaxis(grad * weight[:, t].reshape(column), axis, 0)
        backend.scatter_add(xp, xp.moveaxis(dx, axis, 0), (index[:, t],), shares)
    return dx


@functools.cache
def _axis_kernels(parallel: bool) -> SimpleNamespace:
    """_along and _along_adjoint as numba kernels on x as (outer, L, inner) (`rows`, whole rows
    of `inner` elements blended at a time) or, for the last dim, (outer, L) (`last`); each
    outer slice is written from its own input only, so the slices run in parallel."""
    loop = numba_math.loop(parallel)

    @backend.jit(parallel=parallel, fastmath=False)
    def resample_rows(x, index, weight, out):
        taps, inner = index.shape[1], x.shape[2]
        for o in loop(x.shape[0]):
            for j in range(out.shape[1]):
                dst, src, w = out[o, j], x[o, index[j, 0]], weight[j, 0]
                for i in range(inner):
                    dst[i] = src[i] * w
                for t in range(1, taps):
                    src, w = x[o, index[j, t]], weight[j, t]
                    for i in range(inner):
                        dst[i] += src[i] * w

    @backend.jit(parallel=parallel, fastmath=False)
    def resample_last(x, index, weight, out):
        taps = index.shape[1]
        for o in loop(x.shape[0]):
            src, dst = x[o], out[o]
            for j in range(out.shape[1]):
                total = src[index[j, 0]] * weight[j, 0]
                for t in range(1, taps):
                    total += src[index[j, t]] * weight[j, t]
                dst[j] = total

    @backend.jit(parallel=parallel, fastmath=False)
    def accumulate_rows(grad, index, weight, dx):
        taps, inner = index.shape[1], grad.shape[2]
        for o in loop(grad.shape[0]):
            dx[o] = 0
            for j in range(grad.shape[1]):
                src = grad[o, j]
                for t in range(taps):
                    dst, w = dx[o, index[j, t]], weight[j, t]
                    for i in range(inner):
                        dst[i] += src[i] * w

    @backend.jit(parallel=parallel, fastmath=False)
    def accumulate_last(grad, index, weight, dx):
        taps = index.shape[1]
        for o in loop(grad.shape[0]):
            src, dst = grad[o], dx[o]
            dst[:] = 0
            for j in range(grad.shape[1]):
                for t in range(taps):
                    dst[index[j, t]] += src[j] * weight[j, t]

    return SimpleNamespace(
        resample_rows=resample_rows,
        resample_last=resample_last,
        accumulate_rows=accumulate_rows,
        accumulate_last=accumulate_last,
    )


def _numba_along(x, axis: int, index, weight):
    """_along by the numba kernels."""
    outer, inner = math.prod(x.shape[:axis]), math.prod(x.shape[axis + 1 :])
    shape = x.shape[:axis] + (index.shape[0],) + x.shape[axis + 1 :]
    out = np.empty(shape, x.dtype)
    kernels = _axis_kernels(out.size >= _PARALLEL_WORK)
    src = np.ascontiguousarray(x)
    if inner == 1:
        kernels.resample_last(src.reshape(outer, -1), index, weight, out.reshape(outer, -1))
    else:
        rows = (outer, -1, inner)
        kernels.resample_rows(src.reshape(rows), index, weight, out.reshape(rows))
    return out


def _numba_along_adjoint(grad, axis: int, length: int, index, weight):
    """_along_adjoint by the numba kernels."""
    outer, inner = math.prod(grad.shape[:axis]), math.prod(grad.shape[axis + 1 :])
    dx = np.empty(grad.shape[:axis] + (length,) + grad.shape[axis + 1 :], grad.dtype)
    kernels = _axis_kernels(grad.size >= _PARALLEL_WORK)
    src = np.ascontiguousarray(grad)
    if inner == 1:
        kernels.accumulate_last(src.reshape(outer, -1), index, weight, dx.reshape(outer, -1))
    else:
        rows = (outer, -1, inner)
        kernels.accumulate_rows(src.reshape(rows), index, weight, dx.reshape(rows))
    return dx


def _uint8_along(x, axis: int, index, weight):
    """uint8 x resampled along axis as PyTorch's uint8 kernels do: the weights as integers with
    as many fraction bits as an int16 holds for the largest, the sums rounded, shifted back and
    clamped to [0, 255] after each dim (so bicubic's overshoot is cut between the dims)."""
    xp = backend.array_module(x)
    largest = float(xp.abs(weight).max())
    bits = next(b for b in range(23) if b == 22 or int(0.5 + largest * (2 << b)) >= 1 << 15)
    scaled = weight * (1 << bits)
    integer = xp.trunc(scaled + xp.where(scaled < 0, -0.5, 0.5)).astype(np.int64)  # C's (int)
    total = _along(x.astype(np.int64), axis, index, integer) + (1 << (bits - 1))
    return xp.clip(total >> bits, 0, 255).astype(np.uint8)


def _interpolate_forward(ctx, x, along):
    """x through every changed dim's taps, the last dim first, computed in the compute dtype
    and returned in x's (a copy where no dim changes); uint8 x by _uint8_along where the taps
    mix inputs (linear, cubic)."""
    if x.dtype == np.uint8 and ctx.kind in ("linear", "cubic"):
        along = _uint8_along
    out = x
    for axis, _, index, weight in reversed(_plan(ctx, x.shape, x.dtype)):
        out = along(out, axis, index, weight)
    return out.astype(x.dtype, copy=out is x)


def _interpolate_backward(ctx, grad, along_adjoint):
    """grad sent back through every changed dim's taps, the first dim first."""
    x_shape = ctx.shapes[0]
    for axis, length, index, weight in _plan(ctx, x_shape, grad.dtype):
        grad = along_adjoint(grad, axis, length, index, weight)
    return grad


class Interpolate(Op):
    """x (N, C, *spatial) resampled to `size` (see `interpolate`): along each spatial dim,
    sums of weighted taps, the last dim first. `kind` is nearest, nearest-exact, linear or
    cubic; `scales` the scale factor per dim that sets the ratio (None: from the sizes)."""

    name = "interpolate"
    inputs = ("x",)
    attrs = ("kind", "size", "scales", "align_corners")
    fused_backward = "interpolate x2"

    @staticmethod
    def forward(ctx, x):
        return _interpolate_forward(ctx, x, _along)

    @staticmethod
    def numba_forward(ctx, x):
        return _interpolate_forward(ctx, x, _numba_along)

    @staticmethod
    def backward(ctx, grad):
        """dx[index[j, t]] += weight[j, t] * grad[j] along each dim, the first dim first."""
        return _interpolate_backward(ctx, grad, _along_adjoint)

    @staticmethod
    def numba_backward(ctx, grad):
        """dx[index[j, t]] += weight[j, t] * grad[j] along each dim, the first dim first."""
        return _interpolate_backward(ctx, grad, _numba_along_adjoint)

    @staticmethod
    def tensor_backward(ctx, grad):
        """backward as getitem_grad scatters of grad times constant weights: linear in grad,
        each scatter's own gradient a gather, so the derivatives go on to any order."""
        shape = list(grad.shape)
        for axis, length, index, weight in _plan(ctx, ctx.shapes[0], grad.dtype):
            shape[axis] = length
            column = (-1,) + (1,) * (len(shape) - 1 - axis)
            lead = (slice(None),) * axis
            total = None
            for t in range(index.shape[1]):
                part = getitem_grad(
                    grad * weight[:, t].reshape(column), tuple(shape), lead + (index[:, t],)
                )
                total = part if total is None else total + part
            grad = total
        return grad


def interpolate(
    x,
    size: Sequence[int] | int | None = None,
    scale_factor: Sequence[float] | float | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
) -> Tensor:
    """x (N, C, *spatial) resampled to `size`, or to floor(spatial * scale_factor), as PyTorch's
    F.interpolate (give one of the two: an int or one per spatial dim).

    mode: 'nearest' (floor(j * in / out), PyTorch's legacy rule), 'nearest-exact' (the nearest
    input centre), 'linear' / 'bilinear' / 'trilinear' (3-D / 4-D / 5-D input), 'bicubic'
    (4-D; it may overshoot the input's range, as PyTorch's does) or 'area' (adaptive average
    pooling). align_corners (linear and cubic modes only; default False) maps the corner
    pixels' centres onto each other. With scale_factor, the ratio between input and output
    positions is 1 / scale_factor, unless recompute_scale_factor=True computes it from the
    sizes (as `size` does). A uint8 image (nearest, nearest-exact, bilinear, bicubic only, as
    PyTorch) is resampled with PyTorch's integer weights and rounding, each dim clamped to
    [0, 255] (bilinear agrees with PyTorch's exactly; bicubic may differ by 1 in a few values)."""
    caller = "interpolate"
    if mode not in _MODES:
        raise ArgumentError(f"{caller}: mode must be one of {tuple(_MODES)}, got {mode!r}")
    x_shape = shape_of(x)
    check_rank(caller, x_shape)
    dims, kind = _MODES[mode]
    if dims is not None and len(x_shape) != dims + 2:
        raise ShapeError(
            f"{caller}: mode {mode!r} takes {dims + 2}-D input (N, C and {dims} spatial dims), "
            f"got shape {x_shape}"
        )
    if kind in ("nearest", "nearest-exact", "area"):
        if align_corners is not None:
            raise ArgumentError(
                f"{caller}: align_corners is for the linear, bilinear, trilinear and bicubic "
                f"modes only, got align_corners={align_corners!r} with mode {mode!r}"
            )
    elif not isinstance(align_corners, (bool, np.bool_, type(None))):
        raise DTypeError(f"{caller}: align_corners must be a bool or None, got {align_corners!r}")
    if not (dtype_of(x) == np.uint8 and mode in _UINT8_MODES):
        check_floating(caller, input=array_of(x))
    recompute = bool(recompute_scale_factor) or (kind == "area" and size is None)
    if recompute_scale_factor and size is not None:
        raise ArgumentError(
            f"{caller}: recompute_scale_factor=True is for scale_factor; an explicit size has no "
            f"scale to recompute"
        )
    out, scales = _output_size(caller, x_shape[2:], size, scale_factor, recompute)
    if kind == "area":
        return adaptive_avg_pool_as(caller, x, out)
    return Interpolate.apply(
        x, kind=kind, size=out, scales=scales, align_corners=bool(align_corners)
    )


def _output_size(caller: str, spatial, size, scale_factor, recompute: bool) -> tuple:
    """interpolate's output size and the scale per dim that sets its ratio (None: the sizes'),
    from `size` or `scale_factor` (exactly one given), as PyTorch's F.interpolate works them
    out: floor(length * scale_factor) (in double precision), the scales dropped with
    `recompute`."""
    dims = len(spatial)
    if (size is None) == (scale_factor is None):
        raise ArgumentError(
            f"{caller}: give exactly one of size and scale_factor, got size={size!r} and "
            f"scale_factor={scale_factor!r}"
        )
    if 0 in spatial:
        raise ShapeError(f"{caller}: input spatial dims {spatial} must not be empty")
    if size is not None:
        return spatial_ints(size, dims, "size", caller, 1), (None,) * dims
    factors = (scale_factor,) * dims if not isinstance(scale_factor, Sequence) else scale_factor
    if isinstance(scale_factor, (str, bytes)) or not all(
        isinstance(f, (int, float, np.integer, np.floating)) and not isinstance(f, bool)
        for f in factors
    ):
        raise DTypeError(
            f"{caller}: scale_factor must be a number or {dims} numbers, got {scale_factor!r}"
        )
    if len(factors) != dims:
        raise ShapeError(
            f"{caller}: scale_factor needs {dims} values (one per spatial dim of input "
            f"{spatial}), got {len(factors)}: {scale_factor!r}"
        )
    factors = tuple(float(f) for f in factors)
    out = tuple(
        int(length * f) if math.isfinite(f) else 0
        for length, f in zip(spatial, factors, strict=True)
    )
    if min(out) < 1:
        raise ShapeError(
            f"{caller}: scale_factor {scale_factor!r} leaves an output size {out} with an empty "
            f"dim (input spatial dims {spatial})"
        )
    return out, (None,) * dims if recompute else factors
