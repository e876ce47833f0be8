"""PyTorch's activation functions (`F.relu`, `F.gelu`, `F.softmax`, ...) over minitrain.ops.

The ops declare their entries here (ops/core/variants.py, "functional"): each is the op's function,
with PyTorch's `inplace=False` where PyTorch's takes one (`inplace=True` writes the result into the
input, as PyTorch's does; nn/modules/declared.py builds them). Written here: softmax, log_softmax
and softmin, for PyTorch's implicit dim and its warning; gumbel_softmax; threshold, hardshrink,
softshrink and rrelu, composed of `where`."""

from __future__ import annotations

import warnings

import numpy as np

from ... import backend, ops
from ...creation import full_like
from ...errors import ArgumentError
from ...inplace import write_in_place
from ...ops.core.variants import declared
from ...tensor import Tensor
from ..modules.declared import functional_of

__all__ = [
    "softmax", "log_softmax", "softmin", "gumbel_softmax", "threshold", "hardshrink", "softshrink",
    "rrelu",
]  # fmt: skip


def _bind_declared() -> None:
    """The nn.functional entry of every op that declares one, bound here under its name."""
    names = globals()
    for variant in declared():
        for name in variant.functional:
            if name in names:
                raise NameError(f"F.{name} is both written in {__name__} and declared")
            entry = functional_of(variant)
            entry.__module__ = __name__
            names[name] = entry
            __all__.append(name)


_bind_declared()


def softmax(
    input: Tensor,  # noqa: A002
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype=None,
) -> Tensor:
    """Softmax along dim, of the input cast to dtype first if given. dim=None is PyTorch's
    deprecated implicit dim, with its warning: 0 for 0-d, 1-d and 3-d input, 1 otherwise."""
    return ops.softmax(input, _implicit_dim("softmax", input, dim, _stacklevel), dtype)


def log_softmax(
    input: Tensor,  # noqa: A002
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype=None,
) -> Tensor:
    """Log-softmax along dim; dim and dtype as in softmax."""
    return ops.log_softmax(input, _implicit_dim("log_softmax", input, dim, _stacklevel), dtype)


def softmin(
    input: Tensor,  # noqa: A002
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype=None,
) -> Tensor:
    """softmax(-input) along dim; dim and dtype as in softmax."""
    return ops.softmax(ops.neg(input), _implicit_dim("softmin", input, dim, _stacklevel), dtype)


def gumbel_softmax(
    logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1
) -> Tensor:
    """A sample of the Gumbel-softmax (concrete) distribution: softmax((logits + g) / tau) along
    dim, g standard Gumbel noise drawn on logits' device. hard=True returns the one-hot of the
    sample's argmax whose gradient is the soft sample's (straight-through). `eps` is unused, as
    in PyTorch. The noise is minitrain's own numbers, not PyTorch's."""
    if not tau > 0:
        raise ArgumentError(f"gumbel_softmax: tau must be positive, got {tau}")
    array = logits.array
    uniform = backend.draw(logits.device, "uniform", array.shape, np.float64)
    xp = backend.array_module(array)
    # -log(E) with E = -log(1 - u) ~ Exponential(1): a standard Gumbel sample
    gumbels = (-xp.log(-xp.log1p(-uniform))).astype(array.dtype)
    soft = ops.softmax((logits + Tensor.wrap(gumbels)) / tau, dim)
    if not hard:
        return soft
    axis = dim % array.ndim
    winners = xp.expand_dims(xp.argmax(soft.array, axis=axis), axis)
    positions = xp.arange(array.shape[axis]).reshape(
        [-1 if a == axis else 1 for a in range(array.ndim)]
    )
    one_hot = (winners == positions).astype(array.dtype)
    # the one-hot's values with the soft sample's gradient (straight-through)
    return Tensor.wrap(one_hot) - soft.detach() + soft


def _implicit_dim(caller: str, input, dim, stacklevel: int):  # noqa: A002
    """dim, or where None PyTorch's deprecated implicit choice, with its warning (pointing
    `stacklevel` frames up): 0 for 0-d, 1-d and 3-d input, 1 otherwise."""
    if dim is not None:
        return dim
    warnings.warn(
        f"Implicit dimension choice for {caller} has been deprecated. Change the call to "
        f"include dim=X as an argument.",
        stacklevel=stacklevel,
    )
    return 0 if np.ndim(input.array if isinstance(input, Tensor) else input) in (0, 1, 3) else 1


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:  # noqa: A002
    """x where x > threshold, `value` elsewhere (NaN stays NaN, as PyTorch's); the gradient is
    1 where x > threshold, 0 elsewhere. inplace=True writes the result into input."""

    def compute() -> Tensor:
        return ops.where(input <= threshold, full_like(input, value), input)

    if inplace:
        return write_in_place(input, compute, "threshold(inplace=True)")
    return compute()


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """x where |x| > lambd, 0 elsewhere (NaN stays NaN, with a zero gradient, as PyTorch's)."""
    # NaN is outside neither side: x * 0 keeps it NaN and, as PyTorch's, gives it no gradient
    outside = (input > lambd) | (input < -lambd)
    return ops.where(outside, input, input * 0.0)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """x - lambd where x > lambd, x + lambd where x < -lambd, 0 between (NaN stays NaN, as
    PyTorch's, with a zero gradient); lambd must be >= 0."""
    if not lambd >= 0:
        raise ArgumentError(f"softshrink: lambd must be >= 0, got {lambd}")
    shrunk = ops.where(input < -lambd, input + lambd, input * 0.0)
    return ops.where(input > lambd, input - lambd, shrunk)


def rrelu(
    input: Tensor,  # noqa: A002
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
) -> Tensor:
    """Randomized leaky ReLU: x where x > 0, a * x elsewhere, with a drawn from U(lower, upper)
    per element in training (on x's device) and (lower + upper) / 2 otherwise. training
    defaults to False, as in PyTorch; inplace=True writes the result into input."""
    if not 0 <= lower <= upper:
        raise ArgumentError(f"rrelu: needs 0 <= lower <= upper, got lower={lower}, upper={upper}")

    def compute() -> Tensor:
        if not training:
            return ops.where(input > 0, input, input * ((lower + upper) / 2))
        array = input.array
        slopes = backend.draw(input.device, "uniform", array.shape, array.dtype, lower, upper)
        return ops.where(input > 0, input, input * Tensor.wrap(slopes))

    if inplace:
        return write_in_place(input, compute, "rrelu(inplace=True)")
    return compute()
