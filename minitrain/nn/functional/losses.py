"""PyTorch's loss functions (`F.cross_entropy`, `F.mse_loss`, `F.kl_div`, ...)."""

from __future__ import annotations

import warnings

from ... import ops
from ...tensor import Tensor
from ..torch_args import (
    check_default,
    check_legacy_reduction,
)

__all__ = [
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
    "cosine_embedding_loss",
    "margin_ranking_loss",
    "triplet_margin_loss",
]

# size_average and reduce (deprecated in PyTorch) are taken only as None: see
# check_legacy_reduction. The pointwise losses' `weight` (PyTorch 2.6+) is refused: weigh the
# losses of reduction='none' instead.
_NO_WEIGHT = "weigh the losses of reduction='none' instead"


def cross_entropy(
    input: Tensor,  # noqa: A002
    target,
    weight=None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross entropy of softmax(input) over the class dim 1 against target, fused with log-softmax.

    input logits (N, C), (N, C, d1, ...) or (C,); target class indices (any integer dtype) of
    input's shape without dim 1, or class probabilities of input's shape. weight (C,) rescales each
    class; positions whose target is ignore_index count for nothing; label_smoothing eps mixes eps /
    C of every class into the target. 'mean' with no position counted raises (PyTorch: nan).
    size_average and reduce, deprecated in PyTorch, must be None (use reduction)."""
    check_legacy_reduction("cross_entropy", size_average, reduce)
    return ops.cross_entropy(
        input,
        target,
        weight,
        ignore_index=ignore_index,
        reduction=reduction,
        label_smoothing=label_smoothing,
    )


def nll_loss(
    input: Tensor,  # noqa: A002
    target,
    weight=None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log likelihood -weight[t] * input[n, t], t = target[n]: input log-probabilities (N,
    C), (N, C, d1, ...) or (C,), target class indices of input's shape without dim 1. weight,
    ignore_index and reduction as in cross_entropy. size_average and reduce, deprecated in PyTorch,
    must be None (use reduction)."""
    check_legacy_reduction("nll_loss", size_average, reduce)
    return ops.nll_loss(input, target, weight, ignore_index=ignore_index, reduction=reduction)


def mse_loss(
    input: Tensor,  # noqa: A002
    target,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    weight=None,
) -> Tensor:
    """(input - target)^2, reduced by reduction ('mean', 'sum' or 'none'). input and target must
    have one shape (PyTorch broadcasts them, with a warning); weight must be None. size_average and
    reduce, deprecated in PyTorch, must be None (use reduction)."""
    check_legacy_reduction("mse_loss", size_average, reduce)
    check_default("mse_loss", "weight", weight, None, _NO_WEIGHT)
    return ops.mse_loss(input, target, reduction=reduction)


def l1_loss(
    input: Tensor,  # noqa: A002
    target,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    weight=None,
) -> Tensor:
    """|input - target|, reduced by reduction ('mean', 'sum' or 'none'). input and target must have
    one shape (PyTorch broadcasts them, with a warning); weight must be None. size_average and
    reduce, deprecated in PyTorch, must be None (use reduction)."""
    check_legacy_reduction("l1_loss", size_average, reduce)
    check_default("l1_loss", "weight", weight, None, _NO_WEIGHT)
    return ops.l1_loss(input, target, reduction=reduction)


def smooth_l1_loss(
    input: Tensor,  # noqa: A002
    target,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """0.5 * d^2 / beta where |d| < beta, |d| - 0.5 * beta elsewhere (d = input - target, beta >= 0;
    beta=0 is l1_loss), reduced by reduction. input and target must have one shape. size_average and
    reduce, deprecated in PyTorch, must be None (use reduction)."""
    check_legacy_reduction("smooth_l1_loss", size_average, reduce)
    return ops.smooth_l1_loss(input, target, reduction=reduction, beta=beta)


def huber_loss(
    input: Tensor,  # noqa: A002
    target,
    reduction: str = "mean",
    delta: float = 1.0,
    weight=None,
) -> Tensor:
    """0.5 * d^2 where |d| < delta, delta * (|d| - 0.5 * delta) elsewhere (d = input - target, delta
    positive), reduced by reduction. input and target must have one shape; weight must be None."""
    check_default("huber_loss", "weight", weight, None, _NO_WEIGHT)
    return ops.huber_loss(input, target, reduction=reduction, delta=delta)


def binary_cross_entropy(
    input: Tensor,  # noqa: A002
    target,
    weight=None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """-(target * log(input) + (1 - target) * log(1 - input)), each log floored at -100: input
    probabilities and target in [0, 1], of one shape; weight rescales each position (broadcast to
    input's shape). For logits, binary_cross_entropy_with_logits is stabler. size_average and
    reduce, deprecated in PyTorch, must be None (use reduction)."""
    check_legacy_reduction("binary_cross_entropy", size_average, reduce)
    return ops.binary_cross_entropy(input, target, weight, reduction=reduction)


def binary_cross_entropy_with_logits(
    input: Tensor,  # noqa: A002
    target,
    weight=None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    pos_weight=None,
) -> Tensor:
    """binary_cross_entropy of sigmoid(input), computed stably from the logits: input and target (in
    [0, 1]) of one shape. weight rescales each position, pos_weight the positive term (usually one
    per class along the last dim); both broadcast to input's shape. size_average and reduce,
    deprecated in PyTorch, must be None (use reduction)."""
    check_legacy_reduction("binary_cross_entropy_with_logits", size_average, reduce)
    return ops.binary_cross_entropy_with_logits(
        input, target, weight, reduction=reduction, pos_weight=pos_weight
    )


# Resampling: interpolate and its deprecated forms, unfold / fold, pixel_shuffle, max_unpool.


def kl_div(
    input: Tensor,  # noqa: A002
    target,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """KL divergence of target from input's distribution (input log-probabilities). 'mean'
    divides by every position, with PyTorch's warning; 'batchmean' by the batch size."""
    check_legacy_reduction("kl_div", size_average, reduce)
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.",
            stacklevel=2,
        )
    return ops.kl_div(input, target, reduction=reduction, log_target=log_target)


def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target,
    margin: float = 0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """1 - cos(input1, input2) where target is 1, max(0, cos(input1, input2) - margin) where it is
    -1: input1 and input2 (N, D) with target (N,), or (D,) with a 0-d target. size_average and
    reduce, deprecated in PyTorch, must be None (use reduction)."""
    check_legacy_reduction("cosine_embedding_loss", size_average, reduce)
    return ops.cosine_embedding_loss(input1, input2, target, margin, reduction=reduction)


def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target,
    margin: float = 0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """max(0, -target * (input1 - input2) + margin): target 1 asks input1 to rank above input2 by
    margin, -1 below. The three have one number of dims and broadcast. size_average and reduce,
    deprecated in PyTorch, must be None (use reduction)."""
    check_legacy_reduction("margin_ranking_loss", size_average, reduce)
    return ops.margin_ranking_loss(input1, input2, target, margin, reduction=reduction)


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """max(0, d(anchor, positive) - d(anchor, negative) + margin), d the pairwise_distance with p
    and eps (along the last dim); swap=True uses d(positive, negative) instead where it is smaller.
    margin must be > 0. size_average and reduce, deprecated in PyTorch, must be None (use
    reduction)."""
    check_legacy_reduction("triplet_margin_loss", size_average, reduce)
    return ops.triplet_margin_loss(
        anchor, positive, negative, margin, p, eps, swap, reduction=reduction
    )
