"""The activation layers: Modules over the activation ops, with PyTorch's names and options.

The ops declare their layers (ops/core/variants.py, `module=`): ReLU, LeakyReLU, Sigmoid, Tanh,
GELU, SiLU, QuickGELU, ELU, SELU, CELU, Softplus, Mish, Hardswish, Hardsigmoid, LogSigmoid,
Softsign, Tanhshrink and GLU are built from them here (nn/modules/declared.py), each keeping its
op's arguments as attributes and applying the op in forward; `inplace=True` writes the result
into the input, as PyTorch's does. Written here, with state or logic of their own: Softmax,
LogSoftmax and Softmin (PyTorch's implicit dim), Softmax2d (over the channels), Hardtanh (its
deprecated names, its limits checked when built), ReLU6 (a Hardtanh, as PyTorch's) and PReLU (a
learned weight)."""

from __future__ import annotations

import warnings

import numpy as np

from ... import ops
from ...errors import ArgumentError, DTypeError, ShapeError
from ...ops.core.variants import declared
from ...tensor import Tensor
from .. import functional as F  # noqa: N812 (PyTorch's idiom)
from .. import init
from .attention import MultiheadAttention  # noqa: F401 (torch.nn.modules.activation's home of it)
from .declared import layer_of
from .linear import layer_dtype
from .module import Module, Parameter

__all__ = [
    "Hardtanh", "LogSoftmax", "PReLU", "ReLU6", "Softmax", "Softmax2d", "Threshold", "Hardshrink",
    "Softshrink", "RReLU", "Softmin",
]  # fmt: skip


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


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W): at each position the C values
    sum to 1."""

    def forward(self, x: Tensor) -> Tensor:
        """(N, C, H, W) or (C, H, W) -> the same shape, softmax along dim -3."""
        if x.ndim not in (3, 4):
            raise ShapeError(
                f"Softmax2d: expected input of 3 or 4 dims (C, H, W) or (N, C, H, W), got shape "
                f"{tuple(x.shape)}"
            )
        return ops.softmax(x, -3)


def _inplace_repr(inplace: bool) -> str:
    return "inplace=True" if inplace else ""


class Threshold(Module):
    """x where x > threshold, `value` elsewhere (F.threshold); inplace=True writes into x."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, x: Tensor) -> Tensor:
        """Input (*) -> the same shape."""
        return F.threshold(x, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        limits = f"threshold={self.threshold}, value={self.value}"
        return ", ".join(filter(None, (limits, _inplace_repr(self.inplace))))


class RReLU(Module):
    """Randomized leaky ReLU (F.rrelu): in training each negative element scaled by a slope
    drawn from U(lower, upper), in eval by (lower + upper) / 2; inplace=True writes into x."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, x: Tensor) -> Tensor:
        """Input (*) -> the same shape."""
        return F.rrelu(x, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        limits = f"lower={self.lower}, upper={self.upper}"
        return ", ".join(filter(None, (limits, _inplace_repr(self.inplace))))


class Hardshrink(Module):
    """x where |x| > lambd, 0 elsewhere (F.hardshrink)."""

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, x: Tensor) -> Tensor:
        """Input (*) -> the same shape."""
        return F.hardshrink(x, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """x shrunk towards 0 by lambd, 0 where |x| <= lambd (F.softshrink)."""

    def forward(self, x: Tensor) -> Tensor:
        """Input (*) -> the same shape."""
        return F.softshrink(x, self.lambd)


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
        """x clipped to [min_val, max_val]; inplace=True writes it into x (F.hardtanh)."""
        return F.hardtanh(x, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        limits = f"min_val={self.min_val}, max_val={self.max_val}"
        return ", ".join(filter(None, (limits, _inplace_repr(self.inplace))))


class ReLU6(Hardtanh):
    """min(max(x, 0), 6): Hardtanh(0, 6)."""

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


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


def _bind_declared() -> None:
    """The layer of every op that declares one (`module=`), a class of this module bound under
    PyTorch's name: its nn.functional entry applied with the layer's arguments."""
    names = globals()
    for variant in declared():
        if variant.module:
            if variant.module in names:
                raise NameError(f"nn.{variant.module} is both written in {__name__} and declared")
            entry = getattr(F, variant.function.__name__)
            names[variant.module] = layer_of(variant, entry, __name__)
            __all__.append(variant.module)


_bind_declared()


class Softmin(Module):
    """softmax(-x) along `dim`; None is PyTorch's deprecated implicit dim, with its warning."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        """Input of any shape -> the same shape, each slice along dim summing to 1."""
        # the warning points at the caller of the layer, as PyTorch's
        return F.softmin(x, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
