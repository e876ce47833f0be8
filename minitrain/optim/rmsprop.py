"""RMSprop: gradient descent scaled by a running root mean square of the gradients."""

from __future__ import annotations

from typing import Any

from .. import backend
from ..tensor import Tensor
from .optimizer import Optimizer, ParamsT, check_range


class RMSprop(Optimizer):
    """RMSprop (Hinton, 2012; centered form from Graves, 2013), with PyTorch's update rule. For
    each parameter p with gradient g (v, g_avg and b start at 0):

        g = -g                                        if maximize
        g = g + weight_decay * p                      if weight_decay != 0
        v = alpha * v + (1 - alpha) * g * g
        g_avg = alpha * g_avg + (1 - alpha) * g       if centered
        d = sqrt(v - g_avg * g_avg) + eps  if centered,  else  d = sqrt(v) + eps
        b = momentum * b + g / d,  p = p - lr * b     if momentum > 0
        p = p - lr * g / d                            otherwise

    State per parameter: `step`, `square_avg` (v), `momentum_buffer` (b) when momentum > 0,
    `grad_avg` (g_avg) when centered.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        *,
        maximize: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "alpha": alpha,
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum": momentum,
            "centered": centered,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        check_range("RMSprop", "alpha", group["alpha"], 0.0)
        check_range("RMSprop", "eps", group["eps"], 0.0)
        check_range("RMSprop", "weight_decay", group["weight_decay"], 0.0)
        check_range("RMSprop", "momentum", group["momentum"], 0.0)

    def _update(self, param: Tensor, grad, group: dict[str, Any]) -> None:
        xp, data = backend.array_module(param.array), param.array
        alpha, momentum, weight_decay = group["alpha"], group["momentum"], group["weight_decay"]
        state = self.state[param]
        if not state:
            state["step"] = 0
            state["square_avg"] = xp.zeros_like(data)
            if momentum > 0:
                state["momentum_buffer"] = xp.zeros_like(data)
            if group["centered"]:
                state["grad_avg"] = xp.zeros_like(data)
        state["step"] += 1
        square_avg = state["square_avg"]

        if group["maximize"]:
            grad = -grad
        if weight_decay != 0:
            grad = grad + weight_decay * data
        square_avg *= alpha
        square_avg += (1 - alpha) * grad * grad
        if group["centered"]:
            grad_avg = state["grad_avg"]
            grad_avg *= alpha
            grad_avg += (1 - alpha) * grad
            denominator = xp.sqrt(square_avg - grad_avg * grad_avg)
        else:
            denominator = xp.sqrt(square_avg)
        denominator += group["eps"]
        if momentum > 0:
            buffer = state["momentum_buffer"]
            buffer *= momentum
            buffer += grad / denominator
            data -= group["lr"] * buffer
        else:
            data -= group["lr"] * (grad / denominator)
