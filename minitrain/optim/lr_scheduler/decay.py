"""The schedules of fixed form: each epoch's lr a function of the epoch (by a lambda, steps,
milestones, an exponential, a line, a polynomial or a cosine)."""

from __future__ import annotations

import copy
import math
import numbers
import types
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from ...errors import ArgumentError, DTypeError
from ..optimizer import Optimizer, check_range
from .base import LRScheduler, positive_int

__all__ = [
    "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
    "ExponentialLR", "PolynomialLR", "CosineAnnealingLR",
]  # fmt: skip


class _LambdaScheduler(LRScheduler):
    """A scheduler driven by a function of the epoch, one for all groups or one per group."""

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        name, groups = type(self).__name__, len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != groups:
                raise ArgumentError(
                    f"{name}: got {len(lr_lambda)} lr_lambdas for {groups} parameter groups"
                )
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * groups
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise DTypeError(f"{name}: lr_lambda must be callable, got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """As the base class, but functions are not saved; callable objects save their
        attributes (`__dict__`), as PyTorch does."""
        state = {
            key: copy.deepcopy(v)
            for key, v in vars(self).items()
            if key not in ("optimizer", "lr_lambdas")
        }
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else copy.deepcopy(fn.__dict__)
            for fn in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._check_keys(state_dict)
        state = copy.deepcopy(state_dict)
        saved_lambdas = state.pop("lr_lambdas")
        if len(saved_lambdas) != len(self.lr_lambdas):
            raise ArgumentError(
                f"{type(self).__name__}.load_state_dict: the state dict has {len(saved_lambdas)} "
                f"lr_lambdas, this scheduler has {len(self.lr_lambdas)}"
            )
        self.__dict__.update(state)
        for fn, attributes in zip(self.lr_lambdas, saved_lambdas, strict=True):
            if attributes is not None:
                fn.__dict__.update(attributes)


class LambdaLR(_LambdaScheduler):
    """lr = initial_lr * lr_lambda(epoch), one function for all groups or a list of one per
    group. E.g. linear warm-up over 100 steps: `LambdaLR(opt, lambda e: min(1, (e + 1) / 100))`.
    """

    def get_lr(self) -> list[float]:
        epoch = self.last_epoch
        return [base * fn(epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs, strict=True)]


class MultiplicativeLR(_LambdaScheduler):
    """Multiply the lr by lr_lambda(epoch) at every epoch after the first: lr = lr_prev *
    lr_lambda(epoch). One function for all groups or a list of one per group."""

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return self._group_lrs()
        epoch = self.last_epoch
        return [lr * fn(epoch) for fn, lr in zip(self.lr_lambdas, self._group_lrs(), strict=True)]


class StepLR(LRScheduler):
    """Multiply the lr by gamma every step_size epochs: lr = initial_lr * gamma**(epoch //
    step_size)."""

    def __init__(
        self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.step_size = positive_int("StepLR", "step_size", step_size)
        check_range("StepLR", "gamma", gamma, 0.0)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by gamma at each milestone epoch: lr = initial_lr * gamma**(number of
    milestones <= epoch). A milestone given twice multiplies by gamma twice."""

    def __init__(
        self,
        optimizer: Optimizer,
        milestones: Iterable[int],
        gamma: float = 0.1,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(milestones, Iterable):
            raise DTypeError(
                f"MultiStepLR: milestones must be an iterable of ints, got "
                f"{type(milestones).__name__}"
            )
        milestones = list(milestones)
        for milestone in milestones:
            if isinstance(milestone, bool) or not isinstance(milestone, numbers.Integral):
                raise ArgumentError(f"MultiStepLR: milestones must be ints, got {milestone!r}")
        check_range("MultiStepLR", "gamma", gamma, 0.0)
        self.milestones = Counter(int(milestone) for milestone in milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch not in self.milestones:
            return self._group_lrs()
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [lr * factor for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        passed = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base * self.gamma**passed for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the lr by gamma every epoch: lr = initial_lr * gamma**epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        check_range("ExponentialLR", "gamma", gamma, 0.0)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale the lr by a factor going linearly from start_factor to end_factor over total_iters
    epochs, then constant (a warm-up with the defaults):

        lr = initial_lr * (start_factor + (end_factor - start_factor) * min(epoch, total_iters)
                           / total_iters)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        check_range("LinearLR", "start_factor", start_factor, 0.0)
        check_range("LinearLR", "end_factor", end_factor, 0.0)
        if not 0 < start_factor <= 1:
            raise ArgumentError(f"LinearLR: start_factor must be in (0, 1], got {start_factor}")
        if not 0 <= end_factor <= 1:
            raise ArgumentError(f"LinearLR: end_factor must be in [0, 1], got {end_factor}")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = positive_int("LinearLR", "total_iters", total_iters)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._group_lrs()]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._group_lrs()
        # The chainable form: the ratio of this epoch's factor to the previous epoch's.
        change = self.end_factor - self.start_factor
        ratio = 1.0 + change / (
            self.total_iters * self.start_factor + (self.last_epoch - 1) * change
        )
        return [lr * ratio for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        progress = min(self.total_iters, self.last_epoch) / self.total_iters
        factor = self.start_factor + (self.end_factor - self.start_factor) * progress
        return [base * factor for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Anneal the lr from initial_lr down to eta_min along a half cosine over T_max epochs:

        lr = eta_min + (initial_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2

    computed, as PyTorch does, in the chainable form (each lr from the previous one). Past T_max
    the cosine continues, so the lr rises back to initial_lr at 2 * T_max, and so on (SGDR
    without restarts).
    """

    def __init__(
        self,
        optimizer: Optimizer,
        T_max: int,  # noqa: N803 (PyTorch's name)
        eta_min: float = 0.0,
        last_epoch: int = -1,
    ) -> None:
        self.T_max = positive_int("CosineAnnealingLR", "T_max", T_max)
        check_range("CosineAnnealingLR", "eta_min", eta_min, 0.0)
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        epoch, period, eta_min = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._group_lrs()
        if (epoch - 1 - period) % (2 * period) == 0:
            # Leaving the bottom of the cosine, where the ratio below would divide by 0.
            return [
                lr + (base - eta_min) * (1 - math.cos(math.pi / period)) / 2
                for lr, base in zip(self._group_lrs(), self.base_lrs, strict=True)
            ]
        ratio = (1 + math.cos(math.pi * epoch / period)) / (
            1 + math.cos(math.pi * (epoch - 1) / period)
        )
        return [ratio * (lr - eta_min) + eta_min for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        cosine = 1 + math.cos(math.pi * self.last_epoch / self.T_max)
        return [self.eta_min + (base - self.eta_min) * cosine / 2 for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """Multiply the lr by a constant factor until epoch total_iters, then restore it: lr =
    initial_lr * factor for epoch < total_iters, initial_lr after."""

    def __init__(
        self,
        optimizer: Optimizer,
        factor: float = 1.0 / 3,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        check_range("ConstantLR", "factor", factor, 0.0)
        if factor > 1:
            raise ArgumentError(f"ConstantLR: factor must be in [0, 1], got {factor}")
        if isinstance(total_iters, bool) or not isinstance(total_iters, numbers.Integral):
            raise ArgumentError(f"ConstantLR: total_iters must be an int, got {total_iters!r}")
        self.factor = factor
        self.total_iters = int(total_iters)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._group_lrs()]
        if self.last_epoch != self.total_iters:
            return self._group_lrs()
        return [lr * (1.0 / self.factor) for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        factor = self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)
        return [base * factor for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the lr to 0 over total_iters epochs along a polynomial, then keep it there:

        lr = initial_lr * (1 - min(epoch, total_iters) / total_iters) ** power

    computed, as PyTorch does, in the chainable form (each lr from the previous one)."""

    def __init__(
        self,
        optimizer: Optimizer,
        total_iters: int = 5,
        power: float = 1.0,
        last_epoch: int = -1,
    ) -> None:
        self.total_iters = positive_int("PolynomialLR", "total_iters", total_iters)
        check_range("PolynomialLR", "power", power, -math.inf)
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._group_lrs()
        epoch, total = self.last_epoch, self.total_iters
        decay = ((1.0 - epoch / total) / (1.0 - (epoch - 1) / total)) ** self.power
        return [lr * decay for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        progress = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (1.0 - progress) ** self.power for base in self.base_lrs]
