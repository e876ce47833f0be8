"""PyTorch's functional names (`F.relu`, `F.conv2d`, `F.batch_norm`, ...) over minitrain.ops.

Each takes PyTorch's signature; minitrain.nn.torch_args translates the conv and pool arguments.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import backend, ops
from ..errors import ArgumentError, DTypeError, IndexOutOfRangeError, ShapeError
from ..ops.resampling.interpolation import fold_patches_as, max_unpool_as, unfold_patches_as
from ..tensor import Tensor
from .torch_args import (
    TORCH_NAMES,
    adaptive_avg_pool_nd,
    avg_pool_nd,
    check_default,
    check_embedding_options,
    check_legacy_reduction,
    conv_nd,
    conv_transpose_nd,
    max_pool_nd,
    padding_row,
    torch_pads,
)

__all__ = [
    "relu", "leaky_relu", "sigmoid", "tanh", "gelu", "silu", "quick_gelu", "relu6", "hardtanh",
    "elu", "selu", "celu", "softplus", "mish", "hardswish", "hardsigmoid", "logsigmoid",
    "softsign", "tanhshrink", "prelu", "glu", "softmax", "log_softmax", "linear", "dropout",
    "scaled_dot_product_attention", "embedding", "pad", "conv1d", "conv2d", "conv3d",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "max_pool1d", "max_pool2d",
    "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
    "adaptive_avg_pool2d", "adaptive_avg_pool3d", "batch_norm", "layer_norm", "rms_norm",
    "group_norm", "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss",
    "huber_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "interpolate",
    "upsample", "upsample_nearest", "upsample_bilinear", "unfold", "fold", "pixel_shuffle",
    "pixel_unshuffle", "max_unpool1d", "max_unpool2d", "max_unpool3d", "one_hot", "softmin",
    "normalize", "cosine_similarity", "pairwise_distance", "kl_div", "cosine_embedding_loss",
    "margin_ranking_loss", "triplet_margin_loss",
]  # fmt: skip


def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """max(input, 0), elementwise. `inplace` is accepted and ignored: the result is a new tensor."""
    return ops.relu(input)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:  # noqa: A002
    """input where positive, negative_slope * input elsewhere; negative_slope must be >= 0 (PyTorch
    takes any). `inplace` is accepted and ignored: the result is a new tensor."""
    return ops.leaky_relu(input, negative_slope)


def sigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """1 / (1 + exp(-input)), elementwise."""
    return ops.sigmoid(input)


def tanh(input: Tensor) -> Tensor:  # noqa: A002
    """tanh(input), elementwise."""
    return ops.tanh(input)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:  # noqa: A002
    """input * Phi(input), Phi the standard normal CDF (approximate='none'), or with the tanh
    approximation (approximate='tanh')."""
    return ops.gelu(input, approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """input * sigmoid(input) (Swish), elementwise. `inplace` is accepted and ignored: the result is
    a new tensor."""
    return ops.silu(input)


def quick_gelu(input: Tensor, alpha: float = 1.702) -> Tensor:  # noqa: A002
    """input * sigmoid(alpha * input), elementwise: alpha=1.702 approximates GELU, alpha=1 is SiLU.
    Not in PyTorch."""
    return ops.quick_gelu(input, alpha)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """min(max(input, 0), 6), elementwise. `inplace` is accepted and ignored: the result is a new
    tensor."""
    return ops.relu6(input)


def hardtanh(
    input: Tensor,  # noqa: A002
    min_val: float = -1.0,
    max_val: float = 1.0,
    inplace: bool = False,
) -> Tensor:
    """input clipped to [min_val, max_val]. `inplace` is accepted and ignored: the result is a new
    tensor."""
    return ops.hardtanh(input, min_val, max_val)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """input where positive, alpha * (exp(input) - 1) elsewhere. `inplace` is accepted and ignored:
    the result is a new tensor."""
    return ops.elu(input, alpha)


def selu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """scale * elu(input, alpha) with SELU's constants (alpha = 1.6732632..., scale = 1.0507009...).
    `inplace` is accepted and ignored: the result is a new tensor."""
    return ops.selu(input)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """max(0, input) + min(0, alpha * (exp(input / alpha) - 1)); alpha must be nonzero. `inplace` is
    accepted and ignored: the result is a new tensor."""
    return ops.celu(input, alpha)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:  # noqa: A002
    """log(1 + exp(beta * input)) / beta, or input itself where beta * input > threshold; beta must
    be nonzero."""
    return ops.softplus(input, beta, threshold)


def mish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """input * tanh(softplus(input)), elementwise. `inplace` is accepted and ignored: the result is
    a new tensor."""
    return ops.mish(input)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """input * relu6(input + 3) / 6, elementwise. `inplace` is accepted and ignored: the result is a
    new tensor."""
    return ops.hardswish(input)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """relu6(input + 3) / 6, elementwise. `inplace` is accepted and ignored: the result is a new
    tensor."""
    return ops.hardsigmoid(input)


def logsigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """log(sigmoid(input)), elementwise, computed stably."""
    return ops.logsigmoid(input)


def softsign(input: Tensor) -> Tensor:  # noqa: A002
    """input / (1 + |input|), elementwise."""
    return ops.softsign(input)


def tanhshrink(input: Tensor) -> Tensor:  # noqa: A002
    """input - tanh(input), elementwise."""
    return ops.tanhshrink(input)


def prelu(input: Tensor, weight: Tensor) -> Tensor:  # noqa: A002
    """input where positive, weight * input elsewhere. weight: 0-d or 1-D, one slope for all, or one
    per channel (dim 1 of input)."""
    return ops.prelu(input, weight)


def glu(input: Tensor, dim: int = -1) -> Tensor:  # noqa: A002
    """a * sigmoid(b), a and b the halves of input along dim (whose size must be even):
    `(*, 2M, *)` -> `(*, M, *)`."""
    return ops.glu(input, dim)


def softmax(
    input: Tensor,  # noqa: A002
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype=None,
) -> Tensor:
    """Softmax along dim, of the input cast to dtype first if given. dim=None is PyTorch's
    deprecated implicit dim, with its warning: 0 for 0-d, 1-d and 3-d input, 1 otherwise."""
    return ops.softmax(*_softmax_args("softmax", input, dim, _stacklevel, dtype))


def log_softmax(
    input: Tensor,  # noqa: A002
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype=None,
) -> Tensor:
    """Log-softmax along dim; dim and dtype as in softmax."""
    return ops.log_softmax(*_softmax_args("log_softmax", input, dim, _stacklevel, dtype))


def _softmax_args(caller: str, input, dim, stacklevel: int, dtype) -> tuple:  # noqa: A002
    if dtype is not None:
        input = ops.cast(input, dtype)  # noqa: A001
    if dim is None:
        warnings.warn(
            f"Implicit dimension choice for {caller} has been deprecated. Change the call to "
            f"include dim=X as an argument.",
            stacklevel=stacklevel,
        )
        dim = 0 if np.ndim(input.data if isinstance(input, Tensor) else input) in (0, 1, 3) else 1
    return input, dim


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002
    """input @ weight.T + bias: input `(*, in_features)`, weight (out_features, in_features), bias
    (out_features,) or None -> `(*, out_features)`."""
    return ops.linear(input, weight, bias)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:  # noqa: A002
    """With training=True (the default, as in PyTorch: pass `training=self.training` in a module),
    zero each element with probability p and scale the rest by 1 / (1 - p); input itself otherwise.
    `inplace` is accepted and ignored: the result is a new tensor."""
    return ops.dropout(input, p, training)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask=None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """softmax(scale query key^T + mask) value, one op (ops.scaled_dot_product_attention: masks,
    causal, dropout, grouped-query attention) whose backward recomputes the weights."""
    return ops.scaled_dot_product_attention(
        query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa
    )


def embedding(
    input,  # noqa: A002
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """weight[input] for integer indices of any shape: the result has shape
    input.shape + (embedding_dim,). Rows looked up at padding_idx get no gradient. max_norm,
    scale_grad_by_freq and sparse take PyTorch's defaults only."""
    check_embedding_options("embedding", max_norm, scale_grad_by_freq, sparse)
    indices = input.data if isinstance(input, Tensor) else input
    if getattr(indices, "dtype", None) is None or indices.dtype.kind not in "iu":
        raise DTypeError(
            f"embedding: input must hold integer indices, got "
            f"{getattr(indices, 'dtype', type(indices).__name__)}"
        )
    rows = weight.shape[0]
    if indices.size and (indices.min() < -rows or indices.max() >= rows):
        raise IndexError(
            f"embedding: indices must lie in [{-rows}, {rows}) for a weight of shape "
            f"{weight.shape}, got values from {indices.min()} to {indices.max()}"
        )
    pad_row = padding_row(padding_idx, rows, "embedding")
    out = ops.getitem(weight, indices)
    if pad_row is None:
        return out
    # same values, but the padding rows come from a copy outside the graph: no gradient there
    keep = (indices % rows != pad_row)[..., None]
    return ops.where(keep, out, out.detach())


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(
    input: Tensor,  # noqa: A002
    pad,
    mode: str = "constant",
    value: float | None = None,
) -> Tensor:
    """input padded on its last len(pad) // 2 dims, the last dim first, as in PyTorch:
    pad = (left, right), (left, right, top, bottom), ... 'constant' fills with value (0 by
    default); 'reflect' mirrors the input about its edge element, 'replicate' repeats the edge
    element, 'circular' wraps around (what is left after cropping, as PyTorch's). A negative
    pad crops."""
    if mode not in _PAD_MODES:
        raise ArgumentError(f"pad: mode must be one of {_PAD_MODES}, got {mode!r}")
    if mode != "constant" and value is not None:
        raise ArgumentError(f"pad: mode {mode!r} takes no value, got value={value!r}")
    sides = _pad_sides(input.shape, pad, mode)
    if mode == "constant":
        return _pad_constant(input, sides, 0.0 if value is None else value)
    out = input
    for dim, before, after in sides:
        # the border as an index into the input: getitem's backward sums the copies' gradients
        index = _border_index(mode, input.shape[dim], before, after)
        out = ops.getitem(out, (slice(None),) * dim + (index,))
    return out


