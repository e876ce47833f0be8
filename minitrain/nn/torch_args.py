"""PyTorch's arguments in minitrain's terms: conv and pool spellings translated, others refused.

The conv and pool arguments of nn.functional and the layers (padding, stride, groups, unbatched
inputs) are translated to minitrain.ops' ONNX spelling; the PyTorch arguments minitrain does not
support are refused by name.

Errors name the PyTorch function (`caller`, as "conv2d") and PyTorch's argument names.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import ArgumentError, DTypeError, ShapeError
from ..ops.convolution.adaptive_pooling import adaptive_avg_pool_as
from ..ops.convolution.average_pooling import avg_pool_as
from ..ops.convolution.max_pooling import max_pool_as, max_pool_forward
from ..ops.convolution.standard import conv_as
from ..ops.convolution.transposed import conv_transpose_as
from ..ops.convolution.window import pool_window, spatial_ints
from ..ops.core.op import shape_of
from ..ops.shapes.shape import reshape
from ..tensor import Tensor

# What ONNX's window attributes (the ops' names) are called in PyTorch, for errors.
TORCH_NAMES = {
    "kernel_shape": "kernel_size",
    "strides": "stride",
    "pads": "padding",
    "dilations": "dilation",
    "group": "groups",
}


def check_positive_int(caller: str, name: str, value, least: int = 1) -> int:
    """A size argument (`name` in the caller's signature): an int (bools refused), at least
    `least` (1: positive)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise DTypeError(f"{caller}: {name} must be an int, got {value!r}")
    if value < least:
        bound = "positive" if least == 1 else f">= {least}"
        raise ArgumentError(f"{caller}: {name} must be {bound}, got {value}")
    return int(value)


def check_default(caller: str, name: str, value, default, reason: str) -> None:
    """A PyTorch argument minitrain does not support: code pasted from PyTorch that spells out
    its default keeps working; any other value is refused by name rather than ignored."""
    plain = isinstance(value, (bool, int, float, str))
    if value is default or (plain and value == default):
        return
    shown = repr(value) if plain else f"<{type(value).__name__}>"
    raise ArgumentError(
        f"{caller}: {name}={shown} is not supported ({reason}); leave it at {default!r}"
    )


def check_legacy_reduction(caller: str, size_average, reduce) -> None:
    """PyTorch's deprecated size_average / reduce: refused, naming the `reduction` they mean."""
    if size_average is None and reduce is None:
        return
    if reduce is not None and not reduce:
        reduction = "none"
    else:
        reduction = "sum" if size_average is not None and not size_average else "mean"
    raise ArgumentError(
        f"{caller}: size_average={size_average!r} and reduce={reduce!r} are deprecated in "
        f"PyTorch and not supported; pass reduction={reduction!r}"
    )


def check_embedding_options(caller: str, max_norm, scale_grad_by_freq, sparse) -> None:
    """An embedding's max_norm, scale_grad_by_freq and sparse: PyTorch's defaults only.
    norm_type is not checked: without max_norm, PyTorch ignores it too."""
    check_default(caller, "max_norm", max_norm, None, "rows are never renormalized")
    check_default(
        caller, "scale_grad_by_freq", scale_grad_by_freq, False, "gradients are never rescaled"
    )
    check_default(caller, "sparse", sparse, False, "minitrain has no sparse gradients")


def padding_row(padding_idx: int | None, rows: int, caller: str) -> int | None:
    """padding_idx as a row of a (rows, dim) table: in [-rows, rows), negative ones counting from
    the end (as PyTorch), else a ValueError rather than a row number that wraps. None stays None."""
    if padding_idx is None:
        return None
    if not -rows <= padding_idx < rows:
        raise ArgumentError(
            f"{caller}: padding_idx {padding_idx} is out of range for num_embeddings={rows} "
            f"(valid: {-rows} to {rows - 1})"
        )
    return padding_idx % rows


def torch_pads(padding, dims: int, caller: str, named: bool = True) -> tuple[tuple | None, str]:
    """PyTorch's `padding` as (ONNX pads, auto_pad): an int, one int per spatial dim, one
    (begin, end) pair per spatial dim, or (when `named`) 'valid' / 'same'. 'same' is
    SAME_UPPER: for stride 1, PyTorch's 'same' exactly (the odd pad at the end); for larger
    strides, where PyTorch refuses, ceil(L / stride) outputs as in ONNX."""
    if isinstance(padding, str):
        if not named or padding not in ("valid", "same"):
            allowed = "an int, ints or (begin, end) pairs" + (", 'valid' or 'same'" * named)
            raise ArgumentError(f"{caller}: padding must be {allowed}, got {padding!r}")
        return None, "VALID" if padding == "valid" else "SAME_UPPER"
    if isinstance(padding, Sequence) and any(isinstance(p, Sequence) for p in padding):
        if len(padding) != dims or not all(
            isinstance(p, Sequence) and len(p) == 2 for p in padding
        ):
            raise ShapeError(
                f"{caller}: padding as pairs needs one (begin, end) pair per spatial dim "
                f"({dims}), got {padding!r}"
            )
        begins = spatial_ints([p[0] for p in padding], dims, "padding", caller, 0)
        ends = spatial_ints([p[1] for p in padding], dims, "padding", caller, 0)
        return begins + ends, "NOTSET"
    per_dim = spatial_ints(padding, dims, "padding", caller, 0)
    return per_dim + per_dim, "NOTSET"


def batched(input, dims: int, caller: str, fn) -> Tensor:  # noqa: A002
    """fn(input) for input (N, C, *spatial) with `dims` spatial dims, or for an unbatched
    (C, *spatial) input, which gets a batch of one and loses it again, as in PyTorch."""
    shape = shape_of(input)
    if len(shape) == dims + 1:
        out = fn(reshape(input, (1,) + shape))
        return reshape(out, out.shape[1:])
    if len(shape) != dims + 2:
        raise ShapeError(
            f"{caller}: input must be (N, C, *spatial) or (C, *spatial) with {dims} spatial "
            f"dims, got shape {shape}"
        )
    return fn(input)


def conv_nd(
    input,  # noqa: A002
    weight,
    bias,
    stride,
    padding,
    dilation,
    groups,
    *,
    dims: int,
    caller: str,
) -> Tensor:
    """F.conv1d / conv2d / conv3d: PyTorch's arguments (stride, padding, dilation, groups)
    translated to `conv`'s; errors name the PyTorch function and arguments."""
    pads, auto_pad = torch_pads(padding, dims, caller)
    return batched(
        input,
        dims,
        caller,
        lambda x: conv_as(
            caller, x, weight, bias, stride, pads, dilation, groups, auto_pad, TORCH_NAMES
        ),
    )


def conv_transpose_nd(
    input,  # noqa: A002
    weight,
    bias,
    stride,
    padding,
    output_padding,
    groups,
    dilation,
    *,
    dims: int,
    caller: str,
) -> Tensor:
    """F.conv_transpose1d / 2d / 3d: PyTorch's arguments (padding an int or one per spatial dim,
    the same at both ends) translated to `conv_transpose`'s; errors name PyTorch's function and
    arguments."""
    per_dim = spatial_ints(padding, dims, "padding", caller, 0)
    return batched(
        input,
        dims,
        caller,
        lambda x: conv_transpose_as(
            caller,
            x,
            weight,
            bias,
            stride,
            per_dim + per_dim,
            dilation,
            groups,
            output_padding,
            TORCH_NAMES,
        ),
    )


def _pool_attrs(caller, kernel_size, stride, padding, dims):
    """PyTorch's kernel_size, stride (None or empty: the kernel size) and padding (an int, one
    per dim, or (begin, end) pairs) as kernel_shape, strides and ONNX pads."""
    kernel = spatial_ints(kernel_size, dims, "kernel_size", caller, 1)
    if stride is None or (isinstance(stride, Sequence) and len(stride) == 0):
        stride = kernel
    strides = spatial_ints(stride, dims, "stride", caller, 1)
    pads, _ = torch_pads(padding, dims, caller, named=False)
    return kernel, strides, pads


def max_pool_nd(
    input,  # noqa: A002
    kernel_size,
    stride,
    padding,
    dilation,
    ceil_mode,
    return_indices,
    *,
    dims,
    caller,
):
    """F.max_pool1d / 2d / 3d. With return_indices, also the flat position of each max in its
    (n, c) plane as PyTorch gives it (from a second, gradient-free pass of the kernel)."""
    kernel, strides, pads = _pool_attrs(caller, kernel_size, stride, padding, dims)
    out = batched(
        input,
        dims,
        caller,
        lambda x: max_pool_as(caller, x, kernel, strides, pads, dilation, ceil_mode, TORCH_NAMES),
    )
    if not return_indices:
        return out
    data = input.data if isinstance(input, Tensor) else np.asarray(input)
    unbatched = data.ndim == dims + 1
    batch = data[None] if unbatched else data
    window = pool_window(caller, batch.shape, kernel, strides, pads, dilation, ceil_mode)
    _, indices = max_pool_forward(batch, window)
    return out, Tensor(indices[0] if unbatched else indices)


def avg_pool_nd(
    input,  # noqa: A002
    kernel_size,
    stride,
    padding,
    ceil_mode,
    count_include_pad,
    divisor_override,
    *,
    dims,
    caller,
):
    """F.avg_pool1d / 2d / 3d."""
    kernel, strides, pads = _pool_attrs(caller, kernel_size, stride, padding, dims)
    return batched(
        input,
        dims,
        caller,
        lambda x: avg_pool_as(
            caller,
            x,
            kernel,
            strides,
            pads,
            ceil_mode,
            count_include_pad,
            divisor_override,
            TORCH_NAMES,
        ),
    )


def adaptive_avg_pool_nd(input, output_size, *, dims, caller):  # noqa: A002
    """F.adaptive_avg_pool1d / 2d / 3d."""
    return batched(input, dims, caller, lambda x: adaptive_avg_pool_as(caller, x, output_size))
