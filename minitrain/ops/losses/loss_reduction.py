"""What every loss shares: its `reduction` and the arithmetic of it, and the checks of the
arguments every loss takes.

Every loss takes `reduction`: 'none' (one loss per position), 'sum', or 'mean'. Where PyTorch
returns nan for a mean over nothing (an empty batch, every target ignored, target weights that
sum to 0), minitrain raises a ValueError instead: a nan loss reaches every parameter through the
optimizer step, and the batch that caused it is long gone by the time anyone looks.
"""

from __future__ import annotations

import numpy as np

from ... import backend
from ...errors import ArgumentError, GraphError
from ...tensor import Tensor

_REDUCTIONS = ("none", "mean", "sum")


def loss_array(value):
    """The array behind a loss's argument: a Tensor's data, an array as it is, anything else
    through np.asarray, so that a number becomes a 0-d array and None one of dtype object,
    which the losses' shape and dtype checks then refuse by name (core.op.array_of keeps
    None)."""
    if isinstance(value, Tensor):
        return value.array
    return value if backend.is_array(value) else np.asarray(value)


def check_reduction(caller: str, reduction) -> None:
    """reduction is 'none', 'mean' or 'sum'."""
    if reduction not in _REDUCTIONS:
        raise ArgumentError(
            f"{caller}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}"
        )


def check_constant(caller: str, **tensors) -> None:
    """Weights are constants, as in PyTorch: refuse one that requires grad rather than silently
    returning no gradient for it."""
    for name, value in tensors.items():
        if isinstance(value, Tensor) and value.requires_grad:
            raise GraphError(
                f"{caller}: '{name}' cannot require grad (the loss has no gradient for it, as "
                f"in PyTorch); pass {name}.detach()"
            )


def mean_divisor(caller: str, total, what: str):
    """The divisor of a 'mean' reduction, refused when it is 0 (PyTorch returns nan). A total
    on a GPU is checked at the next read of a GPU value (backend.defer_check: read now, it
    would wait for the GPU on every step), nan meanwhile where it is 0."""
    if type(total) is not np.ndarray and backend.is_array(total):
        zero = total == 0
        if backend.defer_check(zero, ArgumentError, _divides_by_zero(caller, what)):
            return backend.array_module(total).where(zero, total.dtype.type(np.nan), total)
    if total == 0:
        raise ArgumentError(_divides_by_zero(caller, what))
    return total


def _divides_by_zero(caller: str, what: str) -> str:
    return (
        f"{caller}: reduction='mean' over {what} divides by 0 (PyTorch returns nan); use "
        f"reduction='sum', or leave such batches out"
    )


def reduce_losses(losses, reduction: str, divisor=None):
    """Per-position losses reduced: as they are, summed, or summed over `divisor` (default: the
    number of positions)."""
    if reduction == "none":
        return losses
    total = losses.sum()
    if reduction == "sum":
        return total
    return total / (losses.size if divisor is None else divisor)


def position_scale(grad, reduction: str, divisor):
    """The gradient of the reduced loss with respect to each position's loss: the upstream
    gradient itself ('none', 'sum'; 0-d for 'sum', broadcasting) or divided by the divisor."""
    return grad / divisor if reduction == "mean" else grad
