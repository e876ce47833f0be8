"""`F.normalize`, `F.cosine_similarity`, `F.pairwise_distance`, `F.pdist`."""

from __future__ import annotations

from ... import backend, ops
from ...errors import ShapeError
from ...tensor import Tensor
from ..torch_args import (
    check_default,
)

__all__ = ["normalize", "cosine_similarity", "pairwise_distance", "pdist"]


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None):  # noqa: A002
    """input / max(norm(input, p, dim), eps). See ops.normalize."""
    check_default("normalize", "out", out, None, "assign the result instead")
    return ops.normalize(input, p, dim, eps)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between x1 and x2 along dim: sum(x1 * x2) / (max(||x1||, eps) *
    max(||x2||, eps)). x1 and x2 broadcast; the result has their shape without dim."""
    return ops.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """The p-norm of x1 - x2 + eps along the last dim, x1 and x2 broadcast: (N, D) -> (N,), the dim
    kept (size 1) with keepdim."""
    return ops.pairwise_distance(x1, x2, p, eps, keepdim)


# The losses comparing pairs (see minitrain.ops.losses.pair_loss).


def pdist(input: Tensor, p: float = 2) -> Tensor:  # noqa: A002
    """The p-norm distance between every pair of rows of input (N, M), i < j in row-major order:
    (N * (N - 1) / 2,), the upper triangle of the (N, N) distance matrix. The gradient where
    two rows are equal is 0, as PyTorch's."""
    if input.ndim != 2:
        raise ShapeError(f"pdist: expected a 2-D input (N, M), got shape {tuple(input.shape)}")
    xp = backend.array_module(input.array)
    first, second = xp.triu_indices(input.shape[0], 1)
    differences = ops.getitem(input, first) - ops.getitem(input, second)
    return ops.norm(differences, p, dim=1)
