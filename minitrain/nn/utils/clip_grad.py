"""Many parameters' gradients clipped at once, as torch.nn.utils.clip_grad: by their total norm
(clip_grad_norm_, or its two halves get_total_norm and clip_grads_with_norm_) or elementwise
(clip_grad_value_). `foreach` is accepted and changes nothing: there is one way here."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ... import backend
from ...errors import ArgumentError, DeviceError
from ...tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


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


def _total_norm(caller: str, arrays: list, norm_type: float, error_if_nonfinite: bool):
    """The norm of order norm_type of the arrays' norms: a float on the CPU, a 0-d float64
    array of the device on a GPU (nothing copied to the host but for error_if_nonfinite).

    The norm of the per-array norms, as PyTorch: for order 0 that counts the arrays with a
    nonzero entry, and nan anywhere makes the total nan whatever the order."""
    devices = {backend.device_of(a) for a in arrays}
    if len(devices) > 1:
        raise DeviceError(
            f"{caller}: the gradients are on {' and '.join(sorted(map(str, devices)))}; "
            f"clip the gradients of each device apart"
        )
    if type(arrays[0]) is np.ndarray:
        total = _vector_norm(np.array([_vector_norm(a, norm_type) for a in arrays]), norm_type)
    else:
        xp = backend.array_module(arrays[0])
        norms = xp.stack([_device_vector_norm(xp, a, norm_type) for a in arrays])
        total = _device_vector_norm(xp, norms, norm_type)
    if error_if_nonfinite and not math.isfinite(float(total)):
        raise RuntimeError(
            f"{caller}: the total norm of order {norm_type} of the gradients is "
            f"{float(total)}; pass error_if_nonfinite=False to clip anyway"
        )
    return total


def _scale_by_norm(grads: list, max_norm: float, total) -> None:
    """Multiply every gradient array by min(1, max_norm / (total + 1e-6)), in place; a nan
    total scales too, as PyTorch's clamp(coefficient, max=1) does. total is a float, or a 0-d
    array of the gradients' device (the scale computed there)."""
    if isinstance(total, float):
        scale = max_norm / (total + 1e-6)
        if not scale >= 1.0:
            with np.errstate(invalid="ignore"):  # inf * 0 is nan there too
                for g in grads:
                    g *= g.dtype.type(scale)
        return
    scale = backend.array_module(total).minimum(max_norm / (total + 1e-6), 1.0)
    for g in grads:
        g *= scale.astype(g.dtype)


def get_total_norm(
    tensors: Iterable[Tensor] | Tensor,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """The norm of order norm_type of the tensors' norms (for order > 0, the norm of all their
    elements taken together as one vector), computed in float64 and returned in the first
    tensor's dtype on its device; 0 for no tensors. With error_if_nonfinite, a nan or inf total
    raises RuntimeError. The first half of clip_grad_norm_, given the gradients."""
    arrays = [t.array for t in _as_list(tensors) if t is not None]
    if not arrays:
        return Tensor(np.float32(0.0))
    total = _total_norm("get_total_norm", arrays, float(norm_type), error_if_nonfinite)
    if isinstance(total, float):
        return Tensor(np.asarray(total, dtype=arrays[0].dtype))
    return Tensor(total.astype(arrays[0].dtype))


def clip_grads_with_norm_(
    parameters: Iterable[Tensor] | Tensor,
    max_norm: float,
    total_norm,
    foreach: bool | None = None,
) -> None:
    """Scale every gradient by min(1, max_norm / (total_norm + 1e-6)), in place, for a
    total_norm computed already (get_total_norm of the gradients, perhaps reduced across
    processes): the second half of clip_grad_norm_."""
    grads = [p.grad.array for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    total = total_norm.array if isinstance(total_norm, Tensor) else total_norm
    on_host = type(grads[0]) is np.ndarray
    _scale_by_norm(grads, max_norm, float(total) if on_host else total.astype(np.float64))


def clip_grad_norm_(
    parameters: Iterable[Tensor] | Tensor,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
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
    total = _total_norm("clip_grad_norm_", grads, float(norm_type), error_if_nonfinite)
    _scale_by_norm(grads, max_norm, total)
    if isinstance(total, float):
        return Tensor(np.asarray(total, dtype=grads[0].dtype))
    return Tensor(total.astype(grads[0].dtype))


def clip_grad_value_(
    parameters: Iterable[Tensor] | Tensor, clip_value: float, foreach: bool | None = None
) -> None:
    """Clip every gradient element into [-clip_value, clip_value], in place."""
    if clip_value < 0:
        raise ArgumentError(f"clip_grad_value_: clip_value must be >= 0, got {clip_value}")
    for p in _as_list(parameters):
        if p.grad is not None:
            g = p.grad.array
            g.clip(-clip_value, clip_value, out=g)
