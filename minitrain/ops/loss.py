"""Loss functions with PyTorch's semantics: cross_entropy (fused with log-softmax: one op, one
stable kernel each way), nll_loss, binary_cross_entropy_with_logits, and the pointwise losses
mse_loss, l1_loss, smooth_l1_loss and huber_loss.

Every loss takes `reduction`: 'none' (one loss per position), 'sum', or 'mean'. The class axis is
axis 1, as in PyTorch: logits (N, C) or (N, C, d1, ..., dk) with class-index targets (N,) or
(N, d1, ..., dk); a single sample (C,) takes a class-index target 0-d or (1,).

Where PyTorch returns nan for a mean over nothing (an empty batch, every target ignored, target
weights that sum to 0), minitrain raises a ValueError instead: a nan loss reaches every parameter
through the optimizer step, and the batch that caused it is long gone by the time anyone looks.
"""

from __future__ import annotations

import functools
import math
from types import SimpleNamespace

import numpy as np

from .. import backend
from ..errors import ArgumentError, DTypeError, GraphError, ShapeError
from ..tensor import Tensor
from . import numba_math
from .registry import Op
from .shape import reshape

_REDUCTIONS = ("none", "mean", "sum")
# Logits (rows * classes) from which the fused numba kernels run their parallel build; below it
# the serial one, as a parallel region can wait ~2 ms for a core (see numba_math.loop).
_PARALLEL_WORK = 1 << 20


# --- shared checks and reductions --------------------------------------------------------------


def _data(value):
    """The array behind a Tensor, array or number (numbers become 0-d arrays)."""
    if isinstance(value, Tensor):
        return value.data
    return value if backend.is_array(value) else np.asarray(value)


def _check_reduction(op: str, reduction) -> None:
    if reduction not in _REDUCTIONS:
        raise ArgumentError(f"{op}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")


def _check_no_grad(op: str, **tensors) -> None:
    """Weights are constants, as in PyTorch: refuse one that requires grad rather than silently
    returning no gradient for it."""
    for name, value in tensors.items():
        if isinstance(value, Tensor) and value.requires_grad:
            raise GraphError(
                f"{op}: '{name}' cannot require grad (the loss has no gradient for it, as in "
                f"PyTorch); pass {name}.detach()"
            )


def _elementwise_weights(op: str, x, **weights) -> tuple:
    """The binary cross entropies' constant weights (None stays None), each checked to broadcast
    to input x's shape and taken in x's dtype, as PyTorch takes them."""
    taken = []
    for name, value in weights.items():
        if value is None:
            taken.append(None)
            continue
        array = _data(value)
        try:
            fits = np.broadcast_shapes(array.shape, x.shape) == x.shape
        except ValueError:
            fits = False
        if not fits:
            raise ShapeError(f"{op}: {name} {array.shape} does not broadcast to input {x.shape}")
        taken.append(Tensor(array.astype(x.dtype, copy=False)))
    return tuple(taken)


def _check_same_shape(op: str, x, target) -> None:
    if x.shape != target.shape:
        raise ShapeError(
            f"{op}: input {x.shape} and target {target.shape} must have the same shape "
            f"(PyTorch broadcasts them with a warning, which is almost always a bug)"
        )


def _check_float(op: str, name: str, array) -> None:
    if array.dtype.kind != "f":
        raise DTypeError(f"{op}: '{name}' must be floating point, got {array.dtype}")


def _mean_divisor(op: str, total, what: str):
    """The divisor of a 'mean' reduction, refused when it is 0 (PyTorch returns nan)."""
    if total == 0:
        raise ArgumentError(
            f"{op}: reduction='mean' over {what} divides by 0 (PyTorch returns nan); use "
            f"reduction='sum', or leave such batches out"
        )
    return total


def _reduce(losses, reduction: str, divisor=None):
    """Per-position losses reduced: as they are, summed, or summed over `divisor` (default: the
    number of positions)."""
    if reduction == "none":
        return losses
    total = losses.sum()
    if reduction == "sum":
        return total
    return total / (losses.size if divisor is None else divisor)


