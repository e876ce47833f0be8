"""Gradient clipping and flat parameter vectors: clip_grad_norm_, clip_grad_value_,
parameters_to_vector, vector_to_parameters."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ..errors import ArgumentError, ShapeError
from ..tensor import Tensor


def _as_list(parameters) -> list[Tensor]:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def clip_grad_norm_(
    parameters: Iterable[Tensor] | Tensor,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
) -> Tensor:
    """Scale every gradient by min(1, max_norm / (total_norm + 1e-6)), where total_norm is the
    norm of all gradients taken together (as one vector). Returns total_norm, as PyTorch does.
    With error_if_nonfinite, a nan or inf total norm raises and nothing is changed."""
    grads = [p.grad.data for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return Tensor(np.float32(0.0))
    norm_type = float(norm_type)
    if norm_type == math.inf:
        total = max(float(abs(g).max()) if g.size else 0.0 for g in grads)
    else:
        total = sum(float((abs(g.astype(np.float64)) ** norm_type).sum()) for g in grads)
        total = total ** (1.0 / norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(
            f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is {total}; "
            f"pass error_if_nonfinite=False to clip anyway"
        )
    scale = max_norm / (total + 1e-6)
    if scale < 1.0:
        for g in grads:
            g *= g.dtype.type(scale)
    return Tensor(np.asarray(total, dtype=grads[0].dtype))


def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float) -> None:
    """Clip every gradient element into [-clip_value, clip_value], in place."""
    if clip_value < 0:
        raise ArgumentError(f"clip_grad_value_: clip_value must be >= 0, got {clip_value}")
    for p in _as_list(parameters):
        if p.grad is not None:
            g = p.grad.data
            g.clip(-clip_value, clip_value, out=g)


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """Every parameter flattened and concatenated into one 1-D tensor (a copy, outside the
    graph)."""
    params = _as_list(parameters)
    if not params:
        raise ShapeError("parameters_to_vector: no parameters given")
    xp = params[0].xp
    return Tensor(xp.concatenate([p.data.reshape(-1) for p in params]))


def vector_to_parameters(vector: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of a 1-D vector into the parameters, in place."""
    params = _as_list(parameters)
    data = vector.data if isinstance(vector, Tensor) else np.asarray(vector)
    needed = sum(p.numel() for p in params)
    if data.ndim != 1 or data.shape[0] != needed:
        raise ShapeError(
            f"vector_to_parameters: vector of shape {tuple(data.shape)} does not hold the "
            f"{needed} elements of the parameters"
        )
    start = 0
    for p in params:
        p.data[...] = data[start : start + p.numel()].reshape(p.shape)
        start += p.numel()
