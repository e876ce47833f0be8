"""Learning-rate schedulers: each step sets every parameter group's 'lr' by a schedule, producing
exactly PyTorch's sequence of learning rates."""

from __future__ import annotations

import copy
import math
import numbers
import types
import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import ArgumentError, DTypeError
from .optimizer import Optimizer, check_range

__all__ = [
    "LRScheduler", "LambdaLR", "StepLR", "MultiStepLR", "ExponentialLR", "LinearLR",
    "CosineAnnealingLR",
]  # fmt: skip


def _positive_int(caller: str, name: str, value) -> int:
    """`value` as a Python int, numpy's included (counts are often computed with numpy)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ArgumentError(f"{caller}: {name} must be a positive int, got {value!r}")
    return int(value)


class LRScheduler:
    """Base class of the schedulers, as PyTorch's.

    Creating a scheduler records each group's starting lr as `group['initial_lr']` (kept in
    `base_lrs`) and takes the first step, which sets the lr of epoch 0. Each `step()` after
    `optimizer.step()` advances `last_epoch` by one and writes the new lrs into the groups.

    A subclass writes `get_lr()`, the lrs of epoch `last_epoch` computed, like PyTorch's, in the
    chainable form: from the groups' current lrs, so schedulers can be stacked on one optimizer.
    `step()` calls it; read the current lrs with `get_last_lr()`.

    To resume from a checkpoint, create the optimizer and the scheduler, then load the
    optimizer's state dict and then the scheduler's: creating a scheduler writes the groups'
    lrs, so it must come before they are loaded. (PyTorch's other way also works: pass
    `last_epoch`, the last epoch done, once the groups hold 'initial_lr'.)
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        name = type(self).__name__
        if not isinstance(optimizer, Optimizer):
            raise DTypeError(f"{name}: expected an Optimizer, got {type(optimizer).__name__}")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for index, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"{name}: resuming at last_epoch={last_epoch}, but parameter group "
                        f"{index} has no 'initial_lr': load the optimizer's state dict first"
                    )
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self._is_initial = True  # the first step, from the constructor, sets epoch 0's lr
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        """The lrs for epoch `last_epoch`, one per group (called by `step`)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement get_lr")

    def get_last_lr(self) -> list[float]:
        """The lrs the last step set, one per parameter group."""
        return list(self._last_lr)

    def _group_lrs(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]

    def _optimizer_never_stepped(self) -> bool:
        # Only Optimizer.step counts its calls; an optimizer that replaces it is not judged.
        return type(self.optimizer).step is Optimizer.step and self.optimizer._step_count == 0

    def step(self) -> None:
        """Advance one epoch and write its lr into every parameter group. Call it after
        `optimizer.step()`."""
        self._step_count += 1
        if self._step_count == 2 and self._optimizer_never_stepped():
            warnings.warn(
                f"{type(self).__name__}.step() was called before optimizer.step(): the first "
                f"lr of the schedule is skipped. Call optimizer.step() first, then "
                f"scheduler.step().",
                UserWarning,
                stacklevel=2,
            )
        self.last_epoch += 1
        lrs = self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, lrs, strict=True):
            group["lr"] = lr
        self._last_lr = self._group_lrs()

    def state_dict(self) -> dict[str, Any]:
        """Everything the scheduler holds but its optimizer, copied."""
        return {key: copy.deepcopy(v) for key, v in vars(self).items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what `state_dict()` returned. The groups' lrs are the optimizer's to restore."""
        self._check_keys(state_dict)
        self.__dict__.update(copy.deepcopy(state_dict))

    def _check_keys(self, state_dict: dict[str, Any]) -> None:
        expected = vars(self).keys() - {"optimizer"}
        missing, unknown = expected - state_dict.keys(), state_dict.keys() - expected
        if missing or unknown:
            raise ArgumentError(
                f"{type(self).__name__}.load_state_dict: the state dict does not fit this "
                f"scheduler (missing: {sorted(missing)}, unknown: {sorted(unknown)}); is it "
                f"another scheduler's?"
            )


class LambdaLR(LRScheduler):
    """lr = initial_lr * lr_lambda(epoch), one function for all groups or a list of one per
    group. E.g. linear warm-up over 100 steps: `LambdaLR(opt, lambda e: min(1, (e + 1) / 100))`.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        groups = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != groups:
                raise ArgumentError(
                    f"LambdaLR: got {len(lr_lambda)} lr_lambdas for {groups} parameter groups"
                )
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * groups
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise DTypeError(f"LambdaLR: lr_lambda must be callable, got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        epoch = self.last_epoch
        return [base * fn(epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs, strict=True)]

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
                f"LambdaLR.load_state_dict: the state dict has {len(saved_lambdas)} "
                f"lr_lambdas, this scheduler has {len(self.lr_lambdas)}"
            )
        self.__dict__.update(state)
        for fn, attributes in zip(self.lr_lambdas, saved_lambdas, strict=True):
            if attributes is not None:
                fn.__dict__.update(attributes)


class StepLR(LRScheduler):
    """Multiply the lr by gamma every step_size epochs: lr = initial_lr * gamma**(epoch //
    step_size)."""

    def __init__(
        self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.step_size = _positive_int("StepLR", "step_size", step_size)
        check_range("StepLR", "gamma", gamma, 0.0)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]


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
        self.total_iters = _positive_int("LinearLR", "total_iters", total_iters)
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
        self.T_max = _positive_int("CosineAnnealingLR", "T_max", T_max)
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
