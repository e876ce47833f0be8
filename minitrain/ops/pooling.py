"""Pooling over 1 to 3 spatial dims with PyTorch's semantics: max_pool, avg_pool and
adaptive_avg_pool, their gradient kernels (max_pool_grad, avg_pool_grad, adaptive_avg_pool_grad),
numba kernels for max and average pooling, and the translation of PyTorch's arguments that
minitrain.nn.functional uses.

The ops take ONNX's attribute names and defaults, as `conv` does: kernel_shape, strides
(default 1), pads ([b0, b1, ..., e0, e1, ...], default 0), dilations (max_pool, default 1),
ceil_mode, count_include_pad (default False). F.max_pool2d and friends take PyTorch's
(stride defaults to the kernel size, count_include_pad to True). The window geometry is
PyTorch's: a pad may be at most half the kernel size, and with ceil_mode the last window must
start inside the input or its left padding.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from .. import backend
from ..errors import ArgumentError, DTypeError, ShapeError
from ..tensor import Tensor
from . import numba_math
from .conv import Window, batched, check_rank, onnx_pads, spatial_ints, torch_pads
from .registry import Op, shape_of

# Input elements from which the numba kernels run in parallel (see numba_math.loop). Below it,
# waking threads costs more than it saves; and in a training step pooling runs between GEMMs,
# after each of which OpenBLAS's worker threads spin for ~0.1 s on the cores a parallel region
# needs (the CNN benchmark's step ran 1.5-2x slower with parallel pooling and relu than with
# serial ones).
_PARALLEL_WORK = 1 << 24

# --- geometry -----------------------------------------------------------------------------------

# What the attributes are called in errors: ONNX's names in ops, PyTorch's in F.
_ONNX_NAMES = {
    "kernel_shape": "kernel_shape",
    "strides": "strides",
    "pads": "pads",
    "dilations": "dilations",
}
_TORCH_NAMES = {
    "kernel_shape": "kernel_size",
    "strides": "stride",
    "pads": "padding",
    "dilations": "dilation",
}


def _pool_size(length, begin, end, reach, stride, ceil_mode, dim, where) -> int:
    padded = length + begin + end
    out = (padded - reach + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= length + begin:
        out -= 1  # the last window must start inside the input or the left padding
    if out < 1:
        overhang = f" plus the stride - 1 = {stride - 1} ceil_mode lets it overhang" * ceil_mode
        raise ShapeError(
            f"{where}: the window spans {reach} positions in spatial dim {dim}, more than the "
            f"padded input's {padded} (size {length} + pads {begin}, {end}){overhang}"
        )
    return out


def pool_window(
    where: str,
    x_shape,
    kernel_shape,
    strides,
    pads,
    dilations,
    ceil_mode: bool,
    names: dict = _ONNX_NAMES,
) -> Window:
    """Check a pool's input rank and attributes (before anything runs) and return its Window.

    Outputs per dim: floor((L + pad_begin + pad_end - reach) / stride) + 1, reach =
    dilation * (k - 1) + 1; ceil instead of floor with ceil_mode, dropping a last window that
    would start in the right padding (so with ceil_mode, as in PyTorch, a window may reach
    past the padded input, even be longer than it). Each pad must be at most kernel // 2
    (PyTorch's rule)."""
    _check_input_shape(where, x_shape)
    if not isinstance(ceil_mode, (bool, np.bool_)):
        raise DTypeError(f"{where}: ceil_mode must be a bool, got {ceil_mode!r}")
    dims = len(x_shape) - 2
    kernel = spatial_ints(kernel_shape, dims, names["kernel_shape"], where, 1)
    strides = spatial_ints(1 if strides is None else strides, dims, names["strides"], where, 1)
    dilations = spatial_ints(
        1 if dilations is None else dilations, dims, names["dilations"], where, 1
    )
    pads = onnx_pads(pads, dims, where)
    reach = [d * (k - 1) + 1 for k, d in zip(kernel, dilations, strict=True)]
    for dim in range(dims):
        if max(pads[dim], pads[dims + dim]) > kernel[dim] // 2:
            raise ArgumentError(
                f"{where}: {names['pads']} {pads[dim]}, {pads[dims + dim]} in spatial dim {dim} "
                f"exceed half the kernel: at most {kernel[dim] // 2} for kernel {kernel[dim]}"
            )
    out = tuple(
        _pool_size(
            x_shape[2 + dim],
            pads[dim],
            pads[dims + dim],
            reach[dim],
            strides[dim],
            bool(ceil_mode),
            dim,
            where,
        )
        for dim in range(dims)
    )
    return Window(kernel, strides, pads, dilations, out)


def _check_input_shape(where: str, x_shape) -> None:
    """(N, C, *spatial) with 1 to 3 spatial dims, none of them empty (as PyTorch requires: a
    window over no input has no max and no mean)."""
    check_rank(where, x_shape)
    if 0 in x_shape[2:]:
        raise ShapeError(f"{where}: input {tuple(x_shape)} has an empty spatial dim")


def _cover_ends(window: Window, spatial) -> tuple[int, ...]:
    """End pads that put every window inside the padded input, ceil_mode's overhang included."""
    return tuple(
        max(end, (n - 1) * s + r - length - begin)
        for length, begin, end, n, s, r in zip(
            spatial,
            window.pads_begin,
            window.pads_end,
            window.out,
            window.strides,
            window.reach,
            strict=True,
        )
    )


def _padded(xp, x, window: Window, value):
    """x padded with `value` so that every window lies inside it."""
    ends = _cover_ends(window, x.shape[2:])
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


def _numba_applies(*arrays) -> bool:
    return (
        backend.numba_enabled()
        and all(type(a) is np.ndarray for a in arrays)
        and arrays[0].dtype in (np.float32, np.float64)
    )


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


def _check_float(x, where: str) -> None:
    dtype = x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype
    if dtype.kind != "f":
        raise DTypeError(f"{where}: input must be floating point, got {dtype}")


# --- max pooling --------------------------------------------------------------------------------


def max_pool_forward(x, window: Window):
    """(Y, indices) of max pooling x (N, C, *spatial) over `window`: the max of each window and
    where it sits, as a flat index into its (n, c) plane of x (PyTorch's return_indices). The
    first maximal element in window order wins; a NaN counts as a maximum (max pooling
    propagates NaN, as in PyTorch); a window with no input element gives -inf and index -1."""
    if _half(x):
        y, indices = max_pool_forward(x.astype(np.float32), window)
        return y.astype(np.float16), indices
    spatial = x.shape[2:]
    if _numba_applies(x):
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
    padded = _padded(xp, x, window, -np.inf)
    best = xp.full(x.shape[:2] + window.out, -np.inf, x.dtype)
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


def max_pool_grad(dY, indices, x_shape):
    """MaxPoolGrad: dX (x_shape) with each dY entry added at the input position its window's
    max came from; `indices` (the shape of dY) holds flat positions in each (n, c) plane, as
    max_pool's forward and PyTorch's return_indices give them (-1: nowhere). Windows that share
    a max add up; elements that were no window's max get 0."""
    x_shape, dy_shape = tuple(int(n) for n in x_shape), shape_of(dY)
    indices = indices if backend.is_array(indices) else np.asarray(indices)
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
    if _numba_applies(dY):
        dX = np.empty((planes, plane), dY.dtype)
        _numba_kernels(dX.size >= _PARALLEL_WORK).max_pool_grad(
            np.ascontiguousarray(dY).reshape(planes, positions),
            np.ascontiguousarray(indices, dtype=np.int64).reshape(planes, positions),
            dX,
        )
        return dX.reshape(x_shape)
    xp = backend.array_module(dY, indices)
    dX = xp.zeros((planes, plane), dY.dtype)
    indices = indices.reshape(planes, positions)
    rows = xp.broadcast_to(xp.arange(planes)[:, None], indices.shape)
    found = indices >= 0
    backend.scatter_add(xp, dX, (rows[found], indices[found]), dY.reshape(planes, positions)[found])
    return dX.reshape(x_shape)


class MaxPool(Op):
    """The max of each window (PyTorch's semantics, see `max_pool`). Saves only where each max
    came from; the backward, max_pool_grad, sends each gradient there."""

    name = "max_pool"
    inputs = ("x",)
    attrs = ("kernel_shape", "strides", "pads", "dilations", "ceil_mode")
    saved = ("indices",)

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
    return _max_pool("max_pool", x, kernel_shape, strides, pads, dilations, ceil_mode)


def _max_pool(where, x, kernel_shape, strides, pads, dilations, ceil_mode, names=_ONNX_NAMES):
    window = pool_window(
        where, shape_of(x), kernel_shape, strides, pads, dilations, ceil_mode, names
    )
    _check_float(x, where)
    return MaxPool.apply(
        x,
        kernel_shape=window.kernel,
        strides=window.strides,
        pads=window.pads,
        dilations=window.dilations,
        ceil_mode=bool(ceil_mode),
    )


# --- average pooling ----------------------------------------------------------------------------


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
    dY[o] / divisor[o], the divisor as in `avg_pool`. dY (N, C, *out); dX has x_shape."""
    x_shape = tuple(int(n) for n in x_shape)
    window = pool_window("avg_pool_grad", x_shape, kernel_shape, strides, pads, None, ceil_mode)
    _check_divisor_override("avg_pool_grad", divisor_override)
    expected = x_shape[:2] + window.out
    if shape_of(dY) != expected:
        raise ShapeError(
            f"avg_pool_grad: dY {shape_of(dY)} must be (N, C, *out) = {expected} for "
            f"x_shape {x_shape}"
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
    if _numba_applies(dY):
        kernel, strides, pads, _, out = window.canonical()
        dX = np.empty((math.prod(x_shape[:2]),) + (1,) * (3 - len(spatial)) + spatial, dY.dtype)
        planes = np.ascontiguousarray(dY).reshape((-1,) + out)
        _numba_kernels(dX.size >= _PARALLEL_WORK).avg_pool_grad(
            planes, divisor.reshape(out), kernel, strides, pads, dX
        )
        return dX.reshape(x_shape)
    shares = dY / divisor
    ends = _cover_ends(window, spatial)
    padded_spatial = tuple(
        n + b + e for n, b, e in zip(spatial, window.pads_begin, ends, strict=True)
    )
    padded = xp.zeros(x_shape[:2] + padded_spatial, dY.dtype)
    lead = (slice(None), slice(None))
    for offset in np.ndindex(*window.kernel):
        padded[lead + window.slices(offset)] += shares  # one tap's windows never overlap
    interior = tuple(slice(b, b + n) for b, n in zip(window.pads_begin, spatial, strict=True))
    return xp.ascontiguousarray(padded[lead + interior])


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
        if _half(x):
            return AveragePool.forward(ctx, x.astype(np.float32)).astype(np.float16)
        window = pool_window(
            "avg_pool", x.shape, ctx.kernel_shape, ctx.strides, ctx.pads, None, ctx.ceil_mode
        )
        spatial, xp = x.shape[2:], ctx.xp
        divisor = _avg_divisor(
            xp, window, spatial, ctx.count_include_pad, ctx.divisor_override, x.dtype
        )
        if _numba_applies(x):
            kernel, strides, pads, _, out = window.canonical()
            y = np.empty((math.prod(x.shape[:2]),) + out, x.dtype)
            _numba_kernels(x.size >= _PARALLEL_WORK).avg_pool(
                _planes(x, len(spatial)), kernel, strides, pads, divisor.reshape(out), y
            )
            return y.reshape(x.shape[:2] + window.out)
        padded = _padded(xp, x, window, 0)
        lead = (slice(None), slice(None))
        total = xp.zeros(x.shape[:2] + window.out, x.dtype)
        for offset in np.ndindex(*window.kernel):
            total += padded[lead + window.slices(offset)]
        return total / divisor

    @staticmethod
    def backward(ctx, grad):
        """dx = sum over the windows o holding x of grad[o] / divisor[o]."""
        return avg_pool_grad(
            grad,
            ctx.shapes[0],
            ctx.kernel_shape,
            strides=ctx.strides,
            pads=ctx.pads,
            ceil_mode=ctx.ceil_mode,
            count_include_pad=ctx.count_include_pad,
            divisor_override=ctx.divisor_override,
        )


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
    return _avg_pool(
        "avg_pool", x, kernel_shape, strides, pads, ceil_mode, count_include_pad, divisor_override
    )


def _avg_pool(
    where,
    x,
    kernel_shape,
    strides,
    pads,
    ceil_mode,
    count_include_pad,
    divisor_override,
    names=_ONNX_NAMES,
) -> Tensor:
    window = pool_window(where, shape_of(x), kernel_shape, strides, pads, None, ceil_mode, names)
    _check_float(x, where)
    if not isinstance(count_include_pad, (bool, np.bool_)):
        raise DTypeError(f"{where}: count_include_pad must be a bool, got {count_include_pad!r}")
    _check_divisor_override(where, divisor_override)
    return AveragePool.apply(
        x,
        kernel_shape=window.kernel,
        strides=window.strides,
        pads=window.pads,
        ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad),
        divisor_override=None if divisor_override is None else int(divisor_override),
    )


def _check_divisor_override(where: str, divisor_override) -> None:
    if divisor_override is not None and (
        isinstance(divisor_override, bool)
        or not isinstance(divisor_override, (int, np.integer))
        or divisor_override == 0
    ):
        raise ArgumentError(
            f"{where}: divisor_override must be a nonzero int or None, got {divisor_override!r}"
        )


# --- adaptive average pooling -------------------------------------------------------------------


def _adaptive_matrices(xp, spatial, out, dtype) -> list:
    """Per dim, the (out, L) averaging matrix of adaptive pooling: row i is 1 / size on input
    positions floor(i * L / out) .. ceil((i + 1) * L / out) - 1 (PyTorch's windows)."""
    matrices = []
    for length, n in zip(spatial, out, strict=True):
        i = np.arange(n)
        start, stop = (i * length) // n, -(-(i + 1) * length // n)
        j = np.arange(length)
        inside = (j >= start[:, None]) & (j < stop[:, None])
        matrices.append(xp.asarray((inside / (stop - start)[:, None]).astype(dtype)))
    return matrices


def _per_dim(xp, x, matrices, transpose: bool):
    """x (N, C, *spatial) with each spatial dim contracted against its matrix (transposed for
    the gradient): each tensordot appends the new dim last, so the order comes back."""
    for matrix in matrices:
        x = xp.tensordot(x, matrix, axes=([2], [0 if transpose else 1]))
    return x


def adaptive_avg_pool_grad(dY, x_shape):
    """AdaptiveAveragePoolGrad: every input position gets dY[o] / size(o) from each window o
    holding it, i.e. dY contracted with each dim's averaging matrix transposed. The output size
    comes from dY (N, C, *out); dX has x_shape."""
    x_shape = tuple(int(n) for n in x_shape)
    dy_shape = shape_of(dY)
    if len(dy_shape) != len(x_shape) or dy_shape[:2] != x_shape[:2]:
        raise ShapeError(
            f"adaptive_avg_pool_grad: dY {dy_shape} must be (N, C, *out) for x_shape {x_shape}"
        )
    xp = backend.array_module(dY)
    spatial = x_shape[2:]
    if all(n == 1 for n in dy_shape[2:]):  # global average pooling
        return xp.broadcast_to(dY / math.prod(spatial), x_shape).copy()
    matrices = _adaptive_matrices(xp, spatial, dy_shape[2:], dY.dtype)
    return _per_dim(xp, dY, matrices, transpose=True)


class AdaptiveAveragePool(Op):
    """The mean over PyTorch's adaptive windows, as a product with one averaging matrix per
    spatial dim (the windows are boxes, so the mean separates by dim); a plain mean for global
    average pooling (every output size 1)."""

    name = "adaptive_avg_pool"
    inputs = ("x",)
    attrs = ("output_size",)

    @staticmethod
    def forward(ctx, x):
        if all(n == 1 for n in ctx.output_size):
            return x.mean(axis=tuple(range(2, x.ndim)), keepdims=True)
        matrices = _adaptive_matrices(ctx.xp, x.shape[2:], ctx.output_size, x.dtype)
        return _per_dim(ctx.xp, x, matrices, transpose=False)

    @staticmethod
    def backward(ctx, grad):
        """dx = sum over the windows o holding x of grad[o] / size(o)."""
        return adaptive_avg_pool_grad(grad, ctx.shapes[0])


def adaptive_avg_pool(x, output_size: Sequence[int | None] | int) -> Tensor:
    """The mean over adaptive windows of x (N, C, *spatial), 1 to 3 spatial dims: output
    position i of a dim of length L averages input positions floor(i * L / out) to
    ceil((i + 1) * L / out) - 1, as PyTorch's adaptive_avg_pool. output_size: an int or one per
    spatial dim (None keeps the input's size); all 1 is global average pooling."""
    return _adaptive_avg_pool("adaptive_avg_pool", x, output_size)


def _adaptive_avg_pool(where, x, output_size) -> Tensor:
    x_shape = shape_of(x)
    _check_input_shape(where, x_shape)
    spatial = x_shape[2:]
    if isinstance(output_size, Sequence) and len(output_size) == len(spatial):
        output_size = tuple(
            n if o is None else o for o, n in zip(output_size, spatial, strict=True)
        )
    out = spatial_ints(output_size, len(spatial), "output_size", where, 1)
    _check_float(x, where)
    return AdaptiveAveragePool.apply(x, output_size=out)


# --- numba kernels ------------------------------------------------------------------------------


@functools.cache
def _numba_kernels(parallel: bool) -> SimpleNamespace:
    """The pooling kernels in numba, defined on first use (numba.prange exists only once numba
    is imported), in a parallel and a serial build (for small inputs, waking threads costs more
    than it saves). They take (R, D, H, W) planes (R = N*C; 1-D and 2-D with leading size-1
    dims) and the canonical 3-D window (Window.canonical), run the planes in parallel, each
    writing only its own plane, and test each tap against the input's bounds, so no padded copy
    is made."""
    loop = numba_math.loop(parallel)

    @backend.jit(parallel=parallel, fastmath=False)
    def max_pool_grad_planes(dy, indices, dx):
        for r in loop(dy.shape[0]):
            dx[r] = 0
            for p in range(dy.shape[1]):
                at = indices[r, p]
                if at >= 0:
                    dx[r, at] += dy[r, p]

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

    return SimpleNamespace(
        max_pool_grad=max_pool_grad_planes,
        avg_pool=avg_pool_planes,
        avg_pool_grad=avg_pool_grad_planes,
    )


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


# --- PyTorch's spelling (minitrain.nn.functional) -----------------------------------------------


def _torch_pool_attrs(where, kernel_size, stride, padding, dims):
    """PyTorch's kernel_size, stride (None or empty: the kernel size) and padding (an int, one
    per dim, or (begin, end) pairs) as kernel_shape, strides and ONNX pads."""
    kernel = spatial_ints(kernel_size, dims, "kernel_size", where, 1)
    if stride is None or (isinstance(stride, Sequence) and len(stride) == 0):
        stride = kernel
    strides = spatial_ints(stride, dims, "stride", where, 1)
    pads, _ = torch_pads(padding, dims, where, named=False)
    return kernel, strides, pads


def max_pool_nd(
    input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, *, dims, where
):
    """F.max_pool1d / 2d / 3d. With return_indices, also the flat position of each max in its
    (n, c) plane as PyTorch gives it (from a second, gradient-free pass of the kernel)."""
    kernel, strides, pads = _torch_pool_attrs(where, kernel_size, stride, padding, dims)
    out = batched(
        input,
        dims,
        where,
        lambda x: _max_pool(where, x, kernel, strides, pads, dilation, ceil_mode, _TORCH_NAMES),
    )
    if not return_indices:
        return out
    data = input.data if isinstance(input, Tensor) else np.asarray(input)
    unbatched = data.ndim == dims + 1
    batch = data[None] if unbatched else data
    window = pool_window(where, batch.shape, kernel, strides, pads, dilation, ceil_mode)
    _, indices = max_pool_forward(batch, window)
    return out, Tensor(indices[0] if unbatched else indices)


def avg_pool_nd(
    input,
    kernel_size,
    stride,
    padding,
    ceil_mode,
    count_include_pad,
    divisor_override,
    *,
    dims,
    where,
):
    """F.avg_pool1d / 2d / 3d."""
    kernel, strides, pads = _torch_pool_attrs(where, kernel_size, stride, padding, dims)
    return batched(
        input,
        dims,
        where,
        lambda x: _avg_pool(
            where,
            x,
            kernel,
            strides,
            pads,
            ceil_mode,
            count_include_pad,
            divisor_override,
            _TORCH_NAMES,
        ),
    )


def adaptive_avg_pool_nd(input, output_size, *, dims, where):
    """F.adaptive_avg_pool1d / 2d / 3d."""
    return batched(input, dims, where, lambda x: _adaptive_avg_pool(where, x, output_size))
