"""ReduceLROnPlateau: lower the lr when a watched metric stops improving."""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

from ...errors import ArgumentError, DTypeError
from ..optimizer import Optimizer, check_range
from .base import EPOCH_DEPRECATION, LRScheduler

__all__ = ["ReduceLROnPlateau"]


def _non_negative_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ArgumentError(f"ReduceLROnPlateau: {name} must be an int >= 0, got {value!r}")
    return int(value)


class ReduceLROnPlateau(LRScheduler):
    """Multiply every group's lr by `factor` once the metric given to `step(metrics)` has not
    improved for more than `patience` steps, as PyTorch's; then wait `cooldown` steps before
    counting again. The lr never goes below `min_lr` (a float, or a list of one per group), and
    a change smaller than `eps` is skipped.

    Improving means, in mode "min" (or "max"), going below best * (1 - threshold) (above best *
    (1 + threshold)) with threshold_mode "rel", or below best - threshold (above best +
    threshold) with "abs".

    Unlike the other schedulers it takes no step at construction, and `step` needs the metric
    (a number, or a one-element tensor).
    """

    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: float | list[float] = 0,
        eps: float = 1e-8,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise DTypeError(
                f"ReduceLROnPlateau: expected an Optimizer, got {type(optimizer).__name__}"
            )
        check_range("ReduceLROnPlateau", "factor", factor, 0.0)
        if factor >= 1.0:
            raise ArgumentError(f"ReduceLROnPlateau: factor must be < 1.0, got {factor}")
        groups = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != groups:
                raise ArgumentError(
                    f"ReduceLROnPlateau: expected {groups} min_lrs (one per parameter group), "
                    f"got {len(min_lr)}"
                )
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * groups
        for value in self.min_lrs:
            check_range("ReduceLROnPlateau", "min_lr", value, 0.0)
        check_range("ReduceLROnPlateau", "threshold", threshold, -math.inf)
        check_range("ReduceLROnPlateau", "eps", eps, -math.inf)
        self.optimizer = optimizer
        self.factor = factor
        self.patience = _non_negative_int("patience", patience)
        self.cooldown = _non_negative_int("cooldown", cooldown)
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = self._group_lrs()
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in ("min", "max"):
            raise ArgumentError(f"ReduceLROnPlateau: mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise ArgumentError(
                f"ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', got {threshold_mode!r}"
            )
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        """Whether it is still waiting, after a reduction, before counting bad epochs again."""
        return self.cooldown_counter > 0

    def is_better(self, a: float, best: float) -> bool:
        """Whether metric value `a` improves on `best`, by the mode and threshold."""
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def step(self, metrics, epoch: int | None = None) -> None:  # type: ignore[override]
        """Record this epoch's metric and reduce the lrs if it has not improved for more than
        `patience` epochs. `epoch` is deprecated, as in PyTorch (a UserWarning)."""
        try:
            current = float(metrics)
        except (TypeError, ValueError) as error:
            raise DTypeError(
                f"ReduceLROnPlateau.step: metrics must be a number or a one-element tensor, "
                f"got {type(metrics).__name__}"
            ) from error
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._group_lrs()

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise ArgumentError(
                    f"ReduceLROnPlateau: the optimizer has {len(groups)} parameter groups, but "
                    f"min_lr lists {len(self.min_lrs)} (a group was added since); set "
                    f"scheduler.min_lrs to one value per group"
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs, strict=True):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, min_lr)
            if old_lr - new_lr > self.eps:
                group["lr"] = new_lr

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what `state_dict()` returned (the mode and thresholds checked again)."""
        super().load_state_dict(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)
