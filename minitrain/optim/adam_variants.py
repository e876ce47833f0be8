"""Adamax, NAdam and RAdam: Adam's moment estimates with an infinity norm, Nesterov momentum, or a
rectified adaptive step."""

from __future__ import annotations

import math
from typing import Any

from .. import backend
from ..errors import ArgumentError
from ..tensor import Tensor
from .optimizer import Optimizer, ParamsT, check_range


def _check_adam_options(name: str, group: dict[str, Any]) -> None:
    """The checks PyTorch makes of Adam's options: betas in [0, 1), eps and weight_decay >= 0."""
    betas = group["betas"]
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise ArgumentError(f"{name}: betas must be a pair (beta1, beta2), got {betas!r}")
    check_range(name, "betas[0]", betas[0], 0.0, 1.0)
    check_range(name, "betas[1]", betas[1], 0.0, 1.0)
    check_range(name, "eps", group["eps"], 0.0)
    check_range(name, "weight_decay", group["weight_decay"], 0.0)


def _lerp_into(start, end, weight: float) -> None:
    """start += weight * (end - start), in place, rounded as torch.lerp_ rounds: from the nearer
    end, so that a weight of 1 gives `end` exactly."""
    if weight < 0.5:
        start += weight * (end - start)
    else:
        start[...] = end - (end - start) * (1 - weight)


def _decay(group: dict[str, Any], data, grad):
    """Apply weight decay: shrink `data` in place when decoupled (AdamW's way), else return the
    gradient with the L2 term added."""
    weight_decay = group["weight_decay"]
    if weight_decay == 0:
        return grad
    if group.get("decoupled_weight_decay"):
        data *= 1 - group["lr"] * weight_decay
        return grad
    return grad + weight_decay * data


