"""The activation layers: Modules over the activation ops, with PyTorch's names and options.

ReLU, LeakyReLU, Sigmoid, Tanh, GELU, SiLU, QuickGELU, Softmax, LogSoftmax, ReLU6, Hardtanh,
ELU, SELU, CELU, Softplus, Mish, Hardswish, Hardsigmoid, LogSigmoid, Softsign, Tanhshrink, PReLU,
GLU. `inplace=` is accepted for PyTorch compatibility and the layers compute out of place either
way: the result is the same, and the input keeps its values (use x.relu_() to write in place)."""

from __future__ import annotations

import warnings

import numpy as np

from .. import ops
from ..errors import ArgumentError, DTypeError
from ..tensor import Tensor
from . import functional as F  # noqa: N812 (PyTorch's idiom)
from . import init
from .linear import layer_dtype
from .module import Module, Parameter


class ReLU(Module):
    """max(x, 0), elementwise. `inplace` is accepted and ignored: the output is a new tensor."""

    def __init__(self, inplace: bool = False):
        super().__init__()

    def forward(self, x: Tensor) -> Tensor:
        return ops.relu(x)


class LeakyReLU(Module):
    """x where x > 0, negative_slope * x elsewhere. negative_slope must be >= 0 (PyTorch takes any);
    `inplace` is accepted and ignored."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: Tensor) -> Tensor:
        return ops.leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class Sigmoid(Module):
    """1 / (1 + exp(-x)), elementwise."""

    def forward(self, x: Tensor) -> Tensor:
        return ops.sigmoid(x)


class Tanh(Module):
    """tanh(x), elementwise."""

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
        """Input of any shape -> the same shape, each slice along dim summing to 1."""
        # the warning points at the caller of the layer, as PyTorch's
        return F.softmax(x, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """Log-softmax along `dim`."""

    def forward(self, x: Tensor) -> Tensor:
        """Input of any shape -> the same shape: log(softmax(x)) along dim, computed stably."""
        return F.log_softmax(x, self.dim, _stacklevel=5)


def _inplace_repr(inplace: bool) -> str:
    return "inplace=True" if inplace else ""


class Hardtanh(Module):
    """x clipped to [min_val, max_val] (min_val < max_val, as PyTorch's layer requires).
    min_value / max_value are PyTorch's deprecated spellings, taken with its FutureWarning."""

    def __init__(
        self,
        min_val: float = -1.0,
        max_val: float = 1.0,
        inplace: bool = False,
        min_value: float | None = None,
        max_value: float | None = None,
    ):
        super().__init__()
        for old, new, value in (
            ("min_value", "min_val", min_value),
            ("max_value", "max_val", max_value),
        ):
            if value is not None:
                warnings.warn(
                    f"keyword argument `{old}` is deprecated and renamed to `{new}`",
                    FutureWarning,
                    stacklevel=2,
                )
        min_val = min_val if min_value is None else min_value
        max_val = max_val if max_value is None else max_value
        if not max_val > min_val:
            raise ArgumentError(
                f"{type(self).__name__}: max_val must be greater than min_val, got "
                f"min_val={min_val}, max_val={max_val}"
            )
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, x: Tensor) -> Tensor:
        return ops.hardtanh(x, self.min_val, self.max_val)

    def extra_repr(self) -> str:
        limits = f"min_val={self.min_val}, max_val={self.max_val}"
        return ", ".join(filter(None, (limits, _inplace_repr(self.inplace))))


class ReLU6(Hardtanh):
    """min(max(x, 0), 6): Hardtanh(0, 6)."""

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class _Inplace(Module):
    """An activation whose one option is PyTorch's `inplace` (accepted, see above), shown in its
    repr where PyTorch's shows it."""

    shows_inplace = True

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace and self.shows_inplace)


class _WithAlpha(Module):
    """ELU and CELU: an `alpha` and `inplace`."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def extra_repr(self) -> str:
        return ", ".join(filter(None, (f"alpha={self.alpha}", _inplace_repr(self.inplace))))


class ELU(_WithAlpha):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""

    def forward(self, x: Tensor) -> Tensor:
        return ops.elu(x, self.alpha)


class CELU(_WithAlpha):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); alpha nonzero."""

    def forward(self, x: Tensor) -> Tensor:
        return ops.celu(x, self.alpha)


class SELU(_Inplace):
    """scale * elu(x, alpha) with SELU's fixed constants."""

    def forward(self, x: Tensor) -> Tensor:
        return ops.selu(x)


class Mish(_Inplace):
    """x * tanh(softplus(x))."""

    def forward(self, x: Tensor) -> Tensor:
        return ops.mish(x)


class Hardswish(_Inplace):
    """x * relu6(x + 3) / 6."""

    shows_inplace = False

    def forward(self, x: Tensor) -> Tensor:
        return ops.hardswish(x)


class Hardsigmoid(_Inplace):
    """relu6(x + 3) / 6."""

    shows_inplace = False

    def forward(self, x: Tensor) -> Tensor:
        return ops.hardsigmoid(x)


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, x itself where beta * x > threshold."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, x: Tensor) -> Tensor:
        return ops.softplus(x, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class LogSigmoid(Module):
    """log(sigmoid(x)), elementwise, computed stably."""

    def forward(self, x: Tensor) -> Tensor:
        return ops.logsigmoid(x)


class Softsign(Module):
    """x / (1 + |x|), elementwise."""

    def forward(self, x: Tensor) -> Tensor:
        return ops.softsign(x)


class Tanhshrink(Module):
    """x - tanh(x), elementwise."""

    def forward(self, x: Tensor) -> Tensor:
        return ops.tanhshrink(x)


class PReLU(Module):
    """x for x > 0, weight * x otherwise, with a learned weight: one slope shared by every
    channel (num_parameters=1), or one per channel (axis 1 of the input), each starting at
    `init`."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        if isinstance(num_parameters, bool) or not isinstance(num_parameters, (int, np.integer)):
            raise DTypeError(f"PReLU: num_parameters must be an int, got {num_parameters!r}")
        if num_parameters < 1:
            raise ArgumentError(f"PReLU: num_parameters must be >= 1, got {num_parameters}")
        self.num_parameters, self.init = int(num_parameters), init
        self.weight = Parameter(np.empty(self.num_parameters, layer_dtype(dtype, "PReLU")))
        self.reset_parameters()
        if device is not None:
            self.to(device)

    def reset_parameters(self) -> None:
        """Fill weight with `init` again, in place."""
        init.constant_(self.weight, self.init)

    def forward(self, x: Tensor) -> Tensor:
        """Input (N, C, *) with C = num_parameters -> the same shape; with num_parameters=1 any
        shape (one slope for all)."""
        return ops.prelu(x, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class GLU(Module):
    """a * sigmoid(b), a and b the halves of the input along `dim`."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        """Input `(*, 2M, *)` -> `(*, M, *)`, halved along dim (whose size must be even)."""
        return ops.glu(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
