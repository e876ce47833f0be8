"""`F.batch_norm`, `F.layer_norm`, `F.rms_norm`, `F.group_norm`."""

from __future__ import annotations

from ... import ops
from ...tensor import Tensor

__all__ = ["batch_norm", "layer_norm", "rms_norm", "group_norm"]


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
