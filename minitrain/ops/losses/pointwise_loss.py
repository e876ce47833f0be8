"""The losses taken position by position, input against a target of its shape: mse_loss,
l1_loss, smooth_l1_loss, huber_loss, and the binary cross entropies of logits and of
probabilities."""

from __future__ import annotations

import math

import numpy as np

from ... import backend
from ...errors import ArgumentError, ShapeError
from ...tensor import Tensor
from ..activations.special import stable_softplus
from ..core.checks import check_floating
from ..core.op import Op
from .loss_reduction import (
    check_constant,
    check_reduction,
    loss_array,
    mean_divisor,
    position_scale,
    reduce_losses,
)

__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "huber_loss",
    "l1_loss",
    "mse_loss",
    "smooth_l1_loss",
]


def _input_and_target(caller: str, input, target) -> tuple:  # noqa: A002 (PyTorch's name)
    """The arrays of input and target, checked: input floating point, target of its shape (where
    PyTorch broadcasts them with a warning, which is almost always a bug)."""
    x, t = loss_array(input), loss_array(target)
    check_floating(caller, input=x)
    if x.shape != t.shape:
        raise ShapeError(
            f"{caller}: input {x.shape} and target {t.shape} must have the same shape "
            f"(PyTorch broadcasts them with a warning, which is almost always a bug)"
        )
    return x, t


def _pointwise(op, input, target, reduction: str, **attrs):  # noqa: A002
    """Check a loss of input - target's arguments, then run its op."""
    check_reduction(op.name, reduction)
    x, _ = _input_and_target(op.name, input, target)
    if reduction == "mean":
        mean_divisor(op.name, x.size, "an empty input")
    return op.apply(input, target, reduction=reduction, **attrs)


class _PointwiseLoss(Op, register=False):
    """A loss of d = input - target, position by position, then reduced. A subclass gives the
    loss and its slope in d, written with ctx.xp so that they serve arrays and (under
    create_graph, d a Tensor) the second derivative; the input's gradient is s * slope(d), the
    target's its negative. input and target are saved rather than d (as PyTorch saves them):
    the second derivative needs d as a function of both."""

    inputs = ("input", "target")
    saved = ("input", "target")

    @classmethod
    def forward(cls, ctx, input, target):  # noqa: A002 (PyTorch's name)
        ctx.save(input=input, target=target)
        return reduce_losses(cls.loss(ctx, input - target), ctx.reduction)

    @classmethod
    def backward(cls, ctx, grad):
        """dinput = s * slope(input - target), dtarget = -dinput; s = grad (/ size for 'mean').

        A subclass overrides it only to write its own slope into this docstring (the graph
        viewer's tooltip)."""
        diff = ctx.input - ctx.target
        dx = position_scale(grad, ctx.reduction, math.prod(diff.shape)) * cls.slope(ctx, diff)
        return (dx if ctx.needs_grad[0] else None), (-dx if ctx.needs_grad[1] else None)

    @staticmethod
    def loss(ctx, d):
        raise NotImplementedError

    @staticmethod
    def slope(ctx, d):
        raise NotImplementedError


class MSELoss(_PointwiseLoss):
    """d^2, slope 2d."""

    name = "mse_loss"
    attrs = ("reduction",)

    @staticmethod
    def loss(ctx, d):
        return d * d

    @staticmethod
    def slope(ctx, d):
        return 2 * d

    @classmethod
    def backward(cls, ctx, grad):
        """dinput = 2 * s * (input - target), dtarget = -dinput; s = grad (/ size for 'mean')."""
        return super().backward(ctx, grad)


def mse_loss(input, target, *, reduction: str = "mean"):  # noqa: A002
    """Mean squared error (input - target)^2, as PyTorch's F.mse_loss; input and target of one
    shape. Its own op (MSELossGrad): one pass each way, where sub, mul and mean would take three."""
    return _pointwise(MSELoss, input, target, reduction)


class L1Loss(_PointwiseLoss):
    """|d|, slope sign(d) (0 at d = 0, as PyTorch)."""

    name = "l1_loss"
    attrs = ("reduction",)

    @staticmethod
    def loss(ctx, d):
        return ctx.xp.abs(d)

    @staticmethod
    def slope(ctx, d):
        """sign(d), a constant (graph math's sign): the second derivative of |d| is 0 (as in
        PyTorch)."""
        return ctx.xp.sign(d)

    @classmethod
    def backward(cls, ctx, grad):
        """dinput = s * sign(input - target), dtarget = -dinput; s = grad (/ size for 'mean')."""
        return super().backward(ctx, grad)


