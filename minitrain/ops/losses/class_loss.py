"""cross_entropy, the loss of class scores: log-softmax and negative log-likelihood fused in one
op, with its backward kernel softmax_cross_entropy_grad and its numba row kernels (nll_loss, on
log-probabilities, is in nll.py).

The class axis is axis 1, as in PyTorch: logits (N, C) or (N, C, d1, ..., dk) with class-index
targets (N,) or (N, d1, ..., dk); a single sample (C,) takes a class-index target 0-d or (1,).
"""

from __future__ import annotations

import functools
import math
from types import SimpleNamespace

import numpy as np

from ... import backend
from ...errors import ArgumentError, DTypeError, ShapeError
from ...tensor import Tensor
from ..core import numba_math
from ..core.checks import check_floating
from ..core.op import Op, array_of, device_module, value_of
from ..shapes.shape import reshape
from .class_targets import (
    check_class_range,
    check_class_target,
    check_weight,
    class_total,
    class_weights,
    one_sample,
)
from .loss_reduction import (
    check_constant,
    check_reduction,
    loss_array,
    mean_divisor,
    position_scale,
    reduce_losses,
)

__all__ = ["cross_entropy", "softmax_cross_entropy_grad"]

# Logits (rows * classes) from which the fused numba kernels run their parallel build; below it
# the serial one, as a parallel region waits for a core longer than the serial loop takes (see
# numba_math.loop).
_PARALLEL_WORK = 1 << 20


def _class_axis(weight, ndim: int):
    """weight (C,) shaped (1, C, 1, ..., 1) to broadcast along the class axis of an ndim input."""
    return weight.reshape((1, -1) + (1,) * (ndim - 2))


def _along_classes(xp, values):
    """Per-position values (the target's shape, or 0-d) with a class axis 1 of size 1."""
    return xp.expand_dims(values, 1) if values.ndim else values


def _smoothed(probabilities, eps: float, classes: int):
    """Class probabilities with label smoothing eps: (1 - eps) of them plus eps / C of every
    class (as they are for eps = 0)."""
    return probabilities if not eps else probabilities * (1 - eps) + eps / classes


def _class_distribution(xp, target, weight, ignore_index: int, eps: float, shape, dtype):
    """(q, target_weights) for class indices: each position's target distribution
    q = w * ((1 - eps) * onehot(target) + eps / C), 0 where ignored, shaped like the logits
    (N, C, d1, ...), and w[target] (0 where ignored) for the 'mean' divisor. Arrays: the
    constants of cross entropy's tensor_backward."""
    classes = shape[1]
    valid, safe, target_weights = class_weights(xp, target, weight, ignore_index, dtype)
    q = xp.zeros(shape, dtype)
    onehot = xp.expand_dims((1 - eps) * target_weights, 1)
    xp.put_along_axis(q, xp.expand_dims(safe, 1), onehot, axis=1)
    if eps:
        w = xp.ones(classes, dtype) if weight is None else weight.astype(dtype)
        q += (eps / classes) * _class_axis(w, len(shape)) * xp.expand_dims(valid, 1)
    return q, target_weights


def _scale_along_classes(scale, shape):
    """A Tensor of per-position scales (the target's shape, or 0-d) with a class axis 1 of size
    1, to broadcast against logits of `shape`: _along_classes for cross entropy's
    tensor_backward."""
    return reshape(scale, shape[:1] + (1,) + shape[2:]) if scale.ndim else scale