def _pad_sides(shape: tuple, pad, mode: str) -> list[tuple[int, int, int]]:
    """F.pad's pad as checked (dim, before, after) triples, the last dim first."""
    widths = tuple(pad) if isinstance(pad, (tuple, list, np.ndarray)) else None
    if (
        widths is None
        or not all(isinstance(w, (int, np.integer)) and not isinstance(w, bool) for w in widths)
        or len(widths) % 2
        or len(widths) // 2 > len(shape)
    ):
        raise ShapeError(
            f"pad: pad must be an even number of ints, two per padded dim of shape {shape} "
            f"(the last dim first), got {pad!r}"
        )
    pairs = zip(widths[0::2], widths[1::2], strict=True)
    sides = [(len(shape) - 1 - i, int(b), int(a)) for i, (b, a) in enumerate(pairs)]
    for dim, before, after in sides:
        size = shape[dim]
        if mode == "constant":
            if size + min(before, 0) + min(after, 0) < 0:
                raise ShapeError(
                    f"pad: pads ({before}, {after}) crop more than dim {dim} of size {size} holds"
                )
            continue
        if mode == "circular":
            # PyTorch's circular pad crops first (negative pads), then wraps around what is
            # left, at most once; cropping a dim away entirely leaves it empty
            kept = size + min(before, 0) + min(after, 0)
            if kept < 0 or max(before, after) > kept:
                raise ShapeError(
                    f"pad: mode 'circular' crops first, then wraps at most once around what is "
                    f"left: dim {dim} of size {size} with pads ({before}, {after}) keeps {kept} "
                    f"elements, so each pad must lie from {-size} to {max(kept, 0)}"
                )
            continue
        most = {"reflect": size - 1, "replicate": math.inf if size else 0}[mode]
        # negative pads crop, as in PyTorch
        if min(before, after) < -size or max(before, after) > most or size + before + after < 1:
            raise ShapeError(
                f"pad: mode {mode!r} takes pads from {-size} to {most} for dim {dim} of size "
                f"{size}, leaving at least one element; got ({before}, {after})"
            )
    return sides


