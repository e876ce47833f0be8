"""Max and average pooling: the ops, their gradient kernels and their numba kernels.

max_pool and avg_pool over 1 to 3 spatial dims with PyTorch's semantics, their gradient kernels
max_pool_grad and avg_pool_grad, and numba kernels for both.

The ops take ONNX's attribute names and defaults, as `conv` does: kernel_shape, strides (default
1), pads ([b0, b1, ..., e0, e1, ...], default 0), dilations (max_pool, default 1), ceil_mode,
count_include_pad (default False); minitrain.nn's F.max_pool2d and friends take PyTorch's
(stride defaults to the kernel size, count_include_pad to True). The window geometry is
PyTorch's (minitrain.ops.convolution.window.pool_window): a pad may be at most half the kernel
size, and with ceil_mode the last window must start inside the input or its left padding.

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
from ..core.checks import NOT_BOOL, check_floating, require_kind
from ..core.op import Op, shape_of
from ..shapes.indexing import getitem_grad
from .standard import check_one_device
from .window import ONNX_NAMES, Window, check_rank, cover_ends, pool_window

__all__ = [
    "avg_pool",
    "avg_pool_grad",
    "max_pool",
    "max_pool_grad",
]

# Input elements from which the numba kernels run in parallel: in a training step pooling runs
# between GEMMs, whose spinning BLAS threads a parallel region would compete with for the cores.
_PARALLEL_WORK = 1 << 24


def _half(array) -> bool:
    """Whether `array` is float16, which pooling computes in float32 and rounds once: every
    float16 is a float32 exactly, the window sums then run in float32 as PyTorch's do, and the
    numba kernels, which have no float16 loops, apply (numpy's loop over the taps took 26 s for a
    600 x 600 max-pool window)."""
    return array.dtype == np.float16


def _planes(array, spatial_dims: int):
    """(N, C, *spatial) as C-contiguous (N*C, D, H, W): leading size-1 dims fill in up to 3."""
    return np.ascontiguousarray(array).reshape(
        (math.prod(array.shape[:2]),) + (1,) * (3 - spatial_dims) + array.shape[2:]
    )


def check_pool_float(caller: str, x) -> None:
    """A pool's input x (a Tensor, an array or a nested list) must be floating point."""
    check_floating(caller, input=x if hasattr(x, "dtype") else np.asarray(x))


def _padded(xp, x, window: Window, value):
    """x padded with `value` so that every window lies inside it."""
    ends = cover_ends(window, x.shape[2:])
    pad_width = ((0, 0), (0, 0)) + tuple(zip(window.pads_begin, ends, strict=True))
    return xp.pad(x, pad_width, constant_values=value)


def _positions(xp, window: Window, spatial, offset):
    """For kernel tap `offset`: per dim, the input position each output reads (arrays shaped to
    broadcast against the output's spatial dims), and whether it lies inside the input."""
    dims = len(spatial)
    positions, inside = [], True
    for dim in range(dims):
        at = (
            xp.arange(window.out[dim]) * window.strides[dim]
            + offset[dim] * window.dilations[dim]
            - window.pads_begin[dim]
        )
        at = at.reshape((-1,) + (1,) * (dims - 1 - dim))
        positions.append(at)
        inside = inside & (at >= 0) & (at < spatial[dim])
    return positions, inside


