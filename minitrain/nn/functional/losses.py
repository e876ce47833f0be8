"""PyTorch's loss functions (`F.cross_entropy`, `F.mse_loss`, `F.kl_div`, ...)."""

from __future__ import annotations

import math
import warnings

from ... import backend, ops
from ...creation import full_like
from ...errors import ArgumentError, ShapeError
from ...ops.core.op import as_tensor
from ...ops.losses.loss_reduction import check_reduction, loss_array
from ...tensor import Tensor
from ..torch_args import (
    check_default,
    legacy_reduction,
)
from .distance import pairwise_distance

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
    "soft_margin_loss",
    "multilabel_soft_margin_loss",
    "hinge_embedding_loss",
    "poisson_nll_loss",
    "gaussian_nll_loss",
    "multi_margin_loss",
    "triplet_margin_with_distance_loss",
]

# size_average and reduce (deprecated in PyTorch) override reduction as in PyTorch, with its
# warning: see legacy_reduction. The pointwise losses' `weight` (PyTorch 2.6+) is refused: weigh the
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
    size_average and reduce, deprecated in PyTorch, override reduction as there."""
    reduction = legacy_reduction("cross_entropy", size_average, reduce, reduction)
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
    override reduction as there."""
    reduction = legacy_reduction("nll_loss", size_average, reduce, reduction)
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
    reduce, deprecated in PyTorch, override reduction as there."""
    reduction = legacy_reduction("mse_loss", size_average, reduce, reduction)
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
    reduce, deprecated in PyTorch, override reduction as there."""
    reduction = legacy_reduction("l1_loss", size_average, reduce, reduction)
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
    reduce, deprecated in PyTorch, override reduction as there."""
    reduction = legacy_reduction("smooth_l1_loss", size_average, reduce, reduction)
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
    reduce, deprecated in PyTorch, override reduction as there."""
    reduction = legacy_reduction("binary_cross_entropy", size_average, reduce, reduction)
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
    deprecated in PyTorch, override reduction as there."""
    reduction = legacy_reduction(
        "binary_cross_entropy_with_logits", size_average, reduce, reduction
    )
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
    reduction = legacy_reduction("kl_div", size_average, reduce, reduction)
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
    reduce, deprecated in PyTorch, override reduction as there."""
    reduction = legacy_reduction("cosine_embedding_loss", size_average, reduce, reduction)
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
    deprecated in PyTorch, override reduction as there."""
    reduction = legacy_reduction("margin_ranking_loss", size_average, reduce, reduction)
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
    margin must be > 0. size_average and reduce, deprecated in PyTorch, override reduction as
    there."""
    reduction = legacy_reduction("triplet_margin_loss", size_average, reduce, reduction)
    return ops.triplet_margin_loss(
        anchor, positive, negative, margin, p, eps, swap, reduction=reduction
    )


def _reduced(caller: str, losses: Tensor, reduction: str) -> Tensor:
    """The composed losses' reduction: the losses as they are, their sum or their mean."""
    check_reduction(caller, reduction)
    if reduction == "none":
        return losses
    return losses.sum() if reduction == "sum" else losses.mean()


def _same_shape(caller: str, input, target) -> None:  # noqa: A002
    if tuple(input.shape) != tuple(target.shape):
        raise ShapeError(
            f"{caller}: target must have input's shape, got input {tuple(input.shape)} and "
            f"target {tuple(target.shape)}"
        )


