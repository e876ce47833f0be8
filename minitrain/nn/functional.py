"""PyTorch's functional names (`F.relu`, `F.conv2d`, `F.batch_norm`, ...) over minitrain.ops."""

from __future__ import annotations

from .. import ops
from ..errors import ArgumentError, DTypeError
from ..ops.conv import conv_nd
from ..ops.pooling import adaptive_avg_pool_nd, avg_pool_nd, max_pool_nd
from ..tensor import Tensor

# --- activations, linear, dropout, embedding -------------------------------------------------


def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return ops.relu(input)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:  # noqa: A002
    return ops.leaky_relu(input, negative_slope)


def sigmoid(input: Tensor) -> Tensor:  # noqa: A002
    return ops.sigmoid(input)


def tanh(input: Tensor) -> Tensor:  # noqa: A002
    return ops.tanh(input)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:  # noqa: A002
    return ops.gelu(input, approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return ops.silu(input)


def quick_gelu(input: Tensor, alpha: float = 1.702) -> Tensor:  # noqa: A002
    return ops.quick_gelu(input, alpha)


def softmax(input: Tensor, dim: int | None = None) -> Tensor:  # noqa: A002
    return ops.softmax(input, dim)


def log_softmax(input: Tensor, dim: int | None = None) -> Tensor:  # noqa: A002
    return ops.log_softmax(input, dim)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002
    return ops.linear(input, weight, bias)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:  # noqa: A002
    return ops.dropout(input, p, training)


def embedding(input, weight: Tensor, padding_idx: int | None = None) -> Tensor:  # noqa: A002
    """weight[input] for integer indices of any shape: the result has shape
    input.shape + (embedding_dim,). Rows looked up at padding_idx get no gradient."""
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
    padding_row = _padding_row(padding_idx, rows, "embedding")
    out = ops.getitem(weight, indices)
    if padding_row is None:
        return out
    # same values, but the padding rows come from a copy outside the graph: no gradient there
    keep = (indices % rows != padding_row)[..., None]
    return ops.where(keep, out, out.detach())


def _padding_row(padding_idx: int | None, rows: int, where: str) -> int | None:
    """padding_idx as a row of a (rows, dim) table: in [-rows, rows), negative ones counting from
    the end (as PyTorch), else a ValueError rather than a row number that wraps. None stays None."""
    if padding_idx is None:
        return None
    if not -rows <= padding_idx < rows:
        raise ArgumentError(
            f"{where}: padding_idx {padding_idx} is out of range for num_embeddings={rows} "
            f"(valid: {-rows} to {rows - 1})"
        )
    return padding_idx % rows


# --- convolution ------------------------------------------------------------------------------
# padding: an int, one int per dim, one (begin, end) pair per dim, 'valid' or 'same'.


def conv1d(input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    return conv_nd(input, weight, bias, stride, padding, dilation, groups, dims=1, where="conv1d")


def conv2d(input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    return conv_nd(input, weight, bias, stride, padding, dilation, groups, dims=2, where="conv2d")


def conv3d(input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    return conv_nd(input, weight, bias, stride, padding, dilation, groups, dims=3, where="conv3d")


# --- pooling ----------------------------------------------------------------------------------
# stride defaults to kernel_size; padding: an int, one int per dim, or (begin, end) pairs per dim.


def max_pool1d(
    input: Tensor,  # noqa: A002
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    return max_pool_nd(
        input,
        kernel_size,
        stride,
        padding,
        dilation,
        ceil_mode,
        return_indices,
        dims=1,
        where="max_pool1d",
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
    return max_pool_nd(
        input,
        kernel_size,
        stride,
        padding,
        dilation,
        ceil_mode,
        return_indices,
        dims=2,
        where="max_pool2d",
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
    return max_pool_nd(
        input,
        kernel_size,
        stride,
        padding,
        dilation,
        ceil_mode,
        return_indices,
        dims=3,
        where="max_pool3d",
    )


def avg_pool1d(
    input: Tensor,  # noqa: A002
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    return avg_pool_nd(
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        None,
        dims=1,
        where="avg_pool1d",
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
    return avg_pool_nd(
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
        dims=2,
        where="avg_pool2d",
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
    return avg_pool_nd(
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
        dims=3,
        where="avg_pool3d",
    )


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    return adaptive_avg_pool_nd(input, output_size, dims=1, where="adaptive_avg_pool1d")


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    return adaptive_avg_pool_nd(input, output_size, dims=2, where="adaptive_avg_pool2d")


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    return adaptive_avg_pool_nd(input, output_size, dims=3, where="adaptive_avg_pool3d")


# --- normalization -----------------------------------------------------------------------------


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


# --- losses ------------------------------------------------------------------------------------


def cross_entropy(
    input: Tensor,  # noqa: A002
    target,
    weight=None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
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
    ignore_index: int = -100,
    reduction: str = "mean",
) -> Tensor:
    return ops.nll_loss(input, target, weight, ignore_index=ignore_index, reduction=reduction)


def mse_loss(input: Tensor, target, reduction: str = "mean") -> Tensor:  # noqa: A002
    return ops.mse_loss(input, target, reduction=reduction)


def l1_loss(input: Tensor, target, reduction: str = "mean") -> Tensor:  # noqa: A002
    return ops.l1_loss(input, target, reduction=reduction)


def smooth_l1_loss(input: Tensor, target, reduction: str = "mean", beta: float = 1.0) -> Tensor:  # noqa: A002
    return ops.smooth_l1_loss(input, target, reduction=reduction, beta=beta)


def huber_loss(input: Tensor, target, reduction: str = "mean", delta: float = 1.0) -> Tensor:  # noqa: A002
    return ops.huber_loss(input, target, reduction=reduction, delta=delta)


def binary_cross_entropy_with_logits(
    input: Tensor,  # noqa: A002
    target,
    weight=None,
    reduction: str = "mean",
    pos_weight=None,
) -> Tensor:
    return ops.binary_cross_entropy_with_logits(
        input, target, weight, reduction=reduction, pos_weight=pos_weight
    )
