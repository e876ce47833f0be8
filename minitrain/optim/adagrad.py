"""Adagrad and Adadelta: step sizes scaled per element by the gradients' accumulated squares."""

from __future__ import annotations

from typing import Any

from .. import backend
from ..errors import ArgumentError
from ..tensor import Tensor
from .optimizer import Optimizer, ParamsT, check_range


class Adagrad(Optimizer):
    """Adagrad (Duchi et al., 2011), with PyTorch's update rule. For each parameter p with
    gradient g, at step t = 1, 2, ... (the sum s starts at initial_accumulator_value):

        g = -g                                      if maximize
        g = g + weight_decay * p                    if weight_decay != 0
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g
        p = p - clr * g / (sqrt(s) + eps)

    State per parameter: `step` (t, a float as PyTorch keeps it) and `sum` (s), made at
    construction as PyTorch does. As in PyTorch, every sum starts at the constructor's
    initial_accumulator_value: a group's own value is kept in the group but not used.
    `fused=True` together with `foreach=True` or `differentiable=True` raises a RuntimeError
    (an ArgumentError too), as PyTorch does.

    `foreach`, `fused`, `capturable` and `differentiable` are accepted as PyTorch's and kept in
    the groups (so state dicts have PyTorch's keys), but change nothing here: the update is a few
    array expressions per parameter, never recorded by autograd.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        if fused and foreach:
            raise ArgumentError("Adagrad: fused=True and foreach=True cannot be used together")
        if fused and differentiable:
            raise ArgumentError("Adagrad: fused=True does not support differentiable=True")
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)
        # PyTorch makes the state at construction, so a state dict saved before any step
        # already holds every parameter's sum.
        for group in self.param_groups:
            for param in group["params"]:
                self._init_state(param)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        for option in ("lr_decay", "weight_decay", "initial_accumulator_value", "eps"):
            check_range("Adagrad", option, group[option], 0.0)

    def _init_state(self, param: Tensor) -> None:
        xp, data = backend.array_module(param.array), param.array
        state = self.state[param]
        state["step"] = 0.0
        state["sum"] = xp.full_like(data, self.defaults["initial_accumulator_value"])

    def _update(self, param: Tensor, grad, group: dict[str, Any]) -> None:
        xp, data = backend.array_module(param.array), param.array
        state = self.state[param]
        if not state:  # a parameter added by add_param_group after construction
            self._init_state(param)
        state["step"] += 1
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * data
        clr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        state_sum = state["sum"]
        state_sum += grad * grad
        data -= clr * (grad / (xp.sqrt(state_sum) + group["eps"]))


class Adadelta(Optimizer):
    """Adadelta (Zeiler, 2012), with PyTorch's update rule. For each parameter p with gradient
    g (the running averages v and u start at 0):

        g = -g                                      if maximize
        g = g + weight_decay * p                    if weight_decay != 0
        v = rho * v + (1 - rho) * g * g
        delta = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta
        p = p - lr * delta

    State per parameter: `step`, `square_avg` (v) and `acc_delta` (u).

    `foreach`, `fused`, `capturable` and `differentiable` are accepted as PyTorch's and kept in
    the groups (so state dicts have PyTorch's keys), but change nothing here: the update is a few
    array expressions per parameter, never recorded by autograd.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "capturable": capturable,
            "foreach": foreach,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        check_range("Adadelta", "rho", group["rho"], 0.0)
        if group["rho"] > 1:
            raise ArgumentError(f"Adadelta: rho must be in [0, 1], got {group['rho']}")
        check_range("Adadelta", "eps", group["eps"], 0.0)
        check_range("Adadelta", "weight_decay", group["weight_decay"], 0.0)

    def _update(self, param: Tensor, grad, group: dict[str, Any]) -> None:
        xp, data = backend.array_module(param.array), param.array
        rho, eps = group["rho"], group["eps"]
        state = self.state[param]
        if not state:
            state["step"] = 0.0
            state["square_avg"] = xp.zeros_like(data)
            state["acc_delta"] = xp.zeros_like(data)
        state["step"] += 1
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * data
        square_avg *= rho
        square_avg += (1 - rho) * grad * grad
        delta = xp.sqrt(acc_delta + eps) / xp.sqrt(square_avg + eps) * grad
        acc_delta *= rho
        acc_delta += (1 - rho) * delta * delta
        data -= group["lr"] * delta
