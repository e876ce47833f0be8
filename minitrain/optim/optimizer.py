"""Optimizer: the base class that holds parameter groups and per-parameter state, runs the update
of every parameter that has a gradient, and saves and restores that state."""

from __future__ import annotations

import copy
import math
import numbers
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .. import backend
from ..autograd.grad_mode import enable_grad
from ..errors import ArgumentError, DeviceError, DTypeError, ShapeError
from ..nn.utils.zero_grad import zero_grads
from ..tensor import Tensor

ParamsT = Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]]


# the on/off options an optimizer may take (foreach and fused also None: PyTorch's default),
# refused unless bools before a step branches on one (an amsgrad of {} reached a numba kernel)
_FLAGS = ("amsgrad", "maximize", "nesterov", "centered", "decoupled_weight_decay", "capturable",
          "differentiable", "foreach", "fused")  # fmt: skip
_OPTIONAL = ("foreach", "fused")


def _bool_like(value) -> bool:
    """A bool, or the int 0 or 1 PyTorch's optimizers take for one (amsgrad=0)."""
    if isinstance(value, (bool, np.bool_)):
        return True
    return isinstance(value, (int, np.integer)) and value in (0, 1)


def check_range(caller: str, name: str, value, low: float, high: float | None = None) -> None:
    """Raise unless `value` is a real number with `low <= value`, and `value < high` when `high`
    is given (NaN fails both)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise DTypeError(f"{caller}: {name} must be a real number, got {type(value).__name__}")
    if high is None and not low <= value:
        raise ArgumentError(f"{caller}: {name} must be >= {low:g}, got {value}")
    if high is not None and not low <= value < high:
        raise ArgumentError(f"{caller}: {name} must be in [{low:g}, {high:g}), got {value}")


class Optimizer:
    """Base class of the optimizers, with PyTorch's interface and state layout.

    `params` is an iterable of tensors, of `(name, tensor)` pairs, or of dicts (parameter groups)
    each holding `'params'` and any options that override `defaults` for that group. Every
    parameter must be a leaf tensor and may appear only once; one that does not require grad
    (frozen) is kept but never gets a gradient, so steps skip it, as in PyTorch.

    A subclass passes its options as `defaults`, checks a group's options in `_check_group` and
    writes the update of one parameter in `_update(param, grad, group)`: plain array math on
    `param.array`, in place and in the parameter's dtype, with its state in `self.state[param]`.
    `step()` calls it for every parameter whose `.grad` is not None.

    State lives where its parameter does: made by the first step on the parameter's device, and
    moved with it when `Module.to` moves the parameter later (where PyTorch's step would fail);
    `load_state_dict` puts each array on its parameter's device, as PyTorch does.
    """

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        name = type(self).__name__
        if isinstance(params, Tensor):
            raise DTypeError(
                f"{name}: params must be an iterable of tensors or of dicts, got one Tensor; "
                f"wrap it in a list: {name}([tensor], ...)"
            )
        if isinstance(params, dict):
            raise DTypeError(
                f"{name}: params must be an iterable of tensors or of dicts, got one dict; "
                f"wrap it in a list: {name}([group], ...)"
            )
        _check_ordered(name, params)
        self.defaults = dict(defaults)
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        self._step_count = 0  # lets a scheduler warn when it steps before the optimizer
        groups = list(params)
        if not groups or not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)
        if not any(group["params"] for group in self.param_groups):
            raise ArgumentError(
                f"{name}: got an empty parameter list (was model.parameters(), a generator, "
                f"already consumed?)"
            )

    # Parameter groups

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own options (the missing ones taken from
        `defaults`), e.g. a layer to unfreeze during fine-tuning."""
        name = type(self).__name__
        if not isinstance(param_group, dict):
            raise DTypeError(
                f"{name}: a parameter group must be a dict, got {type(param_group).__name__}"
            )
        if "params" not in param_group:
            raise ArgumentError(f"{name}: a parameter group needs a 'params' entry")
        group = dict(param_group)
        params, names = self._unpack_params(group["params"])
        group["params"] = params
        if names is not None:
            group["param_names"] = names
        for key, default in self.defaults.items():
            group.setdefault(key, default)

        seen = {id(p) for other in self.param_groups for p in other["params"]}
        in_group: set[int] = set()
        for index, param in enumerate(params):
            if id(param) in in_group:
                raise ArgumentError(f"{name}: params[{index}] appears twice in the same group")
            if id(param) in seen:
                raise ArgumentError(
                    f"{name}: params[{index}] is already in another parameter group"
                )
            in_group.add(id(param))
        if self.param_groups and ("param_names" in group) != (
            "param_names" in self.param_groups[0]
        ):
            raise ArgumentError(
                f"{name}: either every parameter group has names ((name, tensor) pairs) or none"
            )
        self._check_group(group)
        self.param_groups.append(group)

    def _unpack_params(self, params) -> tuple[list[Tensor], list[str] | None]:
        """The group's tensors as a list, and their names when given as (name, tensor) pairs."""
        name = type(self).__name__
        if isinstance(params, Tensor):
            params = [params]
        _check_ordered(name, params)
        items = list(params)
        named = [isinstance(item, tuple) for item in items]
        if any(named) and not all(named):
            raise ArgumentError(f"{name}: give either every parameter a name or none")
        names = [item[0] for item in items] if items and all(named) else None
        tensors = [item[1] for item in items] if names is not None else items
        for index, param in enumerate(tensors):
            label = f"params[{index}]" if names is None else f"parameter {names[index]!r}"
            if not isinstance(param, Tensor):
                raise DTypeError(
                    f"{name}: can only optimize Tensors, but {label} is a {type(param).__name__}"
                )
            if not param.is_leaf:
                raise ArgumentError(
                    f"{name}: cannot optimize {label}: it is not a leaf (it was computed by an "
                    f"op); optimize the tensors it was computed from"
                )
        return tensors, names

    def _check_group(self, group: dict[str, Any]) -> None:
        """Raise for options the optimizer cannot run with (subclasses extend it)."""
        name = type(self).__name__
        check_range(name, "lr", group["lr"], 0.0)
        for flag in _FLAGS:
            value = group.get(flag, False)
            if not (_bool_like(value) or (value is None and flag in _OPTIONAL)):
                raise DTypeError(f"{name}: {flag} must be a bool, got {value!r}")

    # The update

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients: to None (the default, which frees them), or to zeros in place."""
        zero_grads((p for group in self.param_groups for p in group["params"]), set_to_none)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient; parameters whose `.grad` is None are
        skipped. `closure`, if given, is called first (with grad recording on) to recompute the
        loss and gradients, and its result is returned."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        # every gradient checked (shape, device) before any parameter changes
        updates = [
            (param, self._grad_array(param), group)
            for group in self.param_groups
            for param in group["params"]
            if param.grad is not None
        ]
        for param, grad, group in updates:
            state = self.state.get(param)
            if state:
                _follow(param, state)
            self._update(param, grad, group)
            param.bump_version()  # values saved from it no longer hold
        self._step_count += 1
        return loss

    def _update(self, param: Tensor, grad, group: dict[str, Any]) -> None:
        """Update `param.array` in place from its gradient array `grad` (never write to `grad`:
        it may be the parameter's `.grad` itself)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement _update")

    def _grad_array(self, param: Tensor):
        grad = param.grad.array
        if grad.shape != param.shape:
            raise ShapeError(
                f"{type(self).__name__}: a parameter of shape {param.shape} has a gradient of "
                f"shape {grad.shape}"
            )
        data = param.array
        if type(grad) is not type(data) or (
            type(grad) is not np.ndarray and backend.device_of(grad) != backend.device_of(data)
        ):
            raise DeviceError(
                f"{type(self).__name__}: a parameter on {param.device} has a gradient on "
                f"{backend.device_of(grad)}; move both with Module.to, or set the grad on "
                f"{param.device}"
            )
        if grad.dtype != param.dtype:
            grad = grad.astype(param.dtype)
        return grad

    # Saving and restoring

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state in PyTorch's layout, as copies (later steps leave it alone):

            {"state": {index: {"step": ..., "exp_avg": array, ...}},
             "param_groups": [{"lr": ..., ..., "params": [index, ...]}]}

        Parameters are numbered 0, 1, ... in the order of the groups and their params."""
        index_of: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: copy.deepcopy(v) for k, v in group.items() if k != "params"}
            packed["params"] = [index_of.setdefault(id(p), len(index_of)) for p in group["params"]]
            groups.append(packed)
        state = {
            index_of[id(param)]: _copy_values(values)
            for param, values in self.state.items()
            if id(param) in index_of
        }
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what `state_dict()` returned, onto this optimizer's own parameters, matched
        by position. Arrays are copied and cast to each parameter's dtype and device. On any
        error (another number of groups or parameters, a state array of the wrong shape, an
        option missing), nothing is changed.

        Option values are checked as the constructor checks them, except that the lr may be
        below 0: a scheduler may have set one (LinearLR decaying to end_factor=0 ends at
        -1.5e-18; ExponentialLR chained with CosineAnnealingLR goes well below 0, as PyTorch's
        do), the optimizer stepped with it, and it is restored as saved, as PyTorch does."""
        name = type(self).__name__
        if not isinstance(state_dict, dict) or not {"state", "param_groups"} <= state_dict.keys():
            raise ArgumentError(
                f"{name}.load_state_dict: expected a dict with 'state' and 'param_groups', as "
                f"state_dict() returns"
            )
        _check_layout(name, state_dict)
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ArgumentError(
                f"{name}.load_state_dict: the state dict has {len(saved_groups)} parameter "
                f"groups, this optimizer has {len(self.param_groups)}"
            )
        param_of: dict[Any, Tensor] = {}
        new_groups = []
        for index, (group, saved) in enumerate(zip(self.param_groups, saved_groups, strict=True)):
            if len(saved["params"]) != len(group["params"]):
                raise ArgumentError(
                    f"{name}.load_state_dict: parameter group {index} has "
                    f"{len(saved['params'])} parameters in the state dict and "
                    f"{len(group['params'])} in this optimizer"
                )
            missing = [key for key in self.defaults if key not in saved]
            if missing:
                raise ArgumentError(
                    f"{name}.load_state_dict: parameter group {index} lacks the option(s) "
                    f"{', '.join(missing)} (is the state dict from another optimizer?)"
                )
            param_of.update(zip(saved["params"], group["params"], strict=True))
            new_group = {k: copy.deepcopy(v) for k, v in saved.items() if k != "params"}
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                new_group["param_names"] = group["param_names"]
            check_range(name, "lr", new_group["lr"], -math.inf)
            self._check_group({**new_group, "lr": 0.0})
            new_groups.append(new_group)

        new_state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        for key, values in state_dict["state"].items():
            if key not in param_of:
                raise ArgumentError(
                    f"{name}.load_state_dict: the state dict has state for parameter {key!r}, "
                    f"which none of its parameter groups lists"
                )
            param = param_of[key]
            new_state[param] = {k: _restore(v, param, key, k, name) for k, v in values.items()}
        self.param_groups = new_groups
        self.state = new_state

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for index, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {index}")
            for key in sorted(k for k in group if k not in ("params", "param_names")):
                lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)


def _check_layout(name: str, state_dict: dict[str, Any]) -> None:
    """The containers of a saved optimizer state as state_dict() makes them, checked before
    anything is read from them: a damaged one is named, not met as a KeyError or TypeError."""
    state, groups = state_dict["state"], state_dict["param_groups"]
    if not isinstance(state, dict) or not isinstance(groups, (list, tuple)):
        raise ArgumentError(
            f"{name}.load_state_dict: 'state' must be a dict and 'param_groups' a list, got "
            f"{type(state).__name__} and {type(groups).__name__}"
        )
    for index, group in enumerate(groups):
        if not isinstance(group, dict) or not isinstance(group.get("params"), (list, tuple)):
            raise ArgumentError(
                f"{name}.load_state_dict: parameter group {index} must be a dict with a "
                f"'params' list of parameter indices, got {repr(group)[:80]}"
            )


def _check_ordered(caller: str, params) -> None:
    if isinstance(params, (set, frozenset)):
        raise DTypeError(
            f"{caller}: params must be an ordered collection, not a set: a set's order changes "
            f"between runs, and the state dict refers to parameters by position"
        )


def _copy_values(values: dict[str, Any]) -> dict[str, Any]:
    return {
        key: value.copy() if backend.is_array(value) else copy.deepcopy(value)
        for key, value in values.items()
    }


def _follow(param: Tensor, state: dict[str, Any]) -> None:
    """Move `param`'s state arrays to its device where they are elsewhere (Module.to moved the
    parameter since they were made). The step count stays where it is, as in PyTorch."""
    data = param.array
    for key, value in state.items():
        if type(value) is np.ndarray and type(data) is np.ndarray:
            continue  # both on the CPU: the common case, checked first
        if key != "step" and backend.is_array(value):
            device = backend.device_of(data)
            if backend.device_of(value) != device:
                state[key] = backend.to_device(value, device)


def _restore(value, param: Tensor, index, key: str, caller: str):
    """A saved state value ready for `param`: arrays copied onto its device and cast to its
    dtype, as PyTorch does, but for the step count, kept where and as it is (a copy). Every
    array but the step count is one value per element of the parameter, so must have its shape:
    the update (Adam's numba loop above all) indexes them together. A Tensor (PyTorch's
    optimizers keep Tensors, and a PyTorch checkpoint loads them so) counts as its array, but
    for PyTorch's step count, a float32 Tensor, which becomes minitrain's int: a float32 count
    would round the bias corrections computed from it."""
    if isinstance(value, Tensor):
        if key == "step" and value.array.size == 1 and float(value.array) == int(value.array):
            return int(value.array)
        value = value.array
    if not backend.is_array(value):
        return copy.deepcopy(value)
    if key == "step":
        return value.copy()
    if value.shape != param.shape:
        raise ShapeError(
            f"{caller}.load_state_dict: state {key!r} of parameter {index} has shape "
            f"{value.shape}, but the parameter has shape {param.shape}"
        )
    return backend.to_device(value, param.device).astype(param.dtype, copy=True)
