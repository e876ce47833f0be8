"""SGD: stochastic gradient descent with optional momentum, Nesterov momentum and weight decay."""

from __future__ import annotations

import math
from typing import Any

from .. import backend
from ..errors import ArgumentError
from ..tensor import Tensor
from .optimizer import Optimizer, ParamsT, check_range


class SGD(Optimizer):
    """Stochastic gradient descent, with PyTorch's update rule. For each parameter p with
    gradient g, at step t:

        g = -g                          if maximize
        g = g + weight_decay * p        if weight_decay != 0
        b = g  (t = 1),  b = momentum * b + (1 - dampening) * g  (t > 1)   if momentum != 0
        g = g + momentum * b  if nesterov,  else  g = b                     if momentum != 0
        p = p - lr * g

    State per parameter: `momentum_buffer` (b), only when momentum != 0.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        check_range("SGD", "momentum", group["momentum"], 0.0)
        check_range("SGD", "dampening", group["dampening"], -math.inf)
        check_range("SGD", "weight_decay", group["weight_decay"], 0.0)
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ArgumentError(
                f"SGD: nesterov=True needs momentum > 0 and dampening = 0, got "
                f"momentum={group['momentum']}, dampening={group['dampening']}"
            )

    def _update(self, param: Tensor, grad, group: dict[str, Any]) -> None:
        xp, data = backend.array_module(param.array), param.array
        momentum, weight_decay = group["momentum"], group["weight_decay"]
        if group["maximize"]:
            grad = -grad
        if weight_decay != 0:
            grad = grad + weight_decay * data
        if momentum != 0:
            state = self.state[param]
            buffer = state.get("momentum_buffer")
            if buffer is None:
                # xp.array, not grad.copy(): math on a 0-d array gives a scalar, and the buffer
                # must be an array to be updated in place.
                buffer = state["momentum_buffer"] = xp.array(grad, copy=True)
            else:
                buffer *= momentum
                buffer += (1 - group["dampening"]) * grad
            grad = grad + momentum * buffer if group["nesterov"] else buffer
        data -= group["lr"] * grad
