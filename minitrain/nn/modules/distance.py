"""Distance layers, as torch.nn.modules.distance: CosineSimilarity and PairwiseDistance, each
holding PyTorch's options and calling the functional form."""

from __future__ import annotations

from ...tensor import Tensor
from .. import functional as F  # noqa: N812 (PyTorch's idiom)
from .module import Module


class CosineSimilarity(Module):
    """The cosine of the angle between x1 and x2 along `dim` (F.cosine_similarity)."""

    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """x1 and x2, broadcast against each other -> their broadcast shape without dim."""
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """The p-norm of x1 - x2 + eps along the last dim (F.pairwise_distance)."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """x1 and x2 (N, D) or (D,), broadcast against each other -> (N,) or 0-d, the distance along
        the last dim (kept, of size 1, with keepdim)."""
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
