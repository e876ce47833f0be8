"""The transposed convolution op conv_transpose (ONNX's ConvTranspose), 1 to 3 spatial dims.

Its forward is conv's input gradient and its backward a conv and conv's weight gradient (as in
PyTorch's conv_transpose*d), all run by the conv op's chunked im2col / col2im GEMM code.

Layout: x (N, C, *spatial), w (C, M/group, *kernel) (in-channels first), b (M,). Seen from the
conv it transposes, y = conv_transpose(x, w) is the X of a conv whose output is x and whose
weight is w: w's layout is already that conv's (filters C, channels M/group per group), and
every kernel of minitrain.ops.convolution.standard applies with conv's names swapped.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ... import backend
from ...errors import ArgumentError, ShapeError
from ...tensor import Tensor
from ..core.op import Op, shape_of
from .chunking import Chunked
from .columns import bias_grad, columns_to_images, im2col_into, images_to_columns
from .standard import (
    Conv,
    WeightGradSums,
    check_float_inputs,
    conv_forward,
    conv_grad_unchecked,
    conv_weight_grad,
    matmul,
)
from .window import (
    TORCH_NAMES,
    Window,
    check_conv_ranks,
    check_group,
    check_kernel,
    padding_pads,
    spatial_ints,
)

__all__ = ["conv_transpose"]


def check_output_padding(output_padding, stride, dilation, caller: str) -> tuple[int, ...]:
    """output_padding (None, an int or one per spatial dim) as a tuple, each element smaller
    than the stride or the dilation of its dim (checked tuples; PyTorch's rule: the outputs it
    adds get inputs from no x, and from a whole stride on, a longer x would give the same size).
    Errors name `caller` and PyTorch's arguments."""
    value = 0 if output_padding is None else output_padding
    extra = spatial_ints(value, len(stride), "output_padding", caller, 0)
    if any(e >= s and e >= d for e, s, d in zip(extra, stride, dilation, strict=True)):
        raise ArgumentError(
            f"{caller}: output_padding must be smaller than either stride or dilation in each "
            f"spatial dim, got output_padding {extra}, stride {stride}, dilation {dilation}"
        )
    return extra


def _check_transpose_window(
    caller, x_shape, w_shape, stride, padding, dilation, groups, output_padding
) -> tuple[Window, tuple[int, ...], tuple[int, ...]]:
    """Check a transposed conv's shapes and PyTorch arguments (before anything runs) and return
    the Window of the conv it transposes (its out is x's spatial shape), y's shape and the
    output_padding per dim."""
    dims = check_conv_ranks(caller, x_shape, w_shape, "(C, M/group, *kernel)")
    check_group(caller, groups, TORCH_NAMES)
    channels = x_shape[1]
    if channels % groups:
        raise ShapeError(
            f"{caller}: groups {groups} must divide X's channels C = {channels} (X {x_shape})"
        )
    if w_shape[0] != channels:
        raise ShapeError(
            f"{caller}: W {w_shape} must be (C, M/group, *kernel) with X's C = {channels} input "
            f"channels in dim 0, got {w_shape[0]} (X {x_shape})"
        )
    if x_shape[0] and channels and 0 in x_shape[2:]:
        raise ShapeError(
            f"{caller}: X {x_shape} has an empty spatial dim; only an empty batch or no channels "
            f"are supported, as in PyTorch"
        )
    _, strides, dilations = check_kernel(caller, w_shape, stride, dilation, TORCH_NAMES)
    pads = padding_pads(padding, dims, caller)
    extra = check_output_padding(output_padding, strides, dilations, caller)
    window, y_shape = transpose_geometry(x_shape, w_shape, strides, pads, dilations, groups, extra)
    for dim, (size, length) in enumerate(zip(y_shape[2:], x_shape[2:], strict=True)):
        if size < 1:
            k, s, d, e = window.kernel[dim], strides[dim], dilations[dim], extra[dim]
            begin, end = pads[dim], pads[dims + dim]
            raise ShapeError(
                f"{caller}: output size {size} in spatial dim {dim} is too small: "
                f"(L - 1) * stride - padding + dilation * (k - 1) + output_padding + 1 = "
                f"({length} - 1) * {s} - {begin} - {end} + {d} * ({k} - 1) + {e} + 1 "
                f"(X {x_shape}, W {w_shape})"
            )
    return window, y_shape, extra