def soft_margin_loss(
    input: Tensor,  # noqa: A002
    target,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """log(1 + exp(-target * input)) per element, target +1 or -1 of input's shape (a
    two-class logistic loss), computed as softplus. size_average and reduce, deprecated in PyTorch,
    override reduction as there."""
    reduction = legacy_reduction("soft_margin_loss", size_average, reduce, reduction)
    target = as_tensor(target)
    _same_shape("soft_margin_loss", input, target)
    return _reduced("soft_margin_loss", ops.softplus(-(target * input)), reduction)


def multilabel_soft_margin_loss(
    input: Tensor,  # noqa: A002
    target,
    weight=None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Multi-label one-versus-all loss: per sample, the mean over the C classes (the last dim)
    of -(target log sigmoid(input) + (1 - target) log sigmoid(-input)), each class weighed by
    weight (C,) if given; input and target (N, C) or (C,), target 0 or 1. reduction='none'
    gives one loss per sample. size_average and reduce, deprecated, override reduction as in
    PyTorch."""
    reduction = legacy_reduction("multilabel_soft_margin_loss", size_average, reduce, reduction)
    target = as_tensor(target)
    _same_shape("multilabel_soft_margin_loss", input, target)
    losses = -(target * ops.logsigmoid(input) + (1 - target) * ops.logsigmoid(-input))
    if weight is not None:
        losses = losses * as_tensor(weight)
    classes = input.shape[-1] if input.ndim else 1
    per_sample = losses.sum(-1) / classes if input.ndim else losses
    return _reduced("multilabel_soft_margin_loss", per_sample, reduction)


def hinge_embedding_loss(
    input: Tensor,  # noqa: A002
    target,
    margin: float = 1.0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """input where target is 1, max(0, margin - input) where it is -1 (input a distance, target
    whether the pair is alike), as PyTorch's: elsewhere the sum of both terms, as its formula
    reads. target broadcasts against input. size_average and reduce, deprecated, override reduction
    as in PyTorch."""
    reduction = legacy_reduction("hinge_embedding_loss", size_average, reduce, reduction)
    target = as_tensor(target)
    zeros = input * 0.0
    margin_term = ops.where(target != 1, ops.relu(margin - input), zeros)
    self_term = ops.where(target != -1, input, zeros)
    return _reduced("hinge_embedding_loss", margin_term + self_term, reduction)


def poisson_nll_loss(
    input: Tensor,  # noqa: A002
    target,
    log_input: bool = True,
    full: bool = False,
    size_average=None,
    eps: float = 1e-8,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of target under Poisson(rate): exp(input) - target * input with
    log_input (input the log rate), input - target * log(input + eps) without. full adds
    Stirling's approximation of log(target!), target log target - target + log(2 pi target) / 2,
    where target > 1. size_average and reduce, deprecated, override reduction as in PyTorch."""
    reduction = legacy_reduction("poisson_nll_loss", size_average, reduce, reduction)
    target = as_tensor(target)
    if log_input:
        losses = ops.exp(input) - target * input
    else:
        losses = input - target * ops.log(input + eps)
    if full:
        counts = target.detach()
        # log(target!) only where target > 1; elsewhere 1 stands in, so no log(0) is taken
        safe = ops.where(counts > 1, counts, counts * 0.0 + 1.0)
        stirling = safe * ops.log(safe) - safe + 0.5 * ops.log(2 * math.pi * safe)
        losses = losses + ops.where(counts > 1, stirling, stirling * 0.0)
    return _reduced("poisson_nll_loss", losses, reduction)


def gaussian_nll_loss(
    input: Tensor,  # noqa: A002
    target,
    var,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of target under N(input, var): (log(var) + (input - target)^2 /
    var) / 2, plus log(2 pi) / 2 with full. var has input's shape, or input's without its last
    dim (or with it 1: one variance per sample), or is a number; var below eps counts as eps
    (its gradient still flows as if unclamped, as PyTorch's). Negative var is refused."""
    target = as_tensor(target)
    if not isinstance(var, Tensor):
        var = full_like(input, float(var))
    input_shape, var_shape = tuple(input.shape), tuple(var.shape)
    if var_shape != input_shape:
        if input_shape[:-1] == var_shape:  # one variance per sample
            var = var.unsqueeze(-1)
        elif not (input_shape[:-1] == var_shape[:-1] and var_shape[-1:] == (1,)):
            raise ShapeError(
                f"gaussian_nll_loss: var is of incorrect size: input {input_shape}, var {var_shape}"
            )
    check_reduction("gaussian_nll_loss", reduction)
    if bool((var.array < 0).any()):
        raise ArgumentError("gaussian_nll_loss: var has negative entry/entries")
    floor = var.detach()
    # the clamp as a constant shift: the value clamped, the gradient that of var itself
    clamped = var + (ops.clip(floor, eps, None) - floor)
    losses = 0.5 * (ops.log(clamped) + (input - target) ** 2 / clamped)
    if full:
        losses = losses + 0.5 * math.log(2 * math.pi)
    return _reduced("gaussian_nll_loss", losses, reduction)


def multi_margin_loss(
    input: Tensor,  # noqa: A002
    target,
    p: int = 1,
    margin: float = 1.0,
    weight=None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Multi-class hinge loss: per sample, the sum over the classes i other than the target y of
    max(0, margin - x[y] + x[i])^p (times weight[y] if given), over C. input (N, C) or (C,),
    target class indices (N,) or 0-d; p 1 or 2. size_average and reduce, deprecated, override
    reduction as in PyTorch."""
    caller = "multi_margin_loss"
    reduction = legacy_reduction(caller, size_average, reduce, reduction)
    if p not in (1, 2):
        raise ArgumentError(f"{caller}: p must be 1 or 2, got {p!r}")
    classes_array = loss_array(target)
    if classes_array.dtype.kind not in "iu":
        raise ShapeError(f"{caller}: target must hold class indices, got {classes_array.dtype}")
    batched = input.ndim == 2
    x = input if batched else input.unsqueeze(0)
    classes = classes_array.reshape(-1)
    if input.ndim not in (1, 2) or classes.shape[0] != x.shape[0]:
        raise ShapeError(
            f"{caller}: expected input (N, C) with target (N,), or (C,) with a 0-d target, got "
            f"input {tuple(input.shape)} and target {tuple(classes_array.shape)}"
        )
    count = x.shape[1]
    if classes.size and (classes.min() < 0 or classes.max() >= count):
        raise IndexError(f"{caller}: target values must lie in [0, {count}), got {classes}")
    picked = ops.gather(x, 1, Tensor.wrap(classes[:, None]))
    terms = ops.relu(margin - picked + x) ** p
    # the target's own class counts for nothing
    xp = backend.array_module(classes)
    others = (xp.arange(count)[None, :] != classes[:, None]).astype(terms.dtype)
    terms = terms * Tensor.wrap(others)
    if weight is not None:
        terms = terms * ops.getitem(as_tensor(weight), classes).unsqueeze(1)
    per_sample = terms.sum(1) / count
    if not batched:
        per_sample = per_sample.squeeze(0)
    return _reduced(caller, per_sample, reduction)


def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    *,
    distance_function=None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """max(0, margin + d(anchor, positive) - d(anchor, negative)) with any distance function d
    of two tensors (default F.pairwise_distance); swap=True uses d(positive, negative) instead
    where it is smaller. margin must be > 0; the three inputs have one number of dims."""
    caller = "triplet_margin_with_distance_loss"
    if not margin > 0:
        raise ArgumentError(f"{caller}: margin must be greater than 0, got {margin}")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise ShapeError(
            f"{caller}: anchor, positive and negative must have one number of dims, got "
            f"{tuple(anchor.shape)}, {tuple(positive.shape)} and {tuple(negative.shape)}"
        )
    check_reduction(caller, reduction)
    distance = pairwise_distance if distance_function is None else distance_function
    positive_distance = distance(anchor, positive)
    negative_distance = distance(anchor, negative)
    if swap:
        negative_distance = ops.minimum(negative_distance, distance(positive, negative))
    losses = ops.relu(margin + positive_distance - negative_distance)
    return _reduced(caller, losses, reduction)
