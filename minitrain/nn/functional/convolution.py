"""Convolutions and pooling as PyTorch's `F.conv2d`, `F.max_pool2d`, ... take them. The ops
take PyTorch's arguments for any number of spatial dims (and translate them, once, to the
kernels' ONNX spelling); each function here fixes the number of spatial dims, takes an unbatched
input as PyTorch does, and lends the op its name for errors."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ... import backend, ops
from ...errors import DTypeError, ShapeError
from ...ops.convolution.adaptive_pooling import adaptive_avg_pool_as
from ...ops.convolution.average_pooling import avg_pool_as
from ...ops.convolution.max_pooling import max_pool_as
from ...ops.convolution.standard import conv_as
from ...ops.convolution.transposed import conv_transpose_as
from ...ops.convolution.window import check_pool_input, spatial_ints
from ...ops.core.op import array_of, shape_of
from ...ops.shapes.shape import reshape
from ...tensor import Tensor

__all__ = [
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices",
]


def batched(input, dims: int, caller: str, fn):  # noqa: A002
    """fn(input) for input (N, C, *spatial) with `dims` spatial dims, or for an unbatched
    (C, *spatial) input, which gets a batch of one and loses it again (from each output, when
    fn returns several), as in PyTorch."""
    shape = shape_of(input)
    if len(shape) == dims + 1:
        out = fn(reshape(input, (1,) + shape))
        if isinstance(out, tuple):
            return tuple(reshape(o, o.shape[1:]) for o in out)
        return reshape(out, out.shape[1:])
    if len(shape) != dims + 2:
        raise ShapeError(
            f"{caller}: input must be (N, C, *spatial) or (C, *spatial) with {dims} spatial "
            f"dims, got shape {shape}"
        )
    return fn(input)


def conv1d(input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """1-D convolution (cross-correlation, as PyTorch's) of input (N, C_in, L) or unbatched (C_in,
    L) with weight (C_out, C_in / groups, k) and bias (C_out,) or None -> (N, C_out, L_out).

    padding: an int, a 1-tuple, a ((begin, end),) pair, 'valid' or 'same' ('same' with a stride
    above 1, which PyTorch refuses, gives ceil(L / stride) outputs). Per spatial dim, L_out =
    floor((L + 2 * padding - dilation * (k - 1) - 1) / stride) + 1."""
    return batched(
        input,
        1,
        "conv1d",
        lambda x: conv_as("conv1d", x, weight, bias, stride, padding, dilation, groups),
    )


def conv2d(input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """2-D convolution (cross-correlation, as PyTorch's) of input (N, C_in, H, W) or unbatched
    (C_in, H, W) with weight (C_out, C_in / groups, kH, kW) and bias (C_out,) or None -> (N, C_out,
    H_out, W_out).

    padding: an int, (pH, pW), ((top, bottom), (left, right)), 'valid' or 'same' ('same' with a
    stride above 1, which PyTorch refuses, gives ceil(L / stride) outputs). Per spatial dim, L_out =
    floor((L + 2 * padding - dilation * (k - 1) - 1) / stride) + 1."""
    return batched(
        input,
        2,
        "conv2d",
        lambda x: conv_as("conv2d", x, weight, bias, stride, padding, dilation, groups),
    )


def conv3d(input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """3-D convolution (cross-correlation, as PyTorch's) of input (N, C_in, D, H, W) or unbatched
    (C_in, D, H, W) with weight (C_out, C_in / groups, kD, kH, kW) and bias (C_out,) or None -> (N,
    C_out, D_out, H_out, W_out).

    padding: an int, (pD, pH, pW), one (begin, end) pair per dim, 'valid' or 'same' ('same' with a
    stride above 1, which PyTorch refuses, gives ceil(L / stride) outputs). Per spatial dim, L_out =
    floor((L + 2 * padding - dilation * (k - 1) - 1) / stride) + 1."""
    return batched(
        input,
        3,
        "conv3d",
        lambda x: conv_as("conv3d", x, weight, bias, stride, padding, dilation, groups),
    )


# Transposed convolutions: weight (in, out/groups, *kernel); padding an int or one int per dim
# (both ends); output_padding adds outputs at the end, each smaller than the stride or the
# dilation.


def conv_transpose1d(
    input: Tensor,  # noqa: A002
    weight: Tensor,
    bias=None,
    stride=1,
    padding=0,
    output_padding=0,
    groups=1,
    dilation=1,
) -> Tensor:
    """1-D transposed convolution (the adjoint of conv1d) of input (N, C_in, L) or unbatched (C_in,
    L) with weight (C_in, C_out / groups, k) and bias (C_out,) or None -> (N, C_out, L_out).

    padding: an int or one per spatial dim, removed at both ends; output_padding, added at the end,
    must be smaller than the stride or the dilation. Per spatial dim, L_out = (L - 1) * stride - 2 *
    padding + dilation * (k - 1) + output_padding + 1."""
    return batched(
        input,
        1,
        "conv_transpose1d",
        lambda x: conv_transpose_as(
            "conv_transpose1d", x, weight, bias, stride, padding, output_padding, groups, dilation
        ),
    )


def conv_transpose2d(
    input: Tensor,  # noqa: A002
    weight: Tensor,
    bias=None,
    stride=1,
    padding=0,
    output_padding=0,
    groups=1,
    dilation=1,
) -> Tensor:
    """2-D transposed convolution (the adjoint of conv2d) of input (N, C_in, H, W) or unbatched
    (C_in, H, W) with weight (C_in, C_out / groups, kH, kW) and bias (C_out,) or None -> (N, C_out,
    H_out, W_out).

    padding: an int or one per spatial dim, removed at both ends; output_padding, added at the end,
    must be smaller than the stride or the dilation. Per spatial dim, L_out = (L - 1) * stride - 2 *
    padding + dilation * (k - 1) + output_padding + 1."""
    return batched(
        input,
        2,
        "conv_transpose2d",
        lambda x: conv_transpose_as(
            "conv_transpose2d", x, weight, bias, stride, padding, output_padding, groups, dilation
        ),
    )


def conv_transpose3d(
    input: Tensor,  # noqa: A002
    weight: Tensor,
    bias=None,
    stride=1,
    padding=0,
    output_padding=0,
    groups=1,
    dilation=1,
) -> Tensor:
    """3-D transposed convolution (the adjoint of conv3d) of input (N, C_in, D, H, W) or unbatched
    (C_in, D, H, W) with weight (C_in, C_out / groups, kD, kH, kW) and bias (C_out,) or None -> (N,
    C_out, D_out, H_out, W_out).

    padding: an int or one per spatial dim, removed at both ends; output_padding, added at the end,
    must be smaller than the stride or the dilation. Per spatial dim, L_out = (L - 1) * stride - 2 *
    padding + dilation * (k - 1) + output_padding + 1."""
    return batched(
        input,
        3,
        "conv_transpose3d",
        lambda x: conv_transpose_as(
            "conv_transpose3d", x, weight, bias, stride, padding, output_padding, groups, dilation
        ),
    )


# Pooling: stride defaults to kernel_size; padding an int, one int per dim, or (begin, end) pairs
# per dim.


def max_pool1d(
    input: Tensor,  # noqa: A002
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """Max over sliding windows of input (N, C, L) or unbatched (C, L) -> (N, C, L_out). Per spatial
    dim, L_out = floor((L + 2 * padding - dilation * (kernel_size - 1) - 1) / stride) + 1 (ceil with
    ceil_mode).

    stride defaults to kernel_size; padding (an int, one per dim, or (begin, end) pairs) is at most
    kernel_size // 2 and never wins. With return_indices, returns (output, indices), the int64
    position of each max in its input plane (what max_unpool1d takes). The gradient goes to the
    first maximal element of each window."""
    return batched(
        input,
        1,
        "max_pool1d",
        lambda x: max_pool_as(
            "max_pool1d", x, kernel_size, stride, padding, dilation, ceil_mode, return_indices
        ),
    )


def max_pool2d(
    input: Tensor,  # noqa: A002
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """Max over sliding windows of input (N, C, H, W) or unbatched (C, H, W) -> (N, C, H_out,
    W_out). Per spatial dim, L_out = floor((L + 2 * padding - dilation * (kernel_size - 1) - 1) /
    stride) + 1 (ceil with ceil_mode).

    stride defaults to kernel_size; padding (an int, one per dim, or (begin, end) pairs) is at most
    kernel_size // 2 and never wins. With return_indices, returns (output, indices), the int64
    position of each max in its input plane (what max_unpool2d takes). The gradient goes to the
    first maximal element of each window."""
    return batched(
        input,
        2,
        "max_pool2d",
        lambda x: max_pool_as(
            "max_pool2d", x, kernel_size, stride, padding, dilation, ceil_mode, return_indices
        ),
    )


def max_pool3d(
    input: Tensor,  # noqa: A002
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """Max over sliding windows of input (N, C, D, H, W) or unbatched (C, D, H, W) -> (N, C, D_out,
    H_out, W_out). Per spatial dim, L_out = floor((L + 2 * padding - dilation * (kernel_size - 1) -
    1) / stride) + 1 (ceil with ceil_mode).

    stride defaults to kernel_size; padding (an int, one per dim, or (begin, end) pairs) is at most
    kernel_size // 2 and never wins. With return_indices, returns (output, indices), the int64
    position of each max in its input plane (what max_unpool3d takes). The gradient goes to the
    first maximal element of each window."""
    return batched(
        input,
        3,
        "max_pool3d",
        lambda x: max_pool_as(
            "max_pool3d", x, kernel_size, stride, padding, dilation, ceil_mode, return_indices
        ),
    )


def avg_pool1d(
    input: Tensor,  # noqa: A002
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """Mean over sliding windows of input (N, C, L) or unbatched (C, L) -> (N, C, L_out). Per
    spatial dim, L_out = floor((L + 2 * padding - kernel_size) / stride) + 1 (ceil with ceil_mode).

    stride defaults to kernel_size; padding (an int, one per dim, or (begin, end) pairs) is at most
    kernel_size // 2. count_include_pad counts the zero padding in each window's divisor."""
    return batched(
        input,
        1,
        "avg_pool1d",
        lambda x: avg_pool_as(
            "avg_pool1d",
            x,
            kernel_size,
            stride,
            padding,
            ceil_mode,
            count_include_pad,
            None,
        ),
    )


def avg_pool2d(
    input: Tensor,  # noqa: A002
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """Mean over sliding windows of input (N, C, H, W) or unbatched (C, H, W) -> (N, C, H_out,
    W_out). Per spatial dim, L_out = floor((L + 2 * padding - kernel_size) / stride) + 1 (ceil with
    ceil_mode).

    stride defaults to kernel_size; padding (an int, one per dim, or (begin, end) pairs) is at most
    kernel_size // 2. count_include_pad counts the zero padding in each window's divisor.
    divisor_override, when given, divides every window."""
    return batched(
        input,
        2,
        "avg_pool2d",
        lambda x: avg_pool_as(
            "avg_pool2d",
            x,
            kernel_size,
            stride,
            padding,
            ceil_mode,
            count_include_pad,
            divisor_override,
        ),
    )


def avg_pool3d(
    input: Tensor,  # noqa: A002
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """Mean over sliding windows of input (N, C, D, H, W) or unbatched (C, D, H, W) -> (N, C, D_out,
    H_out, W_out). Per spatial dim, L_out = floor((L + 2 * padding - kernel_size) / stride) + 1
    (ceil with ceil_mode).

    stride defaults to kernel_size; padding (an int, one per dim, or (begin, end) pairs) is at most
    kernel_size // 2. count_include_pad counts the zero padding in each window's divisor.
    divisor_override, when given, divides every window."""
    return batched(
        input,
        3,
        "avg_pool3d",
        lambda x: avg_pool_as(
            "avg_pool3d",
            x,
            kernel_size,
            stride,
            padding,
            ceil_mode,
            count_include_pad,
            divisor_override,
        ),
    )


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    """Mean over adaptive windows: input (N, C, L) or unbatched (C, L) -> (N, C, *output_size).
    output_size: the output length; 1 is global average pooling."""
    return batched(
        input,
        1,
        "adaptive_avg_pool1d",
        lambda x: adaptive_avg_pool_as("adaptive_avg_pool1d", x, output_size),
    )


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    """Mean over adaptive windows: input (N, C, H, W) or unbatched (C, H, W) -> (N, C,
    *output_size). output_size: an int or (H_out, W_out), None keeping the input's size; 1 is global
    average pooling."""
    return batched(
        input,
        2,
        "adaptive_avg_pool2d",
        lambda x: adaptive_avg_pool_as("adaptive_avg_pool2d", x, output_size),
    )


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    """Mean over adaptive windows: input (N, C, D, H, W) or unbatched (C, D, H, W) -> (N, C,
    *output_size). output_size: an int or (D_out, H_out, W_out), None keeping the input's size; 1 is
    global average pooling."""
    return batched(
        input,
        3,
        "adaptive_avg_pool3d",
        lambda x: adaptive_avg_pool_as("adaptive_avg_pool3d", x, output_size),
    )


def _adaptive_argmax(array, out: tuple[int, ...]):
    """For x (N, C, *spatial), the flat index into the spatial positions of each adaptive
    window's max (N, C, prod(out)): window i of a dim of length L spans floor(i * L / out) to
    ceil((i + 1) * L / out) - 1, as PyTorch's; the first max wins a tie, a NaN beats any
    number (numpy's argmax, PyTorch's scan)."""
    xp = backend.array_module(array)
    spatial = array.shape[2:]
    strides = [math.prod(spatial[d + 1 :]) for d in range(len(spatial))]
    indices = xp.empty(array.shape[:2] + (math.prod(out),), np.int64)
    for cell, position in enumerate(np.ndindex(*out)):
        starts = [i * n // o for i, n, o in zip(position, spatial, out, strict=True)]
        stops = [-(-(i + 1) * n // o) for i, n, o in zip(position, spatial, out, strict=True)]
        window = array[(..., *(slice(a, b) for a, b in zip(starts, stops, strict=True)))]
        local = xp.argmax(window.reshape(array.shape[:2] + (-1,)), axis=-1)
        flat = 0
        # the window's flat index, read back to coordinates, made the input's flat index
        for d in reversed(range(len(spatial))):
            size = stops[d] - starts[d]
            flat = flat + (local % size + starts[d]) * strides[d]
            local = local // size
        indices[..., cell] = flat
    return indices


def _adaptive_max_pool(caller: str, dims: int, input, output_size) -> tuple:  # noqa: A002
    """(values, indices) of adaptive max pooling with `dims` spatial dims: the windows' maxima
    gathered from the input at their argmax, so the gradient goes to that element alone, as
    PyTorch's."""

    def pool(x):
        shape = shape_of(x)
        check_pool_input(caller, shape)
        dtype = np.dtype(x.dtype)
        if dtype.kind != "f":
            raise DTypeError(f"{caller}: input must be a floating tensor, got dtype {dtype}")
        sizes = output_size
        if isinstance(sizes, Sequence) and len(sizes) == dims:
            sizes = tuple(n if o is None else o for o, n in zip(sizes, shape[2:], strict=True))
        out = spatial_ints(sizes, dims, "output_size", caller, 1)
        flat_indices = _adaptive_argmax(array_of(x), out)
        picked = ops.gather(ops.flatten(x, 2), 2, Tensor.wrap(flat_indices))
        return reshape(picked, shape[:2] + out), Tensor.wrap(flat_indices.reshape(shape[:2] + out))

    return batched(input, dims, caller, pool)


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):  # noqa: A002
    """Max over adaptive windows: input (N, C, L) or unbatched (C, L) -> (N, C, output_size),
    with return_indices also each max's position in L (int64), for max_unpool1d."""
    values, indices = _adaptive_max_pool("adaptive_max_pool1d", 1, input, output_size)
    return (values, indices) if return_indices else values


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):  # noqa: A002
    """Max over adaptive windows: input (N, C, H, W) or unbatched (C, H, W) -> (N, C,
    *output_size); output_size an int or (H_out, W_out), None keeping the input's size. With
    return_indices also each max's flat position in H x W (int64), for max_unpool2d."""
    values, indices = _adaptive_max_pool("adaptive_max_pool2d", 2, input, output_size)
    return (values, indices) if return_indices else values


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):  # noqa: A002
    """Max over adaptive windows: input (N, C, D, H, W) or unbatched (C, D, H, W) -> (N, C,
    *output_size); with return_indices also each max's flat position in D x H x W."""
    values, indices = _adaptive_max_pool("adaptive_max_pool3d", 3, input, output_size)
    return (values, indices) if return_indices else values


def adaptive_max_pool1d_with_indices(input: Tensor, output_size, return_indices: bool = False):  # noqa: A002
    """adaptive_max_pool1d's (values, indices), whatever return_indices says (PyTorch's)."""
    return _adaptive_max_pool("adaptive_max_pool1d", 1, input, output_size)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size, return_indices: bool = False):  # noqa: A002
    """adaptive_max_pool2d's (values, indices), whatever return_indices says (PyTorch's)."""
    return _adaptive_max_pool("adaptive_max_pool2d", 2, input, output_size)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size, return_indices: bool = False):  # noqa: A002
    """adaptive_max_pool3d's (values, indices), whatever return_indices says (PyTorch's)."""
    return _adaptive_max_pool("adaptive_max_pool3d", 3, input, output_size)
