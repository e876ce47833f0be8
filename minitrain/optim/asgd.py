"""ASGD: stochastic gradient descent that also keeps a running average of the iterates."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import backend
from ..tensor import Tensor
from .optimizer import Optimizer, ParamsT, check_range


class ASGD(Optimizer):
    """Averaged SGD (Polyak & Juditsky, 1992), with PyTorch's update rule. For each parameter p
    with gradient g, at step t = 1, 2, ... (the step size eta starts at lr, the averaging rate
    mu at 1, the average ax at 0):

        g = -g                                      if maximize
        g = g + weight_decay * p                    if weight_decay != 0
        p = p * (1 - lambd * eta) - eta * g
        ax = p  if mu == 1,  else  ax = ax + (p - ax) * mu
        eta = lr / (1 + lambd * lr * t)**alpha
        mu = 1 / max(1, t - t0)

    The average `state[p]['ax']` is what to evaluate with once averaging started (after t0
    steps); the parameter itself follows plain SGD with a decaying step.

    State per parameter: `step`, `eta`, `mu` and `ax`. PyTorch keeps `step`, `eta` and `mu` as
    one-element tensors of the default dtype (float32 unless changed); here they are Python
    floats, so eta and mu carry no float32 rounding (a relative difference below 1e-7).

    `foreach`, `capturable` and `differentiable` are accepted as PyTorch's and kept in the groups
    (so state dicts have PyTorch's keys), but change nothing here.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "lambd": lambd,
            "alpha": alpha,
            "t0": t0,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        check_range("ASGD", "weight_decay", group["weight_decay"], 0.0)
        for option in ("lambd", "alpha", "t0"):  # any real number, as PyTorch's (NaN refused)
            check_range("ASGD", option, group[option], -math.inf)

    def _update(self, param: Tensor, grad, group: dict[str, Any]) -> None:
        xp, data = backend.array_module(param.array), param.array
        lr, lambd = group["lr"], group["lambd"]
        state = self.state[param]
        if not state:
            state["step"] = 0.0
            state["eta"] = float(lr)
            state["mu"] = 1.0
            state["ax"] = xp.zeros_like(data)
        state["step"] += 1
        step, eta, ax = state["step"], state["eta"], state["ax"]
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * data
        data *= 1 - lambd * eta
        data -= eta * grad
        if state["mu"] != 1:
            ax += (data - ax) * state["mu"]
        else:
            ax[...] = data
        # in float64 as PyTorch's tensors: a power past the largest float is inf (eta 0), a
        # negative base's fractional power nan, where Python's floats raise or turn complex
        with np.errstate(all="ignore"):
            decay = np.float64(1 + lambd * lr * step) ** np.float64(group["alpha"])
        state["eta"] = float(lr / decay)
        state["mu"] = 1 / max(1, step - group["t0"])
