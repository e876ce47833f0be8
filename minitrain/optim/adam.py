"""Adam and AdamW: adaptive moment estimation, with L2 or decoupled weight decay."""

from __future__ import annotations

import math
from typing import Any

from .. import backend
from ..errors import ArgumentError
from ..runtime.background_compile import KernelNotReady, falls_back
from ..tensor import Tensor
from .optimizer import Optimizer, ParamsT, check_range


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2015), with PyTorch's update rule. For each parameter p with gradient
    g, at step t = 1, 2, ... (first and second moments m, v start at 0):

        g = -g                                          if maximize
        p = p * (1 - lr * weight_decay)                 if decoupled_weight_decay (AdamW)
        g = g + weight_decay * p                        otherwise, if weight_decay != 0
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        v_max = max(v_max, v)  and use v_max for v below      if amsgrad
        p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

    State per parameter: `step` (t, an int), `exp_avg` (m), `exp_avg_sq` (v) and, with amsgrad,
    `max_exp_avg_sq` (v_max).
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        decoupled_weight_decay: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        name, betas = type(self).__name__, group["betas"]
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise ArgumentError(f"{name}: betas must be a pair (beta1, beta2), got {betas!r}")
        check_range(name, "betas[0]", betas[0], 0.0, 1.0)
        check_range(name, "betas[1]", betas[1], 0.0, 1.0)
        check_range(name, "eps", group["eps"], 0.0)
        check_range(name, "weight_decay", group["weight_decay"], 0.0)

    def _update(self, param: Tensor, grad, group: dict[str, Any]) -> None:
        xp, data = backend.array_module(param.array), param.array
        lr, weight_decay, eps = group["lr"], group["weight_decay"], group["eps"]
        beta1, beta2 = group["betas"]
        state = self.state[param]
        if not state:
            state["step"] = 0
            state["exp_avg"] = xp.zeros_like(data)
            state["exp_avg_sq"] = xp.zeros_like(data)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = xp.zeros_like(data)
        state["step"] += 1
        step, exp_avg, exp_avg_sq = state["step"], state["exp_avg"], state["exp_avg_sq"]

        if _fused_update(param, grad, state, group):
            return
        if group["maximize"]:
            grad = -grad
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                data *= 1 - lr * weight_decay
            else:
                grad = grad + weight_decay * data
        exp_avg *= beta1
        exp_avg += (1 - beta1) * grad
        exp_avg_sq *= beta2
        exp_avg_sq += (1 - beta2) * grad * grad

        second_moment = exp_avg_sq
        if group["amsgrad"]:
            second_moment = state["max_exp_avg_sq"]
            xp.maximum(second_moment, exp_avg_sq, out=second_moment)
        # The bias corrections are Python floats, applied as PyTorch does: 1/(1 - beta1**t)
        # folded into the step size, sqrt(1 - beta2**t) dividing sqrt(v) before eps is added.
        step_size = lr / (1 - beta1**step)
        denominator = xp.sqrt(second_moment) / math.sqrt(1 - beta2**step) + eps
        data -= step_size * (exp_avg / denominator)


def _fused_update(param: Tensor, grad, state: dict[str, Any], group: dict[str, Any]) -> bool:
    """Adam's update of one parameter (state["step"] already counted) by one numba loop over its
    elements, instead of a dozen numpy passes over the whole array, with the same arithmetic in
    the same order: the same result to the bit. False, with nothing done, where it does not
    apply: where backend.numba_takes refuses the arrays, or they are not all C-contiguous and of
    one shape (the loop indexes them together, unchecked), or the loop is still compiling in
    the background (runtime/background_compile.py)."""
    data = param.array
    arrays = [data, grad, state["exp_avg"], state["exp_avg_sq"]]
    if group["amsgrad"]:
        arrays.append(state["max_exp_avg_sq"])
    if not (
        backend.numba_takes(*arrays)
        and all(a.shape == data.shape and a.flags.c_contiguous for a in arrays)
    ):
        return False
    lr, weight_decay, eps = group["lr"], group["weight_decay"], group["eps"]
    beta1, beta2 = group["betas"]
    step = state["step"]
    decoupled = group["decoupled_weight_decay"]
    real = data.dtype.type  # Python floats become the arrays' dtype, as numpy's weak scalars do
    try:
        _adam_elements(
            *(a.reshape(-1) for a in arrays[:4]),
            arrays[-1].reshape(-1),  # max_exp_avg_sq, read only with amsgrad
            group["maximize"],
            group["amsgrad"],
            real(1 - lr * weight_decay) if decoupled else real(1),
            real(0) if decoupled else real(weight_decay),
            real(beta1),
            real(1 - beta1),
            real(beta2),
            real(1 - beta2),
            real(lr / (1 - beta1**step)),
            real(math.sqrt(1 - beta2**step)),
            real(eps),
        )
    except KernelNotReady:  # compiling in the background: numpy's update, the same to the bit
        return False
    return True


falls_back(_fused_update)


@backend.jit(fastmath=False, error_model="numpy")
def _adam_elements(
    data,
    grad,
    exp_avg,
    exp_avg_sq,
    max_exp_avg_sq,
    maximize,
    amsgrad,
    decay,
    weight_decay,
    beta1,
    one_minus_beta1,
    beta2,
    one_minus_beta2,
    step_size,
    bias_correction2_sqrt,
    eps,
):
    # Each line rounds as the numpy statement of Adam._update it stands for (no fused
    # multiply-adds: fastmath off). Without amsgrad and L2 decay, a loop with no branches, which
    # LLVM vectorises (-g is g * -1 exactly; the decay factor is 1 but for AdamW); numpy's error
    # model makes x / 0 IEEE's inf or nan, as in numpy, instead of a ZeroDivisionError check per
    # element that kept the loop scalar (4x slower).
    sign = data.dtype.type(-1 if maximize else 1)
    if not amsgrad and weight_decay == 0:
        for i in range(data.shape[0]):
            g = grad[i] * sign
            p = data[i] * decay
            m = exp_avg[i] * beta1 + one_minus_beta1 * g
            v = exp_avg_sq[i] * beta2 + one_minus_beta2 * g * g
            exp_avg[i], exp_avg_sq[i] = m, v
            data[i] = p - step_size * (m / (math.sqrt(v) / bias_correction2_sqrt + eps))
        return
    for i in range(data.shape[0]):
        g = grad[i] * sign
        p = data[i] * decay
        if weight_decay != 0:
            g = g + weight_decay * p
        m = exp_avg[i] * beta1 + one_minus_beta1 * g
        v = exp_avg_sq[i] * beta2 + one_minus_beta2 * g * g
        exp_avg[i], exp_avg_sq[i] = m, v
        if amsgrad:
            if v > max_exp_avg_sq[i] or v != v:  # np.maximum: nan wins
                max_exp_avg_sq[i] = v
            v = max_exp_avg_sq[i]
        data[i] = p - step_size * (m / (math.sqrt(v) / bias_correction2_sqrt + eps))


class AdamW(Adam):
    """AdamW (Loshchilov & Hutter, 2019): Adam with decoupled weight decay, which shrinks the
    parameter directly instead of adding to the gradient, so the decay is not rescaled by the
    adaptive denominator:

        p = p * (1 - lr * weight_decay),  then the Adam update of p with the undecayed g.

    Same options and state as Adam; weight_decay defaults to 1e-2.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            maximize=maximize,
            decoupled_weight_decay=True,
        )
