"""Loss layers: CrossEntropyLoss, NLLLoss, MSELoss, L1Loss, SmoothL1Loss, HuberLoss, BCELoss,
BCEWithLogitsLoss. Each holds its options (and class weights as a buffer) and calls the
functional form. size_average and reduce, deprecated in PyTorch, are taken as None only."""

from __future__ import annotations

from ... import ops
from ...ops.core.op import as_tensor
from ...ops.losses.loss_reduction import check_reduction
from ...tensor import Tensor
from ..torch_args import check_legacy_reduction
from .module import Module


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        check_legacy_reduction(type(self).__name__, size_average, reduce)
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
