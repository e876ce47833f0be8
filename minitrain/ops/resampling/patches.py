"""unfold_patches / fold_patches (PyTorch's F.unfold / F.fold): the sliding windows of an image
as columns (im2col per image), and the columns added back (col2im), each op the other's
backward. The ops take PyTorch's arguments (kernel_size, dilation, padding, stride) for 1 to 3
spatial dims; their Op classes' attributes keep the kernels' ONNX spelling."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...errors import ShapeError
from ...tensor import Tensor
from ..convolution.columns import col2im, im2col
from ..convolution.window import (
    TORCH_NAMES,
    check_rank,
    check_strides_dilations,
    conv_window,
    padding_pads,
    spatial_ints,
)
from ..core.checks import check_floating
from ..core.op import Op, array_of, shape_of
from ..shapes.shape import reshape

__all__ = ["fold_patches", "unfold_patches"]


def _patches_window(caller, x_shape, kernel_size, dilation, padding, stride):
    """The Window of unfold_patches / fold_patches over an input of x_shape (N, C, *spatial),
    from PyTorch's arguments."""
    check_rank(caller, x_shape, "the image")
    dims = len(x_shape) - 2
    kernel = spatial_ints(kernel_size, dims, "kernel_size", caller, 1)
    steps, spread = check_strides_dilations(caller, stride, dilation, dims, TORCH_NAMES)
    pads = padding_pads(padding, dims, caller)
    return conv_window(x_shape[2:], kernel, steps, pads, spread, caller, TORCH_NAMES)


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
    input,  # noqa: A002 (PyTorch's name)
    kernel_size: Sequence[int] | int,
    dilation: Sequence[int] | int = 1,
    padding: Sequence[int] | Sequence[Sequence[int]] | int = 0,
    stride: Sequence[int] | int = 1,
) -> Tensor:
    """The sliding windows of input (N, C, *spatial), 1 to 3 spatial dims (taken from input's
    rank), as columns (N, C*K, L) (PyTorch's F.unfold, arguments in its order): K =
    prod(kernel_size) taps per window, L windows, the zero-padded input read as conv reads it:

        out[n, c*K + k, l] = input_padded[n, c, l_i * stride_i + k_i * dilation_i (each dim i)]

    padding: an int or one per spatial dim (both ends), or one (begin, end) pair per dim (beyond
    PyTorch). fold_patches with the same arguments adds the columns back (its adjoint)."""
    return unfold_patches_as("unfold_patches", input, kernel_size, dilation, padding, stride)


def unfold_patches_as(
    caller,
    input,  # noqa: A002
    kernel_size,
    dilation,
    padding,
    stride,
    dims=None,
) -> Tensor:
    """`unfold_patches` called as `caller` (F.unfold passes its own name): its errors name
    caller. With `dims`, PyTorch's F.unfold rules: `dims` spatial dims, and an unbatched
    (C, *spatial) input taken as a batch of one (dropped again)."""
    x_shape = shape_of(input)
    if dims is not None:
        if len(x_shape) == dims + 1:
            out = unfold_patches_as(
                caller, reshape(input, (1,) + x_shape), kernel_size, dilation, padding, stride,
                dims,
            )  # fmt: skip
            return reshape(out, out.shape[1:])
        _check_batched(caller, x_shape, dims)
    window = _patches_window(caller, x_shape, kernel_size, dilation, padding, stride)
    check_floating(caller, input=array_of(input))
    return UnfoldPatches.apply(
        input,
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
    input,  # noqa: A002 (PyTorch's name)
    output_size: Sequence[int] | int,
    kernel_size: Sequence[int] | int,
    dilation: Sequence[int] | int = 1,
    padding: Sequence[int] | Sequence[Sequence[int]] | int = 0,
    stride: Sequence[int] | int = 1,
) -> Tensor:
    """Columns input (N, C*K, L) summed back into images (N, C, *output_size) (PyTorch's
    F.fold, arguments in its order), the adjoint of unfold_patches: each entry added to the
    image position its window tap reads (overlapping windows add up; entries in the padding are
    dropped). L must be the number of windows unfold_patches finds in output_size with these
    arguments. The spatial dims are as many as output_size or kernel_size gives (2 when both
    are ints)."""
    return fold_patches_as(
        "fold_patches", input, output_size, kernel_size, dilation, padding, stride
    )


def fold_patches_as(
    caller,
    input,  # noqa: A002
    output_size,
    kernel_size,
    dilation,
    padding,
    stride,
    dims=None,
) -> Tensor:
    """`fold_patches` called as `caller` (F.fold passes its own name): its errors name caller.
    With `dims`, PyTorch's F.fold rules: `dims` spatial dims, and an unbatched (C*K, L) input
    taken as a batch of one (dropped again)."""
    x_shape = shape_of(input)
    if dims is not None and len(x_shape) == 2:
        out = fold_patches_as(
            caller, reshape(input, (1,) + x_shape), output_size, kernel_size, dilation, padding,
            stride, dims,
        )  # fmt: skip
        return reshape(out, out.shape[1:])
    if len(x_shape) != 3:
        unbatched = "" if dims is None else " or (C*K, L)"
        raise ShapeError(f"{caller}: input must be (N, C*K, L){unbatched}, got shape {x_shape}")
    if dims is None:  # as many as output_size or kernel_size gives, else 2
        sized = [v for v in (output_size, kernel_size) if isinstance(v, Sequence)]
        dims = len(sized[0]) if sized else 2
    size = spatial_ints(output_size, dims, "output_size", caller, 1)
    kernel = spatial_ints(kernel_size, dims, "kernel_size", caller, 1)
    taps = math.prod(kernel)
    if x_shape[1] % taps:
        raise ShapeError(
            f"{caller}: input's dim 1 ({x_shape[1]}, of shape {x_shape}) must be C * K, a "
            f"multiple of the {taps} taps of kernel_size {kernel}"
        )
    image = (x_shape[0], x_shape[1] // taps) + size
    window = _patches_window(caller, image, kernel, dilation, padding, stride)
    blocks = math.prod(window.out)
    if x_shape[2] != blocks:
        raise ShapeError(
            f"{caller}: input {x_shape} must hold L = {blocks} windows in dim 2, the "
            f"{' * '.join(map(str, window.out))} that kernel_size {kernel} finds in "
            f"output_size {size} with stride {window.strides}, padding (begins, ends) "
            f"{window.pads} and dilation {window.dilations}"
        )
    check_floating(caller, input=array_of(input))
    return FoldPatches.apply(
        input,
        output_size=size,
        kernel_shape=window.kernel,
        strides=window.strides,
        pads=window.pads,
        dilations=window.dilations,
    )
