"""Many parameters at once: their gradients cleared (zero_grads) or clipped (clip_grad_norm_,
clip_grad_value_), their values as one flat vector (parameters_to_vector, vector_to_parameters)."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from .. import backend
from ..errors import ArgumentError, DeviceError, ShapeError
from ..tensor import Tensor

__all__ = [
    "zero_grads", "clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
    "vector_to_parameters",
]  # fmt: skip


def zero_grads(parameters, set_to_none: bool = True) -> None:
    """Clear the gradients of `parameters` (tensors): to None, which frees them, or to zeros in
    place (`set_to_none=False`). What Module.zero_grad and Optimizer.zero_grad do."""
    for param in parameters:
        if param.grad is None:
            continue
        if set_to_none:
            param.grad = None
        elif param.grad.requires_grad:
            # a .grad from create_graph, in a graph: as PyTorch's detach_() then zero_(), but
            # without writing into memory that graph may have saved
            param.grad = Tensor.wrap(param.xp.zeros_like(param.grad.array))
        else:
            param.grad.array[...] = 0
            param.grad.bump_version()  # a graph that saved it would see stale values


def _as_list(parameters) -> list[Tensor]:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def _vector_norm(array, norm_type: float) -> float:
    """The norm of order norm_type of an array's elements, in float64, as
    torch.linalg.vector_norm: inf is max |x|, -inf min |x|, 0 the count of nonzeros; nan
    propagates. An empty array has norm 0."""
    if array.size == 0:
        return 0.0
    magnitudes = abs(array.astype(np.float64))
    if norm_type == math.inf:
        return float(magnitudes.max())
    if norm_type == -math.inf:
        return float(magnitudes.min())
    if norm_type == 0:
        return float((magnitudes != 0).sum())
    with np.errstate(divide="ignore"):  # a negative order over zeros: inf, whose inverse is 0
        return float((magnitudes**norm_type).sum()) ** (1.0 / norm_type)


def _device_vector_norm(xp, array, norm_type: float):
    """_vector_norm computed where `array` is (a GPU): a 0-d float64 array of that device, so
    that nothing is copied to the host."""
    if array.size == 0:
        return xp.zeros((), np.float64)
    magnitudes = xp.abs(array.astype(np.float64))
    if norm_type == math.inf:
        return magnitudes.max()
    if norm_type == -math.inf:
        return magnitudes.min()
    if norm_type == 0:
        return (magnitudes != 0).sum().astype(np.float64)
    with np.errstate(divide="ignore"):
        return (magnitudes**norm_type).sum() ** (1.0 / norm_type)


def clip_grad_norm_(
    parameters: Iterable[Tensor] | Tensor,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
) -> Tensor:
    """Scale every gradient by min(1, max_norm / (total_norm + 1e-6)), where total_norm is the
    norm of the gradients' norms (for order > 0, the norm of all gradients taken together as one
    vector). Returns total_norm on the gradients' device, as PyTorch does. With
    error_if_nonfinite, a nan or inf total norm raises and nothing is changed; without, a nan
    total makes every gradient nan, as in PyTorch. On a GPU the norms and the scale are computed
    there, and only error_if_nonfinite reads the total on the host."""
    grads = [p.grad.array for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return Tensor(np.float32(0.0))
    norm_type = float(norm_type)
    devices = {backend.device_of(g) for g in grads}
    if len(devices) > 1:
        raise DeviceError(
            f"clip_grad_norm_: the gradients are on {' and '.join(sorted(map(str, devices)))}; "
            f"clip the gradients of each device apart"
        )
    if type(grads[0]) is not np.ndarray:
        return _clip_on_device(grads, max_norm, norm_type, error_if_nonfinite)
    # the norm of the per-gradient norms, as PyTorch: for order 0 that counts the gradients
    # with a nonzero entry, and nan anywhere makes the total nan whatever the order
    total = _vector_norm(np.array([_vector_norm(g, norm_type) for g in grads]), norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(
            f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is {total}; "
            f"pass error_if_nonfinite=False to clip anyway"
        )
    scale = max_norm / (total + 1e-6)
    if not scale >= 1.0:  # nan scales too, as PyTorch's clamp(coefficient, max=1) does
        with np.errstate(invalid="ignore"):  # inf * 0 is nan there too
            for g in grads:
                g *= g.dtype.type(scale)
    return Tensor(np.asarray(total, dtype=grads[0].dtype))


def _clip_on_device(grads: list, max_norm: float, norm_type: float, error_if_nonfinite: bool):
    """clip_grad_norm_ of gradients on a GPU: the same arithmetic in float64 0-d arrays of the
    device, and every gradient multiplied by min(1, scale), which leaves the unclipped ones as
    they are (nan included), as the CPU's `if` does."""
    xp = backend.array_module(grads[0])
    norms = xp.stack([_device_vector_norm(xp, g, norm_type) for g in grads])
    total = _device_vector_norm(xp, norms, norm_type)
    if error_if_nonfinite and not math.isfinite(float(total)):
        raise RuntimeError(
            f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is "
            f"{float(total)}; pass error_if_nonfinite=False to clip anyway"
        )
    scale = xp.minimum(max_norm / (total + 1e-6), 1.0)
    for g in grads:
        g *= scale.astype(g.dtype)
    return Tensor(total.astype(grads[0].dtype))


def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float) -> None:
    """Clip every gradient element into [-clip_value, clip_value], in place."""
    if clip_value < 0:
        raise ArgumentError(f"clip_grad_value_: clip_value must be >= 0, got {clip_value}")
    for p in _as_list(parameters):
        if p.grad is not None:
            g = p.grad.array
            g.clip(-clip_value, clip_value, out=g)


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """Every parameter flattened and concatenated into one 1-D tensor (a copy, outside the
    graph)."""
    params = _as_list(parameters)
    if not params:
        raise ShapeError("parameters_to_vector: no parameters given")
    devices = {p.device for p in params}
    if len(devices) > 1:
        raise DeviceError(
            f"parameters_to_vector: the parameters are on "
            f"{' and '.join(sorted(map(str, devices)))}; one vector lives on one device"
        )
    xp = params[0].xp
    return Tensor(xp.concatenate([p.array.reshape(-1) for p in params]))


def vector_to_parameters(vector: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of a 1-D vector into the parameters, in place, each onto its
    parameter's device."""
    params = _as_list(parameters)
    if isinstance(vector, Tensor):
        data = vector.array
    else:
        data = vector if backend.is_array(vector) else np.asarray(vector)
    needed = sum(p.numel() for p in params)
    if data.ndim != 1 or data.shape[0] != needed:
        raise ShapeError(
            f"vector_to_parameters: vector of shape {tuple(data.shape)} does not hold the "
            f"{needed} elements of the parameters"
        )
    start = 0
    for p in params:
        piece = data[start : start + p.numel()].reshape(p.shape)
        p.array[...] = backend.to_device(piece, p.device)
        p.bump_version()
        start += p.numel()
