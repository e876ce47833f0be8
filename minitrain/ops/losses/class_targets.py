"""Class-index targets, shared by cross_entropy and nll_loss: their checks (dtype, shape,
range), the per-class weights they pick, the 'mean' divisor, and the single-sample (C,) form."""

from __future__ import annotations

import numpy as np

from ... import backend
from ...errors import DTypeError, IndexOutOfRangeError, ShapeError
from ..core.checks import check_floating
from ..shapes.shape import reshape
from .loss_reduction import loss_array, mean_divisor

__all__ = [
    "check_class_range",
    "check_class_target",
    "check_weight",
    "class_total",
    "class_weights",
    "one_sample",
]


def check_class_target(caller: str, input, target, weight) -> None:
    """target: integers shaped like input without its class axis 1; weight: one per class."""
    if target.dtype.kind not in "iu":
        raise DTypeError(
            f"{caller}: class-index targets must be integers, got dtype {target.dtype}"
        )
    expected = input.shape[:1] + input.shape[2:]
    if target.shape != expected:
        raise ShapeError(
            f"{caller}: target {target.shape} does not fit input {input.shape}: class-index "
            f"targets have the input's shape without its class axis 1, {expected}"
        )
    check_weight(caller, weight, input.shape[1])


def check_weight(caller: str, weight, classes: int) -> None:
    """weight: None, or floating point with one value per class."""
    if weight is None:
        return
    check_floating(caller, weight=weight)
    if weight.shape != (classes,):
        raise ShapeError(
            f"{caller}: weight {weight.shape} must hold one value per class, ({classes},)"
        )


def check_class_range(caller: str, target, classes: int, ignore_index: int) -> None:
    """Every target is a class in [0, classes) or ignore_index: an error, never a wrong read.
    On a GPU the check is deferred to the next read of a GPU value (backend.defer_check: read
    now, it would wait for the GPU on every step); meanwhile CuPy's indexing wraps around."""
    bad = (target != ignore_index) & ((target < 0) | (target >= classes))
    any_bad = bad.any()
    if type(target) is not np.ndarray and backend.defer_check(
        any_bad,
        IndexOutOfRangeError,
        f"{caller}: a target is out of range for {classes} classes (valid: 0 to {classes - 1}, "
        f"or ignore_index={ignore_index}); found on the GPU after the op ran",
    ):
        return
    if any_bad:
        value = int(target[bad].ravel()[0])
        raise IndexOutOfRangeError(
            f"{caller}: target {value} is out of range for {classes} classes (valid: 0 to "
            f"{classes - 1}, or ignore_index={ignore_index})"
        )


def class_weights(xp, target, weight, ignore_index: int, dtype):
    """(valid, safe, target_weights): valid marks the positions not ignored; safe is target
    with ignored positions set to class 0 (a harmless index); target_weights is weight[target]
    (1 without weight) and 0 where ignored."""
    valid = target != ignore_index
    safe = xp.where(valid, target, 0)
    if weight is None:
        return valid, safe, valid.astype(dtype)
    return valid, safe, xp.where(valid, weight.astype(dtype, copy=False)[safe], 0)


def class_total(caller: str, target_weights):
    """The 'mean' divisor of class-index losses: the summed weights of the non-ignored targets."""
    what = "no targets (all ignored, or their weights summing to 0)"
    return mean_divisor(caller, target_weights.sum(), what)


def one_sample(caller: str, input, target, probabilities: bool):  # noqa: A002
    """One sample's input (C,) and its target as a batch of one, as PyTorch takes them: input
    (1, C) with class indices (1,), given 0-d or (1,), or with class probabilities (1, C), given
    (C,) (where `probabilities`). Shape errors name the shapes the caller gave."""
    (classes,), t = loss_array(input).shape, loss_array(target)
    if not classes:
        raise ShapeError(f"{caller}: input (0,) holds no classes")
    if probabilities and t.dtype.kind == "f":
        if t.shape == (classes,):
            return reshape(input, (1, classes)), reshape(target, (1, classes))
        expected = f"probability targets ({classes},)"
    else:
        if t.shape in ((), (1,)):
            return reshape(input, (1, classes)), reshape(target, (1,))
        expected = "class-index targets () or (1,)"
    raise ShapeError(
        f"{caller}: target {t.shape} does not fit input ({classes},): a single sample takes "
        f"{expected}"
    )
