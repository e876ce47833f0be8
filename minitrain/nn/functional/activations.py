"""PyTorch's activation functions (`F.relu`, `F.gelu`, `F.softmax`, ...) over minitrain.ops.

The ops declare their entries here (ops/core/variants.py, "functional"): each is the op's
function, with PyTorch's `inplace=False` where PyTorch's takes one (`inplace=True` writes the
result into the input, as PyTorch's does; nn/modules/declared.py builds them). Written here:
softmax, log_softmax and softmin, for PyTorch's implicit dim and its warning."""

from __future__ import annotations

import warnings

import numpy as np

from ... import ops
from ...ops.core.variants import declared
from ...tensor import Tensor
from ..modules.declared import functional_of

__all__ = ["softmax", "log_softmax", "softmin"]


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