def softmax_cross_entropy_grad(
    dY,
    probs,
    target,
    weight=None,
    *,
    reduction: str = "mean",
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
):
    """SoftmaxCrossEntropyGrad: the gradient of cross_entropy with respect to its logits.

    probs: the softmax of the logits over axis 1, (N, C, d1, ...), as cross_entropy's forward
    saves it. target: class indices (N, d1, ...) or class probabilities (shaped like probs).
    dY: the loss's gradient (the target's shape for 'none' with class indices, probs' shape
    without axis 1 for 'none' with probabilities, () otherwise). weight: (C,) or None.

    Each position's target distribution, smoothed by eps = label_smoothing and weighted per class,

        q = w * ((1 - eps) * onehot(target) + eps / C)      (target in place of onehot for
                                                             probabilities; q = 0 where ignored)

    gives the loss -sum_c q_c log(probs_c), whose gradient in the logits is

        dX = s * (sum_c(q_c) * probs - q)

    with s = dY for 'none' and 'sum', and dY / D for 'mean': D = the sum of w[target] over the
    non-ignored positions (class indices) or the number of positions (probabilities). Without
    weight or smoothing that is the familiar s * (probs - onehot(target)).
    """
    xp = backend.array_module(dY, probs)
    classes = probs.shape[1]
    eps = label_smoothing
    if target.dtype.kind == "f":
        divisor = probs.size // classes if probs.size else 1
        scale = _along_classes(xp, xp.asarray(position_scale(dY, reduction, divisor)))
        q = _smoothed(target.astype(probs.dtype, copy=False), eps, classes)
        if weight is not None:
            q = q * _class_axis(weight.astype(probs.dtype, copy=False), probs.ndim)
        return scale * (q.sum(axis=1, keepdims=True) * probs - q)

    check_class_range("softmax_cross_entropy_grad", target, classes, ignore_index)
    valid, safe, target_weights = class_weights(xp, target, weight, ignore_index, probs.dtype)
    divisor = class_total("cross_entropy", target_weights) if reduction == "mean" else None
    scale = position_scale(dY, reduction, divisor)
    weight_sum = classes if weight is None else weight.sum(dtype=probs.dtype)
    onehot = scale * (1 - eps) * target_weights  # s * (1 - eps) * w[target], 0 where ignored
    smoothing = scale * (eps / classes) * valid.astype(probs.dtype)  # s * eps / C, likewise
    # sum_c q_c = (1 - eps) w[target] + (eps / C) sum(w)
    dx = probs * xp.expand_dims(onehot + smoothing * weight_sum, 1)
    if eps:
        w = xp.ones(classes, probs.dtype) if weight is None else weight.astype(probs.dtype)
        dx -= xp.expand_dims(smoothing, 1) * _class_axis(w, probs.ndim)
    index = xp.expand_dims(safe, 1)
    picked = xp.take_along_axis(dx, index, axis=1)
    xp.put_along_axis(dx, index, picked - xp.expand_dims(onehot, 1), axis=1)
    return dx


def _check_xent_inputs(logits, target, weight, ignore_index: int) -> str:
    """Check cross_entropy's inputs; returns 'classes' or 'probabilities' (the target's kind)."""
    caller = "cross_entropy"
    check_floating(caller, logits=logits)
    if logits.ndim < 2 or logits.shape[1] == 0:
        raise ShapeError(f"{caller}: logits {logits.shape} need a class axis 1 with classes in it")
    if target.dtype.kind == "f":
        if target.shape != logits.shape:
            raise ShapeError(
                f"{caller}: probability target {target.shape} must have the logits' shape "
                f"{logits.shape}"
            )
        if ignore_index != -100:
            raise ArgumentError(f"{caller}: ignore_index is not supported for probability targets")
        check_weight(caller, weight, logits.shape[1])
        return "probabilities"
    if target.dtype.kind not in "iu":
        raise DTypeError(
            f"{caller}: target must hold class indices (integers) or class probabilities "
            f"(floating point), got dtype {target.dtype}"
        )
    check_class_target(caller, logits, target, weight)
    check_class_range(caller, target, logits.shape[1], ignore_index)
    return "classes"


