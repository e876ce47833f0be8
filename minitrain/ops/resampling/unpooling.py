"""max_unpool: the inverse of max pooling (PyTorch's F.max_unpool1d/2d/3d, with its arguments;
ONNX's MaxUnpool), each value written back where max_pool's return_indices says it came from."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...errors import ArgumentError, DTypeError, ShapeError
from ...tensor import Tensor
from ..convolution.standard import check_one_device
from ..convolution.window import check_rank, padding_pads, pool_stride, spatial_ints
from ..core.checks import check_floating
from ..core.op import Op, array_of, shape_of
from ..shapes.shape import reshape

__all__ = ["max_unpool"]


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
    input,  # noqa: A002 (PyTorch's name)
    indices,
    kernel_size: Sequence[int] | int,
    stride: Sequence[int] | int | None = None,
    padding: Sequence[int] | Sequence[Sequence[int]] | int = 0,
    output_size: Sequence[int] | None = None,
) -> Tensor:
    """The inverse of max pooling, as PyTorch's max_unpool1d/2d/3d, for 1 to 3 spatial dims
    (taken from input's rank): zeros of (N, C, *output_size) with input (N, C, *in) written
    where `indices` (of input's shape: flat positions in each (n, c) plane of the output, as
    max_pool's return_indices gives them) point; where two entries point to one position, one
    of them is kept. stride defaults to kernel_size; padding is an int or one per spatial dim
    (or one (begin, end) pair per dim, beyond PyTorch). output_size (the spatial sizes,
    optionally after N and C) defaults to (in - 1) * stride - pad_begin - pad_end +
    kernel_size."""
    return max_unpool_as("max_unpool", input, indices, kernel_size, stride, padding, output_size)


def max_unpool_as(
    caller,
    input,  # noqa: A002
    indices,
    kernel_size,
    stride,
    padding,
    output_size,
    dims=None,
) -> Tensor:
    """`max_unpool` called as `caller` (F.max_unpool2d passes its own name): its errors name
    caller. With `dims` (the spatial dims), PyTorch's F.max_unpool1d/2d/3d rules: an unbatched
    (C, *in) input is taken (a batch of one, dropped again), and output_size must lie strictly
    within a stride of the default in each dim."""
    x_shape = shape_of(input)
    index = array_of(indices.array if isinstance(indices, Tensor) else indices)
    if index is None or index.dtype != np.int64:
        raise DTypeError(
            f"{caller}: indices must be int64 (as max_pool's return_indices gives them), got "
            f"{getattr(index, 'dtype', type(indices).__name__)}"
        )
    if dims is not None and len(x_shape) == dims + 1 and index.ndim == dims + 1:
        out = max_unpool_as(
            caller, reshape(input, (1,) + x_shape), index[None], kernel_size, stride, padding,
            output_size, dims,
        )  # fmt: skip
        return reshape(out, out.shape[1:])
    check_rank(caller, x_shape)
    if dims is not None and len(x_shape) != dims + 2:
        raise ShapeError(
            f"{caller}: input must be (N, C, *spatial) or (C, *spatial) with {dims} spatial "
            f"dims, got shape {x_shape}"
        )
    spatial = len(x_shape) - 2
    kernel = spatial_ints(kernel_size, spatial, "kernel_size", caller, 1)
    steps = pool_stride(stride, kernel, caller)
    pads = padding_pads(padding, spatial, caller)
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
                    f"stride of the default {default} in each dim; dim {dim} must be "
                    f"between {d - s} and {d + s} (exclusive)"
                )
    if min(size) < 1:
        raise ShapeError(f"{caller}: the output size {size} has an empty dim (input {x_shape})")
    check_floating(caller, input=array_of(input))
    check_one_device(caller, input=array_of(input), indices=index)
    if index.shape != x_shape:
        raise ShapeError(f"{caller}: indices {index.shape} must have input's shape {x_shape}")
    plane = math.prod(size)
    if index.size and not (0 <= int(index.min()) and int(index.max()) < plane):
        bad = index[(index < 0) | (index >= plane)].ravel()[0]
        raise ArgumentError(
            f"{caller}: indices must lie in [0, {plane}) (positions in an output plane of "
            f"{size}), found {int(bad)}"
        )
    return MaxUnpool.apply(input, indices=index, output_size=size)


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