def _position_scale(grad, reduction: str, divisor):
    """The gradient of the reduced loss with respect to each position's loss: the upstream
    gradient itself ('none', 'sum'; 0-d for 'sum', broadcasting) or divided by the divisor."""
    return grad / divisor if reduction == "mean" else grad


# --- class-index targets ------------------------------------------------------------------------


def _check_class_target(op: str, input, target, weight) -> None:
    """target: integers shaped like input without its class axis 1; weight: one per class."""
    if target.dtype.kind not in "iu":
        raise DTypeError(f"{op}: class-index targets must be integers, got dtype {target.dtype}")
    expected = input.shape[:1] + input.shape[2:]
    if target.shape != expected:
        raise ShapeError(
            f"{op}: target {target.shape} does not fit input {input.shape}: class-index targets "
            f"have the input's shape without its class axis 1, {expected}"
        )
    _check_weight(op, weight, input.shape[1])


def _check_weight(op: str, weight, classes: int) -> None:
    if weight is None:
        return
    _check_float(op, "weight", weight)
    if weight.shape != (classes,):
        raise ShapeError(f"{op}: weight {weight.shape} must hold one value per class, ({classes},)")


def _check_class_range(op: str, target, classes: int, ignore_index: int) -> None:
    """Every target is a class in [0, classes) or ignore_index: an error, never a wrong read."""
    bad = (target != ignore_index) & ((target < 0) | (target >= classes))
    if bad.any():
        value = int(target[bad].ravel()[0])
        raise IndexError(
            f"{op}: target {value} is out of range for {classes} classes (valid: 0 to "
            f"{classes - 1}, or ignore_index={ignore_index})"
        )


def _class_weights(xp, target, weight, ignore_index: int, dtype):
    """(valid, safe, target_weights): valid marks the positions not ignored; safe is target
    with ignored positions set to class 0 (a harmless index); target_weights is weight[target]
    (1 without weight) and 0 where ignored."""
    valid = target != ignore_index
    safe = xp.where(valid, target, 0)
    if weight is None:
        return valid, safe, valid.astype(dtype)
    return valid, safe, xp.where(valid, weight.astype(dtype, copy=False)[safe], 0)


def _class_axis(weight, ndim: int):
    """weight (C,) shaped (1, C, 1, ..., 1) to broadcast along the class axis of an ndim input."""
    return weight.reshape((1, -1) + (1,) * (ndim - 2))


def _along_classes(xp, values):
    """Per-position values (the target's shape, or 0-d) with a class axis 1 of size 1."""
    return xp.expand_dims(values, 1) if values.ndim else values


def _class_total(op: str, target_weights):
    """The 'mean' divisor of class-index losses: the summed weights of the non-ignored targets."""
    what = "no targets (all ignored, or their weights summing to 0)"
    return _mean_divisor(op, target_weights.sum(), what)


def _one_sample(op: str, input, target, probabilities: bool):  # noqa: A002
    """One sample's input (C,) and its target as a batch of one, as PyTorch takes them: input
    (1, C) with class indices (1,), given 0-d or (1,), or with class probabilities (1, C), given
    (C,) (where `probabilities`). Shape errors name the shapes the caller gave."""
    (classes,), t = _data(input).shape, _data(target)
    if not classes:
        raise ShapeError(f"{op}: input (0,) holds no classes")
    if probabilities and t.dtype.kind == "f":
        if t.shape == (classes,):
            return reshape(input, (1, classes)), reshape(target, (1, classes))
        expected = f"probability targets ({classes},)"
    else:
        if t.shape in ((), (1,)):
            return reshape(input, (1, classes)), reshape(target, (1,))
        expected = "class-index targets () or (1,)"
    raise ShapeError(
        f"{op}: target {t.shape} does not fit input ({classes},): a single sample takes {expected}"
    )


