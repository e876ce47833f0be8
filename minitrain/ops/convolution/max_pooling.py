"""Max pooling: max_pool over 1 to 3 spatial dims with PyTorch's semantics, its gradient kernel
max_pool_grad, and numba kernels for both.

The op takes PyTorch's arguments and defaults, as F.max_pool1d/2d/3d do (kernel_size, stride
defaulting to the kernel size, padding, dilation, ceil_mode, return_indices), for any of 1 to 3
spatial dims; the MaxPool op's attributes and max_pool_grad keep ONNX's spelling, the kernels'
contract. The window geometry is PyTorch's (minitrain.ops.convolution.window.pool_window): a pad
may be at most half the kernel size, and with ceil_mode the last window must start inside the
input or its left padding.

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
from ..core.checks import NOT_BOOL, require_kind
from ..core.op import Op, array_of, shape_of
from ..shapes.indexing import getitem_grad
from .pooling_common import as_planes, is_half, pad_to_windows
from .standard import check_one_device
from .window import Window, check_rank, pool_window, torch_pool_window

__all__ = ["max_pool", "max_pool_grad"]

# Input elements from which the numba kernels run in parallel: in a training step pooling runs
# between GEMMs, whose spinning BLAS threads a parallel region would compete with for the cores.
_PARALLEL_WORK = 1 << 24


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
    if is_half(x):
        y, indices = max_pool_forward(x.astype(np.float32), window)
        return y.astype(np.float16), indices
    spatial = x.shape[2:]
    if backend.numba_takes(x):
        kernel, strides, pads, dilations, out = window.canonical()
        planes = as_planes(x, len(spatial))
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
    padded = pad_to_windows(xp, x, window, lowest)
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
    if is_half(dY):
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
    input,  # noqa: A002 (PyTorch's name)
    kernel_size: Sequence[int] | int,
    stride: Sequence[int] | int | None = None,
    padding: Sequence[int] | Sequence[Sequence[int]] | int = 0,
    dilation: Sequence[int] | int = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """The max over each window of input (N, C, *spatial), 1 to 3 spatial dims (taken from
    input's rank), as PyTorch's max_pool1d/2d/3d:

        Y[n, c, o] = max over taps k that land inside the input of
                     input[n, c, o * stride - pad_begin + k * dilation]

    stride defaults to kernel_size; padding (an int or one per spatial dim, or one (begin, end)
    pair per dim beyond PyTorch) is at most kernel_size // 2 and never wins; ceil_mode rounds the
    output size up, as PyTorch's. The gradient goes to the first maximal element of each window
    in window order (PyTorch's rule for ties). With return_indices, returns (output, indices),
    the int64 position of each max in its (n, c) input plane (what max_unpool takes).
    """
    return max_pool_as(
        "max_pool", input, kernel_size, stride, padding, dilation, ceil_mode, return_indices
    )


def max_pool_as(
    caller,
    input,  # noqa: A002
    kernel_size,
    stride,
    padding,
    dilation,
    ceil_mode,
    return_indices,
):
    """`max_pool` called as `caller` (F.max_pool2d passes its own name): its errors name
    caller."""
    window = torch_pool_window(
        caller, shape_of(input), kernel_size, stride, padding, dilation, ceil_mode
    )
    require_kind(caller, input, "iuf", NOT_BOOL, "int")  # integers too, as in PyTorch
    out = MaxPool.apply(
        input,
        kernel_shape=window.kernel,
        strides=window.strides,
        pads=window.pads,
        dilations=window.dilations,
        ceil_mode=bool(ceil_mode),
    )
    if not return_indices:
        return out
    # the positions of the maxima, from a second, gradient-free pass of the kernel
    _, indices = max_pool_forward(array_of(input), window)
    return out, Tensor(indices)
