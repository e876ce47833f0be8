"""Loss layers: CrossEntropyLoss, NLLLoss, MSELoss, L1Loss, SmoothL1Loss, HuberLoss, BCELoss,
BCEWithLogitsLoss, SoftMarginLoss, MultiLabelSoftMarginLoss, HingeEmbeddingLoss, PoissonNLLLoss,
GaussianNLLLoss, MultiMarginLoss, and the losses of pairs and triplets KLDivLoss,
CosineEmbeddingLoss, MarginRankingLoss, TripletMarginLoss and TripletMarginWithDistanceLoss.
Each holds its options (and class weights as a buffer) and calls the functional form.
size_average and reduce, deprecated in PyTorch, override reduction as there (legacy_reduction,
nn/torch_args.py)."""

from __future__ import annotations

from ... import ops
from ...errors import ArgumentError
from ...ops.core.op import as_tensor
from ...ops.losses.loss_reduction import check_reduction
from ...tensor import Tensor
from .. import functional as F  # noqa: N812 (PyTorch's idiom)
from ..functional import losses
from ..torch_args import legacy_reduction
from .distance import PairwiseDistance
from .module import Module


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        reduction = legacy_reduction(type(self).__name__, size_average, reduce, reduction)
        check_reduction(type(self).__name__, reduction)
        self.reduction = reduction

    def extra_repr(self) -> str:
        return f"reduction='{self.reduction}'" if self.reduction != "mean" else ""


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", None if weight is None else as_tensor(weight))


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy of softmax(input) over the class axis 1 against class indices or class
    probabilities (fused with log-softmax in one op)."""

    def __init__(
        self,
        weight=None,
        size_average=None,
        ignore_index: int = -100,
        reduce=None,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        """input logits (N, C), (N, C, d1, ...) or (C,); target class indices of input's shape
        without dim 1, or class probabilities of input's shape -> a 0-d loss, or with
        reduction='none' one per position (input's shape without dim 1)."""
        return ops.cross_entropy(
            input,
            target,
            self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class NLLLoss(_WeightedLoss):
    """Negative log likelihood of log-probabilities (class axis 1) against class indices."""

    def __init__(
        self,
        weight=None,
        size_average=None,
        ignore_index: int = -100,
        reduce=None,
        reduction: str = "mean",
    ):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        """input log-probabilities (N, C), (N, C, d1, ...) or (C,); target class indices of input's
        shape without dim 1 -> a 0-d loss, or target's shape with reduction='none'."""
        return ops.nll_loss(
            input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction
        )


class MSELoss(_Loss):
    """Squared error (input - target)^2, reduced by `reduction` ('mean', 'sum' or 'none'); see
    F.mse_loss."""

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        """input and target of one shape (PyTorch broadcasts them) -> a 0-d loss, or input's shape
        with reduction='none'."""
        return ops.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Absolute error |input - target|, reduced by `reduction` ('mean', 'sum' or 'none'); see
    F.l1_loss."""

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        """input and target of one shape (PyTorch broadcasts them) -> a 0-d loss, or input's shape
        with reduction='none'."""
        return ops.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """0.5 * d^2 / beta where |d| < beta, |d| - 0.5 * beta elsewhere (d = input - target; beta=0 is
    L1Loss), reduced by `reduction`; see F.smooth_l1_loss."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        """input and target of one shape (PyTorch broadcasts them) -> a 0-d loss, or input's shape
        with reduction='none'."""
        return ops.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """0.5 * d^2 where |d| < delta, delta * (|d| - 0.5 * delta) elsewhere (d = input - target, delta
    positive), reduced by `reduction`; see F.huber_loss."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        """input and target of one shape (PyTorch broadcasts them) -> a 0-d loss, or input's shape
        with reduction='none'."""
        return ops.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities in [0, 1] against targets in [0, 1], each log
    floored at -100; `weight` rescales each position (broadcast to the input)."""

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        """input probabilities in [0, 1] and target of one shape -> a 0-d loss, or input's shape
        with reduction='none'."""
        return ops.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    """Binary cross entropy of sigmoid(input) against targets in [0, 1], computed stably from
    the logits; `pos_weight` weighs the positive term per class."""

    def __init__(
        self, weight=None, size_average=None, reduce=None, reduction: str = "mean", pos_weight=None
    ):
        super().__init__(weight, size_average, reduce, reduction)
        self.register_buffer("pos_weight", None if pos_weight is None else as_tensor(pos_weight))

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        """input logits and target in [0, 1] of one shape -> a 0-d loss, or input's shape with
        reduction='none'."""
        return ops.binary_cross_entropy_with_logits(
            input, target, self.weight, reduction=self.reduction, pos_weight=self.pos_weight
        )


class SoftMarginLoss(_Loss):
    """log(1 + exp(-target * input)), target +1 or -1 (F.soft_margin_loss)."""

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        """input and target of one shape -> a 0-d loss, or input's shape with
        reduction='none'."""
        return losses.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Multi-label one-versus-all logistic loss, the mean over the classes of each sample
    (F.multilabel_soft_margin_loss); `weight` (C,) weighs each class."""

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        """input logits and 0/1 target (N, C) or (C,) -> a 0-d loss, or (N,) with
        reduction='none'."""
        return losses.multilabel_soft_margin_loss(
            input, target, self.weight, reduction=self.reduction
        )


class HingeEmbeddingLoss(_Loss):
    """input where target is 1, max(0, margin - input) where it is -1
    (F.hinge_embedding_loss)."""

    def __init__(
        self, margin: float = 1.0, size_average=None, reduce=None, reduction: str = "mean"
    ):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        """input distances and +1/-1 target -> a 0-d loss, or input's shape with
        reduction='none'."""
        return losses.hinge_embedding_loss(input, target, self.margin, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """Negative log-likelihood of a Poisson target (F.poisson_nll_loss): input the log rate
    with log_input, else the rate; full adds Stirling's term."""

    def __init__(
        self,
        log_input: bool = True,
        full: bool = False,
        size_average=None,
        eps: float = 1e-8,
        reduce=None,
        reduction: str = "mean",
    ):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input: Tensor, target) -> Tensor:
        """input and target of one shape -> a 0-d loss, or input's shape with
        reduction='none'."""
        return losses.poisson_nll_loss(
            log_input, target, self.log_input, self.full, eps=self.eps, reduction=self.reduction
        )


class GaussianNLLLoss(_Loss):
    """Negative log-likelihood of target under N(input, var) (F.gaussian_nll_loss)."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        super().__init__(reduction=reduction)
        self.full, self.eps = full, eps

    def forward(self, input: Tensor, target, var) -> Tensor:  # noqa: A002
        """input (the mean), target and var (input's shape, or one per sample) -> a 0-d loss,
        or input's shape with reduction='none'."""
        return losses.gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss (F.multi_margin_loss); `weight` (C,) weighs each target class."""

    def __init__(
        self,
        p: int = 1,
        margin: float = 1.0,
        weight=None,
        size_average=None,
        reduce=None,
        reduction: str = "mean",
    ):
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ArgumentError(f"MultiMarginLoss: p must be 1 or 2, got {p!r}")
        self.p, self.margin = p, margin

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        """input scores (N, C) or (C,) and class indices (N,) or 0-d -> a 0-d loss, or (N,)
        with reduction='none'."""
        return losses.multi_margin_loss(
            input, target, self.p, self.margin, self.weight, reduction=self.reduction
        )


class KLDivLoss(_Loss):
    """KL divergence of target from input's distribution (input as log-probabilities; target
    too with log_target), F.kl_div; reduction 'batchmean' divides the sum by the batch size."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target=False):
        batchmean = reduction == "batchmean"  # beside _Loss's three; the legacy args override it
        super().__init__(size_average, reduce, "mean" if batchmean else reduction)
        if batchmean and size_average is None and reduce is None:
            self.reduction = "batchmean"
        self.log_target = log_target

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002
        """input log-probabilities and target (probabilities, or log-probabilities with log_target),
        broadcast against each other -> a 0-d loss, or their broadcast shape with reduction='none'.
        """
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class CosineEmbeddingLoss(_Loss):
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


class MarginRankingLoss(_Loss):
    """max(0, -target * (x1 - x2) + margin) (F.margin_ranking_loss)."""

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target) -> Tensor:
        """input1, input2 and target (1 or -1), with one number of dims, broadcast against each
        other -> a 0-d loss, or their broadcast shape with reduction='none'."""
        return F.margin_ranking_loss(input1, input2, target, self.margin, reduction=self.reduction)


class TripletMarginLoss(_Loss):
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


class TripletMarginWithDistanceLoss(_Loss):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)) with a distance function of
    your own (a PairwiseDistance by default, registered as a child as in PyTorch); see
    F.triplet_margin_with_distance_loss."""

    def __init__(
        self,
        *,
        distance_function=None,
        margin: float = 1.0,
        swap: bool = False,
        reduction: str = "mean",
    ):
        super().__init__(reduction=reduction)
        if not margin > 0:
            raise ArgumentError(
                f"TripletMarginWithDistanceLoss: margin must be greater than 0, got {margin}"
            )
        self.distance_function = (
            PairwiseDistance() if distance_function is None else distance_function
        )
        self.margin, self.swap = margin, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        """anchor, positive and negative with one number of dims -> a 0-d loss, or one per
        triplet with reduction='none'."""
        return F.triplet_margin_with_distance_loss(
            anchor,
            positive,
            negative,
            distance_function=self.distance_function,
            margin=self.margin,
            swap=self.swap,
            reduction=self.reduction,
        )
