"""Parameter initialisation, in place, with PyTorch's names, formulas and defaults. Each function
takes an optional numpy `generator`, which draws on the host; by default minitrain's generator for
the tensor's device draws (the CPU's, or on a GPU cupy.random's; `manual_seed` seeds both)."""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import backend
from ..errors import ArgumentError, ShapeError
from ..tensor import Tensor

__all__ = [
    "calculate_gain", "fan_in_and_fan_out", "uniform_", "normal_", "constant_", "zeros_",
    "ones_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
]  # fmt: skip


_GAINS = {
    "linear": 1.0,
    "identity": 1.0,
    "conv1d": 1.0,
    "conv2d": 1.0,
    "conv3d": 1.0,
    "conv_transpose1d": 1.0,
    "conv_transpose2d": 1.0,
    "conv_transpose3d": 1.0,
    "sigmoid": 1.0,
    "tanh": 5.0 / 3.0,
    "relu": math.sqrt(2.0),
    "selu": 3.0 / 4.0,
}


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table); `param` is leaky_relu's
    negative slope (default 0.01)."""
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1.0 + slope**2))
    if nonlinearity not in _GAINS:
        raise ArgumentError(
            f"calculate_gain: unknown nonlinearity {nonlinearity!r}; "
            f"expected one of {sorted([*_GAINS, 'leaky_relu'])}"
        )
    return _GAINS[nonlinearity]


def fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight: (in, out) for (out, in), times the receptive field for
    convolution weights (out, in, *kernel)."""
    if tensor.ndim < 2:
        raise ShapeError(
            f"fan_in_and_fan_out: needs a weight of at least 2 dims, got shape {tensor.shape}"
        )
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ArgumentError(f"init: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _empty(tensor: Tensor) -> bool:
    if 0 not in tensor.shape:
        return False
    warnings.warn(
        f"init: initializing a tensor of shape {tensor.shape}, with no elements, does nothing",
        stacklevel=3,  # the caller of kaiming_uniform_ / kaiming_normal_
    )
    return True


def _fill(tensor: Tensor, values: np.ndarray) -> Tensor:
    """Write values into the tensor's array in place (its dtype and device kept)."""
    tensor.array[...] = backend.to_device(values.astype(tensor.dtype), tensor.device)
    tensor.bump_version()
    return tensor


def _fill_drawn(tensor: Tensor, kind: str, low, high, generator) -> Tensor:
    """Fill with backend.draw's values (on the tensor's device), or a given numpy generator's
    (drawn on the host, then copied there)."""
    if generator is None:
        tensor.array[...] = backend.draw(tensor.device, kind, tensor.shape, tensor.dtype, low, high)
        tensor.bump_version()
        return tensor
    if kind == "uniform":
        return _fill(tensor, generator.uniform(low, high, tensor.shape))
    return _fill(tensor, generator.normal(low, high, tensor.shape))


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with U(a, b)."""
    return _fill_drawn(tensor, "uniform", a, b, generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with N(mean, std^2)."""
    return _fill_drawn(tensor, "normal", mean, std, generator)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill tensor with val, in place (outside the graph); returns tensor."""
    tensor.array[...] = val
    tensor.bump_version()
    return tensor


def zeros_(tensor: Tensor) -> Tensor:
    """Fill tensor with zeros, in place; returns tensor."""
    return constant_(tensor, 0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill tensor with ones, in place; returns tensor."""
    return constant_(tensor, 1)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot and Bengio, 2010)."""
    fan_in, fan_out = fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator=None,
) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan) (He et al., 2015); `a` is the negative
    slope when nonlinearity is leaky_relu. A tensor with no elements is left alone (it has no
    fan), with a warning, as in PyTorch."""
    if _empty(tensor):
        return tensor
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / _fan(tensor, mode))
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator=None,
) -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan); a tensor with no elements is left alone."""
    if _empty(tensor):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)
