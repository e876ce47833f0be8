"""The schedules that cycle: CyclicLR, OneCycleLR (both also cycling the momentum) and
CosineAnnealingWarmRestarts."""

from __future__ import annotations

import copy
import math
import numbers
import types
from collections.abc import Callable
from typing import Any

from ...errors import ArgumentError, DTypeError
from ..optimizer import Optimizer, check_range
from .base import LRScheduler, positive_int

__all__ = ["CyclicLR", "OneCycleLR", "CosineAnnealingWarmRestarts"]


def _per_group(caller: str, name: str, optimizer: Optimizer, value) -> list:
    """One value per parameter group: a list or tuple as given (its length checked), else the
    value repeated."""
    groups = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != groups:
            raise ArgumentError(
                f"{caller}: expected {groups} values for {name} (one per parameter group), got "
                f"{len(value)}"
            )
        return list(value)
    return [value] * groups


def _start_momentum_cycle(
    caller: str, optimizer: Optimizer, base_momentum, max_momentum, fresh: bool
) -> tuple[bool, list, list]:
    """Check that the optimizer has a momentum ('momentum', or beta1 of 'betas'), record each
    group's 'base_momentum' and 'max_momentum' and, on a fresh start, set the momentum to its
    maximum. Returns whether beta1 is the momentum, and the per-group bounds."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ArgumentError(
            f"{caller}: cycle_momentum=True needs an optimizer with a 'momentum' or 'betas' "
            f"option; {type(optimizer).__name__} has neither (pass cycle_momentum=False)"
        )
    use_beta1 = "betas" in optimizer.defaults
    base_momentums = _per_group(caller, "base_momentum", optimizer, base_momentum)
    max_momentums = _per_group(caller, "max_momentum", optimizer, max_momentum)
    if fresh:
        for group, low, high in zip(
            optimizer.param_groups, base_momentums, max_momentums, strict=True
        ):
            _set_momentum(group, high, use_beta1)
            group["max_momentum"] = high
            group["base_momentum"] = low
    return use_beta1, base_momentums, max_momentums


def _set_momentum(group: dict[str, Any], momentum: float, use_beta1: bool) -> None:
    if use_beta1:
        group["betas"] = (momentum, *group["betas"][1:])
    else:
        group["momentum"] = momentum


def _positive_size(name: str, value) -> float:
    check_range("CyclicLR", name, value, 0.0)
    if value == 0:
        raise ArgumentError(f"CyclicLR: {name} must be > 0, got {value}")
    return float(value)


class CyclicLR(LRScheduler):
    """Cycle the lr between base_lr and max_lr (Smith, 2017), stepped once per batch: up over
    step_size_up steps, down over step_size_down (default: the same), as PyTorch's. With x the
    position in the cycle (0 to 1) and cycle the cycle number (from 1):

        lr = base_lr + (max_lr - base_lr) * height(x) * scale

    where scale is 1 ("triangular"), 1 / 2**(cycle - 1) ("triangular2"), gamma**step
    ("exp_range"), or `scale_fn(cycle)` / `scale_fn(step)` for a custom `scale_fn` with
    `scale_mode` "cycle" / "iterations". With cycle_momentum (the default), the momentum (SGD's
    'momentum', or beta1 of Adam's 'betas') moves the other way, between max_momentum and
    base_momentum. base_lr, max_lr and the momenta are floats or lists of one per group.

    state_dict saves a custom scale_fn's attributes only (a plain function is not saved), as
    PyTorch does.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr: float | list[float],
        max_lr: float | list[float],
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.8,
        max_momentum: float | list[float] = 0.9,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise DTypeError(f"CyclicLR: expected an Optimizer, got {type(optimizer).__name__}")
        base_lrs = _per_group("CyclicLR", "base_lr", optimizer, base_lr)
        self.max_lrs = _per_group("CyclicLR", "max_lr", optimizer, max_lr)
        up = _positive_size("step_size_up", step_size_up)
        down = up if step_size_down is None else _positive_size("step_size_down", step_size_down)
        if scale_fn is None and mode not in ("triangular", "triangular2", "exp_range"):
            raise ArgumentError(
                f"CyclicLR: mode must be 'triangular', 'triangular2' or 'exp_range' (or give "
                f"scale_fn), got {mode!r}"
            )
        if scale_fn is not None and not callable(scale_fn):
            raise DTypeError(f"CyclicLR: scale_fn must be callable, got {type(scale_fn).__name__}")
        if scale_mode not in ("cycle", "iterations"):
            raise ArgumentError(
                f"CyclicLR: scale_mode must be 'cycle' or 'iterations', got {scale_mode!r}"
            )
        check_range("CyclicLR", "gamma", gamma, 0.0)
        fresh = last_epoch == -1
        if fresh:
            for group, lr in zip(optimizer.param_groups, base_lrs, strict=True):
                group["lr"] = lr
        self.total_size = float(up + down)
        self.step_ratio = up / self.total_size
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        if scale_fn is None:  # the built-in modes fix their scale mode, as in PyTorch
            scale_mode = "iterations" if mode == "exp_range" else "cycle"
        self.scale_mode = scale_mode
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1, self.base_momentums, self.max_momentums = _start_momentum_cycle(
                "CyclicLR", optimizer, base_momentum, max_momentum, fresh
            )
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def scale_fn(self, x: float) -> float:
        """The amplitude's scale at cycle (or step) x: the custom scale_fn's, else the mode's."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        if self.mode == "exp_range":
            return self.gamma**x
        return 1.0

    def get_lr(self) -> list[float]:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            height = x / self.step_ratio
        else:
            height = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [
            base + (high - base) * height * scale
            for base, high in zip(self.base_lrs, self.max_lrs, strict=True)
        ]
        if self.cycle_momentum:
            for group, low, high in zip(
                self.optimizer.param_groups, self.base_momentums, self.max_momentums, strict=True
            ):
                _set_momentum(group, high - (high - low) * height * scale, self.use_beta1)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """As the base class, with a custom scale_fn saved as its attributes (None for a plain
        function), as PyTorch does."""
        state = {
            key: copy.deepcopy(value)
            for key, value in vars(self).items()
            if key not in ("optimizer", "_scale_fn_custom")
        }
        custom = self._scale_fn_custom
        state["_scale_fn_custom"] = (
            None
            if custom is None or isinstance(custom, types.FunctionType)
            else copy.deepcopy(custom.__dict__)
        )
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what `state_dict()` returned; a custom scale_fn gets its saved attributes."""
        self._check_keys(state_dict)
        saved_fn = state_dict["_scale_fn_custom"]
        self.__dict__.update(
            {k: copy.deepcopy(v) for k, v in state_dict.items() if k != "_scale_fn_custom"}
        )
        if saved_fn is not None and self._scale_fn_custom is not None:
            self._scale_fn_custom.__dict__.update(copy.deepcopy(saved_fn))


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin, 2018), stepped once per batch for total_steps steps
    (or epochs * steps_per_epoch), as PyTorch's: the lr rises from max_lr / div_factor to max_lr
    over the first pct_start of the steps, then anneals to initial_lr / final_div_factor; with
    three_phase, it comes back down to initial_lr symmetrically before annealing to the minimum.
    Annealing is along a half cosine ("cos") or a line ("linear"). With cycle_momentum (the
    default), the momentum (SGD's 'momentum', or beta1 of Adam's 'betas') moves the other way,
    between max_momentum and base_momentum.

    Each group gets 'initial_lr', 'max_lr' and 'min_lr' entries (and 'base_momentum',
    'max_momentum'). Stepping past total_steps raises an ArgumentError (a ValueError), as
    PyTorch does.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float | list[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.85,
        max_momentum: float | list[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise DTypeError(f"OneCycleLR: expected an Optimizer, got {type(optimizer).__name__}")
        if total_steps is not None:
            self.total_steps = positive_int("OneCycleLR", "total_steps", total_steps)
        elif epochs is not None and steps_per_epoch is not None:
            epochs = positive_int("OneCycleLR", "epochs", epochs)
            steps_per_epoch = positive_int("OneCycleLR", "steps_per_epoch", steps_per_epoch)
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ArgumentError(
                "OneCycleLR: give either total_steps or both epochs and steps_per_epoch"
            )
        check_range("OneCycleLR", "pct_start", pct_start, 0.0)
        if pct_start > 1:
            raise ArgumentError(f"OneCycleLR: pct_start must be in [0, 1], got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ArgumentError(
                f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}"
            )
        check_range("OneCycleLR", "div_factor", div_factor, 0.0)
        check_range("OneCycleLR", "final_div_factor", final_div_factor, 0.0)
        max_lrs = _per_group("OneCycleLR", "max_lr", optimizer, max_lr)
        warm_end = float(pct_start * self.total_steps) - 1
        if three_phase:
            self._schedule_phases = [
                _phase(warm_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(
                    float(2 * pct_start * self.total_steps) - 2,
                    "max_lr",
                    "initial_lr",
                    "base_momentum",
                    "max_momentum",
                ),  # fmt: skip
                _phase(
                    self.total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"
                ),
            ]
        else:
            self._schedule_phases = [
                _phase(warm_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(self.total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        self._anneal_func_type = anneal_strategy
        fresh = last_epoch == -1
        if fresh:
            for group, top in zip(optimizer.param_groups, max_lrs, strict=True):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1, _, _ = _start_momentum_cycle(
                "OneCycleLR", optimizer, base_momentum, max_momentum, fresh
            )
        super().__init__(optimizer, last_epoch)

    def step(self, epoch: int | None = None) -> None:
        """Advance one step; past total_steps an ArgumentError, raised before anything
        changes."""
        if epoch is None and self.last_epoch + 1 > self.total_steps:
            raise ArgumentError(
                f"OneCycleLR: stepped {self.last_epoch + 1} times, but total_steps is "
                f"{self.total_steps}"
            )
        super().step(epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ArgumentError(
                f"OneCycleLR: stepped {step} times, but total_steps is {self.total_steps}"
            )
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for index, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step <= end_step or index == len(self._schedule_phases) - 1:
                    pct = (step - start_step) / (end_step - start_step)
                    lr = self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        momentum = self._anneal(
                            group[phase["start_momentum"]], group[phase["end_momentum"]], pct
                        )
                        _set_momentum(group, momentum, self.use_beta1)
                    break
                start_step = end_step
            lrs.append(lr)
        return lrs


def _phase(end_step, start_lr, end_lr, start_momentum, end_momentum) -> dict[str, Any]:
    """One phase of OneCycleLR: where it ends and which group entries it goes from and to."""
    return {
        "end_step": end_step,
        "start_lr": start_lr,
        "end_lr": end_lr,
        "start_momentum": start_momentum,
        "end_momentum": end_momentum,
    }


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR (Loshchilov & Hutter, 2017): a cosine from initial_lr down to eta_min over T_i
    epochs, then a restart; the first period is T_0 epochs, each next one T_mult times longer:

        lr = eta_min + (initial_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2

    `step(epoch)` takes a float epoch, so it can be stepped within an epoch, e.g.
    `scheduler.step(epoch + i / iters)`; `step()` advances T_cur by one.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        T_0: int,  # noqa: N803 (PyTorch's names)
        T_mult: int = 1,  # noqa: N803
        eta_min: float = 0.0,
        last_epoch: int = -1,
    ) -> None:
        self.T_0 = positive_int("CosineAnnealingWarmRestarts", "T_0", T_0)
        self.T_i = self.T_0
        self.T_mult = positive_int("CosineAnnealingWarmRestarts", "T_mult", T_mult)
        check_range("CosineAnnealingWarmRestarts", "eta_min", eta_min, -math.inf)
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        cosine = 1 + math.cos(math.pi * self.T_cur / self.T_i)
        return [self.eta_min + (base - self.eta_min) * cosine / 2 for base in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """Advance one epoch (T_cur + 1, restarting at T_i), or go to `epoch`, a float >= 0
        (T_cur and T_i recomputed from it)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if isinstance(epoch, bool) or not isinstance(epoch, numbers.Real):
                raise DTypeError(
                    f"CosineAnnealingWarmRestarts.step: epoch must be a number, got "
                    f"{type(epoch).__name__}"
                )
            if epoch < 0:
                raise ArgumentError(
                    f"CosineAnnealingWarmRestarts.step: epoch must be >= 0, got {epoch}"
                )
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    # the restart n before epoch: T_0 (T_mult**n - 1) / (T_mult - 1) <= epoch
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult**n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        for group, lr in zip(self.optimizer.param_groups, self.get_lr(), strict=True):
            group["lr"] = lr
        self._last_lr = self._group_lrs()