def l1_loss(input, target, *, reduction: str = "mean"):  # noqa: A002
    """Absolute error |input - target|, as PyTorch's F.l1_loss (gradient 0 where they are equal).
    Its own op (L1LossGrad)."""
    return _pointwise(L1Loss, input, target, reduction)


class SmoothL1Loss(_PointwiseLoss):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta; slope d / beta clipped to [-1, 1].
    beta = 0 is the l1 loss (slope sign(d))."""

    name = "smooth_l1_loss"
    attrs = ("reduction", "beta")

    @staticmethod
    def loss(ctx, d):
        xp, beta = ctx.xp, ctx.beta
        magnitude = xp.abs(d)
        if beta == 0:
            return magnitude
        return xp.where(magnitude < beta, (0.5 / beta) * d * d, magnitude - 0.5 * beta)

    @staticmethod
    def slope(ctx, d):
        """clip(d / beta, -1, 1), sign(d) (a constant) for beta = 0: second derivative 1 / beta
        where |d| <= beta (clip passes its bounds: at |d| = beta exactly PyTorch takes 0), 0
        outside."""
        xp, beta = ctx.xp, ctx.beta
        return xp.sign(d) if beta == 0 else xp.clip(d / beta, -1, 1)

    @classmethod
    def backward(cls, ctx, grad):
        """dinput = s * clip(d / beta, -1, 1), dtarget = -dinput; d = input - target, beta > 0.

        With beta = 0 (the l1 loss) dinput = s * sign(d); s = grad (/ size for 'mean')."""
        return super().backward(ctx, grad)


def smooth_l1_loss(input, target, *, reduction: str = "mean", beta: float = 1.0):  # noqa: A002
    """Squared error below beta, absolute error above, as PyTorch's F.smooth_l1_loss: 0.5 d^2 /
    beta where |d| < beta, else |d| - 0.5 beta (d = input - target; beta >= 0, and beta = 0 is
    l1_loss). Its own op (SmoothL1LossGrad)."""
    if not beta >= 0:  # nan too
        raise ArgumentError(f"smooth_l1_loss: beta must be >= 0, got {beta}")
    return _pointwise(SmoothL1Loss, input, target, reduction, beta=float(beta))


class HuberLoss(_PointwiseLoss):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta): delta times smooth_l1 with
    beta = delta; slope d clipped to [-delta, delta]."""

    name = "huber_loss"
    attrs = ("reduction", "delta")

    @staticmethod
    def loss(ctx, d):
        xp, delta = ctx.xp, ctx.delta
        magnitude = xp.abs(d)
        return xp.where(magnitude < delta, 0.5 * d * d, delta * (magnitude - 0.5 * delta))

    @staticmethod
    def slope(ctx, d):
        """clip(d, -delta, delta): second derivative 1 where |d| <= delta (at |d| = delta
        exactly PyTorch takes 0), 0 outside."""
        return ctx.xp.clip(d, -ctx.delta, ctx.delta)

    @classmethod
    def backward(cls, ctx, grad):
        """dinput = s * clip(d, -delta, delta), dtarget = -dinput; d = input - target.

        s = grad, or grad / size for 'mean'."""
        return super().backward(ctx, grad)


def huber_loss(input, target, *, reduction: str = "mean", delta: float = 1.0):  # noqa: A002
    """Huber loss, as PyTorch's F.huber_loss: 0.5 d^2 where |d| < delta, else
    delta (|d| - 0.5 delta) (d = input - target; delta > 0). Its own op (HuberLossGrad)."""
    if not delta > 0:  # nan too
        raise ArgumentError(f"huber_loss: delta must be > 0, got {delta}")
    return _pointwise(HuberLoss, input, target, reduction, delta=float(delta))


def _elementwise_weights(caller: str, x, **weights) -> tuple:
    """The binary cross entropies' constant weights (None stays None), each checked to broadcast
    to input x's shape and taken in x's dtype, as PyTorch takes them."""
    taken = []
    for name, value in weights.items():
        if value is None:
            taken.append(None)
            continue
        array = loss_array(value)
        try:
            fits = np.broadcast_shapes(array.shape, x.shape) == x.shape
        except ValueError:
            fits = False
        if not fits:
            raise ShapeError(
                f"{caller}: {name} {array.shape} does not broadcast to input {x.shape}"
            )
        taken.append(Tensor(array.astype(x.dtype, copy=False)))
    return tuple(taken)