def transpose_geometry(
    x_shape, w_shape, strides, pads, dilations, group, output_padding
) -> tuple[Window, tuple[int, ...]]:
    """The Window of the conv a transposed conv transposes (its out is x's spatial shape) and
    y's shape, per dim (L - 1) * stride - pad_begin - pad_end + dilation * (k - 1) +
    output_padding + 1, for attributes already checked (a size below 1 comes back as it is)."""
    dims = len(x_shape) - 2
    kernel = tuple(int(k) for k in w_shape[2:])
    spatial = zip(x_shape[2:], kernel, strides, dilations, output_padding, strict=True)
    out = tuple(
        (length - 1) * s - pads[dim] - pads[dims + dim] + d * (k - 1) + e + 1
        for dim, (length, k, s, d, e) in enumerate(spatial)
    )
    # The conv of y gives x's size, plus output_padding // stride more outputs where
    # output_padding reaches a stride (allowed under a larger dilation): those would come from
    # inputs past x's end, zeros, so the window keeps x's size.
    window = Window(kernel, tuple(strides), tuple(pads), tuple(dilations), tuple(x_shape[2:]))
    return window, (x_shape[0], w_shape[1] * group, *out)


class ConvTranspose(Op):
    """Transposed convolution of x (N, C, *spatial) with w (C, M/group, *kernel), plus b (M,):
    conv_grad's dX of a conv whose output is x (col2im of w^T @ x, per group and chunk of
    images). Saves x and w."""

    name = "conv_transpose"
    inputs = ("x", "w", "b")
    attrs = ("strides", "pads", "dilations", "group", "output_padding")
    saved = ("x", "w")
    # its backward runs conv's chunked im2col and GEMM kernels (conv_forward, WeightGradSums)
    fused_backward = "conv2d 32x64x32x32"

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save(x=x, w=w)
        window, y_shape = _geometry(ctx, x.shape, w.shape)
        x = ctx.xp.ascontiguousarray(x)
        y, _, _ = conv_grad_unchecked(x, None, w, y_shape, window, ctx.group, (True, False, False))
        if b is not None:
            y += b.reshape((-1,) + (1,) * len(window.out))
        return y

    @staticmethod
    def backward(ctx, grad):
        """dx = conv(dy, w), dw = conv_grad's dW with (dY, X) = (x, dy), db = sum(dy); per group.

        y is the X of a conv with output x and weight w, so y[j] gets x[i] * w[t] where
        j = i * stride + t * dilation - pad_begin: dx[i] = sum over t of w[t] * dy[that j] (a
        conv of dy), dw[t] = sum over i of x[i] * dy[that j] (the dW of that conv, x playing
        dY and dy playing X).
        """
        need_x, need_w, need_b = ctx.needs_grad
        x, w, group = ctx.x, ctx.w, ctx.group
        window, _ = _geometry(ctx, x.shape, w.shape)
        grad = ctx.xp.ascontiguousarray(grad)
        if need_x and need_w and 0 not in w.shape[:2]:
            dx, dw = _input_and_weight_grads(grad, x, w, window, group)
        else:
            dx = conv_forward(grad, w, None, window, group) if need_x else None
            dw = None
            if need_w:
                only_dw = (False, True, False)
                _, dw, _ = conv_grad_unchecked(x, grad, w, grad.shape, window, group, only_dw)
        db = bias_grad(grad).astype(grad.dtype) if need_b else None
        return dx, dw, db

    @staticmethod
    def tensor_backward(ctx, grad):
        """The backward in conv ops, bilinear in (grad, x, w), so differentiable again: dx =
        conv(grad, w) (cropped to x where output_padding reached a whole stride), dw = the conv
        weight gradient with (dY, X) = (x, grad), db = sum."""
        need_x, need_w, need_b = ctx.needs_grad
        x, w = ctx.x, ctx.w
        attrs = {
            "strides": ctx.strides,
            "pads": ctx.pads,
            "dilations": ctx.dilations,
            "group": ctx.group,
        }
        dx = dw = db = None
        if need_x:
            dx = Conv.apply(grad, w, None, **attrs)
            if dx.shape != x.shape:
                dx = dx[(slice(None), slice(None)) + tuple(slice(0, n) for n in x.shape[2:])]
        if need_w:
            dw = conv_weight_grad(grad, x, w.shape, **attrs)
        if need_b:
            db = grad.sum(axis=(0, *range(2, grad.ndim)))
        return dx, dw, db