def _inside(out: int, stride: int, pad: int, kernel: int, dilation: int, length: int):
    """The outputs [lo, hi) of one dim whose windows lie wholly inside the input:
    o * stride - pad >= 0 and o * stride - pad + dilation * (kernel - 1) < length."""
    lo = min(out, -(-pad // stride))
    last = length - 1 - dilation * (kernel - 1) + pad  # the largest o * stride allowed
    return lo, max(lo, min(out, last // stride + 1)) if last >= 0 else lo


@functools.cache
def _max_pool_kernel(kernel: tuple[int, int, int], parallel: bool):
    """The max pooling numba kernel for one canonical 3-D kernel shape (a parallel or a serial
    build), on (R, D, H, W) planes like the other pooling kernels; `inside` holds each dim's
    outputs [lo, hi) whose windows lie wholly inside the input (see _inside). The kernel shape is a
    constant of the compiled code, so the tap loops have fixed trip counts that LLVM unrolls:
    three times faster than with the shape as an argument. Windows wholly inside the input (all
    of them without padding) take a path with no bounds tests, comparing by selects rather than
    branches; the others test each tap."""
    loop = numba_math.loop(parallel)
    kd, kh, kw = kernel

    @backend.jit(parallel=parallel, fastmath=False)
    def max_pool_planes(x, strides, pads, dilations, inside, y, indices):
        planes, depth, height, width = x.shape
        sd, sh, sw = strides
        pd, ph, pw = pads
        dd, dh, dw = dilations
        out_d, out_h, out_w = y.shape[1:]
        (lo_d, hi_d), (lo_h, hi_h), (lo_w, hi_w) = inside
        for r in loop(planes):
            flat = x[r].reshape(depth * height * width)
            for od in range(out_d):
                for oh in range(out_h):
                    y_row, at_row = y[r, od, oh], indices[r, od, oh]
                    inner = lo_d <= od < hi_d and lo_h <= oh < hi_h
                    for ow in range(out_w):
                        if inner and lo_w <= ow < hi_w:
                            first = ((od * sd - pd) * height + oh * sh - ph) * width + ow * sw - pw
                            best, at = flat[first], first
                            for a in range(kd):
                                for b in range(kh):
                                    row = first + (a * dd * height + b * dh) * width
                                    for c in range(kw):
                                        i = row + c * dw
                                        value = flat[i]
                                        # first max wins; NaN always takes over (NaN propagates)
                                        take = (value > best) | (value != value)
                                        best = value if take else best
                                        at = i if take else at
                        else:
                            best, at = -np.inf, -1
                            for a in range(kd):
                                i_d = od * sd - pd + a * dd
                                if i_d < 0 or i_d >= depth:
                                    continue
                                for b in range(kh):
                                    i_h = oh * sh - ph + b * dh
                                    if i_h < 0 or i_h >= height:
                                        continue
                                    for c in range(kw):
                                        i_w = ow * sw - pw + c * dw
                                        if i_w < 0 or i_w >= width:
                                            continue
                                        i = (i_d * height + i_h) * width + i_w
                                        value = flat[i]
                                        if at < 0 or value > best or value != value:
                                            best, at = value, i
                        y_row[ow], at_row[ow] = best, at

    return max_pool_planes


def max_pool_forward(x, window: Window):
    """(Y, indices) of max pooling x (N, C, *spatial) over `window`: the max of each window and
    where it sits, as a flat index into its (n, c) plane of x (PyTorch's return_indices). The
    first maximal element in window order wins; a NaN counts as a maximum (max pooling
    propagates NaN, as in PyTorch); a window with no input element gives -inf (an integer x:
    its dtype's least value) and index -1."""
    if _half(x):
        y, indices = max_pool_forward(x.astype(np.float32), window)
        return y.astype(np.float16), indices
    spatial = x.shape[2:]
    if backend.numba_takes(x):
        kernel, strides, pads, dilations, out = window.canonical()
        planes = _planes(x, len(spatial))
        y = np.empty((planes.shape[0],) + out, x.dtype)
        indices = np.empty(y.shape, np.int64)
        inside = tuple(
            _inside(*dim)
            for dim in zip(out, strides, pads, kernel, dilations, planes.shape[1:], strict=True)
        )
        _max_pool_kernel(kernel, x.size >= _PARALLEL_WORK)(
            planes, strides, pads, dilations, inside, y, indices
        )
        shape = x.shape[:2] + window.out
        return y.reshape(shape), indices.reshape(shape)
    xp = backend.array_module(x)
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min  # integers: no -inf
    padded = _padded(xp, x, window, lowest)
    best = xp.full(x.shape[:2] + window.out, lowest, x.dtype)
    indices = xp.full(best.shape, -1, np.int64)
    lead = (slice(None), slice(None))
    for offset in np.ndindex(*window.kernel):
        values = padded[lead + window.slices(offset)]
        positions, inside = _positions(xp, window, spatial, offset)
        flat = 0
        for length, at in zip(spatial, positions, strict=True):
            flat = flat * length + at
        take = inside & ((indices < 0) | (values > best) | xp.isnan(values))
        best = xp.where(take, values, best)
        indices = xp.where(take, flat, indices)
    return best, indices


@functools.cache
def _max_pool_grad_kernel(parallel: bool):
    """max_pool_grad as a numba kernel on (R, P) planes of dY and indices, in a parallel and a
    serial build (for small inputs, waking threads costs more than it saves)."""
    loop = numba_math.loop(parallel)

    @backend.jit(parallel=parallel, fastmath=False)
    def max_pool_grad_planes(dy, indices, dx):
        for r in loop(dy.shape[0]):
            dx[r] = 0
            for p in range(dy.shape[1]):
                at = indices[r, p]
                if at >= 0:
                    dx[r, at] += dy[r, p]

    return max_pool_grad_planes


def max_pool_grad(dY, indices, x_shape):
    """MaxPoolGrad: dX (x_shape) with each dY entry added at the input position its window's
    max came from; `indices` (the shape of dY) holds flat positions in each (n, c) plane, as
    max_pool's forward and PyTorch's return_indices give them (-1: nowhere). Windows that share
    a max add up; elements that were no window's max get 0."""
    x_shape, dy_shape = tuple(int(n) for n in x_shape), shape_of(dY)
    check_one_device("max_pool_grad", dY=dY, indices=indices)
    if not backend.is_array(indices):  # a list: on dY's device
        indices = backend.array_module(dY).asarray(indices)
    check_rank("max_pool_grad", x_shape, "x_shape")
    if (
        dy_shape != shape_of(indices)
        or len(dy_shape) != len(x_shape)
        or dy_shape[:2] != x_shape[:2]
    ):
        raise ShapeError(
            f"max_pool_grad: dY {dy_shape} and indices {shape_of(indices)} must have one "
            f"shape, (N, C, *out) with the N and C and the rank of x_shape {x_shape}"
        )
    if indices.dtype.kind not in "iu":
        raise DTypeError(f"max_pool_grad: indices must be integers, got {indices.dtype}")
    plane = math.prod(x_shape[2:])
    if indices.size and not (-1 <= int(indices.min()) and int(indices.max()) < plane):
        raise ArgumentError(
            f"max_pool_grad: indices must lie in [-1, {plane}) (-1, or a position in an x plane "
            f"of {x_shape[2:]}), got values from {int(indices.min())} to {int(indices.max())}"
        )
    return _max_pool_grad(dY, indices, x_shape)


def _max_pool_grad(dY, indices, x_shape):
    """max_pool_grad without the checks, for indices max_pool's forward made."""
    if _half(dY):
        return _max_pool_grad(dY.astype(np.float32), indices, x_shape).astype(np.float16)
    planes, plane = math.prod(x_shape[:2]), math.prod(x_shape[2:])
    positions = math.prod(dY.shape[2:])  # (not -1: planes may be 0)
    if backend.numba_takes(dY):
        dX = np.empty((planes, plane), dY.dtype)
        _max_pool_grad_kernel(dX.size >= _PARALLEL_WORK)(
            np.ascontiguousarray(dY).reshape(planes, positions),
            np.ascontiguousarray(indices, dtype=np.int64).reshape(planes, positions),
            dX,
        )
        return dX.reshape(x_shape)
    xp = backend.array_module(dY, indices)
    dX = xp.zeros((planes, plane), dY.dtype)
    indices = indices.reshape(planes, positions)
    rows = xp.broadcast_to(xp.arange(planes)[:, None], indices.shape)
    # windows over no input element (index -1) add 0 at position 0: no boolean mask, which on a
    # GPU would read its count back to the host
    found = indices >= 0
    dY = xp.where(found, dY.reshape(planes, positions), 0)
    backend.scatter_add(xp, dX, (rows, xp.where(found, indices, 0)), dY)
    return dX.reshape(x_shape)


class MaxPool(Op):
    """The max of each window (PyTorch's semantics, see `max_pool`). Saves only where each max
    came from; the backward, max_pool_grad, sends each gradient there."""

    name = "max_pool"
    inputs = ("x",)
    attrs = ("kernel_shape", "strides", "pads", "dilations", "ceil_mode")
    saved = ("indices",)
    fused_backward = "train step CNN"

    @staticmethod
    def forward(ctx, x):
        window = pool_window(
            "max_pool",
            x.shape,
            ctx.kernel_shape,
            ctx.strides,
            ctx.pads,
            ctx.dilations,
            ctx.ceil_mode,
        )
        y, indices = max_pool_forward(x, window)
        ctx.save(indices=indices)
        return y

    @staticmethod
    def backward(ctx, grad):
        """dx[indices] += grad: each window's gradient goes where its max came from."""
        return _max_pool_grad(grad, ctx.indices, ctx.shapes[0])

    @staticmethod
    def tensor_backward(ctx, grad):
        """max_pool_grad as getitem_grad, a scatter-add of grad at the (constant) indices into
        (N*C, plane): linear in grad, its own gradient a gather of grad back."""
        x_shape, xp = ctx.shapes[0], ctx.xp
        planes, plane = math.prod(x_shape[:2]), math.prod(x_shape[2:])
        at = ctx.indices.reshape(planes, math.prod(ctx.indices.shape[2:]))
        rows = xp.broadcast_to(xp.arange(planes)[:, None], at.shape)
        grad = grad.reshape(at.shape)
        found = at >= 0
        if not found.all():  # windows over no input element send their gradient nowhere
            grad, rows, at = grad[found], rows[found], at[found]
        return getitem_grad(grad, (planes, plane), (rows, at)).reshape(x_shape)


def max_pool(
    x,
    kernel_shape: Sequence[int] | int,
    *,
    strides: Sequence[int] | int | None = None,
    pads: Sequence[int] | int | None = None,
    dilations: Sequence[int] | int | None = None,
    ceil_mode: bool = False,
) -> Tensor:
    """The max over each window of x (N, C, *spatial), 1 to 3 spatial dims:

        Y[n, c, o] = max over taps k that land inside the input of
                     x[n, c, o * strides - pads_begin + k * dilations]

    The padding never wins. The gradient goes to the first maximal element of each window in
    window order (PyTorch's rule for ties). ONNX names and defaults: strides 1, pads 0
    ([b0, ..., e0, ...]), dilations 1; ceil_mode and the pad limit as in PyTorch.
    """
    return max_pool_as("max_pool", x, kernel_shape, strides, pads, dilations, ceil_mode)


def max_pool_as(
    caller, x, kernel_shape, strides, pads, dilations, ceil_mode, names=ONNX_NAMES
) -> Tensor:
    """`max_pool` called as `caller`: its errors name caller and the attributes as `names`
    spells them (minitrain.nn passes PyTorch's names)."""
    window = pool_window(
        caller, shape_of(x), kernel_shape, strides, pads, dilations, ceil_mode, names
    )
    require_kind(caller, x, "iuf", NOT_BOOL, "int")  # integers too, as in PyTorch
    return MaxPool.apply(
        x,
        kernel_shape=window.kernel,
        strides=window.strides,
        pads=window.pads,
        dilations=window.dilations,
        ceil_mode=bool(ceil_mode),
    )


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
    if _half(dY):
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
    if _half(x):
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
            _planes(x, len(spatial)), kernel, strides, pads, divisor.reshape(out), y
        )
        return y.reshape(x.shape[:2] + window.out)
    padded = _padded(xp, x, window, 0)
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
    x,
    kernel_shape: Sequence[int] | int,
    *,
    strides: Sequence[int] | int | None = None,
    pads: Sequence[int] | int | None = None,
    ceil_mode: bool = False,
    count_include_pad: bool = False,
    divisor_override: int | None = None,
) -> Tensor:
    """The mean over each window of x (N, C, *spatial), 1 to 3 spatial dims:

        Y[n, c, o] = (sum of the window's input elements) / divisor[o]

    divisor (PyTorch's rule): divisor_override when given; else, with count_include_pad, the
    window's size clipped to the padded input (ceil_mode's overhang past the padding does not
    count); else the number of input elements in the window. ONNX names and defaults:
    strides 1, pads 0 ([b0, ..., e0, ...]), count_include_pad False.
    """
    return avg_pool_as(
        "avg_pool", x, kernel_shape, strides, pads, ceil_mode, count_include_pad, divisor_override
    )


def avg_pool_as(
    caller,
    x,
    kernel_shape,
    strides,
    pads,
    ceil_mode,
    count_include_pad,
    divisor_override,
    names=ONNX_NAMES,
) -> Tensor:
    """`avg_pool` called as `caller`: its errors name caller and the attributes as `names`
    spells them (minitrain.nn passes PyTorch's names)."""
    window = pool_window(caller, shape_of(x), kernel_shape, strides, pads, None, ceil_mode, names)
    check_pool_float(caller, x)
    if not isinstance(count_include_pad, (bool, np.bool_)):
        raise DTypeError(f"{caller}: count_include_pad must be a bool, got {count_include_pad!r}")
    _check_divisor_override(caller, divisor_override)
    return AveragePool.apply(
        x,
        kernel_shape=window.kernel,
        strides=window.strides,
        pads=window.pads,
        ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad),
        divisor_override=None if divisor_override is None else int(divisor_override),
    )
