"""Activation layers: ReLU, LeakyReLU, Sigmoid, Tanh, GELU, SiLU, QuickGELU, Softmax,
LogSoftmax. `inplace=` is accepted for PyTorch compatibility; minitrain never overwrites the
input, so the result is the same either way."""

from __future__ import annotations

from .. import ops
from ..tensor import Tensor
from . import functional as F  # noqa: N812 (PyTorch's idiom)
from .module import Module


class ReLU(Module):
    def __init__(self, inplace: bool = False):
        super().__init__()

    def forward(self, x: Tensor) -> Tensor:
        return ops.relu(x)


class LeakyReLU(Module):
    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: Tensor) -> Tensor:
        return ops.leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class Sigmoid(Module):
    def forward(self, x: Tensor) -> Tensor:
        return ops.sigmoid(x)


class Tanh(Module):
    def forward(self, x: Tensor) -> Tensor:
        return ops.tanh(x)


class GELU(Module):
    """x * Phi(x), exact (approximate='none') or with the tanh approximation ('tanh')."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return ops.gelu(x, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate='{self.approximate}'"


class SiLU(Module):
    """x * sigmoid(x) (Swish)."""

    def __init__(self, inplace: bool = False):
        super().__init__()

    def forward(self, x: Tensor) -> Tensor:
        return ops.silu(x)


class QuickGELU(Module):
    """x * sigmoid(alpha * x), the fast GELU approximation (alpha = 1.702); alpha = 1 is SiLU."""

    def __init__(self, alpha: float = 1.702):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: Tensor) -> Tensor:
        return ops.quick_gelu(x, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


class Softmax(Module):
    """Softmax along `dim`; None is PyTorch's deprecated implicit dim, with its warning (see
    F.softmax): pass dim."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        # the warning points at the caller of the layer, as PyTorch's
        return F.softmax(x, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """Log-softmax along `dim`."""

    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, self.dim, _stacklevel=5)