def _xent_finish(ctx, losses, probs, log_probs, target, weight):
    """Save what backward needs and reduce the per-position losses."""
    ctx.save(
        probs=probs,
        log_probs=log_probs if ctx.needs_grad[1] else None,
        target=target,
        weight=weight,
    )
    if ctx.reduction != "mean":
        return reduce_losses(losses, ctx.reduction)
    if target.dtype.kind == "f":
        divisor = mean_divisor("cross_entropy", losses.size, "an empty batch")
    else:
        dtype = losses.dtype
        _, _, target_weights = class_weights(ctx.xp, target, weight, ctx.ignore_index, dtype)
        divisor = class_total("cross_entropy", target_weights)
    return reduce_losses(losses, "mean", divisor)


def _xent_target_grad(ctx, grad):
    """d loss / d target for probability targets: -s * (1 - eps) * w * log_probs."""
    xp, log_probs = ctx.xp, ctx.log_probs
    divisor = log_probs.size // log_probs.shape[1] if log_probs.size else 1
    scale = _along_classes(xp, xp.asarray(position_scale(grad, ctx.reduction, divisor)))
    dt = (-(1 - ctx.label_smoothing) * scale) * log_probs
    if ctx.weight is not None:
        dt = dt * _class_axis(ctx.weight.astype(log_probs.dtype, copy=False), log_probs.ndim)
    return dt


def _xent_class_forward(xp, logits, target, weight, ignore_index: int, eps: float):
    """The generic forward with class indices: (losses per position, probs)."""
    classes = logits.shape[1]
    shifted = logits - logits.max(axis=1, keepdims=True)  # <= 0: exp cannot overflow
    probs = xp.exp(shifted)
    totals = probs.sum(axis=1, keepdims=True)
    probs /= totals
    log_totals = xp.log(totals)
    valid, safe, target_weights = class_weights(xp, target, weight, ignore_index, logits.dtype)
    # -log p[target] = log(sum(exp(shifted))) - shifted[target]
    picked = xp.take_along_axis(shifted, xp.expand_dims(safe, 1), axis=1)
    nll = xp.where(valid, (log_totals - picked).squeeze(1), 0)
    losses = (1 - eps) * target_weights * nll
    if eps:
        w = xp.ones(classes, logits.dtype) if weight is None else weight.astype(logits.dtype)
        # -sum_c w_c log p_c = sum_c w_c (log_total - shifted_c): terms >= 0, no cancellation
        spread = (_class_axis(w, logits.ndim) * (log_totals - shifted)).sum(axis=1)
        losses += (eps / classes) * xp.where(valid, spread, 0)
    return losses, probs


