"""Convolutions and pooling as PyTorch's `F.conv2d`, `F.max_pool2d`, ... take them:
minitrain.nn.torch_args translates the arguments."""

from __future__ import annotations

from ...tensor import Tensor
from ..torch_args import (
    adaptive_avg_pool_nd,
    avg_pool_nd,
    conv_nd,
    conv_transpose_nd,
    max_pool_nd,
)

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
]


def conv1d(input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """1-D convolution (cross-correlation, as PyTorch's) of input (N, C_in, L) or unbatched (C_in,
    L) with weight (C_out, C_in / groups, k) and bias (C_out,) or None -> (N, C_out, L_out).

    padding: an int, a 1-tuple, a ((begin, end),) pair, 'valid' or 'same' ('same' with a stride
    above 1, which PyTorch refuses, gives ceil(L / stride) outputs). Per spatial dim, L_out =
    floor((L + 2 * padding - dilation * (k - 1) - 1) / stride) + 1."""
    return conv_nd(input, weight, bias, stride, padding, dilation, groups, dims=1, caller="conv1d")


def conv2d(input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """2-D convolution (cross-correlation, as PyTorch's) of input (N, C_in, H, W) or unbatched
    (C_in, H, W) with weight (C_out, C_in / groups, kH, kW) and bias (C_out,) or None -> (N, C_out,
    H_out, W_out).

    padding: an int, (pH, pW), ((top, bottom), (left, right)), 'valid' or 'same' ('same' with a
    stride above 1, which PyTorch refuses, gives ceil(L / stride) outputs). Per spatial dim, L_out =
    floor((L + 2 * padding - dilation * (k - 1) - 1) / stride) + 1."""
    return conv_nd(input, weight, bias, stride, padding, dilation, groups, dims=2, caller="conv2d")


def conv3d(input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """3-D convolution (cross-correlation, as PyTorch's) of input (N, C_in, D, H, W) or unbatched
    (C_in, D, H, W) with weight (C_out, C_in / groups, kD, kH, kW) and bias (C_out,) or None -> (N,
    C_out, D_out, H_out, W_out).

    padding: an int, (pD, pH, pW), one (begin, end) pair per dim, 'valid' or 'same' ('same' with a
    stride above 1, which PyTorch refuses, gives ceil(L / stride) outputs). Per spatial dim, L_out =
    floor((L + 2 * padding - dilation * (k - 1) - 1) / stride) + 1."""
    return conv_nd(input, weight, bias, stride, padding, dilation, groups, dims=3, caller="conv3d")


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
    return conv_transpose_nd(
        input, weight, bias, stride, padding, output_padding, groups, dilation,
        dims=1, caller="conv_transpose1d",
    )  # fmt: skip


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
    return conv_transpose_nd(
        input, weight, bias, stride, padding, output_padding, groups, dilation,
        dims=2, caller="conv_transpose2d",
    )  # fmt: skip


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
    return conv_transpose_nd(
        input, weight, bias, stride, padding, output_padding, groups, dilation,
        dims=3, caller="conv_transpose3d",
    )  # fmt: skip


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
    return max_pool_nd(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
        dims=1, caller="max_pool1d",
    )  # fmt: skip


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
    return max_pool_nd(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
        dims=2, caller="max_pool2d",
    )  # fmt: skip


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
    return max_pool_nd(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
        dims=3, caller="max_pool3d",
    )  # fmt: skip


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
    return avg_pool_nd(
        input, kernel_size, stride, padding, ceil_mode, count_include_pad, None,
        dims=1, caller="avg_pool1d",
    )  # fmt: skip


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
    return avg_pool_nd(
        input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
        dims=2, caller="avg_pool2d",
    )  # fmt: skip


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
    return avg_pool_nd(
        input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
        dims=3, caller="avg_pool3d",
    )  # fmt: skip


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    """Mean over adaptive windows: input (N, C, L) or unbatched (C, L) -> (N, C, *output_size).
    output_size: the output length; 1 is global average pooling."""
    return adaptive_avg_pool_nd(input, output_size, dims=1, caller="adaptive_avg_pool1d")


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    """Mean over adaptive windows: input (N, C, H, W) or unbatched (C, H, W) -> (N, C,
    *output_size). output_size: an int or (H_out, W_out), None keeping the input's size; 1 is global
    average pooling."""
    return adaptive_avg_pool_nd(input, output_size, dims=2, caller="adaptive_avg_pool2d")


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    """Mean over adaptive windows: input (N, C, D, H, W) or unbatched (C, D, H, W) -> (N, C,
    *output_size). output_size: an int or (D_out, H_out, W_out), None keeping the input's size; 1 is
    global average pooling."""
    return adaptive_avg_pool_nd(input, output_size, dims=3, caller="adaptive_avg_pool3d")
