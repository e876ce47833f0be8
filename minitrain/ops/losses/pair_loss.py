"""Losses that compare pairs of inputs: kl_div, margin_ranking_loss, cosine_embedding_loss and
triplet_margin_loss, composed of existing ops with PyTorch's formulas (so their gradients and
second derivatives are the formulas', as PyTorch's are), each reduced as its `reduction` says.
'mean' over nothing raises, as every minitrain loss does (loss_reduction)."""

from __future__ import annotations

import numpy as np

from ...errors import ArgumentError, DTypeError, ShapeError
from ...tensor import Tensor
from ..core.op import array_of, shape_of
from ..pointwise.arithmetic import clip, exp, log, minimum
from ..pointwise.masking import where
from ..reductions.reduction import mean, sum
from .loss_reduction import check_reduction, mean_divisor
from .similarity import pairwise_distance

__all__ = ["cosine_embedding_loss", "kl_div", "margin_ranking_loss", "triplet_margin_loss"]

_KL_REDUCTIONS = ("none", "batchmean", "sum", "mean")
# cosine_embedding_loss's floor under each squared norm (PyTorch's EPSILON)
_COSINE_EPS = 1e-12


def _reduced(caller: str, losses: Tensor, reduction: str) -> Tensor:
    """The per-position losses as they are ('none'), summed, or averaged ('mean')."""
    if reduction == "none":
        return losses
    if reduction == "sum":
        return sum(losses)
    mean_divisor(caller, losses.numel(), "an empty input")
    return mean(losses)


def _check_floating(caller: str, **values) -> None:
    for name, value in values.items():
        dtype = array_of(value).dtype
        if dtype.kind != "f":
            raise DTypeError(f"{caller}: {name} must be floating point, got {dtype}")


def kl_div(input, target, *, reduction: str = "mean", log_target: bool = False) -> Tensor:  # noqa: A002
    """The Kullback-Leibler divergence of target from the distribution whose log-probabilities
    are input, position by position, as PyTorch's F.kl_div:

        target * (log target - input)          (0 where target is 0)
        exp(target) * (target - input)         with log_target

    reduction: 'none', 'sum', 'mean' (over every position) or 'batchmean' (the sum over the
    size of dim 0, the divergence's own definition). input and target broadcast against each
    other and must be floating point. Where target is 0 its own gradient is taken as -input
    (the limit of log target is -inf; PyTorch's is nan)."""
    caller = "kl_div"
    if reduction not in _KL_REDUCTIONS:
        raise ArgumentError(
            f"{caller}: reduction must be one of {_KL_REDUCTIONS}, got {reduction!r}"
        )
    _check_floating(caller, input=input, target=target)
    if log_target:
        losses = exp(target) * (target - input)
    else:
        values = array_of(target)
        with np.errstate(invalid="ignore"):  # a negative target's log is nan, as in PyTorch
            losses = target * log(where(values == 0, 1.0, target)) - target * input
    if reduction != "batchmean":
        return _reduced(caller, losses, reduction)
    total = sum(losses)
    shape = shape_of(input)
    if not shape:
        return total
    return total / mean_divisor(caller, shape[0], "an empty batch ('batchmean')")


def margin_ranking_loss(input1, input2, target, margin: float = 0.0, *, reduction: str = "mean"):
    """max(0, -target * (input1 - input2) + margin) per position, as PyTorch's: target 1 asks
    input1 to rank above input2 by margin, -1 below. The three have one number of dims and
    broadcast against each other; the gradient passes where the loss is 0 (PyTorch's clamp)."""
    caller = "margin_ranking_loss"
    check_reduction(caller, reduction)
    shapes = [shape_of(v) for v in (input1, input2, target)]
    if len({len(shape) for shape in shapes}) > 1:
        raise ShapeError(
            f"{caller}: input1 {shapes[0]}, input2 {shapes[1]} and target {shapes[2]} must "
            f"have the same number of dims"
        )
    _check_floating(caller, input1=input1, input2=input2)
    return _reduced(caller, clip(-target * (input1 - input2) + margin, min=0), reduction)


def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, *, reduction="mean"):
    """1 - cos(input1, input2) where target is 1, max(0, cos - margin) where it is -1 (0
    elsewhere), per row, as PyTorch's: inputs (N, D) with target (N,), or (D,) with a 0-d
    target; cos = sum(input1 * input2) / sqrt((|input1|^2 + 1e-12) (|input2|^2 + 1e-12))."""
    caller = "cosine_embedding_loss"
    check_reduction(caller, reduction)
    labels = array_of(target.array if isinstance(target, Tensor) else target)
    dims = labels.ndim
    shapes = (shape_of(input1), shape_of(input2))
    if dims > 1:
        raise ShapeError(f"{caller}: target must be 0-d or 1-d, got shape {labels.shape}")
    if len(shapes[0]) != dims + 1 or len(shapes[1]) != dims + 1:
        raise ShapeError(
            f"{caller}: a {dims}-d target {labels.shape} takes {dims + 1}-d inputs, got "
            f"input1 {shapes[0]} and input2 {shapes[1]}"
        )
    _check_floating(caller, input1=input1, input2=input2)
    products = sum(input1 * input2, dims)
    squares1 = sum(input1 * input1, dims) + _COSINE_EPS
    squares2 = sum(input2 * input2, dims) + _COSINE_EPS
    cosine = products / (squares1 * squares2) ** 0.5
    losses = where(labels == 1, 1 - cosine, 0.0) + where(
        labels == -1, clip(cosine - margin, min=0), 0.0
    )
    return _reduced(caller, losses, reduction)


def triplet_margin_loss(
    anchor,
    positive,
    negative,
    margin: float = 1.0,
    p: float = 2.0,
    eps: float = 1e-6,
    swap: bool = False,
    *,
    reduction: str = "mean",
) -> Tensor:
    """max(0, d(anchor, positive) - d(anchor, negative) + margin) per row, d the
    pairwise_distance with p and eps, as PyTorch's: with swap, d(anchor, negative) is replaced
    by d(positive, negative) where smaller (the distance swap; a tie shares the gradient). The
    three have one number of dims; margin must be > 0."""
    caller = "triplet_margin_loss"
    check_reduction(caller, reduction)
    shapes = [shape_of(v) for v in (anchor, positive, negative)]
    if len({len(shape) for shape in shapes}) > 1:
        raise ShapeError(
            f"{caller}: anchor {shapes[0]}, positive {shapes[1]} and negative {shapes[2]} must "
            f"have the same number of dims"
        )
    if not margin > 0:
        raise ArgumentError(f"{caller}: margin must be > 0, got {margin}")
    _check_floating(caller, anchor=anchor, positive=positive, negative=negative)
    near = pairwise_distance(anchor, positive, p, eps)
    far = pairwise_distance(anchor, negative, p, eps)
    if swap:
        far = minimum(far, pairwise_distance(positive, negative, p, eps))
    return _reduced(caller, clip(margin + near - far, min=0), reduction)
