"""Average pooling: avg_pool over 1 to 3 spatial dims with PyTorch's semantics, its gradient
kernel avg_pool_grad (recorded as an op under create_graph, avg_pool its adjoint), and numba
kernels for both.

The op takes PyTorch's arguments and defaults, as F.avg_pool1d/2d/3d do (kernel_size, stride
defaulting to the kernel size, padding, ceil_mode, count_include_pad defaulting to True,
divisor_override), for any of 1 to 3 spatial dims; the AveragePool op's attributes and
avg_pool_grad keep ONNX's spelling (kernel_shape, strides, pads in ONNX order, count_include_pad
defaulting to False), the kernel's contract. The window geometry is PyTorch's
(minitrain.ops.convolution.window.pool_window): a pad may be at most half the kernel size, and
with ceil_mode the last window must start inside the input or its left padding.

The numba kernels take (R, D, H, W) planes (R = N*C; 1-D and 2-D with leading size-1 dims) and
the canonical 3-D window (Window.canonical), run the planes in parallel, each writing only its
own plane, and test each tap against the input's bounds, so no padded copy is made.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from ... import backend
from ...errors import ArgumentError, DTypeError, ShapeError
from ...tensor import Tensor
from ..core import numba_math
from ..core.op import Op, shape_of
from .pooling_common import as_planes, check_pool_float, is_half, pad_to_windows
from .window import Window, cover_ends, pool_window, torch_pool_window

__all__ = ["avg_pool", "avg_pool_grad"]

# Input elements from which the numba kernels run in parallel: in a training step pooling runs
# between GEMMs, whose spinning BLAS threads a parallel region would compete with for the cores.
_PARALLEL_WORK = 1 << 24


def _avg_divisor(xp, window: Window, spatial, count_include_pad, divisor_override, dtype):
    """What each output of avg_pool divides by, shaped like the output's spatial dims
    (PyTorch's rule): divisor_override; or the window's size clipped to the padded input
    (count_include_pad) or to the input. A product of per-dim counts, since windows are boxes."""
    if divisor_override is not None:
        return xp.full(window.out, divisor_override, dtype)
    divisor = np.ones((), dtype)
    for length, begin, end, n, s, k in zip(
        spatial,
        window.pads_begin,
        window.pads_end,
        window.out,
        window.strides,
        window.kernel,
        strict=True,
    ):
        start = np.arange(n) * s - begin
        stop = np.minimum(start + k, length + end)
        if not count_include_pad:
            start, stop = start.clip(min=0), stop.clip(max=length)
        divisor = divisor[..., None] * (stop - start).astype(dtype)
    return xp.asarray(divisor)


def _check_divisor_override(caller: str, divisor_override) -> None:
    if divisor_override is not None and (
        isinstance(divisor_override, bool)
        or not isinstance(divisor_override, (int, np.integer))
        or divisor_override == 0
    ):
        raise ArgumentError(
            f"{caller}: divisor_override must be a nonzero int or None, got {divisor_override!r}"
        )


@functools.cache
def _avg_pool_grad_kernel(parallel: bool):
    """avg_pool_grad as a numba kernel, in a parallel and a serial build, as the others."""
    loop = numba_math.loop(parallel)

    @backend.jit(parallel=parallel, fastmath=False)
    def avg_pool_grad_planes(dy, divisor, kernel, strides, pads, dx):
        planes, depth, height, width = dx.shape
        kd, kh, kw = kernel
        sd, sh, sw = strides
        pd, ph, pw = pads
        out_d, out_h, out_w = dy.shape[1:]
        for r in loop(planes):
            dx[r] = 0
            for od in range(out_d):
                d0, d1 = max(od * sd - pd, 0), min(od * sd - pd + kd, depth)
                for oh in range(out_h):
                    h0, h1 = max(oh * sh - ph, 0), min(oh * sh - ph + kh, height)
                    for ow in range(out_w):
                        w0, w1 = max(ow * sw - pw, 0), min(ow * sw - pw + kw, width)
                        share = dy[r, od, oh, ow] / divisor[od, oh, ow]
                        for i_d in range(d0, d1):
                            for i_h in range(h0, h1):
                                for i_w in range(w0, w1):
                                    dx[r, i_d, i_h, i_w] += share

    return avg_pool_grad_planes


def avg_pool_grad(
    dY,
    x_shape,
    kernel_shape: Sequence[int] | int,
    *,
    strides: Sequence[int] | int | None = None,
    pads: Sequence[int] | int | None = None,
    ceil_mode: bool = False,
    count_include_pad: bool = False,
    divisor_override: int | None = None,
):
    """AveragePoolGrad: dX[i] = sum over the windows o holding input position i of
    dY[o] / divisor[o], the divisor as in `avg_pool`. dY (N, C, *out); dX has x_shape.

    Linear in dY, its adjoint avg_pool itself: a Tensor dY (create_graph) gives dX recorded as
    an op whose gradient is avg_pool of the gradient, so the derivatives go on to any order."""
    x_shape = tuple(int(n) for n in x_shape)
    window = pool_window("avg_pool_grad", x_shape, kernel_shape, strides, pads, None, ceil_mode)
    _check_divisor_override("avg_pool_grad", divisor_override)
    expected = x_shape[:2] + window.out
    if shape_of(dY) != expected:
        raise ShapeError(
            f"avg_pool_grad: dY {shape_of(dY)} must be (N, C, *out) = {expected} for "
            f"x_shape {x_shape}"
        )
    if isinstance(dY, Tensor):  # numpy has no such kernel: recorded (create_graph)
        return AveragePoolGrad.apply(
            dY,
            x_shape=x_shape,
            kernel_shape=window.kernel,
            strides=window.strides,
            pads=window.pads,
            ceil_mode=bool(ceil_mode),
            count_include_pad=bool(count_include_pad),
            divisor_override=divisor_override,
        )
    if is_half(dY):
        wide = avg_pool_grad(
            dY.astype(np.float32),
            x_shape,
            kernel_shape,
            strides=strides,
            pads=pads,
            ceil_mode=ceil_mode,
            count_include_pad=count_include_pad,
            divisor_override=divisor_override,
        )
        return wide.astype(np.float16)
    xp = backend.array_module(dY)
    spatial = x_shape[2:]
    divisor = _avg_divisor(xp, window, spatial, count_include_pad, divisor_override, dY.dtype)
    if backend.numba_takes(dY):
        kernel, strides, pads, _, out = window.canonical()
        dX = np.empty((math.prod(x_shape[:2]),) + (1,) * (3 - len(spatial)) + spatial, dY.dtype)
        planes = np.ascontiguousarray(dY).reshape((-1,) + out)
        _avg_pool_grad_kernel(dX.size >= _PARALLEL_WORK)(
            planes, divisor.reshape(out), kernel, strides, pads, dX
        )
        return dX.reshape(x_shape)
    shares = dY / divisor
    ends = cover_ends(window, spatial)
    padded_spatial = tuple(
        n + b + e for n, b, e in zip(spatial, window.pads_begin, ends, strict=True)
    )
    padded = xp.zeros(x_shape[:2] + padded_spatial, dY.dtype)
    lead = (slice(None), slice(None))
    for offset in np.ndindex(*window.kernel):
        padded[lead + window.slices(offset)] += shares  # one tap's windows never overlap
    interior = tuple(slice(b, b + n) for b, n in zip(window.pads_begin, spatial, strict=True))
    return xp.ascontiguousarray(padded[lead + interior])


@functools.cache
def _avg_pool_kernel(parallel: bool):
    """avg_pool's forward as a numba kernel, in a parallel and a serial build, as the others."""
    loop = numba_math.loop(parallel)

    @backend.jit(parallel=parallel, fastmath=False)
    def avg_pool_planes(x, kernel, strides, pads, divisor, y):
        planes, depth, height, width = x.shape
        kd, kh, kw = kernel
        sd, sh, sw = strides
        pd, ph, pw = pads
        out_d, out_h, out_w = y.shape[1:]
        for r in loop(planes):
            for od in range(out_d):
                d0, d1 = max(od * sd - pd, 0), min(od * sd - pd + kd, depth)
                for oh in range(out_h):
                    h0, h1 = max(oh * sh - ph, 0), min(oh * sh - ph + kh, height)
                    for ow in range(out_w):
                        w0, w1 = max(ow * sw - pw, 0), min(ow * sw - pw + kw, width)
                        total = 0.0
                        for i_d in range(d0, d1):
                            for i_h in range(h0, h1):
                                for i_w in range(w0, w1):
                                    total += x[r, i_d, i_h, i_w]
                        y[r, od, oh, ow] = total / divisor[od, oh, ow]

    return avg_pool_planes


class AveragePool(Op):
    """The mean of each window (PyTorch's semantics, see `avg_pool`). Saves nothing: the
    backward, avg_pool_grad, needs only the input's shape and the attributes."""

    name = "avg_pool"
    inputs = ("x",)
    attrs = (
        "kernel_shape",
        "strides",
        "pads",
        "ceil_mode",
        "count_include_pad",
        "divisor_override",
    )

    @staticmethod
    def forward(ctx, x):
        return _average(ctx, x)

    @staticmethod
    def backward(ctx, grad):
        """dx = sum over the windows o holding x of grad[o] / divisor[o]."""
        return _spread(ctx, grad, ctx.shapes[0])


def _spread(ctx, grad, x_shape):
    """avg_pool_grad of `grad` for the attributes of ctx (AveragePool's or AveragePoolGrad's)."""
    return avg_pool_grad(
        grad,
        x_shape,
        ctx.kernel_shape,
        strides=ctx.strides,
        pads=ctx.pads,
        ceil_mode=ctx.ceil_mode,
        count_include_pad=ctx.count_include_pad,
        divisor_override=ctx.divisor_override,
    )


def _average(ctx, x):
    """avg_pool of x (N, C, *spatial) for the attributes of ctx (AveragePool's, or
    AveragePoolGrad's, whose gradient it is): the kernels on an array, the avg_pool op on a
    Tensor (create_graph)."""
    if isinstance(x, Tensor):
        return AveragePool.apply(x, **{name: getattr(ctx, name) for name in AveragePool.attrs})
    if is_half(x):
        return _average(ctx, x.astype(np.float32)).astype(np.float16)
    window = pool_window(
        "avg_pool", x.shape, ctx.kernel_shape, ctx.strides, ctx.pads, None, ctx.ceil_mode
    )
    spatial, xp = x.shape[2:], ctx.xp
    divisor = _avg_divisor(
        xp, window, spatial, ctx.count_include_pad, ctx.divisor_override, x.dtype
    )
    if backend.numba_takes(x):
        kernel, strides, pads, _, out = window.canonical()
        y = np.empty((math.prod(x.shape[:2]),) + out, x.dtype)
        _avg_pool_kernel(x.size >= _PARALLEL_WORK)(
            as_planes(x, len(spatial)), kernel, strides, pads, divisor.reshape(out), y
        )
        return y.reshape(x.shape[:2] + window.out)
    padded = pad_to_windows(xp, x, window, 0)
    lead = (slice(None), slice(None))
    total = xp.zeros(x.shape[:2] + window.out, x.dtype)
    for offset in np.ndindex(*window.kernel):
        total += padded[lead + window.slices(offset)]
    return total / divisor


class AveragePoolGrad(Op, register=False):
    """avg_pool_grad recorded, where create_graph hands it a Tensor: its input is avg_pool's
    gradient dY, its output dX (x_shape). Linear, with avg_pool as its adjoint: its own gradient
    is avg_pool of the gradient, recorded for a Tensor as the avg_pool op, whose gradient is
    this op again."""

    name = "avg_pool_grad"
    inputs = ("grad",)
    attrs = ("x_shape", *AveragePool.attrs)

    @staticmethod
    def forward(ctx, grad):
        return _spread(ctx, grad, ctx.x_shape)

    @staticmethod
    def backward(ctx, grad):
        """dgrad = avg_pool(grad): each window's mean of the gradient, the adjoint of the
        spreading."""
        return _average(ctx, grad)


def avg_pool(
    input,  # noqa: A002 (PyTorch's name)
    kernel_size: Sequence[int] | int,
    stride: Sequence[int] | int | None = None,
    padding: Sequence[int] | Sequence[Sequence[int]] | int = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """The mean over each window of input (N, C, *spatial), 1 to 3 spatial dims (taken from
    input's rank), as PyTorch's avg_pool1d/2d/3d:

        Y[n, c, o] = (sum of the window's input elements) / divisor[o]

    stride defaults to kernel_size; padding (an int or one per spatial dim, or one (begin, end)
    pair per dim beyond PyTorch) is at most kernel_size // 2. divisor (PyTorch's rule):
    divisor_override when given; else, with count_include_pad (the default), the window's size
    clipped to the padded input (ceil_mode's overhang past the padding does not count); else the
    number of input elements in the window.
    """
    return avg_pool_as(
        "avg_pool",
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
    )


def avg_pool_as(
    caller,
    input,  # noqa: A002
    kernel_size,
    stride,
    padding,
    ceil_mode,
    count_include_pad,
    divisor_override,
) -> Tensor:
    """`avg_pool` called as `caller` (F.avg_pool2d passes its own name): its errors name
    caller."""
    window = torch_pool_window(
        caller, shape_of(input), kernel_size, stride, padding, None, ceil_mode
    )
    check_pool_float(caller, input)
    if not isinstance(count_include_pad, (bool, np.bool_)):
        raise DTypeError(f"{caller}: count_include_pad must be a bool, got {count_include_pad!r}")
    _check_divisor_override(caller, divisor_override)
    return AveragePool.apply(
        input,
        kernel_shape=window.kernel,
        strides=window.strides,
        pads=window.pads,
        ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad),
        divisor_override=None if divisor_override is None else int(divisor_override),
    )