# --- cross entropy: the fused log-softmax + negative log-likelihood ----------------------------


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
        scale = _along_classes(xp, xp.asarray(_position_scale(dY, reduction, divisor)))
        q = _smoothed(target.astype(probs.dtype, copy=False), eps, classes)
        if weight is not None:
            q = q * _class_axis(weight.astype(probs.dtype, copy=False), probs.ndim)
        return scale * (q.sum(axis=1, keepdims=True) * probs - q)

    _check_class_range("softmax_cross_entropy_grad", target, classes, ignore_index)
    valid, safe, target_weights = _class_weights(xp, target, weight, ignore_index, probs.dtype)
    divisor = _class_total("cross_entropy", target_weights) if reduction == "mean" else None
    scale = _position_scale(dY, reduction, divisor)
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


def _smoothed(probabilities, eps: float, classes: int):
    return probabilities if not eps else probabilities * (1 - eps) + eps / classes


def _xent_class_forward(xp, logits, target, weight, ignore_index: int, eps: float):
    """The generic forward with class indices: (losses per position, probs)."""
    classes = logits.shape[1]
    shifted = logits - logits.max(axis=1, keepdims=True)  # <= 0: exp cannot overflow
    probs = xp.exp(shifted)
    totals = probs.sum(axis=1, keepdims=True)
    probs /= totals
    log_totals = xp.log(totals)
    valid, safe, target_weights = _class_weights(xp, target, weight, ignore_index, logits.dtype)
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
def _numba_kernels(parallel: bool) -> SimpleNamespace:
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


def _numba_applies(logits, target) -> bool:
    return target.dtype.kind in "iu" and logits.dtype in (np.float32, np.float64)


def _class_weight_vector(weight, classes: int, dtype):
    return np.ones(classes, dtype) if weight is None else weight.astype(dtype)


