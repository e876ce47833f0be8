"""The scheduler base class, LRScheduler, and the schedulers that run others: SequentialLR and
ChainedScheduler."""

from __future__ import annotations

import copy
import numbers
import warnings
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from ...errors import ArgumentError, DTypeError
from ..optimizer import Optimizer

__all__ = ["LRScheduler", "SequentialLR", "ChainedScheduler"]

EPOCH_DEPRECATION = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if "
    "epoch is different from None, the closed form is used instead of the new chainable form, "
    "where available."
)


def positive_int(caller: str, name: str, value) -> int:
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
        self._initial_step()

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

    def _initial_step(self) -> None:
        """The step construction takes, setting epoch 0's lrs (SequentialLR retakes it when it
        hands over to a scheduler)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def _get_closed_form_lr(self) -> list[float] | None:
        """The lrs of epoch `last_epoch` computed from `base_lrs` alone, for schedulers that
        have such a form (None otherwise): used by `step(epoch)` and by SequentialLR when it
        restarts a scheduler at epoch 0, as PyTorch does."""
        return None

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch and write its lr into every parameter group. Call it after
        `optimizer.step()`.

        `epoch` is deprecated, as in PyTorch (a UserWarning): it sets `last_epoch` to it and
        takes the closed-form lrs of that epoch where the scheduler has them."""
        self._step_count += 1
        if self._step_count == 2 and self._optimizer_never_stepped():
            warnings.warn(
                f"{type(self).__name__}.step() was called before optimizer.step(): the first "
                f"lr of the schedule is skipped. Call optimizer.step() first, then "
                f"scheduler.step().",
                UserWarning,
                stacklevel=2,
            )
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            lrs = self.get_lr()
        else:
            self.last_epoch = epoch
            lrs = self._get_closed_form_lr()
            if lrs is None:
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


def _check_schedulers(caller: str, schedulers, optimizer: Optimizer) -> list[LRScheduler]:
    """The schedulers as a list, after PyTorch's checks: at least one, each an LRScheduler on
    `optimizer`, none a ReduceLROnPlateau (its step needs the metric)."""
    from .plateau import ReduceLROnPlateau  # plateau.py builds on this module

    if isinstance(schedulers, LRScheduler) or not isinstance(schedulers, Sequence):
        raise DTypeError(
            f"{caller}: schedulers must be a list of schedulers, got {type(schedulers).__name__}"
        )
    if not schedulers:
        raise ArgumentError(f"{caller}: expects at least one scheduler, got none")
    for index, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise DTypeError(
                f"{caller}: schedulers[{index}] is a {type(scheduler).__name__}, which has no "
                f"optimizer: not a scheduler"
            )
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ArgumentError(
                f"{caller}: schedulers[{index}] is a ReduceLROnPlateau, which cannot be run by "
                f"another scheduler: its step needs the metric"
            )
        if scheduler.optimizer is not optimizer:
            raise ArgumentError(
                f"{caller}: schedulers[{index}] ({type(scheduler).__name__}) belongs to another "
                f"optimizer; all must belong to the same one"
            )
    return list(schedulers)


class SequentialLR(LRScheduler):
    """Run `schedulers` one after the other, switching at each epoch of `milestones` (one fewer
    than the schedulers), e.g. a LinearLR warm-up for 5 epochs then a CosineAnnealingLR:
    `SequentialLR(opt, [warmup, cosine], milestones=[5])`.

    As in PyTorch, creating it puts every group's lr back to its initial_lr and takes the first
    scheduler's first step again; at a milestone the next scheduler restarts at its epoch 0
    (its closed form where it has one). The schedulers must be made on the same optimizer, just
    before, and not stepped on their own.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        schedulers: list[LRScheduler],
        milestones: list[int],
        last_epoch: int = -1,
    ) -> None:
        schedulers = _check_schedulers("SequentialLR", schedulers, optimizer)
        milestones = list(milestones)
        if len(milestones) != len(schedulers) - 1:
            raise ArgumentError(
                f"SequentialLR: expects one milestone fewer than schedulers, got "
                f"{len(schedulers)} schedulers and {len(milestones)} milestones"
            )
        for milestone in milestones:
            if isinstance(milestone, bool) or not isinstance(milestone, numbers.Integral):
                raise ArgumentError(f"SequentialLR: milestones must be ints, got {milestone!r}")
        self._schedulers = schedulers
        self._milestones = [int(milestone) for milestone in milestones]
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # Undo the steps the schedulers took when they were made, then retake the first one's.
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        _undo_initial_steps(self)
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def step(self) -> None:  # type: ignore[override]
        """Advance one epoch: step the scheduler in charge, or restart the next one at a
        milestone."""
        self.last_epoch += 1
        index = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict[str, Any]:
        """Its own state, and each scheduler's state dict under '_schedulers'."""
        return _composite_state_dict(self)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what `state_dict()` returned, its schedulers' states included."""
        _load_composite_state_dict(self, state_dict)


def _undo_initial_steps(scheduler) -> None:
    """Step back every scheduler in `scheduler` by one epoch, nested ones included."""
    if hasattr(scheduler, "_schedulers"):
        for inner in scheduler._schedulers:
            _undo_initial_steps(inner)
    elif hasattr(scheduler, "last_epoch"):
        scheduler.last_epoch -= 1


class ChainedScheduler(LRScheduler):
    """Step several schedulers together, each multiplying in its own factor (chainable form):
    e.g. a ConstantLR warm-up with an ExponentialLR decay on the same optimizer. `optimizer`
    defaults to the first scheduler's."""

    def __init__(
        self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None
    ) -> None:
        if optimizer is None and isinstance(schedulers, Sequence) and schedulers:
            optimizer = getattr(schedulers[0], "optimizer", None)
        self._schedulers = _check_schedulers("ChainedScheduler", schedulers, optimizer)
        self.optimizer = optimizer
        self._last_lr = self._group_lrs()

    def step(self) -> None:  # type: ignore[override]
        """Step every scheduler, in order."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = self._group_lrs()

    def state_dict(self) -> dict[str, Any]:
        """Its own state, and each scheduler's state dict under '_schedulers'."""
        return _composite_state_dict(self)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what `state_dict()` returned, its schedulers' states included."""
        _load_composite_state_dict(self, state_dict)


def _composite_state_dict(scheduler) -> dict[str, Any]:
    state = {
        key: copy.deepcopy(value)
        for key, value in vars(scheduler).items()
        if key not in ("optimizer", "_schedulers")
    }
    state["_schedulers"] = [inner.state_dict() for inner in scheduler._schedulers]
    return state


def _load_composite_state_dict(scheduler, state_dict: dict[str, Any]) -> None:
    scheduler._check_keys(state_dict)
    inner_states = state_dict["_schedulers"]
    if len(inner_states) != len(scheduler._schedulers):
        raise ArgumentError(
            f"{type(scheduler).__name__}.load_state_dict: the state dict has "
            f"{len(inner_states)} schedulers, this one has {len(scheduler._schedulers)}"
        )
    scheduler.__dict__.update(
        {k: copy.deepcopy(v) for k, v in state_dict.items() if k != "_schedulers"}
    )
    for inner, inner_state in zip(scheduler._schedulers, inner_states, strict=True):
        inner.load_state_dict(inner_state)
