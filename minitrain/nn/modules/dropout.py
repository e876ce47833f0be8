"""Dropout."""

from __future__ import annotations

from ... import ops
from ...ops.random.dropout import check_probability
from ...tensor import Tensor
from .module import Module


class Dropout(Module):
    """In training mode, zero each element with probability p and scale the rest by 1/(1-p);
    the identity in eval mode."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        self.p = check_probability(p, "Dropout")

    def forward(self, x: Tensor) -> Tensor:
        """Input (*) -> the same shape: in training mode each element zeroed with probability p and
        the rest scaled by 1 / (1 - p); in eval mode x itself."""
        return ops.dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