class BinaryCrossEntropyWithLogits(Op):
    """-w [p t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))] per position, p the pos_weight,
    computed as w [(1 - t) x + (1 + (p - 1) t) softplus(-x)], which no x overflows.

    Gradients (l = 1 + (p - 1) t): d/dx = w [(1 - t) - l sigmoid(-x)] (w (sigmoid(x) - t) when
    p = 1), and d/dt = w [(p - 1) softplus(-x) - x]. weight and pos_weight are constants.
    """

    name = "binary_cross_entropy_with_logits"
    inputs = ("input", "target", "weight", "pos_weight")
    attrs = ("reduction",)
    saved = ("input", "target", "weight", "pos_weight")

    @staticmethod
    def forward(ctx, input, target, weight, pos_weight):  # noqa: A002 (PyTorch's name)
        xp = ctx.xp
        softplus = stable_softplus(xp, -input)
        if pos_weight is not None:
            softplus = (1 + (pos_weight - 1) * target) * softplus
        losses = (1 - target) * input + softplus
        if weight is not None:
            losses = losses * weight
        ctx.save(input=input, target=target, weight=weight, pos_weight=pos_weight)
        return reduce_losses(losses, ctx.reduction)

    @staticmethod
    def backward(ctx, grad):
        """dinput = s * w * (1 - t - l * sigmoid(-x)), dtarget = s * w * ((p-1) * softplus(-x) - x)

        x = input, t = target, w = weight, p = pos_weight (1 when None), l = 1 + (p - 1) * t;
        s = grad, or grad / size for 'mean'. With p = 1, dinput = s * w * (sigmoid(x) - t).
        Their derivatives (create_graph): d2/dx2 = s * w * l * sigmoid(x) * sigmoid(-x),
        d2/dx dt = -s * w * (1 + (p - 1) * sigmoid(-x)), d2/dt2 = 0; weight and pos_weight are
        constants."""
        xp, x, t = ctx.xp, ctx.input, ctx.target
        weight, pos_weight = ctx.weight, ctx.pos_weight
        scale = position_scale(grad, ctx.reduction, math.prod(x.shape))
        if weight is not None:
            scale = scale * weight
        dx = dt = None
        if ctx.needs_grad[0]:
            # sigmoid(-x) as exp(-softplus(x)): as stable, no slower (no select), and its slope
            # under create_graph is right at x = 0 too (maximum's tie there splits evenly), where
            # the two-branch form's exp(-|x|) would take abs's slope, 0
            sigmoid_neg = xp.exp(-stable_softplus(xp, x))
            if pos_weight is not None:
                sigmoid_neg = sigmoid_neg * (1 + (pos_weight - 1) * t)
            dx = scale * ((1 - t) - sigmoid_neg)
        if ctx.needs_grad[1]:
            slope = -x
            if pos_weight is not None:
                slope = slope + (pos_weight - 1) * stable_softplus(xp, -x)
            dt = scale * slope
        return dx, dt, None, None


def binary_cross_entropy_with_logits(
    input,  # noqa: A002
    target,
    weight=None,
    *,
    reduction: str = "mean",
    pos_weight=None,
):
    """Binary cross entropy of sigmoid(input) against target in [0, 1], as PyTorch's
    F.binary_cross_entropy_with_logits, stable for any logit. input and target of one shape;
    weight (a per-position rescaling) and pos_weight (the weight of positive examples, usually one
    per class along the last axis) broadcast to input's shape and are constants, taken in input's
    dtype. Its own op (BinaryCrossEntropyWithLogitsGrad): composed, the stable form would take
    a dozen."""
    caller = "binary_cross_entropy_with_logits"
    check_reduction(caller, reduction)
    check_constant(caller, weight=weight, pos_weight=pos_weight)
    x, _ = _input_and_target(caller, input, target)
    weight, pos_weight = _elementwise_weights(caller, x, weight=weight, pos_weight=pos_weight)
    if reduction == "mean":
        mean_divisor(caller, x.size, "an empty input")
    return BinaryCrossEntropyWithLogits.apply(
        input, target, weight, pos_weight, reduction=reduction
    )


# PyTorch's floor under each log (a probability of exactly 0 or 1 costs 100, not inf) and under
# x (1 - x) in the input's gradient: 1e-12 as a float32 constant, 9.9999999600e-13.
_LOG_FLOOR = -100.0
_BCE_GRAD_EPS = float(np.float32(1e-12))


