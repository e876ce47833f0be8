"""Ops that draw random numbers: dropout."""

from __future__ import annotations

import numpy as np

from ... import backend
from ...errors import ArgumentError, DTypeError
from ...tensor import Tensor
from ..core.op import Op, as_tensor

__all__ = ["dropout", "dropout_grad"]


def dropout_grad(dY, mask):
    """dX = dY * mask, where mask holds 0 for a dropped element and 1 / (1 - p) for a kept one
    (the forward's scaled mask)."""
    return dY * mask


class Dropout(Op):
    """x * mask with mask = (u >= p) / (1 - p), u ~ U(0, 1) per element from minitrain's
    generator for x's device: each element is zeroed with probability p and the survivors are
    scaled so the expectation is unchanged. Saves the scaled mask (in x's dtype), not x."""

    name = "dropout"
    inputs = ("x",)
    attrs = ("p",)
    saved = ("mask",)

    @staticmethod
    def forward(ctx, x):
        # u drawn on x's device, in float64 on the CPU (the stream manual_seed fixes)
        keep = backend.draw(backend.device_of(x), "uniform", x.shape, np.float64) >= ctx.p
        mask = keep.astype(x.dtype) * x.dtype.type(1.0 / (1.0 - ctx.p))
        ctx.save(mask=mask)
        return x * mask

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * mask, the forward's saved mask (0 where dropped, 1 / (1 - p) where kept)."""
        return (dropout_grad(grad, ctx.mask),)

    # grad * mask, with the mask a constant array: the same arithmetic on a Tensor grad


def check_probability(p, caller: str, name: str = "p") -> float:
    """p itself, when it is a number in [0, 1]; otherwise an ArgumentError naming `caller` and
    the argument, `name` in the caller's signature."""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ArgumentError(f"{caller}: {name} must be a probability in [0, 1], got {p!r}")
    return p


def dropout(x, p: float = 0.5, training: bool = True) -> Tensor:
    """Zero each element with probability p and scale the rest by 1 / (1 - p), in training; the
    input itself when not training or p == 0. p == 1 zeroes everything."""
    check_probability(p, "dropout")
    if not training or p == 0:
        return as_tensor(x)
    dtype = getattr(x, "dtype", None)
    if dtype is None or np.dtype(dtype).kind != "f":
        raise DTypeError(f"dropout: x must be a floating tensor, got dtype {dtype}")
    if p == 1:
        return x * 0.0
    return Dropout.apply(x, p=float(p))
