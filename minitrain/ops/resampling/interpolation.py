"""Resampling: interpolate (nearest, nearest-exact, linear in 1 to 3 dims, bicubic, area),
max_unpool, unfold_patches / fold_patches (PyTorch's F.unfold / F.fold), pixel_shuffle and
pixel_unshuffle.

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
from ..convolution.columns import col2im, im2col
from ..convolution.standard import check_one_device
from ..convolution.window import (
    ONNX_NAMES,
    check_rank,
    check_strides_dilations,
    conv_window,
    onnx_pads,
    spatial_ints,
)
from ..core import numba_math
from ..core.checks import check_floating
from ..core.op import Op, array_of, shape_of
from ..shapes.indexing import getitem_grad
from ..shapes.shape import permute, reshape

__all__ = [
    "fold_patches",
    "interpolate",
    "max_unpool",
    "pixel_shuffle",
    "pixel_unshuffle",
    "unfold_patches",
]

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
_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) cubic convolution constant


def _compute_dtype(dtype) -> np.dtype:
    """interpolate's dtype of computation: float16's is float32 (PyTorch's opmath), others' their
    own."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype == np.float16 else dtype


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


def _interpolate_forward(ctx, x, along):
    """x through every changed dim's taps, the last dim first, computed in the compute dtype
    and returned in x's (a copy where no dim changes)."""
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
    sizes (as `size` does)."""
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


class MaxUnpool(Op):
    """x (N, C, *in) placed at `indices` (flat positions in each (n, c) plane of the output,
    as max_pool's return_indices gives them) in zeros (N, C, *output_size)."""

    name = "max_unpool"
    inputs = ("x",)
    attrs = ("indices", "output_size")

    @staticmethod
    def forward(ctx, x):
        planes, plane = _planes(x.shape, ctx.output_size)
        out = ctx.xp.zeros(planes, x.dtype)
        rows = ctx.xp.arange(planes[0])[:, None]
        out[rows, ctx.indices.reshape(plane)] = x.reshape(plane)
        return out.reshape(x.shape[:2] + ctx.output_size)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad[indices]: each element's gradient read back where it was placed (a gather,
        recorded under create_graph, whose own gradient places it again)."""
        x_shape = ctx.shapes[0]
        planes, plane = _planes(x_shape, ctx.output_size)
        at = ctx.indices.reshape(plane)
        return ctx.xp.take_along_axis(grad.reshape(planes), at, axis=1).reshape(x_shape)


def _planes(x_shape, output_size) -> tuple:
    """max_unpool's output and input as (n, c) planes: (N*C, prod(output_size)) and
    (N*C, prod(in))."""
    planes = x_shape[0] * x_shape[1]
    return (planes, math.prod(output_size)), (planes, math.prod(x_shape[2:]))


def max_unpool(
    x,
    indices,
    kernel_shape: Sequence[int] | int,
    *,
    strides: Sequence[int] | int | None = None,
    pads: Sequence[int] | int | None = None,
    output_size: Sequence[int] | None = None,
) -> Tensor:
    """The inverse of max pooling, as ONNX's MaxUnpool and PyTorch's max_unpool: zeros of
    (N, C, *output_size) with x (N, C, *in) written where `indices` (of x's shape: flat
    positions in each (n, c) plane of the output, as max_pool's return_indices gives them)
    point; where two entries point to one position, one of them is kept. output_size defaults
    to (in - 1) * strides - pads_begin - pads_end + kernel_shape (strides default to 1)."""
    return max_unpool_as("max_unpool", x, indices, kernel_shape, strides, pads, output_size)


def max_unpool_as(
    caller, x, indices, kernel_shape, strides, pads, output_size, names=ONNX_NAMES, dims=None
) -> Tensor:
    """`max_unpool` called as `caller`, errors naming the window attributes as `names` spells
    them. With `dims` (the spatial dims), PyTorch's F.max_unpool1d/2d/3d rules: an unbatched
    (C, *in) x is taken (a batch of one, dropped again), and output_size must lie strictly
    within a stride of the default in each dim."""
    x_shape = shape_of(x)
    index = array_of(indices.data if isinstance(indices, Tensor) else indices)
    if index is None or index.dtype != np.int64:
        raise DTypeError(
            f"{caller}: indices must be int64 (as max_pool's return_indices gives them), got "
            f"{getattr(index, 'dtype', type(indices).__name__)}"
        )
    if dims is not None and len(x_shape) == dims + 1 and index.ndim == dims + 1:
        out = max_unpool_as(
            caller, reshape(x, (1,) + x_shape), index[None], kernel_shape, strides, pads,
            output_size, names, dims,
        )  # fmt: skip
        return reshape(out, out.shape[1:])
    check_rank(caller, x_shape)
    if dims is not None and len(x_shape) != dims + 2:
        raise ShapeError(
            f"{caller}: input must be (N, C, *spatial) or (C, *spatial) with {dims} spatial "
            f"dims, got shape {x_shape}"
        )
    spatial = len(x_shape) - 2
    kernel = spatial_ints(kernel_shape, spatial, names["kernel_shape"], caller, 1)
    steps = spatial_ints(1 if strides is None else strides, spatial, names["strides"], caller, 1)
    pads = onnx_pads(pads, spatial, caller)
    default = tuple(
        (n - 1) * s + k - b - e
        for n, s, k, b, e in zip(
            x_shape[2:], steps, kernel, pads[:spatial], pads[spatial:], strict=True
        )
    )
    size = default if output_size is None else _unpool_size(caller, output_size, spatial, x_shape)
    if dims is not None and output_size is not None:
        for dim, (n, d, s) in enumerate(zip(size, default, steps, strict=True)):
            if not d - s < n < d + s:
                raise ShapeError(
                    f"{caller}: output_size {tuple(output_size)} must lie strictly within a "
                    f"{names['strides']} of the default {default} in each dim; dim {dim} must be "
                    f"between {d - s} and {d + s} (exclusive)"
                )
    if min(size) < 1:
        raise ShapeError(f"{caller}: the output size {size} has an empty dim (input {x_shape})")
    check_floating(caller, input=array_of(x))
    check_one_device(caller, input=array_of(x), indices=index)
    if index.shape != x_shape:
        raise ShapeError(f"{caller}: indices {index.shape} must have input's shape {x_shape}")
    plane = math.prod(size)
    if index.size and not (0 <= int(index.min()) and int(index.max()) < plane):
        bad = index[(index < 0) | (index >= plane)].ravel()[0]
        raise ArgumentError(
            f"{caller}: indices must lie in [0, {plane}) (positions in an output plane of "
            f"{size}), found {int(bad)}"
        )
    return MaxUnpool.apply(x, indices=index, output_size=size)


def _unpool_size(caller: str, output_size, dims: int, x_shape) -> tuple[int, ...]:
    """max_unpool's output_size: the spatial sizes, or (N, C, *spatial) of which they are taken."""
    if isinstance(output_size, Sequence) and len(output_size) == dims + 2:
        output_size = output_size[2:]
    if not isinstance(output_size, Sequence) or len(output_size) != dims:
        raise ShapeError(
            f"{caller}: output_size must hold {dims} sizes (or {dims + 2}, with N and C), got "
            f"{output_size!r} for input {x_shape}"
        )
    return spatial_ints(tuple(output_size), dims, "output_size", caller, 0)


def _patches_window(caller, x_shape, kernel_shape, strides, pads, dilations, names):
    """The Window of unfold_patches / fold_patches over an input of x_shape (N, C, *spatial)."""
    check_rank(caller, x_shape, "the image")
    dims = len(x_shape) - 2
    kernel = spatial_ints(kernel_shape, dims, names["kernel_shape"], caller, 1)
    steps, spread = check_strides_dilations(caller, strides, dilations, dims, names)
    return conv_window(x_shape[2:], kernel, steps, onnx_pads(pads, dims, caller), spread, caller)


class UnfoldPatches(Op):
    """The sliding windows of x (N, C, *spatial) as columns (N, C*K, L) (see `unfold_patches`):
    im2col, laid out per image. fold_patches is its adjoint, and each op's backward is the
    other's kernel."""

    name = "unfold_patches"
    inputs = ("x",)
    attrs = ("kernel_shape", "strides", "pads", "dilations")

    @staticmethod
    def forward(ctx, x):
        return _unfold(ctx, x)

    @staticmethod
    def backward(ctx, grad):
        """dx = col2im(grad): each column entry added back where its window read it."""
        return _fold(ctx, grad, ctx.shapes[0])


def _window_of(ctx, x_shape):
    return conv_window(x_shape[2:], ctx.kernel_shape, ctx.strides, ctx.pads, ctx.dilations)


# The patch ops' kernels, each the other op's backward. numpy has neither, so under create_graph,
# where the gradient is a Tensor, each records the op whose forward it is (whose own backward is
# the other kernel again): the one formula, on arrays or recorded.


def _unfold(ctx, x):
    """im2col of x (N, C, *spatial) into columns (N, C*K, L), for the window attributes of ctx
    (either patch op's); a Tensor x is recorded as unfold_patches."""
    if isinstance(x, Tensor):
        return UnfoldPatches.apply(
            x,
            kernel_shape=ctx.kernel_shape,
            strides=ctx.strides,
            pads=ctx.pads,
            dilations=ctx.dilations,
        )
    window = _window_of(ctx, x.shape)
    col = im2col(
        x, window.kernel, strides=window.strides, pads=window.pads, dilations=window.dilations
    )
    rows, blocks = col.shape[0], math.prod(window.out)
    return ctx.xp.ascontiguousarray(col.reshape(rows, x.shape[0], blocks).transpose(1, 0, 2))


def _fold(ctx, columns, x_shape):
    """col2im of columns (N, C*K, L) into x_shape (N, C, *spatial), for the window attributes
    of ctx (either patch op's); a Tensor of columns is recorded as fold_patches."""
    if isinstance(columns, Tensor):
        return FoldPatches.apply(
            columns,
            output_size=tuple(x_shape[2:]),
            kernel_shape=ctx.kernel_shape,
            strides=ctx.strides,
            pads=ctx.pads,
            dilations=ctx.dilations,
        )
    images, rows, blocks = columns.shape
    flat = ctx.xp.ascontiguousarray(columns.transpose(1, 0, 2)).reshape(rows, images * blocks)
    return col2im(
        flat, x_shape, ctx.kernel_shape, strides=ctx.strides, pads=ctx.pads, dilations=ctx.dilations
    )


def unfold_patches(
    x,
    kernel_shape: Sequence[int] | int,
    *,
    strides: Sequence[int] | int | None = None,
    pads: Sequence[int] | int | None = None,
    dilations: Sequence[int] | int | None = None,
) -> Tensor:
    """The sliding windows of x (N, C, *spatial), 1 to 3 spatial dims, as columns (N, C*K, L)
    (PyTorch's F.unfold): K = prod(kernel_shape) taps per window, L windows, the zero-padded
    input read as conv reads it (ONNX names: strides and dilations default to 1, pads to 0):

        out[n, c*K + k, l] = x_padded[n, c, l_i * strides_i + k_i * dilations_i (each dim i)]

    fold_patches with the same attributes adds the columns back (its adjoint)."""
    return unfold_patches_as("unfold_patches", x, kernel_shape, strides, pads, dilations)


def unfold_patches_as(
    caller, x, kernel_shape, strides, pads, dilations, names=ONNX_NAMES, dims=None
) -> Tensor:
    """`unfold_patches` called as `caller`, errors naming the attributes as `names` spells
    them. With `dims`, PyTorch's F.unfold rules: `dims` spatial dims, and an unbatched
    (C, *spatial) x taken as a batch of one (dropped again)."""
    x_shape = shape_of(x)
    if dims is not None:
        if len(x_shape) == dims + 1:
            out = unfold_patches_as(
                caller, reshape(x, (1,) + x_shape), kernel_shape, strides, pads, dilations,
                names, dims,
            )  # fmt: skip
            return reshape(out, out.shape[1:])
        _check_batched(caller, x_shape, dims)
    window = _patches_window(caller, x_shape, kernel_shape, strides, pads, dilations, names)
    check_floating(caller, input=array_of(x))
    return UnfoldPatches.apply(
        x,
        kernel_shape=window.kernel,
        strides=window.strides,
        pads=window.pads,
        dilations=window.dilations,
    )


def _check_batched(caller: str, x_shape, dims: int) -> None:
    if len(x_shape) != dims + 2:
        raise ShapeError(
            f"{caller}: input must be (N, C, *spatial) or (C, *spatial) with {dims} spatial "
            f"dims, got shape {x_shape}"
        )


class FoldPatches(Op):
    """Columns (N, C*K, L) added back into images (N, C, *output_size) (see `fold_patches`):
    col2im per image, the adjoint of unfold_patches."""

    name = "fold_patches"
    inputs = ("x",)
    attrs = ("output_size", "kernel_shape", "strides", "pads", "dilations")

    @staticmethod
    def forward(ctx, x):
        channels = x.shape[1] // math.prod(ctx.kernel_shape)
        return _fold(ctx, x, (x.shape[0], channels) + tuple(ctx.output_size))

    @staticmethod
    def backward(ctx, grad):
        """dx = im2col(grad): each column entry reads the gradient where it was added."""
        return _unfold(ctx, grad)


def fold_patches(
    x,
    output_size: Sequence[int] | int,
    kernel_shape: Sequence[int] | int,
    *,
    strides: Sequence[int] | int | None = None,
    pads: Sequence[int] | int | None = None,
    dilations: Sequence[int] | int | None = None,
) -> Tensor:
    """Columns x (N, C*K, L) summed back into images (N, C, *output_size) (PyTorch's F.fold),
    the adjoint of unfold_patches: each entry added to the image position its window tap reads
    (overlapping windows add up; entries in the padding are dropped). L must be the number of
    windows unfold_patches finds in output_size with these attributes."""
    return fold_patches_as("fold_patches", x, output_size, kernel_shape, strides, pads, dilations)


def fold_patches_as(
    caller, x, output_size, kernel_shape, strides, pads, dilations, names=ONNX_NAMES, dims=None
) -> Tensor:
    """`fold_patches` called as `caller`, errors naming the attributes as `names` spells them.
    With `dims`, PyTorch's F.fold rules: `dims` spatial dims, and an unbatched (C*K, L) x
    taken as a batch of one (dropped again)."""
    x_shape = shape_of(x)
    if dims is not None and len(x_shape) == 2:
        out = fold_patches_as(
            caller, reshape(x, (1,) + x_shape), output_size, kernel_shape, strides, pads,
            dilations, names, dims,
        )  # fmt: skip
        return reshape(out, out.shape[1:])
    if len(x_shape) != 3:
        unbatched = "" if dims is None else " or (C*K, L)"
        raise ShapeError(f"{caller}: input must be (N, C*K, L){unbatched}, got shape {x_shape}")
    if dims is None:  # as many as output_size or kernel_shape gives, else 2
        sized = [v for v in (output_size, kernel_shape) if isinstance(v, Sequence)]
        dims = len(sized[0]) if sized else 2
    size = spatial_ints(output_size, dims, "output_size", caller, 1)
    kernel = spatial_ints(kernel_shape, dims, names["kernel_shape"], caller, 1)
    taps = math.prod(kernel)
    if x_shape[1] % taps:
        raise ShapeError(
            f"{caller}: input's dim 1 ({x_shape[1]}, of shape {x_shape}) must be C * K, a "
            f"multiple of the {taps} taps of {names['kernel_shape']} {kernel}"
        )
    image = (x_shape[0], x_shape[1] // taps) + size
    window = _patches_window(caller, image, kernel, strides, pads, dilations, names)
    blocks = math.prod(window.out)
    if x_shape[2] != blocks:
        raise ShapeError(
            f"{caller}: input {x_shape} must hold L = {blocks} windows in dim 2, the "
            f"{' * '.join(map(str, window.out))} that {names['kernel_shape']} {kernel} finds in "
            f"output_size {size} with {names['strides']} {window.strides}, "
            f"{names['pads']} {window.pads} and {names['dilations']} {window.dilations}"
        )
    check_floating(caller, input=array_of(x))
    return FoldPatches.apply(
        x,
        output_size=size,
        kernel_shape=window.kernel,
        strides=window.strides,
        pads=window.pads,
        dilations=window.dilations,
    )


def _shuffle_factor(caller: str, name: str, factor) -> int:
    if isinstance(factor, bool) or not isinstance(factor, (int, np.integer)):
        raise DTypeError(f"{caller}: {name} must be an int, got {factor!r}")
    if factor < 1:
        raise ArgumentError(f"{caller}: {name} must be positive, got {factor}")
    return int(factor)


def pixel_shuffle(input, upscale_factor: int) -> Tensor:  # noqa: A002 (PyTorch's name)
    """(*, C * r^2, H, W) rearranged to (*, C, H * r, W * r), r = upscale_factor, as
    PyTorch's pixel_shuffle: out[..., c, h * r + i, w * r + j] = input[..., c * r^2 + i * r + j,
    h, w]. Composed of reshape and permute."""
    caller = "pixel_shuffle"
    r = _shuffle_factor(caller, "upscale_factor", upscale_factor)
    shape = shape_of(input)
    if len(shape) < 3:
        raise ShapeError(f"{caller}: input must have at least 3 dims (*, C, H, W), got {shape}")
    *lead, channels, height, width = shape
    if channels % (r * r):
        raise ShapeError(
            f"{caller}: input's channel dim ({channels}, of shape {shape}) must be a multiple "
            f"of upscale_factor^2 = {r * r}"
        )
    k = len(lead)
    split = reshape(input, (*lead, channels // (r * r), r, r, height, width))
    moved = permute(split, (*range(k), k, k + 3, k + 1, k + 4, k + 2))
    return reshape(moved, (*lead, channels // (r * r), height * r, width * r))


def pixel_unshuffle(input, downscale_factor: int) -> Tensor:  # noqa: A002 (PyTorch's name)
    """(*, C, H * r, W * r) rearranged to (*, C * r^2, H, W), r = downscale_factor: the
    inverse of pixel_shuffle, as PyTorch's pixel_unshuffle. Composed of reshape and permute."""
    caller = "pixel_unshuffle"
    r = _shuffle_factor(caller, "downscale_factor", downscale_factor)
    shape = shape_of(input)
    if len(shape) < 3:
        raise ShapeError(f"{caller}: input must have at least 3 dims (*, C, H, W), got {shape}")
    *lead, channels, height, width = shape
    if height % r or width % r:
        raise ShapeError(
            f"{caller}: input's height and width ({height}, {width}, of shape {shape}) must be "
            f"multiples of downscale_factor {r}"
        )
    k = len(lead)
    split = reshape(input, (*lead, channels, height // r, r, width // r, r))
    moved = permute(split, (*range(k), k, k + 2, k + 4, k + 1, k + 3))
    return reshape(moved, (*lead, channels * r * r, height // r, width // r))