class BinaryCrossEntropy(Op):
    """-w [t max(log x, -100) + (1 - t) max(log(1 - x), -100)] per position, x and t in
    [0, 1], as PyTorch's kernel (log1p for log(1 - x)). weight is a constant."""

    name = "binary_cross_entropy"
    inputs = ("input", "target", "weight")
    attrs = ("reduction",)
    saved = ("input", "target", "weight")
    same_dtype = True

    @staticmethod
    def forward(ctx, input, target, weight):  # noqa: A002 (PyTorch's name)
        xp = ctx.xp
        with np.errstate(divide="ignore"):  # log(0) = -inf, floored at -100
            log_x = xp.maximum(xp.log(input), _LOG_FLOOR)
            log_1mx = xp.maximum(xp.log1p(-input), _LOG_FLOOR)
        losses = (target - 1) * log_1mx - target * log_x
        if weight is not None:
            losses = losses * weight
        ctx.save(input=input, target=target, weight=weight)
        return reduce_losses(losses, ctx.reduction)

    @staticmethod
    def backward(ctx, grad):
        """dinput = s * w * (x - t) / max(x (1 - x), 1e-12), dtarget = s * w * (log(1-x) - log x)

        x = input, t = target, w = weight; s = grad, or grad / size for 'mean'. Both are
        PyTorch's: the input's is floored (float32's 1e-12), the target's is not (inf where
        x is 0 or 1). Their derivatives (create_graph) are exact: d2/dx2 = s * w * (x^2 - 2 x t
        + t) / (x (1 - x))^2 where unfloored (PyTorch adds 1e-12 to x and to 1 - x in this one,
        a relative difference of 2e-12 / min(x, 1 - x)), and d2/dx dt = -s * w / max(x (1 - x),
        1e-12), d2/dt2 = 0."""
        xp, x, t = ctx.xp, ctx.input, ctx.target
        scale = position_scale(grad, ctx.reduction, math.prod(x.shape))
        if ctx.weight is not None:
            scale = scale * ctx.weight
        dx = dt = None
        if ctx.needs_grad[0]:
            dx = scale * (x - t) / xp.maximum((1 - x) * x, _BCE_GRAD_EPS)
        if ctx.needs_grad[1]:
            with np.errstate(divide="ignore"):  # log(0) = -inf: dt is inf where x is 0 or 1
                dt = scale * (xp.log1p(-x) - xp.log(x))
        return dx, dt, None


def _check_probabilities(caller: str, name: str, values) -> None:
    """Every element in [0, 1] (nan is not), as PyTorch checks: an error naming one outside.
    On a GPU the check is deferred to the next read of a GPU value (backend.defer_check: read
    now, it would wait for the GPU on every step)."""
    outside = ~((values >= 0) & (values <= 1))
    any_outside = outside.any()
    if type(values) is not np.ndarray and backend.defer_check(
        any_outside,
        ArgumentError,
        f"{caller}: every element of {name} must lie in [0, 1]; one outside was found on the "
        f"GPU after the op ran",
    ):
        return
    if any_outside:
        raise ArgumentError(
            f"{caller}: every element of {name} must lie in [0, 1], got "
            f"{values[outside].ravel()[0]}"
            + (" (for logits, use binary_cross_entropy_with_logits)" if name == "input" else "")
        )


def binary_cross_entropy(input, target, weight=None, *, reduction: str = "mean"):  # noqa: A002
    """Binary cross entropy of probabilities, as PyTorch's F.binary_cross_entropy: input and
    target of one shape and one floating dtype, every element in [0, 1] (else an error, as
    PyTorch); each log floored at -100. weight: a per-position rescaling that broadcasts to
    input's shape, a constant taken in input's dtype. 'mean' over an empty input raises
    (PyTorch: nan). Its own op (BinaryCrossEntropyGrad). For logits,
    binary_cross_entropy_with_logits is stabler."""
    caller = "binary_cross_entropy"
    check_reduction(caller, reduction)
    check_constant(caller, weight=weight)
    x, t = _input_and_target(caller, input, target)
    (weight,) = _elementwise_weights(caller, x, weight=weight)
    _check_probabilities(caller, "input", x)
    if t.dtype.kind == "f":  # other dtypes: the op's dtype check names them
        _check_probabilities(caller, "target", t)
    if reduction == "mean":
        mean_divisor(caller, x.size, "an empty input")
    return BinaryCrossEntropy.apply(input, target, weight, reduction=reduction)