def _geometry(ctx, x_shape, w_shape) -> tuple[Window, tuple[int, ...]]:
    """The Window and y's shape for the op's attributes (checked when it was called)."""
    return transpose_geometry(
        x_shape, w_shape, ctx.strides, ctx.pads, ctx.dilations, ctx.group, ctx.output_padding
    )


def _input_and_weight_grads(grad, x, w, window: Window, group: int):
    """dx = conv(grad, w) and dw = conv_grad's dW with (dY, X) = (x, grad), in one pass over
    grad's chunks: both read im2col(grad), so one im2col serves both GEMMs."""
    xp = backend.array_module(grad, w)
    chunked = Chunked.of(grad.shape, grad.dtype, w, window, group)
    columns, w_stacked = chunked.columns, chunked.w_stacked
    dx = xp.empty(x.shape, grad.dtype)
    dw_sums = WeightGradSums(chunked, grad.dtype)
    # x's sums, which images_to_columns adds up anyway
    sums = [xp.zeros(x.shape[1], np.float64) for _ in range(chunked.threads)]
    x = xp.ascontiguousarray(x)

    def backward(thread, part, col, rows):
        im2col_into(grad[part], columns, col.reshape(-1, col.shape[-1]), parallel=False)
        images_to_columns(x[part], columns, rows, sums[thread])
        dw_sums.add(thread, col, rows)
        matmul(w_stacked, col, rows)  # x's columns are used: the buffer takes dx's
        columns_to_images(rows, columns, None, dx[part])

    chunked.each(backward)
    return dx, dw_sums.weight_grad(w.shape)


def conv_transpose(
    input,  # noqa: A002 (PyTorch's name)
    weight,
    bias=None,
    stride: Sequence[int] | int = 1,
    padding: Sequence[int] | Sequence[Sequence[int]] | int = 0,
    output_padding: Sequence[int] | int = 0,
    groups: int = 1,
    dilation: Sequence[int] | int = 1,
) -> Tensor:
    """Transposed convolution (PyTorch's conv_transpose1d/2d/3d, arguments in its order) of
    input (N, C, *spatial), 1 to 3 spatial dims (taken from input's rank), with weight
    (C, M/groups, *kernel) and an optional bias (M,): the adjoint of conv, each input scattered
    through the kernel onto the output, taps that land in the padding dropped:

        y[n, m, i * stride + k * dilation - pad_begin] += input[n, c, i] * weight[c, m, k]
                                                   (c in m's group), then + bias[m]

    Output size per dim: (L - 1) * stride - pad_begin - pad_end + dilation * (k - 1) +
    output_padding + 1. stride and dilation: an int or one per spatial dim. padding: an int or
    one per spatial dim (removed at both ends), or one (begin, end) pair per spatial dim (beyond
    PyTorch). output_padding: extra outputs at the end of each dim, each smaller than the
    stride or the dilation. groups: C divides by it.
    """
    return conv_transpose_as(
        "conv_transpose", input, weight, bias, stride, padding, output_padding, groups, dilation
    )


def conv_transpose_as(
    caller,
    input,  # noqa: A002
    weight,
    bias,
    stride,
    padding,
    output_padding,
    groups,
    dilation,
) -> Tensor:
    """`conv_transpose` called as `caller` (F.conv_transpose2d passes its own name): its errors
    name caller."""
    x_shape, w_shape = shape_of(input), shape_of(weight)
    window, y_shape, extra = _check_transpose_window(
        caller, x_shape, w_shape, stride, padding, dilation, groups, output_padding
    )
    if bias is not None and shape_of(bias) != (y_shape[1],):
        raise ShapeError(
            f"{caller}: bias must be (M,) = ({y_shape[1]},) for weight {w_shape} and groups "
            f"{groups}, got {shape_of(bias)}"
        )
    check_float_inputs(caller, input=input, weight=weight, bias=bias)
    return ConvTranspose.apply(
        input,
        weight,
        bias,
        strides=window.strides,
        pads=window.pads,
        dilations=window.dilations,
        group=int(groups),
        output_padding=extra,
    )
