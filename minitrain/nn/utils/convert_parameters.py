"""Parameters as one flat vector and back, as torch.nn.utils.convert_parameters:
parameters_to_vector and vector_to_parameters."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ... import backend
from ...errors import DeviceError, ShapeError
from ...tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _as_list(parameters) -> list[Tensor]:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


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
