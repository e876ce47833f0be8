"""Layers that compare: CosineSimilarity, PairwiseDistance, Softmin, and the losses of pairs
KLDivLoss, CosineEmbeddingLoss, MarginRankingLoss and TripletMarginLoss, each holding
PyTorch's options and calling the functional form. size_average and reduce, deprecated in
PyTorch, are taken as None only."""

from __future__ import annotations

from ...errors import ArgumentError
from ...tensor import Tensor
from .. import functional as F  # noqa: N812 (PyTorch's idiom)
from ..torch_args import check_legacy_reduction
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


class _PairLoss(Module):
    reductions = ("none", "mean", "sum")

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        name = type(self).__name__
        check_legacy_reduction(name, size_average, reduce)
        if reduction not in self.reductions:
            raise ArgumentError(
                f"{name}: reduction must be one of {self.reductions}, got {reduction!r}"
            )
        self.reduction = reduction

    def extra_repr(self) -> str:
        return f"reduction='{self.reduction}'" if self.reduction != "mean" else ""


class KLDivLoss(_PairLoss):
    """KL divergence of target from input's distribution (input as log-probabilities; target
    too with log_target), F.kl_div; reduction 'batchmean' divides the sum by the batch size."""

    reductions = ("none", "batchmean", "sum", "mean")

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        """input log-probabilities and target (probabilities, or log-probabilities with log_target),
        broadcast against each other -> a 0-d loss, or their broadcast shape with reduction='none'.
        """
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class CosineEmbeddingLoss(_PairLoss):
    """1 - cos(x1, x2) for target 1, max(0, cos - margin) for -1 (F.cosine_embedding_loss)."""

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target) -> Tensor:
        """input1 and input2 (N, D) with target (N,) of 1 or -1, or (D,) with a 0-d target -> a 0-d
        loss, or (N,) with reduction='none'."""
        return F.cosine_embedding_loss(
            input1, input2, target, self.margin, reduction=self.reduction
        )


class MarginRankingLoss(_PairLoss):
    """max(0, -target * (x1 - x2) + margin) (F.margin_ranking_loss)."""

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target) -> Tensor:
        """input1, input2 and target (1 or -1), with one number of dims, broadcast against each
        other -> a 0-d loss, or their broadcast shape with reduction='none'."""
        return F.margin_ranking_loss(input1, input2, target, self.margin, reduction=self.reduction)


class TripletMarginLoss(_PairLoss):
    """max(0, d(anchor, positive) - d(anchor, negative) + margin), d the p-norm distance
    (F.triplet_margin_loss)."""

    def __init__(
        self,
        margin: float = 1.0,
        p: float = 2.0,
        eps: float = 1e-6,
        swap: bool = False,
        size_average=None,
        reduce=None,
        reduction: str = "mean",
    ):
        super().__init__(size_average, reduce, reduction)
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        """anchor, positive and negative (N, D) or (D,), distances taken along the last dim -> a 0-d
        loss, or (N,) with reduction='none'."""
        return F.triplet_margin_loss(
            anchor,
            positive,
            negative,
            self.margin,
            self.p,
            self.eps,
            self.swap,
            reduction=self.reduction,
        )
