"""Identity, Linear, Bilinear, Flatten and Unflatten."""

from __future__ import annotations

import math

import numpy as np

from ... import ops
from ...arguments import as_dtype
from ...errors import ArgumentError, DTypeError
from ...tensor import Tensor
from .. import init
from ..functional.dense import bilinear
from .module import Module, Parameter


class Identity(Module):
    """Returns its input; takes and ignores any arguments (a placeholder, as in PyTorch)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x: Tensor) -> Tensor:
        """Returns x itself (the same object)."""
        return x


def layer_dtype(dtype, caller: str) -> np.dtype:
    """A layer's `dtype=` as PyTorch's factories take it: None is the default, float32; a
    floating numpy dtype (np.float64, 'float64') otherwise. The layers with parameters take
    `device=` too: they are built on the CPU, then moved with Module.to."""
    resolved = as_dtype(np.float32 if dtype is None else dtype, caller)
    if resolved.kind != "f":
        raise DTypeError(
            f"{caller}: dtype must be a floating numpy dtype (np.float32, 'float64', ...), got "
            f"{resolved}"
        )
    return resolved


def finish_parameters(layer: Module, bias: bool, size: int, dtype, device) -> None:
    """The end of a layer's constructor, as PyTorch's: a bias of `size` (or a `bias` parameter
    of None), every parameter initialised by the layer's reset_parameters, then the layer moved
    to `device` (None leaves it on the CPU)."""
    if bias:
        layer.bias = Parameter(np.empty(size, dtype))
    else:
        layer.register_parameter("bias", None)
    layer.reset_parameters()
    if device is not None:
        layer.to(device)


class Linear(Module):
    """y = x @ weight.T + bias, weight (out_features, in_features). Initialised as PyTorch does:
    weight and bias from U(-1/sqrt(in_features), 1/sqrt(in_features))."""

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None
    ):
        super().__init__()
        dtype = layer_dtype(dtype, "Linear")
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(np.empty((out_features, in_features), dtype))
        finish_parameters(self, bias, out_features, dtype, device)

    def reset_parameters(self) -> None:
        """Re-draw weight and bias from U(-1/sqrt(in_features), 1/sqrt(in_features)), in place, as
        the constructor does."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))  # = U(-1/sqrt(fan_in), 1/sqrt(fan_in))
        if self.bias is not None:
            bound = 1.0 / math.sqrt(self.in_features) if self.in_features else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x: Tensor) -> Tensor:
        """Input `(*, in_features)` -> `(*, out_features)`: x @ weight.T + bias."""
        return ops.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear under the name PyTorch gives MultiheadAttention's out_proj (so that programs
    naming the class, in torch.serialization.safe_globals lists, find it); a Linear here."""


class Bilinear(Module):
    """y_o = x1^T weight[o] x2 + bias_o, weight (out_features, in1_features, in2_features).
    Initialised as PyTorch does: weight and bias from U(-1/sqrt(in1_features),
    1/sqrt(in1_features))."""

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        bias: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        dtype = layer_dtype(dtype, "Bilinear")
        for name, value in (
            ("in1_features", in1_features),
            ("in2_features", in2_features),
            ("out_features", out_features),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ArgumentError(f"Bilinear: {name} must be a positive int, got {value!r}")
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = Parameter(np.empty((out_features, in1_features, in2_features), dtype))
        finish_parameters(self, bias, out_features, dtype, device)

    def reset_parameters(self) -> None:
        """Re-draw weight and bias from U(-1/sqrt(in1_features), 1/sqrt(in1_features)), in
        place, as the constructor does."""
        bound = 1.0 / math.sqrt(self.in1_features)
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """x1 `(*, in1_features)` and x2 `(*, in2_features)` -> `(*, out_features)`."""
        return bilinear(x1, x2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )


class Flatten(Module):
    """Flatten dims start_dim..end_dim into one (default: everything but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        """Input with dims start_dim..end_dim merged into one: (N, C, H, W) -> (N, C * H * W) by
        default."""
        return ops.flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim `dim` into `unflattened_size` (a tuple or list of ints, one may be -1): the
    inverse of Flatten, `(N, C * H * W) -> (N, C, H, W)` with dim=1, unflattened_size=(C, H, W).
    PyTorch's named-tensor form (a str dim and (name, size) pairs) is not taken."""

    def __init__(self, dim: int, unflattened_size) -> None:
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
            raise DTypeError(f"Unflatten: dim must be an int, got {type(dim).__name__}")
        if not isinstance(unflattened_size, (tuple, list)):
            raise DTypeError(
                f"Unflatten: unflattened_size must be a tuple or list of ints, got "
                f"{type(unflattened_size).__name__}"
            )
        for position, size in enumerate(unflattened_size):
            if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
                raise DTypeError(
                    f"Unflatten: unflattened_size must be a tuple of ints, but found element of "
                    f"type {type(size).__name__} at pos {position}"
                )
        self.dim, self.unflattened_size = int(dim), unflattened_size

    def forward(self, x: Tensor) -> Tensor:
        """Input with dim `dim` split into unflattened_size: (N, 12) -> (N, 3, 4) with dim=1,
        unflattened_size=(3, 4)."""
        return ops.unflatten(x, self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
