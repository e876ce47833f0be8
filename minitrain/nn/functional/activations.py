"""PyTorch's activation functions (`F.relu`, `F.gelu`, `F.softmax`, ...) over minitrain.ops."""

from __future__ import annotations

import warnings

import numpy as np

from ... import ops
from ...tensor import Tensor

__all__ = [
    "relu",
    "leaky_relu",
    "sigmoid",
    "tanh",
    "gelu",
    "silu",
    "quick_gelu",
    "relu6",
    "hardtanh",
    "elu",
    "selu",
    "celu",
    "softplus",
    "mish",
    "hardswish",
    "hardsigmoid",
    "logsigmoid",
    "softsign",
    "tanhshrink",
    "prelu",
    "glu",
    "softmax",
    "log_softmax",
    "softmin",
]


def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """max(input, 0), elementwise. `inplace` is accepted and ignored: the result is a new tensor."""
    return ops.relu(input)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:  # noqa: A002
    """input where positive, negative_slope * input elsewhere; negative_slope must be >= 0 (PyTorch
    takes any). `inplace` is accepted and ignored: the result is a new tensor."""
    return ops.leaky_relu(input, negative_slope)


def sigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """1 / (1 + exp(-input)), elementwise."""
    return ops.sigmoid(input)


def tanh(input: Tensor) -> Tensor:  # noqa: A002
    """tanh(input), elementwise."""
    return ops.tanh(input)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:  # noqa: A002
    """input * Phi(input), Phi the standard normal CDF (approximate='none'), or with the tanh
    approximation (approximate='tanh')."""
    return ops.gelu(input, approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """input * sigmoid(input) (Swish), elementwise. `inplace` is accepted and ignored: the result is
    a new tensor."""
    return ops.silu(input)


def quick_gelu(input: Tensor, alpha: float = 1.702) -> Tensor:  # noqa: A002
    """input * sigmoid(alpha * input), elementwise: alpha=1.702 approximates GELU, alpha=1 is SiLU.
    Not in PyTorch."""
    return ops.quick_gelu(input, alpha)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """min(max(input, 0), 6), elementwise. `inplace` is accepted and ignored: the result is a new
    tensor."""
    return ops.relu6(input)


def hardtanh(
    input: Tensor,  # noqa: A002
    min_val: float = -1.0,
    max_val: float = 1.0,
    inplace: bool = False,
) -> Tensor:
    """input clipped to [min_val, max_val]. `inplace` is accepted and ignored: the result is a new
    tensor."""
    return ops.hardtanh(input, min_val, max_val)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """input where positive, alpha * (exp(input) - 1) elsewhere. `inplace` is accepted and ignored:
    the result is a new tensor."""
    return ops.elu(input, alpha)


def selu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """scale * elu(input, alpha) with SELU's constants (alpha = 1.6732632..., scale = 1.0507009...).
    `inplace` is accepted and ignored: the result is a new tensor."""
    return ops.selu(input)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """max(0, input) + min(0, alpha * (exp(input / alpha) - 1)); alpha must be nonzero. `inplace` is
    accepted and ignored: the result is a new tensor."""
    return ops.celu(input, alpha)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:  # noqa: A002
    """log(1 + exp(beta * input)) / beta, or input itself where beta * input > threshold; beta must
    be nonzero."""
    return ops.softplus(input, beta, threshold)


def mish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """input * tanh(softplus(input)), elementwise. `inplace` is accepted and ignored: the result is
    a new tensor."""
    return ops.mish(input)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """input * relu6(input + 3) / 6, elementwise. `inplace` is accepted and ignored: the result is a
    new tensor."""
    return ops.hardswish(input)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """relu6(input + 3) / 6, elementwise. `inplace` is accepted and ignored: the result is a new
    tensor."""
    return ops.hardsigmoid(input)


def logsigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """log(sigmoid(input)), elementwise, computed stably."""
    return ops.logsigmoid(input)


def softsign(input: Tensor) -> Tensor:  # noqa: A002
    """input / (1 + |input|), elementwise."""
    return ops.softsign(input)


def tanhshrink(input: Tensor) -> Tensor:  # noqa: A002
    """input - tanh(input), elementwise."""
    return ops.tanhshrink(input)


def prelu(input: Tensor, weight: Tensor) -> Tensor:  # noqa: A002
    """input where positive, weight * input elsewhere. weight: 0-d or 1-D, one slope for all, or one
    per channel (dim 1 of input)."""
    return ops.prelu(input, weight)


def glu(input: Tensor, dim: int = -1) -> Tensor:  # noqa: A002
    """a * sigmoid(b), a and b the halves of input along dim (whose size must be even):
    `(*, 2M, *)` -> `(*, M, *)`."""
    return ops.glu(input, dim)


def softmax(
    input: Tensor,  # noqa: A002
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype=None,
) -> Tensor:
    """Softmax along dim, of the input cast to dtype first if given. dim=None is PyTorch's
    deprecated implicit dim, with its warning: 0 for 0-d, 1-d and 3-d input, 1 otherwise."""
    return ops.softmax(*_softmax_args("softmax", input, dim, _stacklevel, dtype))


def log_softmax(
    input: Tensor,  # noqa: A002
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype=None,
) -> Tensor:
    """Log-softmax along dim; dim and dtype as in softmax."""
    return ops.log_softmax(*_softmax_args("log_softmax", input, dim, _stacklevel, dtype))


def _softmax_args(caller: str, input, dim, stacklevel: int, dtype) -> tuple:  # noqa: A002
    if dtype is not None:
        input = ops.cast(input, dtype)  # noqa: A001
    if dim is None:
        warnings.warn(
            f"Implicit dimension choice for {caller} has been deprecated. Change the call to "
            f"include dim=X as an argument.",
            stacklevel=stacklevel,
        )
        dim = 0 if np.ndim(input.data if isinstance(input, Tensor) else input) in (0, 1, 3) else 1
    return input, dim


def softmin(
    input: Tensor,  # noqa: A002
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype=None,
) -> Tensor:
    """softmax(-input) along dim; dim and dtype as in softmax."""
    input, dim = _softmax_args("softmin", input, dim, _stacklevel, dtype)  # noqa: A001
    return ops.softmax(ops.neg(input), dim)