def _border_index(mode: str, size: int, before: int, after: int):
    """The input position each output element of a dim reads, padded by `mode`."""
    if mode == "circular":  # crop first, then wrap around what is left (PyTorch's order)
        start, stop = max(-before, 0), size - max(-after, 0)
        positions = np.arange(-max(before, 0), stop - start + max(after, 0))
        return positions % (stop - start) + start if stop > start else positions
    positions = np.arange(-before, size + after)
    if mode == "reflect":
        return size - 1 - np.abs(size - 1 - np.abs(positions))
    return np.clip(positions, 0, size - 1)


def _pad_constant(input: Tensor, sides, value: float) -> Tensor:  # noqa: A002
    crop = [slice(None)] * input.ndim
    widths = [(0, 0)] * input.ndim
    for dim, before, after in sides:
        crop[dim] = slice(max(-before, 0), input.shape[dim] - max(-after, 0))
        widths[dim] = (max(before, 0), max(after, 0))
    cropped = ops.getitem(input, tuple(crop)) if any(min(b, a) < 0 for _, b, a in sides) else input
    return ops.pad(cropped, widths, value)


# Convolutions: padding an int, one int per dim, one (begin, end) pair per dim, 'valid' or
# 'same'.


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


def batch_norm(
    input: Tensor,  # noqa: A002
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Batch statistics when training (running_mean / running_var, Tensors or None, updated in
    place with the unbiased variance), the running ones otherwise; None running statistics mean
    batch statistics always. See ops.batch_norm."""
    return ops.batch_norm(
        input,
        weight,
        bias,
        eps,
        running_mean=running_mean,
        running_var=running_var,
        training=training,
        momentum=momentum,
    )


def layer_norm(
    input: Tensor,  # noqa: A002
    normalized_shape,
    weight=None,
    bias=None,
    eps: float = 1e-5,
    *,
    invertible: bool = False,
) -> Tensor:
    """Layer norm over the last dims; invertible=True (beyond PyTorch) saves the output instead
    of the input for backward. See ops.layer_norm."""
    return ops.layer_norm(input, normalized_shape, weight, bias, eps, invertible=invertible)


def rms_norm(input: Tensor, normalized_shape, weight=None, eps: float | None = None) -> Tensor:  # noqa: A002
    """RMS norm over the last dims; eps=None is PyTorch's default. See ops.rms_norm."""
    return ops.rms_norm(input, normalized_shape, weight, eps)


def group_norm(input: Tensor, num_groups: int, weight=None, bias=None, eps: float = 1e-5) -> Tensor:  # noqa: A002
    """Group norm of (N, C, *) over groups of channels and positions. See ops.group_norm."""
    return ops.group_norm(input, num_groups, weight, bias, eps)


# size_average and reduce (deprecated in PyTorch) are taken only as None: see
# check_legacy_reduction. The pointwise losses' `weight` (PyTorch 2.6+) is refused: weigh the
# losses of reduction='none' instead.

_NO_WEIGHT = "weigh the losses of reduction='none' instead"


def cross_entropy(
    input: Tensor,  # noqa: A002
    target,
    weight=None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross entropy of softmax(input) over the class dim 1 against target, fused with log-softmax.

    input logits (N, C), (N, C, d1, ...) or (C,); target class indices (any integer dtype) of
    input's shape without dim 1, or class probabilities of input's shape. weight (C,) rescales each
    class; positions whose target is ignore_index count for nothing; label_smoothing eps mixes eps /
    C of every class into the target. 'mean' with no position counted raises (PyTorch: nan).
    size_average and reduce, deprecated in PyTorch, must be None (use reduction)."""
    check_legacy_reduction("cross_entropy", size_average, reduce)
    return ops.cross_entropy(
        input,
        target,
        weight,
        ignore_index=ignore_index,
        reduction=reduction,
        label_smoothing=label_smoothing,
    )


def nll_loss(
    input: Tensor,  # noqa: A002
    target,
    weight=None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log likelihood -weight[t] * input[n, t], t = target[n]: input log-probabilities (N,
    C), (N, C, d1, ...) or (C,), target class indices of input's shape without dim 1. weight,
    ignore_index and reduction as in cross_entropy. size_average and reduce, deprecated in PyTorch,
    must be None (use reduction)."""
    check_legacy_reduction("nll_loss", size_average, reduce)
    return ops.nll_loss(input, target, weight, ignore_index=ignore_index, reduction=reduction)


def mse_loss(
    input: Tensor,  # noqa: A002
    target,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    weight=None,
) -> Tensor:
    """(input - target)^2, reduced by reduction ('mean', 'sum' or 'none'). input and target must
    have one shape (PyTorch broadcasts them, with a warning); weight must be None. size_average and
    reduce, deprecated in PyTorch, must be None (use reduction)."""
    check_legacy_reduction("mse_loss", size_average, reduce)
    check_default("mse_loss", "weight", weight, None, _NO_WEIGHT)
    return ops.mse_loss(input, target, reduction=reduction)


def l1_loss(
    input: Tensor,  # noqa: A002
    target,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    weight=None,
) -> Tensor:
    """|input - target|, reduced by reduction ('mean', 'sum' or 'none'). input and target must have
    one shape (PyTorch broadcasts them, with a warning); weight must be None. size_average and
    reduce, deprecated in PyTorch, must be None (use reduction)."""
    check_legacy_reduction("l1_loss", size_average, reduce)
    check_default("l1_loss", "weight", weight, None, _NO_WEIGHT)
    return ops.l1_loss(input, target, reduction=reduction)


def smooth_l1_loss(
    input: Tensor,  # noqa: A002
    target,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """0.5 * d^2 / beta where |d| < beta, |d| - 0.5 * beta elsewhere (d = input - target, beta >= 0;
    beta=0 is l1_loss), reduced by reduction. input and target must have one shape. size_average and
    reduce, deprecated in PyTorch, must be None (use reduction)."""
    check_legacy_reduction("smooth_l1_loss", size_average, reduce)
    return ops.smooth_l1_loss(input, target, reduction=reduction, beta=beta)


def huber_loss(
    input: Tensor,  # noqa: A002
    target,
    reduction: str = "mean",
    delta: float = 1.0,
    weight=None,
) -> Tensor:
    """0.5 * d^2 where |d| < delta, delta * (|d| - 0.5 * delta) elsewhere (d = input - target, delta
    positive), reduced by reduction. input and target must have one shape; weight must be None."""
    check_default("huber_loss", "weight", weight, None, _NO_WEIGHT)
    return ops.huber_loss(input, target, reduction=reduction, delta=delta)


def binary_cross_entropy(
    input: Tensor,  # noqa: A002
    target,
    weight=None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """-(target * log(input) + (1 - target) * log(1 - input)), each log floored at -100: input
    probabilities and target in [0, 1], of one shape; weight rescales each position (broadcast to
    input's shape). For logits, binary_cross_entropy_with_logits is stabler. size_average and
    reduce, deprecated in PyTorch, must be None (use reduction)."""
    check_legacy_reduction("binary_cross_entropy", size_average, reduce)
    return ops.binary_cross_entropy(input, target, weight, reduction=reduction)


def binary_cross_entropy_with_logits(
    input: Tensor,  # noqa: A002
    target,
    weight=None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    pos_weight=None,
) -> Tensor:
    """binary_cross_entropy of sigmoid(input), computed stably from the logits: input and target (in
    [0, 1]) of one shape. weight rescales each position, pos_weight the positive term (usually one
    per class along the last dim); both broadcast to input's shape. size_average and reduce,
    deprecated in PyTorch, must be None (use reduction)."""
    check_legacy_reduction("binary_cross_entropy_with_logits", size_average, reduce)
    return ops.binary_cross_entropy_with_logits(
        input, target, weight, reduction=reduction, pos_weight=pos_weight
    )


# Resampling: interpolate and its deprecated forms, unfold / fold, pixel_shuffle, max_unpool.


def interpolate(
    input: Tensor,  # noqa: A002
    size=None,
    scale_factor=None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """input resampled to size or by scale_factor. See ops.interpolate."""
    check_default("interpolate", "antialias", antialias, False, "no antialiasing filter")
    return ops.interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor)


def _deprecated(name: str) -> None:
    warnings.warn(
        f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=3,
    )


def upsample(input: Tensor, size=None, scale_factor=None, mode="nearest", align_corners=None):  # noqa: A002
    """Deprecated in PyTorch (with its warning): interpolate."""
    _deprecated("upsample")
    return ops.interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:  # noqa: A002
    """Deprecated in PyTorch (with its warning): interpolate with mode 'nearest'."""
    _deprecated("upsample_nearest")
    return ops.interpolate(input, size, scale_factor, "nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:  # noqa: A002
    """Deprecated in PyTorch (with its warning): interpolate, 'bilinear' with align_corners."""
    _deprecated("upsample_bilinear")
    return ops.interpolate(input, size, scale_factor, "bilinear", align_corners=True)


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:  # noqa: A002
    """The sliding windows of (N, C, H, W) or (C, H, W) as columns (N, C*K, L) or (C*K, L).
    See ops.unfold_patches."""
    pads, _ = torch_pads(padding, 2, "unfold", named=False)
    return unfold_patches_as("unfold", input, kernel_size, stride, pads, dilation, TORCH_NAMES, 2)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:  # noqa: A002
    """Columns (N, C*K, L) or (C*K, L) summed back into images (N, C, *output_size) or
    (C, *output_size). See ops.fold_patches."""
    pads, _ = torch_pads(padding, 2, "fold", named=False)
    return fold_patches_as(
        "fold", input, output_size, kernel_size, stride, pads, dilation, TORCH_NAMES, 2
    )


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:  # noqa: A002
    """`(*, C * r^2, H, W)` -> `(*, C, H * r, W * r)`, r = upscale_factor: each group of r^2
    channels spread over r x r blocks."""
    return ops.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:  # noqa: A002
    """`(*, C, H * r, W * r)` -> `(*, C * r^2, H, W)`, r = downscale_factor: the inverse of
    pixel_shuffle."""
    return ops.pixel_unshuffle(input, downscale_factor)


def _max_unpool(caller, dims, input, indices, kernel_size, stride, padding, output_size):  # noqa: A002
    """F.max_unpool1d / 2d / 3d: stride defaults to kernel_size; padding an int or one per dim."""
    pads, _ = torch_pads(padding, dims, caller, named=False)
    stride = kernel_size if stride is None else stride
    return max_unpool_as(
        caller, input, indices, kernel_size, stride, pads, output_size, TORCH_NAMES, dims
    )


def max_unpool1d(input: Tensor, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """The inverse of max_pool1d: zeros (N, C, L_out) with input's values written where indices
    (max_pool1d's, of input's shape) point; input (N, C, L) or unbatched (C, L).

    stride defaults to kernel_size. Per spatial dim, L_out = (L - 1) * stride - 2 * padding +
    kernel_size, unless output_size (the spatial sizes, optionally after N and C) asks for one
    within a stride of it, as after an odd input size."""
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input: Tensor, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """The inverse of max_pool2d: zeros (N, C, H_out, W_out) with input's values written where
    indices (max_pool2d's, of input's shape) point; input (N, C, H, W) or unbatched (C, H, W).

    stride defaults to kernel_size. Per spatial dim, L_out = (L - 1) * stride - 2 * padding +
    kernel_size, unless output_size (the spatial sizes, optionally after N and C) asks for one
    within a stride of it, as after an odd input size."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input: Tensor, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """The inverse of max_pool3d: zeros (N, C, D_out, H_out, W_out) with input's values written
    where indices (max_pool3d's, of input's shape) point; input (N, C, D, H, W) or unbatched (C, D,
    H, W).

    stride defaults to kernel_size. Per spatial dim, L_out = (L - 1) * stride - 2 * padding +
    kernel_size, unless output_size (the spatial sizes, optionally after N and C) asks for one
    within a stride of it, as after an odd input size."""
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)


# Similarity, one-hot codes and softmin.


def one_hot(tensor, num_classes: int = -1) -> Tensor:
    """(*, num_classes) int64 zeros with a 1 at each class index of `tensor` (int64 indices,
    as PyTorch requires), outside the graph. num_classes=-1: the largest index + 1."""
    indices = tensor.data if isinstance(tensor, Tensor) else np.asarray(tensor)
    if indices.dtype != np.int64:
        raise DTypeError(f"one_hot: tensor must hold int64 class indices, got {indices.dtype}")
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)):
        raise DTypeError(f"one_hot: num_classes must be an int, got {num_classes!r}")
    if num_classes == -1:
        if not indices.size:
            raise ArgumentError(
                "one_hot: cannot infer num_classes from an empty tensor; pass num_classes"
            )
        num_classes = int(indices.max()) + 1
    if num_classes < 0:
        raise ArgumentError(f"one_hot: num_classes must be -1 or >= 0, got {num_classes}")
    if indices.size and (indices.min() < 0 or indices.max() >= num_classes):
        raise IndexOutOfRangeError(
            f"one_hot: class indices must lie in [0, {num_classes}), got values from "
            f"{indices.min()} to {indices.max()}"
        )
    xp = backend.array_module(indices)
    return Tensor((indices[..., None] == xp.arange(num_classes)).astype(np.int64))


def softmin(
    input: Tensor,  # noqa: A002
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype=None,
) -> Tensor:
    """softmax(-input) along dim; dim and dtype as in softmax."""
    input, dim = _softmax_args("softmin", input, dim, _stacklevel, dtype)  # noqa: A001
    return ops.softmax(ops.neg(input), dim)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None):  # noqa: A002
    """input / max(norm(input, p, dim), eps). See ops.normalize."""
    check_default("normalize", "out", out, None, "assign the result instead")
    return ops.normalize(input, p, dim, eps)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between x1 and x2 along dim: sum(x1 * x2) / (max(||x1||, eps) *
    max(||x2||, eps)). x1 and x2 broadcast; the result has their shape without dim."""
    return ops.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """The p-norm of x1 - x2 + eps along the last dim, x1 and x2 broadcast: (N, D) -> (N,), the dim
    kept (size 1) with keepdim."""
    return ops.pairwise_distance(x1, x2, p, eps, keepdim)


# The losses comparing pairs (see minitrain.ops.losses.pair_loss).


def kl_div(
    input: Tensor,  # noqa: A002
    target,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """KL divergence of target from input's distribution (input log-probabilities). 'mean'
    divides by every position, with PyTorch's warning; 'batchmean' by the batch size."""
    check_legacy_reduction("kl_div", size_average, reduce)
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.",
            stacklevel=2,
        )
    return ops.kl_div(input, target, reduction=reduction, log_target=log_target)


def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target,
    margin: float = 0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """1 - cos(input1, input2) where target is 1, max(0, cos(input1, input2) - margin) where it is
    -1: input1 and input2 (N, D) with target (N,), or (D,) with a 0-d target. size_average and
    reduce, deprecated in PyTorch, must be None (use reduction)."""
    check_legacy_reduction("cosine_embedding_loss", size_average, reduce)
    return ops.cosine_embedding_loss(input1, input2, target, margin, reduction=reduction)


def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target,
    margin: float = 0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """max(0, -target * (input1 - input2) + margin): target 1 asks input1 to rank above input2 by
    margin, -1 below. The three have one number of dims and broadcast. size_average and reduce,
    deprecated in PyTorch, must be None (use reduction)."""
    check_legacy_reduction("margin_ranking_loss", size_average, reduce)
    return ops.margin_ranking_loss(input1, input2, target, margin, reduction=reduction)


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """max(0, d(anchor, positive) - d(anchor, negative) + margin), d the pairwise_distance with p
    and eps (along the last dim); swap=True uses d(positive, negative) instead where it is smaller.
    margin must be > 0. size_average and reduce, deprecated in PyTorch, must be None (use
    reduction)."""
    check_legacy_reduction("triplet_margin_loss", size_average, reduce)
    return ops.triplet_margin_loss(
        anchor, positive, negative, margin, p, eps, swap, reduction=reduction
    )
