"""Rprop: resilient backpropagation, a per-element step size driven by the gradient's sign."""

from __future__ import annotations

from typing import Any

from .. import backend
from ..errors import ArgumentError
from ..tensor import Tensor
from .optimizer import Optimizer, ParamsT


class Rprop(Optimizer):
    """Rprop (Riedmiller & Braun, 1993), with PyTorch's update rule. Each element of each
    parameter has its own step size s (starting at lr); with g its gradient and g_prev the
    gradient kept from the previous step (0 at first):

        g = -g                                          if maximize
        s = s * etaplus   where g * g_prev > 0  (same sign: speed up)
        s = s * etaminus  where g * g_prev < 0  (sign flipped: slow down), and g = 0 there
        s = clamp(s, step_sizes[0], step_sizes[1])
        p = p - sign(g) * s,  g_prev = g

    State per parameter: `step`, `prev` (g_prev) and `step_size` (s).

    `foreach`, `capturable` and `differentiable` are accepted as PyTorch's and kept in the groups
    (so state dicts have PyTorch's keys), but change nothing here.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "etas": etas,
            "step_sizes": step_sizes,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        for option in ("etas", "step_sizes"):
            value = group[option]
            if not isinstance(value, (tuple, list)) or len(value) != 2:
                raise ArgumentError(f"Rprop: {option} must be a pair, got {value!r}")
        etaminus, etaplus = group["etas"]
        if not 0.0 < etaminus < 1.0 < etaplus:
            raise ArgumentError(
                f"Rprop: etas must satisfy 0 < etaminus < 1 < etaplus, got {group['etas']!r}"
            )

    def _update(self, param: Tensor, grad, group: dict[str, Any]) -> None:
        xp, data = backend.array_module(param.array), param.array
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        state = self.state[param]
        if not state:
            state["step"] = 0.0
            state["prev"] = xp.zeros_like(data)
            state["step_size"] = xp.full_like(data, group["lr"])
        state["step"] += 1
        prev, step_size = state["prev"], state["step_size"]
        if group["maximize"]:
            grad = -grad
        agreement = xp.sign(grad * prev)
        # NaN stays NaN (no comparison holds), as in PyTorch
        factor = xp.where(
            agreement > 0,
            etaplus,
            xp.where(agreement < 0, etaminus, xp.where(agreement == 0, 1, agreement)),
        ).astype(data.dtype)
        step_size *= factor
        xp.clip(step_size, step_size_min, step_size_max, out=step_size)
        # after a sign flip the step is skipped and the next one starts afresh
        grad = xp.where(agreement < 0, 0, grad).astype(data.dtype)
        data -= xp.sign(grad) * step_size
        prev[...] = grad
