"""`F.batch_norm`, `F.instance_norm`, `F.layer_norm`, `F.rms_norm`, `F.group_norm`,
`F.local_response_norm`."""

from __future__ import annotations

import math

from ... import backend, ops
from ...errors import ShapeError
from ...tensor import Tensor
from .vision import pad

__all__ = [
    "batch_norm", "instance_norm", "layer_norm", "rms_norm", "group_norm", "local_response_norm",
]  # fmt: skip


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


def instance_norm(
    input: Tensor,  # noqa: A002
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Instance norm of (N, C, *): each sample's each channel normalized over its positions,
    then scaled and shifted per channel. With use_input_stats (the default) those statistics
    are the input's, and running_mean / running_var (Tensors of C, or None) move towards their
    average over the batch, in place (the unbiased variance, as PyTorch's); otherwise the
    running ones normalize. Composed of group norm (one group per channel) and batch norm."""
    if input.ndim < 2:
        raise ShapeError(
            f"instance_norm: expected input (N, C, *) of 2 or more dims, got shape "
            f"{tuple(input.shape)}"
        )
    if not use_input_stats:
        return ops.batch_norm(
            input, weight, bias, eps, running_mean=running_mean, running_var=running_var,
            training=False,
        )  # fmt: skip
    positions = math.prod(input.shape[2:])
    if positions == 1:
        raise ShapeError(
            f"instance_norm: expected more than 1 spatial element when using the input's "
            f"statistics, got input of shape {tuple(input.shape)}"
        )
    out = ops.group_norm(input, input.shape[1], weight, bias, eps)
    if running_mean is not None or running_var is not None:
        _update_running_stats(input, running_mean, running_var, momentum)
    return out


def _update_running_stats(input, running_mean, running_var, momentum) -> None:
    """running = (1 - momentum) running + momentum * the batch average of each instance's
    statistic, in place: outside the graph, as PyTorch's."""
    array = input.array
    xp = backend.array_module(array)
    per_instance = array.reshape(array.shape[0], array.shape[1], -1)
    if running_mean is not None:
        mean = xp.mean(per_instance, axis=(0, 2))
        running_mean.array[...] = (1 - momentum) * running_mean.array + momentum * mean
        running_mean.bump_version()
    if running_var is not None:
        var = xp.var(per_instance, axis=2, ddof=1).mean(axis=0)
        running_var.array[...] = (1 - momentum) * running_var.array + momentum * var
        running_var.bump_version()


def local_response_norm(
    input: Tensor,  # noqa: A002
    size: int,
    alpha: float = 1e-4,
    beta: float = 0.75,
    k: float = 1.0,
) -> Tensor:
    """Local response normalization across channels (AlexNet's), of (N, C, *) with 3 or more
    dims: input / (k + alpha / size * the sum of the squares of the `size` channels around
    each one) ** beta, the window zero-padded at the edges (size // 2 channels before, (size -
    1) // 2 after), as PyTorch's."""
    if input.ndim < 3:
        raise ShapeError(
            f"local_response_norm: expected 3D or higher dimensionality input, got shape "
            f"{tuple(input.shape)}"
        )
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ShapeError(f"local_response_norm: size must be a positive int, got {size!r}")
    if input.numel() == 0:
        return input
    channels = input.shape[1]
    # the squares padded on dim 1 (F.pad's widths run from the last dim)
    widths = (0, 0) * (input.ndim - 2) + (size // 2, (size - 1) // 2)
    padded = pad(input * input, widths)
    window_sum = padded[:, 0:channels]
    for offset in range(1, size):
        window_sum = window_sum + padded[:, offset : offset + channels]
    return input / (window_sum * (alpha / size) + k) ** beta