class Adamax(Optimizer):
    """Adamax (Kingma & Ba, 2015, section 7), Adam with the infinity norm, with PyTorch's update
    rule. For each parameter p with gradient g, at step t = 1, 2, ... (m and u start at 0):

        g = -g                                      if maximize
        g = g + weight_decay * p                    if weight_decay != 0
        m = beta1 * m + (1 - beta1) * g
        u = max(beta2 * u, |g| + eps)
        p = p - lr / (1 - beta1**t) * m / u

    State per parameter: `step`, `exp_avg` (m) and `exp_inf` (u).

    `foreach`, `capturable` and `differentiable` are accepted as PyTorch's and kept in the groups
    (so state dicts have PyTorch's keys), but change nothing here.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        _check_adam_options("Adamax", group)

    def _update(self, param: Tensor, grad, group: dict[str, Any]) -> None:
        xp, data = backend.array_module(param.array), param.array
        beta1, beta2 = group["betas"]
        state = self.state[param]
        if not state:
            state["step"] = 0.0
            state["exp_avg"] = xp.zeros_like(data)
            state["exp_inf"] = xp.zeros_like(data)
        state["step"] += 1
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        if group["maximize"]:
            grad = -grad
        grad = _decay(group, data, grad)
        _lerp_into(exp_avg, grad, 1 - beta1)
        exp_inf *= beta2
        xp.maximum(exp_inf, xp.abs(grad) + group["eps"], out=exp_inf)  # NaN wins, as in torch
        step_size = group["lr"] / (1 - beta1 ** state["step"])
        data -= step_size * (exp_avg / exp_inf)


class NAdam(Optimizer):
    """NAdam (Dozat, 2016): Adam with Nesterov momentum, with PyTorch's update rule and its
    momentum schedule. For each parameter p with gradient g, at step t = 1, 2, ... (m, v start at
    0, the product P at 1):

        g = -g                                          if maximize
        p = p * (1 - lr * weight_decay)                 if decoupled_weight_decay (NAdamW)
        g = g + weight_decay * p                        otherwise, if weight_decay != 0
        mu_t = beta1 * (1 - 0.5 * 0.96**(t * momentum_decay)),  P = P * mu_t
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        d = sqrt(v / (1 - beta2**t)) + eps
        p = p - lr * (1 - mu_t) / (1 - P) * g / d
              - lr * mu_{t+1} / (1 - P * mu_{t+1}) * m / d

    State per parameter: `step`, `mu_product` (P), `exp_avg` (m) and `exp_avg_sq` (v). PyTorch
    keeps `step` and `mu_product` as one-element tensors of the default dtype (float32 unless
    changed); here they are Python floats, so P carries no float32 rounding (a relative
    difference below 1e-7).

    `foreach`, `capturable` and `differentiable` are accepted as PyTorch's and kept in the groups
    (so state dicts have PyTorch's keys), but change nothing here.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum_decay": momentum_decay,
            "decoupled_weight_decay": decoupled_weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        _check_adam_options("NAdam", group)
        check_range("NAdam", "momentum_decay", group["momentum_decay"], 0.0)

    def _update(self, param: Tensor, grad, group: dict[str, Any]) -> None:
        xp, data = backend.array_module(param.array), param.array
        lr, (beta1, beta2), momentum_decay = group["lr"], group["betas"], group["momentum_decay"]
        state = self.state[param]
        if not state:
            state["step"] = 0.0
            state["mu_product"] = 1.0
            state["exp_avg"] = xp.zeros_like(data)
            state["exp_avg_sq"] = xp.zeros_like(data)
        state["step"] += 1
        step, exp_avg, exp_avg_sq = state["step"], state["exp_avg"], state["exp_avg_sq"]
        if group["maximize"]:
            grad = -grad
        grad = _decay(group, data, grad)

        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
        state["mu_product"] *= mu
        mu_product = state["mu_product"]
        _lerp_into(exp_avg, grad, 1 - beta1)
        exp_avg_sq *= beta2
        exp_avg_sq += (1 - beta2) * grad * grad
        denominator = xp.sqrt(exp_avg_sq / (1 - beta2**step)) + group["eps"]
        data += (-lr * (1.0 - mu) / (1.0 - mu_product)) * (grad / denominator)
        data += (-lr * mu_next / (1.0 - mu_product * mu_next)) * (exp_avg / denominator)


class RAdam(Optimizer):
    """RAdam (Liu et al., 2020): Adam whose adaptive step is switched on, and rectified, only once
    the variance of its estimate is tractable. With PyTorch's update rule, for each parameter p
    with gradient g, at step t = 1, 2, ... (m, v start at 0):

        g = -g                                          if maximize
        p = p * (1 - lr * weight_decay)                 if decoupled_weight_decay (RAdamW)
        g = g + weight_decay * p                        otherwise, if weight_decay != 0
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        m_hat = m / (1 - beta1**t)
        rho_inf = 2 / (1 - beta2) - 1,  rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t)
        if rho_t > 5:
            r = sqrt((rho_t - 4) (rho_t - 2) rho_inf / ((rho_inf - 4) (rho_inf - 2) rho_t))
            p = p - m_hat * lr * sqrt(1 - beta2**t) / (sqrt(v) + eps) * r
        else:
            p = p - m_hat * lr

    State per parameter: `step`, `exp_avg` (m) and `exp_avg_sq` (v).

    `foreach`, `capturable` and `differentiable` are accepted as PyTorch's and kept in the groups
    (so state dicts have PyTorch's keys), but change nothing here.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "decoupled_weight_decay": decoupled_weight_decay,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        _check_adam_options("RAdam", group)

    def _update(self, param: Tensor, grad, group: dict[str, Any]) -> None:
        xp, data = backend.array_module(param.array), param.array
        lr, (beta1, beta2) = group["lr"], group["betas"]
        state = self.state[param]
        if not state:
            state["step"] = 0.0
            state["exp_avg"] = xp.zeros_like(data)
            state["exp_avg_sq"] = xp.zeros_like(data)
        state["step"] += 1
        step, exp_avg, exp_avg_sq = state["step"], state["exp_avg"], state["exp_avg_sq"]
        if group["maximize"]:
            grad = -grad
        grad = _decay(group, data, grad)
        _lerp_into(exp_avg, grad, 1 - beta1)
        exp_avg_sq *= beta2
        exp_avg_sq += (1 - beta2) * grad * grad

        bias_correction2 = 1 - beta2**step
        corrected_exp_avg = exp_avg / (1 - beta1**step)
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
        if rho_t > 5.0:
            rectification = math.sqrt(
                (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
            )
            adaptive = math.sqrt(bias_correction2) / (xp.sqrt(exp_avg_sq) + group["eps"])
            data -= corrected_exp_avg * lr * adaptive * rectification
        else:
            data -= corrected_exp_avg * lr