def _xent_probability_forward(xp, logits, target, weight, eps: float):
    """The generic forward with class probabilities: (losses per position, probs, log_probs)."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    exps = xp.exp(shifted)
    totals = exps.sum(axis=1, keepdims=True)
    log_probs = shifted - xp.log(totals)
    q = _smoothed(target.astype(logits.dtype, copy=False), eps, logits.shape[1])
    if weight is not None:
        q = q * _class_axis(weight.astype(logits.dtype, copy=False), logits.ndim)
    return -(q * log_probs).sum(axis=1), exps / totals, log_probs


def _softmax_rule(grad, probs):
    """The derivative of softmax over the classes (axis 1), from its output: arrays or Tensors."""
    return probs * (grad - (probs * grad).sum(axis=1, keepdims=True))


def _log_softmax_rule(grad, log_probs):
    """The derivative of log-softmax over the classes, from its output: arrays or Tensors."""
    if isinstance(log_probs, Tensor):
        probs = log_probs.exp()
    else:
        probs = backend.array_module(log_probs).exp(log_probs)
    return grad - probs * grad.sum(axis=1, keepdims=True)


class SoftmaxCrossEntropy(Op):
    """Cross entropy of softmax(logits) against class indices or class probabilities, fused: the
    forward computes the stable softmax of each row (max subtracted) and the loss from it, and
    saves the probabilities; the backward is softmax_cross_entropy_grad, probs minus the target
    distribution, scaled. With probability targets the gradient also reaches the target:
    d loss / d target = -s * (1 - eps) * w * log_probs, so log_probs is saved when it needs one.
    The logits are saved too, for create_graph, which differentiates probs and log_probs as
    functions of them: a reference, but one that keeps them until backward where nothing else
    would (logits straight from a linear layer), and that an in-place write to them refuses.
    """

    name = "cross_entropy"
    inputs = ("logits", "target", "weight")
    attrs = ("reduction", "ignore_index", "label_smoothing")
    saved = ("probs", "log_probs", "target", "weight")
    fused_backward = "cross_entropy 4096x1000"

    @staticmethod
    def forward(ctx, logits, target, weight):
        xp, eps = ctx.xp, ctx.label_smoothing
        log_probs = None
        if _check_xent_inputs(logits, target, weight, ctx.ignore_index) == "probabilities":
            losses, probs, log_probs = _xent_probability_forward(xp, logits, target, weight, eps)
        else:
            losses, probs = _xent_class_forward(xp, logits, target, weight, ctx.ignore_index, eps)
        return _xent_finish(ctx, losses, probs, log_probs, target, weight)

    @staticmethod
    def numba_applies(ctx, logits, target, weight) -> bool:
        """The numba row kernels take class indices (of any integer dtype) with float32 or
        float64 logits, and a weight of any dtype (cast to the logits'); probability targets
        run the generic kernels."""
        return backend.numba_takes(logits) and target.dtype.kind in "iu"

    @staticmethod
    def numba_forward(ctx, logits, target, weight):
        """forward with class indices, each row's softmax and loss in one numba pass."""
        _check_xent_inputs(logits, target, weight, ctx.ignore_index)
        rows = _to_rows(logits)
        probs = np.empty_like(rows)
        losses = np.empty(rows.shape[0], logits.dtype)
        _softmax_cross_entropy_kernels(rows.size >= _PARALLEL_WORK).forward(
            rows,
            np.ascontiguousarray(target.reshape(-1), dtype=np.int64),
            _class_weight_vector(weight, rows.shape[1], logits.dtype),
            ctx.ignore_index,
            ctx.label_smoothing,
            probs,
            losses,
        )
        probs = _from_rows(probs, logits.shape)
        return _xent_finish(ctx, losses.reshape(target.shape), probs, None, target, weight)

    @staticmethod
    def backward(ctx, grad):
        """dlogits = s * (sum_c(q) * probs - q), dtarget = -s * (1 - eps) * w * log_probs.

        probs and log_probs: the softmax and log-softmax of logits over axis 1; q: each
        position's target distribution, smoothed by eps and weighted by w (0 where ignored);
        s = grad, or grad / D for 'mean' (see softmax_cross_entropy_grad). dtarget exists for
        probability targets only."""
        dx = dt = None
        if ctx.needs_grad[0]:
            dx = softmax_cross_entropy_grad(
                grad,
                ctx.probs,
                ctx.target,
                ctx.weight,
                reduction=ctx.reduction,
                ignore_index=ctx.ignore_index,
                label_smoothing=ctx.label_smoothing,
            )
        if ctx.needs_grad[1]:
            dt = _xent_target_grad(ctx, grad)
        return dx, dt, None

    @staticmethod
    def tensor_backward(ctx, grad):
        """backward in tensor ops: probs and log_probs, as saved, in the graph as functions of
        the logits (`value_of`: their derivatives are softmax's and log-softmax's, from the
        saved values, so the logits need not be kept), q a Tensor of the target for
        probabilities and a constant array for class indices (weight and the 'mean' divisor are
        constants).

        So d(dlogits)/dlogits is s * sum_c(q_c) times softmax's Jacobian; with probabilities
        d(dlogits_k)/dtarget_j = s * (1 - eps) * (w_j probs_k - w_k [j = k]), and dtarget is
        -s * (1 - eps) * w * log_probs, which is linear in grad and flat in the target."""
        eps = ctx.label_smoothing
        shape, dtype = ctx.probs.shape, ctx.probs.dtype
        classes = shape[1]
        weight = None if ctx.weight is None else array_of(ctx.weight).astype(dtype, copy=False)
        target = ctx.target
        if target.dtype.kind == "f":
            divisor = math.prod(shape) // classes if math.prod(shape) else 1
            if target.dtype != dtype:
                target = target.astype(dtype)
            q = target * (1 - eps) + eps / classes if eps else target
            if weight is not None:
                q = q * _class_axis(weight, len(shape))
        else:
            q, target_weights = _class_distribution(
                device_module(ctx),
                array_of(target),
                weight,
                ctx.ignore_index,
                eps,
                shape,
                dtype,
            )
            divisor = None
            if ctx.reduction == "mean":
                divisor = class_total("cross_entropy", target_weights)
        scale = _scale_along_classes(position_scale(grad, ctx.reduction, divisor), shape)
        dx = dt = None
        if ctx.needs_grad[0]:
            probs = value_of(ctx, 0, ctx.probs.reshape(shape), _softmax_rule)
            dx = scale * (probs * q.sum(axis=1, keepdims=True) - q)
        if ctx.needs_grad[1]:
            log_probs = value_of(ctx, 0, ctx.log_probs.reshape(shape), _log_softmax_rule)
            dt = (-(1 - eps) * scale) * log_probs
            if weight is not None:
                dt = dt * _class_axis(weight, len(shape))
        return dx, dt, None

    @staticmethod
    def numba_backward(ctx, grad):
        """backward after numba_forward: each row's logits gradient in one numba pass."""
        probs, target = ctx.probs, ctx.target
        rows = _to_rows(probs)  # no copy when the numba forward made probs
        divisor = None
        if ctx.reduction == "mean":
            _, _, target_weights = class_weights(
                np, target, ctx.weight, ctx.ignore_index, probs.dtype
            )
            divisor = class_total("cross_entropy", target_weights)
        scale = np.broadcast_to(position_scale(grad, ctx.reduction, divisor), target.shape)
        dx = np.empty_like(rows)
        _softmax_cross_entropy_kernels(rows.size >= _PARALLEL_WORK).grad(
            rows,
            np.ascontiguousarray(target.reshape(-1), dtype=np.int64),
            _class_weight_vector(ctx.weight, rows.shape[1], probs.dtype),
            ctx.ignore_index,
            ctx.label_smoothing,
            np.ascontiguousarray(scale, dtype=probs.dtype).reshape(-1),
            dx,
        )
        return _from_rows(dx, probs.shape), None, None


def _class_weight_vector(weight, classes: int, dtype):
    """The numba kernels' weight: (C,) in the logits' dtype, ones without a weight."""
    return np.ones(classes, dtype) if weight is None else weight.astype(dtype)


def _to_rows(array):
    """(N, C, d1, ...) as C-contiguous (N * d1 * ..., C) rows, the class axis last."""
    return np.ascontiguousarray(np.moveaxis(array, 1, -1)).reshape(-1, array.shape[1])


def _from_rows(rows, shape):
    """The inverse of _to_rows: a view, or for (N, C) the rows themselves (an array that owns
    its memory can become x.grad without a copy)."""
    if len(shape) == 2:
        return rows
    return np.moveaxis(rows.reshape(shape[:1] + shape[2:] + shape[1:2]), -1, 1)


@functools.cache
def _softmax_cross_entropy_kernels(parallel: bool) -> SimpleNamespace:
    """The numba kernels of cross_entropy with class indices, defined on first use (importing
    minitrain must not import numba), in a parallel build (rows in parallel) and a serial one.
    Both take C-contiguous (rows, classes) float32 or float64 arrays, keep their arithmetic in
    that dtype, and compute each row as the generic kernels do."""
    numba_math.register()
    loop = numba_math.loop(parallel)

    # fastmath: "reassoc" lets LLVM split the row sum into vector lanes, "contract" fuse
    # multiply-adds; NaN and inf keep their meaning. Log-probabilities come from
    # numba_math.log_probability, which "reassoc" cannot regroup into a less accurate form.
    @backend.jit(parallel=parallel, fastmath={"reassoc", "contract", "nsz"})
    def forward_rows(logits, target, weight, ignore_index, eps, probs, losses):
        rows, classes = logits.shape
        for i in loop(rows):
            x, p = logits[i], probs[i]
            top = numba_math.row_max(x)
            total = logits.dtype.type(0)
            for c in range(classes):
                e = numba_math.exp_nonpositive(x[c] - top)  # of a value <= 0 (nan stays nan)
                p[c] = e
                total += e
            inverse = logits.dtype.type(1) / total
            for c in range(classes):
                p[c] *= inverse
            t = target[i]
            if t == ignore_index:
                losses[i] = 0
                continue
            log_total = math.log(total)
            loss = -(1.0 - eps) * weight[t] * numba_math.log_probability(x[t], top, log_total)
            if eps != 0.0:
                spread = 0.0
                for c in range(classes):
                    spread -= weight[c] * numba_math.log_probability(x[c], top, log_total)
                loss += eps / classes * spread
            losses[i] = loss

    @backend.jit(parallel=parallel, fastmath={"contract"})
    def grad_rows(probs, target, weight, ignore_index, eps, scale, dx):
        rows, classes = probs.shape
        real = probs.dtype.type
        weight_sum = 0.0
        for c in range(classes):
            weight_sum += weight[c]
        for i in loop(rows):
            p, g = probs[i], dx[i]
            t = target[i]
            if t == ignore_index:
                g[:] = 0
                continue
            onehot = real(scale[i] * (1.0 - eps) * weight[t])
            smoothing = real(scale[i] * eps / classes)
            row_scale = real(onehot + smoothing * weight_sum)
            if eps == 0.0:
                for c in range(classes):
                    g[c] = row_scale * p[c]
            else:
                for c in range(classes):
                    g[c] = row_scale * p[c] - smoothing * weight[c]
            g[t] -= onehot

    return SimpleNamespace(forward=forward_rows, grad=grad_rows)


def cross_entropy(
    logits,
    target,
    weight=None,
    *,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
):
    """Cross entropy between softmax(logits) over axis 1 and the target, as PyTorch's
    F.cross_entropy, in one fused op (display name SoftmaxCrossEntropyGrad).

    logits: (N, C), (N, C, d1, ..., dk) or a single sample (C,). target: class indices of any
    integer dtype, shaped like logits without axis 1 (0-d or (1,) for a single sample), or class
    probabilities shaped like logits (these may require grad). weight: (C,) per-class weights, a
    constant. Positions whose target is `ignore_index` have loss 0 and no gradient (class
    indices only). `label_smoothing` eps in [0, 1] mixes eps / C of every class into the target.
    reduction 'mean' divides by the summed weights of the non-ignored targets (class indices) or
    by the number of positions (probabilities); where that is 0 it raises (PyTorch: nan).
    """
    caller = "cross_entropy"
    check_reduction(caller, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ArgumentError(f"{caller}: label_smoothing must be in [0, 1], got {label_smoothing}")
    check_constant(caller, weight=weight)
    if not isinstance(target, Tensor) and not backend.is_array(target):
        target = np.asarray(target)
    single = loss_array(logits).ndim == 1  # one sample (C,): PyTorch's unbatched form
    if single:
        logits, target = one_sample(caller, logits, target, probabilities=True)
    out = SoftmaxCrossEntropy.apply(
        logits,
        target,
        weight,
        reduction=reduction,
        ignore_index=int(ignore_index),
        label_smoothing=float(label_smoothing),
    )
    return reshape(out, ()) if single and reduction == "none" else out
