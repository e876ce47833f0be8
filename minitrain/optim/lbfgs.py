"""LBFGS: limited-memory BFGS over all parameters as one flat vector, with an optional strong
Wolfe line search."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import backend
from ..autograd.grad_mode import enable_grad
from ..errors import ArgumentError, DTypeError
from .optimizer import Optimizer, ParamsT, check_range

# State entries that are flat vectors over all parameters (or lists of them), not arrays shaped
# like the first parameter: the base class's load_state_dict would reject their shape.
_FLAT_STATE = ("d", "old_dirs", "old_stps", "prev_flat_grad", "al", "ro", "H_diag", "t")


class LBFGS(Optimizer):
    """L-BFGS (Nocedal, 1980; Liu & Nocedal, 1989), as PyTorch's (itself after minFunc): each
    `step(closure)` runs up to `max_iter` iterations, each one a quasi-Newton direction from the
    last `history_size` curvature pairs (two-loop recursion), followed by a step of `lr` along it
    or, with `line_search_fn="strong_wolfe"`, a line search meeting the strong Wolfe conditions
    (c1=1e-4, c2=0.9, cubic interpolation, at most `max_eval` evaluations in all).

    `closure` is required: it clears the gradients, computes the loss, calls `backward()` and
    returns the loss; it is called several times per step. The first iteration of the first step
    scales its step by min(1, 1 / sum|g|). A step stops early when max|g| <= tolerance_grad, when
    the loss or the parameters change by less than tolerance_change, or after max_eval
    evaluations (default max_iter * 5 // 4).

    Only one parameter group is allowed, as in PyTorch. The whole state is kept under the first
    parameter (`func_evals`, `n_iter`, `d`, `t`, `old_dirs`, `old_stps`, `ro`, `H_diag`,
    `prev_flat_grad`, `prev_loss`, `al`), as PyTorch keeps it, and `state_dict` carries it.
    A line_search_fn other than None or "strong_wolfe" raises here, at construction, where
    PyTorch raises at the first step.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {
            "lr": lr,
            "max_iter": max_iter,
            "max_eval": max_eval,
            "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change,
            "history_size": history_size,
            "line_search_fn": line_search_fn,
        }
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ArgumentError(
                f"LBFGS: does not support parameter groups (per-parameter options), got "
                f"{len(self.param_groups)} groups"
            )
        self._params = self.param_groups[0]["params"]

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        if getattr(self, "param_groups", None):
            raise ArgumentError("LBFGS: does not support more than one parameter group")
        super().add_param_group(param_group)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        for option in ("max_iter", "max_eval", "history_size"):
            value = group[option]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ArgumentError(f"LBFGS: {option} must be a positive int, got {value!r}")
        check_range("LBFGS", "tolerance_grad", group["tolerance_grad"], -math.inf)
        check_range("LBFGS", "tolerance_change", group["tolerance_change"], -math.inf)
        if group["line_search_fn"] not in (None, "strong_wolfe"):
            raise ArgumentError(
                f"LBFGS: line_search_fn must be None or 'strong_wolfe', got "
                f"{group['line_search_fn']!r}"
            )

    # The parameters as one flat vector

    def _flat_grad(self):
        xp = backend.array_module(self._params[0].array)
        parts = [
            xp.zeros(p.array.size, p.dtype) if p.grad is None else p.grad.array.reshape(-1)
            for p in self._params
        ]
        return xp.concatenate(parts)

    def _add_to_params(self, step_size, direction) -> None:
        offset = 0
        for param in self._params:
            size = param.array.size
            param.array[...] += step_size * direction[offset : offset + size].reshape(param.shape)
            param.bump_version()
            offset += size

    def _copy_params(self) -> list:
        return [param.array.copy() for param in self._params]

    def _set_params(self, arrays: list) -> None:
        for param, array in zip(self._params, arrays, strict=True):
            param.array[...] = array
            param.bump_version()

    def _evaluate(self, closure: Callable[[], Any]) -> float:
        with enable_grad():
            return float(closure())

    def _directional_evaluate(self, closure, start: list, step_size, direction):
        """The loss and flat gradient at start + step_size * direction; the parameters are put
        back to `start` afterwards."""
        self._add_to_params(step_size, direction)
        loss = self._evaluate(closure)
        flat_grad = self._flat_grad()
        self._set_params(start)
        return loss, flat_grad

    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Run up to max_iter iterations of L-BFGS; returns the loss of the first evaluation
        (before the step), as PyTorch does."""
        if not callable(closure):
            raise DTypeError(
                f"LBFGS.step: a closure is required (it recomputes the loss and gradients), "
                f"got {type(closure).__name__}"
            )
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with enable_grad():
            first_loss = closure()
        loss = float(first_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        self._step_count += 1
        if _abs_max(flat_grad) <= tolerance_grad:
            return first_loss

        direction, step_size = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag = state.get("H_diag")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                direction = -flat_grad
                old_dirs, old_stps, ro, h_diag = [], [], [], 1
            else:
                y = flat_grad - prev_flat_grad
                s = direction * step_size
                ys = _dot(y, s)
                if ys > 1e-10:  # keep only pairs of positive curvature
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / _dot(y, y)
                # two-loop recursion: direction = -H g, H the L-BFGS inverse Hessian estimate
                if "al" not in state:
                    state["al"] = [None] * history_size
                al = state["al"]
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = _dot(old_stps[i], q) * ro[i]
                    q += -al[i] * old_dirs[i]
                direction = r = q * h_diag
                for i in range(len(old_dirs)):
                    be_i = _dot(old_dirs[i], r) * ro[i]
                    r += (al[i] - be_i) * old_stps[i]

            prev_flat_grad = flat_grad.copy()
            prev_loss = loss
            if state["n_iter"] == 1:
                step_size = min(1.0, 1.0 / _abs_sum(flat_grad)) * lr
            else:
                step_size = lr
            slope = _dot(flat_grad, direction)
            if slope > -tolerance_change:  # not a descent direction: stop
                break

            evals = 0
            if group["line_search_fn"] == "strong_wolfe":
                start = self._copy_params()

                def along(start, step, direction):
                    return self._directional_evaluate(closure, start, step, direction)

                loss, flat_grad, step_size, evals = strong_wolfe(
                    along,
                    start,
                    step_size,
                    direction,
                    loss,
                    flat_grad,
                    slope,
                    max_ls=max_eval - current_evals,
                )
                self._add_to_params(step_size, direction)
                optimal = _abs_max(flat_grad) <= tolerance_grad
            else:
                self._add_to_params(step_size, direction)
                optimal = False
                if n_iter != max_iter:
                    loss = self._evaluate(closure)
                    flat_grad = self._flat_grad()
                    optimal = _abs_max(flat_grad) <= tolerance_grad
                    evals = 1
            current_evals += evals
            state["func_evals"] += evals

            if n_iter == max_iter or current_evals >= max_eval or optimal:
                break
            if _abs_max(direction * step_size) <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state["d"] = direction
        state["t"] = step_size
        state["old_dirs"] = old_dirs
        state["old_stps"] = old_stps
        state["ro"] = ro
        state["H_diag"] = h_diag
        state["prev_flat_grad"] = prev_flat_grad
        state["prev_loss"] = prev_loss
        return first_loss

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """As Optimizer.load_state_dict; the flat vectors of the history are copied onto the
        parameters' device and dtype as they are (they are not shaped like a parameter)."""
        saved_state = state_dict.get("state", {}) if isinstance(state_dict, dict) else {}
        flat = {
            key: {k: v for k, v in values.items() if k in _FLAT_STATE}
            for key, values in saved_state.items()
        }
        rest = {
            key: {k: v for k, v in values.items() if k not in _FLAT_STATE}
            for key, values in saved_state.items()
        }
        super().load_state_dict({**state_dict, "state": rest})
        param_of = dict(zip(state_dict["param_groups"][0]["params"], self._params, strict=True))
        for key, values in flat.items():
            param = param_of[key]
            self.state[param].update(
                {k: _to_param_device(v, param.device, param.dtype) for k, v in values.items()}
            )


def _to_param_device(value, device, dtype):
    if backend.is_array(value):
        return backend.to_device(value, device).astype(dtype, copy=True)
    if isinstance(value, list):
        return [_to_param_device(item, device, dtype) for item in value]
    return copy.deepcopy(value)


def _host_scalar(value, dtype):
    """A numpy scalar of `dtype` on the host: a CuPy reduction's 0-d array copied back, so that
    comparisons and Python arithmetic on it stay cheap and in the parameters' dtype (PyTorch's
    scalars are 0-d tensors of that dtype)."""
    if isinstance(value, np.generic):
        return value
    return np.dtype(dtype).type(value.item())


def _dot(a, b):
    return _host_scalar(backend.array_module(a).dot(a, b), a.dtype)


def _abs_max(a):
    return _host_scalar(backend.array_module(a).abs(a).max(), a.dtype)


def _abs_sum(a):
    return _host_scalar(backend.array_module(a).abs(a).sum(), a.dtype)


def cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2, clamped to
    `bounds` (default: between x1 and x2); their midpoint when the cubic has no minimum."""
    if bounds is not None:
        low, high = bounds
    else:
        low, high = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = np.sqrt(d2_square)
        if x1 <= x2:
            minimum = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            minimum = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(minimum, low), high)
    return (low + high) / 2.0


def strong_wolfe(
    evaluate, start, step, direction, loss, grad, slope, c1=1e-4, c2=0.9,
    tolerance_change=1e-9, max_ls=25,
):  # fmt: skip
    """A step along `direction` meeting the strong Wolfe conditions (More & Thuente's bracketing
    and zoom, with cubic interpolation), as PyTorch's LBFGS searches:

        f(x + t d) <= f(x) + c1 t g.d      and      |g(x + t d).d| <= -c2 g.d

    `evaluate(start, t, direction)` returns the loss and flat gradient at start + t direction.
    Returns (loss, flat gradient, t, number of evaluations), for the best step found within
    `max_ls` evaluations."""
    direction_norm = _abs_max(direction)
    grad = grad.copy()
    new_loss, new_grad = evaluate(start, step, direction)
    evals = 1
    new_slope = _dot(new_grad, direction)

    # bracketing: grow the step until an interval surely holds a point meeting the conditions
    prev_step, prev_loss, prev_grad, prev_slope = 0, loss, grad, slope
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if new_loss > (loss + c1 * step * slope) or (ls_iter > 1 and new_loss >= prev_loss):
            bracket, bracket_loss = [prev_step, step], [prev_loss, new_loss]
            bracket_grad, bracket_slope = [prev_grad, new_grad.copy()], [prev_slope, new_slope]
            break
        if abs(new_slope) <= -c2 * slope:
            bracket, bracket_loss, bracket_grad = [step], [new_loss], [new_grad]
            done = True
            break
        if new_slope >= 0:
            bracket, bracket_loss = [prev_step, step], [prev_loss, new_loss]
            bracket_grad, bracket_slope = [prev_grad, new_grad.copy()], [prev_slope, new_slope]
            break
        min_step = step + 0.01 * (step - prev_step)
        max_step = step * 10
        previous = step
        step = cubic_interpolate(
            prev_step, prev_loss, prev_slope, step, new_loss, new_slope, bounds=(min_step, max_step)
        )
        prev_step, prev_loss, prev_grad, prev_slope = previous, new_loss, new_grad.copy(), new_slope
        new_loss, new_grad = evaluate(start, step, direction)
        evals += 1
        new_slope = _dot(new_grad, direction)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_loss, bracket_grad = [0, step], [loss, new_loss], [grad, new_grad]

    # zoom: shrink the bracket until a point in it meets the conditions
    insufficient_progress = False
    low, high = (0, 1) if bracket_loss[0] <= bracket_loss[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * direction_norm < tolerance_change:
            break
        step = cubic_interpolate(
            bracket[0],
            bracket_loss[0],
            bracket_slope[0],
            bracket[1],
            bracket_loss[1],
            bracket_slope[1],
        )
        # a step too close to an end of the bracket is moved away from it, unless the previous
        # step made progress there
        margin = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - step, step - min(bracket)) < margin:
            if insufficient_progress or step >= max(bracket) or step <= min(bracket):
                if abs(step - max(bracket)) < abs(step - min(bracket)):
                    step = max(bracket) - margin
                else:
                    step = min(bracket) + margin
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        new_loss, new_grad = evaluate(start, step, direction)
        evals += 1
        new_slope = _dot(new_grad, direction)
        ls_iter += 1

        if new_loss > (loss + c1 * step * slope) or new_loss >= bracket_loss[low]:
            bracket[high], bracket_loss[high] = step, new_loss
            bracket_grad[high], bracket_slope[high] = new_grad.copy(), new_slope
            low, high = (0, 1) if bracket_loss[0] <= bracket_loss[1] else (1, 0)
        else:
            if abs(new_slope) <= -c2 * slope:
                done = True
            elif new_slope * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_loss[high] = bracket[low], bracket_loss[low]
                bracket_grad[high], bracket_slope[high] = bracket_grad[low], bracket_slope[low]
            bracket[low], bracket_loss[low] = step, new_loss
            bracket_grad[low], bracket_slope[low] = new_grad.copy(), new_slope

    return bracket_loss[low], bracket_grad[low], bracket[low], evals
