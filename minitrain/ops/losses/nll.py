"""nll_loss: the negative log-likelihood of class indices, a gather forward and a scatter
backward (NLLLossGrad). The class axis is axis 1, as in PyTorch."""

from __future__ import annotations

import numpy as np

from ... import backend
from ...errors import ShapeError
from ...tensor import Tensor
from ..core.checks import check_floating
from ..core.op import Op, array_of, device_module
from ..shapes.indexing import along, placed_at
from ..shapes.shape import reshape
from .class_targets import (
    check_class_range,
    check_class_target,
    class_total,
    class_weights,
    one_sample,
)
from .loss_reduction import (
    check_constant,
    check_reduction,
    loss_array,
    position_scale,
    reduce_losses,
)

__all__ = ["nll_loss"]


class NLLLoss(Op):
    """Negative log-likelihood of class indices: -w[target] * log_probs[target] per position, 0
    where target == ignore_index. Its gradient is -s * w[target] at the target class and 0 at the
    others (s: the upstream gradient, over D for 'mean')."""

    name = "nll_loss"
    inputs = ("log_probs", "target", "weight")
    attrs = ("reduction", "ignore_index")
    saved = ("target", "weight")
    grad_kernel = "NLLLossGrad"

    @staticmethod
    def forward(ctx, log_probs, target, weight):
        xp, caller = ctx.xp, "nll_loss"
        check_floating(caller, log_probs=log_probs)
        if log_probs.ndim < 2:
            raise ShapeError(f"{caller}: log_probs {log_probs.shape} need a class axis 1")
        check_class_target(caller, log_probs, target, weight)
        check_class_range(caller, target, log_probs.shape[1], ctx.ignore_index)
        valid, safe, target_weights = class_weights(
            xp, target, weight, ctx.ignore_index, log_probs.dtype
        )
        picked = xp.take_along_axis(log_probs, xp.expand_dims(safe, 1), axis=1).squeeze(1)
        losses = -target_weights * xp.where(valid, picked, 0)
        ctx.save(target=target, weight=weight)
        if ctx.reduction == "mean":
            return reduce_losses(losses, "mean", class_total(caller, target_weights))
        return reduce_losses(losses, ctx.reduction)

    @staticmethod
    def backward(ctx, grad):
        """dlog_probs = -s * w[target] at the target class, 0 at the others and where ignored.

        s = grad, or grad / D for 'mean' (D: the summed w[target] of the non-ignored targets).
        Linear in grad: the second derivative in log_probs is 0 (target and weight constants)."""
        xp = device_module(ctx)  # target and weight are constants
        shape, dtype = ctx.shapes[0], ctx.dtypes[0]
        weight = array_of(ctx.weight)
        _, safe, target_weights = class_weights(
            xp, array_of(ctx.target), weight, ctx.ignore_index, dtype
        )
        divisor = class_total("nll_loss", target_weights) if ctx.reduction == "mean" else None
        scale = position_scale(grad, ctx.reduction, divisor)
        picked = ctx.xp.expand_dims(-scale * target_weights, 1)
        at_targets = along(xp, xp.expand_dims(safe, 1), 1)  # one class per position
        return placed_at(xp, picked, shape, at_targets, dtype), None, None


def nll_loss(log_probs, target, weight=None, *, ignore_index: int = -100, reduction: str = "mean"):
    """Negative log-likelihood loss, as PyTorch's F.nll_loss: log_probs (N, C), (N, C, d1, ...)
    or (C,); target class indices shaped like log_probs without axis 1 (0-d or (1,) for (C,));
    weight (C,) a constant. 'mean' divides by the summed weights of the non-ignored targets
    (raises where that is 0). Its own op (NLLLossGrad): a gather forward, a scatter backward."""
    caller = "nll_loss"
    check_reduction(caller, reduction)
    check_constant(caller, weight=weight)
    if not isinstance(target, Tensor) and not backend.is_array(target):
        target = np.asarray(target)
    single = loss_array(log_probs).ndim == 1
    if single:
        log_probs, target = one_sample(caller, log_probs, target, probabilities=False)
    out = NLLLoss.apply(
        log_probs, target, weight, reduction=reduction, ignore_index=int(ignore_index)
    )
    return reshape(out, ()) if single and reduction == "none" else out