class SoftmaxCrossEntropy(Op):
    """Cross entropy of softmax(logits) against class indices or class probabilities, fused: the
    forward computes the stable softmax of each row (max subtracted) and the loss from it, and
    saves the probabilities; the backward is softmax_cross_entropy_grad, probs minus the target
    distribution, scaled. With probability targets the gradient also reaches the target:
    d loss / d target = -s * (1 - eps) * w * log_probs, so log_probs is saved when it needs one.
    """

    name = "cross_entropy"
    inputs = ("logits", "target", "weight")
    attrs = ("reduction", "ignore_index", "label_smoothing")
    saved = ("probs", "log_probs", "target", "weight")

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
    def numba_forward(ctx, logits, target, weight):
        if not _numba_applies(logits, target):
            return SoftmaxCrossEntropy.forward(ctx, logits, target, weight)
        _check_xent_inputs(logits, target, weight, ctx.ignore_index)
        rows = _to_rows(logits)
        probs = np.empty_like(rows)
        losses = np.empty(rows.shape[0], logits.dtype)
        _numba_kernels(rows.size >= _PARALLEL_WORK).forward(
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
    def numba_backward(ctx, grad):
        probs, target = ctx.probs, ctx.target
        if not _numba_applies(probs, target):
            return SoftmaxCrossEntropy.backward(ctx, grad)
        rows = _to_rows(probs)  # no copy when the numba forward made probs
        divisor = None
        if ctx.reduction == "mean":
            _, _, target_weights = _class_weights(
                np, target, ctx.weight, ctx.ignore_index, probs.dtype
            )
            divisor = _class_total("cross_entropy", target_weights)
        scale = np.broadcast_to(_position_scale(grad, ctx.reduction, divisor), target.shape)
        dx = np.empty_like(rows)
        _numba_kernels(rows.size >= _PARALLEL_WORK).grad(
            rows,
            np.ascontiguousarray(target.reshape(-1), dtype=np.int64),
            _class_weight_vector(ctx.weight, rows.shape[1], probs.dtype),
            ctx.ignore_index,
            ctx.label_smoothing,
            np.ascontiguousarray(scale, dtype=probs.dtype).reshape(-1),
            dx,
        )
        return _from_rows(dx, probs.shape), None, None


def _check_xent_inputs(logits, target, weight, ignore_index: int) -> str:
    """Check cross_entropy's inputs; returns 'classes' or 'probabilities' (the target's kind)."""
    op = "cross_entropy"
    _check_float(op, "logits", logits)
    if logits.ndim < 2 or logits.shape[1] == 0:
        raise ShapeError(f"{op}: logits {logits.shape} need a class axis 1 with classes in it")
    if target.dtype.kind == "f":
        if target.shape != logits.shape:
            raise ShapeError(
                f"{op}: probability target {target.shape} must have the logits' shape "
                f"{logits.shape}"
            )
        if ignore_index != -100:
            raise ArgumentError(f"{op}: ignore_index is not supported for probability targets")
        _check_weight(op, weight, logits.shape[1])
        return "probabilities"
    if target.dtype.kind not in "iu":
        raise DTypeError(
            f"{op}: target must hold class indices (integers) or class probabilities "
            f"(floating point), got dtype {target.dtype}"
        )
    _check_class_target(op, logits, target, weight)
    _check_class_range(op, target, logits.shape[1], ignore_index)
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
        return _reduce(losses, ctx.reduction)
    if target.dtype.kind == "f":
        divisor = _mean_divisor("cross_entropy", losses.size, "an empty batch")
    else:
        dtype = losses.dtype
        _, _, target_weights = _class_weights(ctx.xp, target, weight, ctx.ignore_index, dtype)
        divisor = _class_total("cross_entropy", target_weights)
    return _reduce(losses, "mean", divisor)


def _xent_target_grad(ctx, grad):
    """d loss / d target for probability targets: -s * (1 - eps) * w * log_probs."""
    xp, log_probs = ctx.xp, ctx.log_probs
    divisor = log_probs.size // log_probs.shape[1] if log_probs.size else 1
    scale = _along_classes(xp, xp.asarray(_position_scale(grad, ctx.reduction, divisor)))
    dt = (-(1 - ctx.label_smoothing) * scale) * log_probs
    if ctx.weight is not None:
        dt = dt * _class_axis(ctx.weight.astype(log_probs.dtype, copy=False), log_probs.ndim)
    return dt


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
    op = "cross_entropy"
    _check_reduction(op, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ArgumentError(f"{op}: label_smoothing must be in [0, 1], got {label_smoothing}")
    _check_no_grad(op, weight=weight)
    if not isinstance(target, Tensor) and not backend.is_array(target):
        target = np.asarray(target)
    single = _data(logits).ndim == 1  # one sample (C,): PyTorch's unbatched form
    if single:
        logits, target = _one_sample(op, logits, target, probabilities=True)
    out = SoftmaxCrossEntropy.apply(
        logits,
        target,
        weight,
        reduction=reduction,
        ignore_index=int(ignore_index),
        label_smoothing=float(label_smoothing),
    )
    return reshape(out, ()) if single and reduction == "none" else out


# --- nll_loss ------------------------------------------------------------------------------------


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
        xp, op = ctx.xp, "nll_loss"
        _check_float(op, "log_probs", log_probs)
        if log_probs.ndim < 2:
            raise ShapeError(f"{op}: log_probs {log_probs.shape} need a class axis 1")
        _check_class_target(op, log_probs, target, weight)
        _check_class_range(op, target, log_probs.shape[1], ctx.ignore_index)
        valid, safe, target_weights = _class_weights(
            xp, target, weight, ctx.ignore_index, log_probs.dtype
        )
        picked = xp.take_along_axis(log_probs, xp.expand_dims(safe, 1), axis=1).squeeze(1)
        losses = -target_weights * xp.where(valid, picked, 0)
        ctx.save(target=target, weight=weight)
        if ctx.reduction == "mean":
            return _reduce(losses, "mean", _class_total(op, target_weights))
        return _reduce(losses, ctx.reduction)

    @staticmethod
    def backward(ctx, grad):
        """dlog_probs = -s * w[target] at the target class, 0 at the others and where ignored.

        s = grad, or grad / D for 'mean' (D: the summed w[target] of the non-ignored targets)."""
        xp, target = ctx.xp, ctx.target
        shape, dtype = ctx.shapes[0], ctx.dtypes[0]
        _, safe, target_weights = _class_weights(xp, target, ctx.weight, ctx.ignore_index, dtype)
        divisor = _class_total("nll_loss", target_weights) if ctx.reduction == "mean" else None
        scale = _position_scale(grad, ctx.reduction, divisor)
        dx = xp.zeros(shape, dtype)
        index = xp.expand_dims(safe, 1)
        xp.put_along_axis(dx, index, xp.expand_dims(-scale * target_weights, 1), axis=1)
        return dx, None, None


def nll_loss(log_probs, target, weight=None, *, ignore_index: int = -100, reduction: str = "mean"):
    """Negative log-likelihood loss, as PyTorch's F.nll_loss: log_probs (N, C), (N, C, d1, ...)
    or (C,); target class indices shaped like log_probs without axis 1 (0-d or (1,) for (C,));
    weight (C,) a constant. 'mean' divides by the summed weights of the non-ignored targets
    (raises where that is 0). Its own op (NLLLossGrad): a gather forward, a scatter backward."""
    op = "nll_loss"
    _check_reduction(op, reduction)
    _check_no_grad(op, weight=weight)
    if not isinstance(target, Tensor) and not backend.is_array(target):
        target = np.asarray(target)
    single = _data(log_probs).ndim == 1
    if single:
        log_probs, target = _one_sample(op, log_probs, target, probabilities=False)
    out = NLLLoss.apply(
        log_probs, target, weight, reduction=reduction, ignore_index=int(ignore_index)
    )
    return reshape(out, ()) if single and reduction == "none" else out


# --- pointwise losses of input - target ---------------------------------------------------------


class _PointwiseLoss(Op, register=False):
    """A loss of d = input - target, position by position, then reduced. A subclass gives the
    loss and its slope in d; the input's gradient is s * slope(d), the target's its negative."""

    inputs = ("input", "target")
    saved = ("diff",)

    @classmethod
    def forward(cls, ctx, input, target):  # noqa: A002 (PyTorch's name)
        diff = input - target
        ctx.save(diff=diff)
        return _reduce(cls.loss(ctx, diff), ctx.reduction)

    @classmethod
    def backward(cls, ctx, grad):
        """dinput = s * slope(input - target), dtarget = -dinput; s = grad (/ size for 'mean').

        A subclass overrides it only to write its own slope into this docstring (the graph
        viewer's tooltip)."""
        diff = ctx.diff
        dx = _position_scale(grad, ctx.reduction, diff.size) * cls.slope(ctx, diff)
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


class L1Loss(_PointwiseLoss):
    """|d|, slope sign(d) (0 at d = 0, as PyTorch)."""

    name = "l1_loss"
    attrs = ("reduction",)

    @staticmethod
    def loss(ctx, d):
        return ctx.xp.abs(d)

    @staticmethod
    def slope(ctx, d):
        return ctx.xp.sign(d)

    @classmethod
    def backward(cls, ctx, grad):
        """dinput = s * sign(input - target), dtarget = -dinput; s = grad (/ size for 'mean')."""
        return super().backward(ctx, grad)


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
        xp, beta = ctx.xp, ctx.beta
        return xp.sign(d) if beta == 0 else xp.clip(d / beta, -1, 1)

    @classmethod
    def backward(cls, ctx, grad):
        """dinput = s * clip(d / beta, -1, 1), dtarget = -dinput; d = input - target, beta > 0.

        With beta = 0 (the l1 loss) dinput = s * sign(d); s = grad (/ size for 'mean')."""
        return super().backward(ctx, grad)


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
        return ctx.xp.clip(d, -ctx.delta, ctx.delta)

    @classmethod
    def backward(cls, ctx, grad):
        """dinput = s * clip(d, -delta, delta), dtarget = -dinput; d = input - target.

        s = grad, or grad / size for 'mean'."""
        return super().backward(ctx, grad)


def _pointwise(op, input, target, reduction: str, **attrs):  # noqa: A002
    _check_reduction(op.name, reduction)
    x, t = _data(input), _data(target)
    _check_float(op.name, "input", x)
    _check_same_shape(op.name, x, t)
    if reduction == "mean":
        _mean_divisor(op.name, x.size, "an empty input")
    return op.apply(input, target, reduction=reduction, **attrs)


def mse_loss(input, target, *, reduction: str = "mean"):  # noqa: A002
    """Mean squared error (input - target)^2, as PyTorch's F.mse_loss; input and target of one
    shape. Its own op (MSELossGrad): one pass each way, where sub, mul and mean would take three."""
    return _pointwise(MSELoss, input, target, reduction)


def l1_loss(input, target, *, reduction: str = "mean"):  # noqa: A002
    """Absolute error |input - target|, as PyTorch's F.l1_loss (gradient 0 where they are equal).
    Its own op (L1LossGrad)."""
    return _pointwise(L1Loss, input, target, reduction)


def smooth_l1_loss(input, target, *, reduction: str = "mean", beta: float = 1.0):  # noqa: A002
    """Squared error below beta, absolute error above, as PyTorch's F.smooth_l1_loss: 0.5 d^2 /
    beta where |d| < beta, else |d| - 0.5 beta (d = input - target; beta >= 0, and beta = 0 is
    l1_loss). Its own op (SmoothL1LossGrad)."""
    if not beta >= 0:  # nan too
        raise ArgumentError(f"smooth_l1_loss: beta must be >= 0, got {beta}")
    return _pointwise(SmoothL1Loss, input, target, reduction, beta=float(beta))


def huber_loss(input, target, *, reduction: str = "mean", delta: float = 1.0):  # noqa: A002
    """Huber loss, as PyTorch's F.huber_loss: 0.5 d^2 where |d| < delta, else
    delta (|d| - 0.5 delta) (d = input - target; delta > 0). Its own op (HuberLossGrad)."""
    if not delta > 0:  # nan too
        raise ArgumentError(f"huber_loss: delta must be > 0, got {delta}")
    return _pointwise(HuberLoss, input, target, reduction, delta=float(delta))


# --- binary cross entropy with logits ------------------------------------------------------------


def _softplus_of_negative(xp, x):
    """log(1 + exp(-x)) = -log(sigmoid(x)), as max(-x, 0) + log1p(exp(-|x|)): exp never
    overflows, and log1p keeps the small values exact."""
    return xp.maximum(-x, 0) + xp.log1p(xp.exp(-xp.abs(x)))


def _sigmoid_of_negative(xp, x):
    """sigmoid(-x) = 1 - sigmoid(x), from e = exp(-|x|) <= 1: e / (1 + e) for x >= 0, else
    1 / (1 + e)."""
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, e, 1) / (1 + e)


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
        softplus = _softplus_of_negative(xp, input)
        if pos_weight is not None:
            softplus = (1 + (pos_weight - 1) * target) * softplus
        losses = (1 - target) * input + softplus
        if weight is not None:
            losses = losses * weight
        ctx.save(input=input, target=target, weight=weight, pos_weight=pos_weight)
        return _reduce(losses, ctx.reduction)

    @staticmethod
    def backward(ctx, grad):
        """dinput = s * w * (1 - t - l * sigmoid(-x)), dtarget = s * w * ((p-1) * softplus(-x) - x)

        x = input, t = target, w = weight, p = pos_weight (1 when None), l = 1 + (p - 1) * t;
        s = grad, or grad / size for 'mean'. With p = 1, dinput = s * w * (sigmoid(x) - t)."""
        xp, x, t = ctx.xp, ctx.input, ctx.target
        weight, pos_weight = ctx.weight, ctx.pos_weight
        scale = _position_scale(grad, ctx.reduction, x.size)
        if weight is not None:
            scale = scale * weight
        dx = dt = None
        if ctx.needs_grad[0]:
            sigmoid_neg = _sigmoid_of_negative(xp, x)
            if pos_weight is not None:
                sigmoid_neg = sigmoid_neg * (1 + (pos_weight - 1) * t)
            dx = scale * ((1 - t) - sigmoid_neg)
        if ctx.needs_grad[1]:
            slope = -x
            if pos_weight is not None:
                slope = slope + (pos_weight - 1) * _softplus_of_negative(xp, x)
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
    dtype. Its own op
    (BinaryCrossEntropyWithLogitsGrad): composed, the stable form would take a dozen."""
    op = "binary_cross_entropy_with_logits"
    _check_reduction(op, reduction)
    _check_no_grad(op, weight=weight, pos_weight=pos_weight)
    x, t = _data(input), _data(target)
    _check_float(op, "input", x)
    _check_same_shape(op, x, t)
    weight, pos_weight = _elementwise_weights(op, x, weight=weight, pos_weight=pos_weight)
    if reduction == "mean":
        _mean_divisor(op, x.size, "an empty input")
    return BinaryCrossEntropyWithLogits.apply(
        input, target, weight, pos_weight, reduction=reduction
    )


# --- binary cross entropy of probabilities -------------------------------------------------------

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
        return _reduce(losses, ctx.reduction)

    @staticmethod
    def backward(ctx, grad):
        """dinput = s * w * (x - t) / max(x (1 - x), 1e-12), dtarget = s * w * (log(1-x) - log x)

        x = input, t = target, w = weight; s = grad, or grad / size for 'mean'. Both are
        PyTorch's: the input's is floored (float32's 1e-12), the target's is not (inf where
        x is 0 or 1)."""
        xp, x, t = ctx.xp, ctx.input, ctx.target
        scale = _position_scale(grad, ctx.reduction, x.size)
        if ctx.weight is not None:
            scale = scale * ctx.weight
        dx = dt = None
        if ctx.needs_grad[0]:
            dx = scale * (x - t) / xp.maximum((1 - x) * x, _BCE_GRAD_EPS)
        if ctx.needs_grad[1]:
            with np.errstate(divide="ignore"):
                dt = scale * (xp.log1p(-x) - xp.log(x))
        return dx, dt, None


def _check_probabilities(op: str, name: str, values) -> None:
    """Every element in [0, 1] (nan is not), as PyTorch checks: an error naming one outside."""
    outside = ~((values >= 0) & (values <= 1))
    if outside.any():
        raise ArgumentError(
            f"{op}: every element of {name} must lie in [0, 1], got {values[outside].ravel()[0]}"
            + (" (for logits, use binary_cross_entropy_with_logits)" if name == "input" else "")
        )


def binary_cross_entropy(input, target, weight=None, *, reduction: str = "mean"):  # noqa: A002
    """Binary cross entropy of probabilities, as PyTorch's F.binary_cross_entropy: input and
    target of one shape and one floating dtype, every element in [0, 1] (else an error, as
    PyTorch); each log floored at -100. weight: a per-position rescaling that broadcasts to
    input's shape, a constant taken in input's dtype. 'mean' over an empty input raises
    (PyTorch: nan). Its own op (BinaryCrossEntropyGrad). For logits,
    binary_cross_entropy_with_logits is stabler."""
    op = "binary_cross_entropy"
    _check_reduction(op, reduction)
    _check_no_grad(op, weight=weight)
    x, t = _data(input), _data(target)
    _check_float(op, "input", x)
    _check_same_shape(op, x, t)
    (weight,) = _elementwise_weights(op, x, weight=weight)
    _check_probabilities(op, "input", x)
    if t.dtype.kind == "f":  # other dtypes: the op's dtype check names them
        _check_probabilities(op, "target", t)
    if reduction == "mean":
        _mean_divisor(op, x.size, "an empty input")
    return BinaryCrossEntropy.apply(input, target, weight, reduction=reduction)
