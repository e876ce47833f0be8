"""Module and Parameter: parameters, buffers and children registered by assignment, state dicts,
train/eval, devices, hooks."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import NamedTuple

import numpy as np

from ... import backend
from ...arguments import device_and_dtype
from ...autograd import RemovableHandle
from ...autograd.grad_mode import no_grad, recording
from ...errors import DTypeError, MinitrainError
from ...tensor import Tensor
from ..utils.zero_grad import zero_grads


class Parameter(Tensor):
    """A Tensor that is a module's parameter: a leaf that requires grad by default, registered
    when assigned to a Module attribute."""

    __slots__ = ()

    def __init__(self, data=None, requires_grad: bool = True):
        if isinstance(data, Tensor):
            data = data.array
        super().__init__(np.empty(0, np.float32) if data is None else data)
        if requires_grad:
            self.requires_grad = True

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


class StateDictError(MinitrainError, KeyError):
    """A state dict that does not fit the module: missing, unexpected or mis-shaped entries."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class IncompatibleKeys(NamedTuple):
    """What load_state_dict returns: the module's keys the state dict lacks, and the state dict's
    keys the module does not have."""

    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (
            f"_IncompatibleKeys(missing_keys={self.missing_keys}, "
            f"unexpected_keys={self.unexpected_keys})"
        )


class Module:
    """Base class of every layer and model.

    Assigning a Parameter, a Module or (through `register_buffer`) a buffer to an attribute
    registers it, so `parameters()`, `state_dict()`, `to()` and `train()` find it. Subclasses
    define `forward`; calling the module runs forward hooks around it.
    """

    training: bool

    def __init__(self) -> None:
        # object.__setattr__: our own __setattr__ needs these dicts to exist
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_hooks", [])
        object.__setattr__(self, "_forward_pre_hooks", [])

    def forward(self, *args, **kwargs):
        """The layer's computation, run by calling the module (`module(x)`, not
        `module.forward(x)`), so that its forward pre-hooks and hooks run around it. Subclasses
        define it; Module's own raises NotImplementedError."""
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args, **kwargs):
        for hook in list(self._forward_pre_hooks):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        if recording.capture is not None:  # minitrain.compile guards on the modules that ran
            recording.capture.module_ran(self)
        outer, recording.scope = recording.scope, self  # the nodes recorded now belong to self
        try:
            out = self.forward(*args, **kwargs)
            for hook in list(self._forward_hooks):
                result = hook(self, args, out)
                if result is not None:
                    out = result
        finally:
            recording.scope = outer
        return out

    # Registration

    def __setattr__(self, name: str, value) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"cannot assign '{name}' before Module.__init__() is called "
                f"(call super().__init__() first in {type(self).__name__}.__init__)"
            )
        if recording.capture is not None:  # a replay would not set it again
            recording.capture.breaks(f"{type(self).__name__}.{name} was set during the call")
        params, buffers, modules = self._parameters, self._buffers, self._modules
        # a replaced entry keeps its place in its table (and so in state_dict() and forward
        # order), as in PyTorch: only the other tables forget the name
        if isinstance(value, Parameter):
            self._forget(name, keep=params)
            params[name] = value
        elif isinstance(value, Module):
            self._forget(name, keep=modules)
            modules[name] = value
        elif name in params:
            if value is not None:
                raise DTypeError(
                    f"{type(self).__name__}.{name}: a parameter can only be replaced by a "
                    f"Parameter or None, got {type(value).__name__}"
                )
            params[name] = None
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise DTypeError(
                    f"{type(self).__name__}.{name}: a buffer can only be replaced by a Tensor "
                    f"or None, got {type(value).__name__}"
                )
            buffers[name] = value
        elif name in modules:
            if value is not None:
                raise DTypeError(
                    f"{type(self).__name__}.{name}: a child module can only be replaced by a "
                    f"Module or None, got {type(value).__name__}"
                )
            modules[name] = None
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str, keep: dict) -> None:
        """Drop `name` from the instance dict and from every table but `keep`."""
        self.__dict__.pop(name, None)
        for table in (self._parameters, self._buffers, self._modules):
            if table is not keep:
                table.pop(name, None)
        if keep is not self._buffers:
            self._non_persistent.discard(name)

    def __getattr__(self, name: str):
        # only called when normal lookup fails: the registered tables
        for table in ("_parameters", "_buffers", "_modules"):
            entries = self.__dict__.get(table)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(
            set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules)
        )

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register a parameter (or None, a declared but absent one, like a bias=False)."""
        self._check_new_name(name, "register_parameter", self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise DTypeError(
                f"register_parameter: '{name}' must be a Parameter or None, "
                f"got {type(param).__name__}"
            )
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Register state that is not a parameter (running statistics): saved in the state dict
        when persistent, moved by `to()`, never given to an optimizer."""
        self._check_new_name(name, "register_buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise DTypeError(
                f"register_buffer: '{name}' must be a Tensor or None, got {type(tensor).__name__}"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Register a child module under `name`."""
        self._check_new_name(name, "add_module", self._modules)
        if module is not None and not isinstance(module, Module):
            raise DTypeError(
                f"add_module: '{name}' must be a Module or None, got {type(module).__name__}"
            )
        self._modules[name] = module

    register_module = add_module

    def _check_new_name(self, name: str, caller: str, table: dict) -> None:
        """A name for `table`: a string without '.', not already some other kind of attribute
        (re-registering within the same table replaces the entry in place, as in PyTorch)."""
        if not isinstance(name, str):
            raise DTypeError(f"{caller}: name must be a string, got {type(name).__name__}")
        if not name or "." in name:
            raise KeyError(f"{caller}: name must be a non-empty string without '.', got {name!r}")
        if name in table:
            return
        if name in self.__dict__ or hasattr(type(self), name) or self._owns(name):
            raise KeyError(f"{caller}: attribute '{name}' already exists")

    def _owns(self, name: str) -> bool:
        return name in self._parameters or name in self._buffers or name in self._modules

    # Traversal

    def named_modules(
        self, prefix: str = "", memo: set | None = None, remove_duplicate: bool = True
    ) -> Iterator:
        """(path, module) for this module and every descendant, depth first, each module once;
        with remove_duplicate=False a shared module under every path it has (a module that
        contains itself is still not entered again)."""
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                path = f"{prefix}.{name}" if prefix else name
                yield from child.named_modules(path, memo, remove_duplicate)
        if not remove_duplicate:
            memo.discard(id(self))  # only the ancestors of the current path stay in memo

    def modules(self) -> Iterator[Module]:
        """This module and every descendant, depth first, each module once."""
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator:
        """(name, module) for each direct child, in registration order, each module once; a child
        set to None is skipped."""
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self) -> Iterator[Module]:
        """Each direct child module, in registration order, each once."""
        for _, child in self.named_children():
            yield child

    def _named_members(self, table: str, recurse: bool, remove_duplicate: bool) -> Iterator:
        seen = set()
        if recurse:
            modules = self.named_modules(remove_duplicate=remove_duplicate)
        else:
            modules = [("", self)]
        for path, module in modules:
            for name, member in getattr(module, table).items():
                if member is None or id(member) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(member))
                yield (f"{path}.{name}" if path else name), member

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator:
        """(dotted name, Parameter) for every parameter, shared ones once (every name they have
        with remove_duplicate=False)."""
        for name, param in self._named_members("_parameters", recurse, remove_duplicate):
            yield (f"{prefix}.{name}" if prefix else name), param

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter of this module and (recurse=True) of its descendants, a shared one once:
        what an optimizer takes, `SGD(model.parameters(), lr=0.1)`."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator:
        """(dotted name, buffer) for every buffer, non-persistent ones included and None ones
        skipped; a shared buffer once (under each name with remove_duplicate=False); recurse=False
        lists this module's own only."""
        for name, buffer in self._named_members("_buffers", recurse, remove_duplicate):
            yield (f"{prefix}.{name}" if prefix else name), buffer

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Every buffer (running statistics and the like) of this module and (recurse=True) of its
        descendants, non-persistent ones included."""
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def get_submodule(self, target: str) -> Module:
        """The descendant at dotted path `target` ('' is this module)."""
        module = self
        for part in target.split(".") if target else []:
            child = module._modules.get(part)
            if child is None:
                raise AttributeError(
                    f"get_submodule: {type(module).__name__} has no child '{part}'"
                )
            module = child
        return module

    # Modes, gradients, devices

    def train(self, mode: bool = True) -> Module:
        """Training mode for this module and, through their own `train`, every descendant
        (dropout active, batch norm updating its running statistics)."""
        if not isinstance(mode, bool):
            raise DTypeError(f"train: mode must be a bool, got {type(mode).__name__}")
        object.__setattr__(self, "training", mode)
        for child in self.children():  # a child's override of train() is honoured, as in PyTorch
            child.train(mode)
        return self

    def eval(self) -> Module:
        """Evaluation mode: `train(False)`."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set `requires_grad` on every parameter (False freezes them); returns self."""
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's gradient: to None (the default), or to zeros in place."""
        zero_grads(self.parameters(), set_to_none)

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call fn on every descendant, then on this module (children first, as in PyTorch)."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def to(self, target=None, *, device=None, dtype=None) -> Module:
        """Move every parameter and buffer to a device ('cpu', 'cuda'), and/or cast the floating
        ones to a dtype, in place: `to('cuda')`, `to(np.float64)`, or PyTorch's keyword form
        `to(device=..., dtype=...)`. The Parameter objects stay the same, so an optimizer built
        before keeps working."""
        device, dtype = device_and_dtype("Module.to", target, device, dtype)
        if dtype is not None and dtype.kind != "f":
            raise DTypeError(f"Module.to: can only cast to a floating dtype, got {dtype}")
        if device is not None:
            self._convert(lambda a: backend.to_device(a, device), floating_only=False)
        if dtype is not None:
            self._convert(lambda a: a.astype(dtype, copy=False), floating_only=True)
        return self

    def float(self) -> Module:
        """Cast the floating parameters and buffers to float32, in place; returns self."""
        return self.to(np.float32)

    def double(self) -> Module:
        """Cast the floating parameters and buffers to float64, in place; returns self."""
        return self.to(np.float64)

    def half(self) -> Module:
        """Cast the floating parameters and buffers to float16, in place; returns self."""
        return self.to(np.float16)

    def share_memory(self) -> Module:
        """Move every parameter and buffer into memory that processes forked afterwards share
        (`Tensor.share_memory_`: Hogwild training with minitrain.multiprocessing); returns
        self."""
        for tensor in [*self.parameters(), *self.buffers()]:
            tensor.share_memory_()
        return self

    def cpu(self) -> Module:
        """Move every parameter and buffer to the CPU, in place; returns self."""
        return self.to("cpu")

    def cuda(self, device: int | str | backend.Device | None = None) -> Module:
        """On a GPU: `device` an index (0 by default), 'cuda:1' or a Device."""
        if device is None or isinstance(device, (int, np.integer)):
            device = f"cuda:{0 if device is None else int(device)}"
        return self.to(device)

    def _convert(self, convert, floating_only: bool) -> Module:
        """Each parameter's and buffer's array, and its gradient's, replaced by convert(array):
        the tensors stay the same objects. A conversion that fails (a GPU that is missing) fails
        on the first array, before any has changed."""
        with no_grad():
            for tensor in [*self.parameters(), *self.buffers()]:
                if floating_only and tensor.dtype.kind != "f":
                    continue
                tensor.array = convert(tensor.array)
                if tensor.grad is not None:
                    tensor.grad.array = convert(tensor.grad.array)
        return self

    # Hooks

    def register_forward_hook(self, hook) -> RemovableHandle:
        """Call `hook(module, inputs, output)` after forward; a returned value replaces the
        output."""
        return _add_hook(self._forward_hooks, hook)

    def register_forward_pre_hook(self, hook) -> RemovableHandle:
        """Call `hook(module, inputs)` before forward; a returned value replaces the inputs."""
        return _add_hook(self._forward_pre_hooks, hook)

    # State dicts

    def state_dict(self, prefix: str = "", *, keep_vars: bool = False) -> OrderedDict:
        """Every parameter and persistent buffer by dotted name, as Tensors outside the graph
        sharing the module's arrays (copy them, or save them, to keep a snapshot); keep_vars=True
        gives the Parameters and buffers themselves. A shared module or parameter is listed under
        every path it has, as in PyTorch."""
        state = OrderedDict()
        for path, module in self.named_modules(prefix.rstrip("."), remove_duplicate=False):
            dot = f"{path}." if path else ""
            for name, param in module._parameters.items():
                if param is not None:
                    state[dot + name] = param if keep_vars else param.detach()
            for name, buffer in module._buffers.items():
                if buffer is not None and name not in module._non_persistent:
                    state[dot + name] = buffer if keep_vars else buffer.detach()
        return state

    def load_state_dict(self, state_dict: Mapping, strict: bool = True) -> IncompatibleKeys:
        """Copy values into this module's parameters and buffers, in place, checked first: with
        strict=True every key must match exactly; shapes must always match. Nothing is changed
        when the check fails. Returns (missing_keys, unexpected_keys), a named pair as PyTorch's.
        A parameter shared by several modules counts as present when any one of its paths is.
        """
        if not isinstance(state_dict, Mapping):
            raise DTypeError(
                f"load_state_dict for {type(self).__name__}: expected a mapping of names to "
                f"arrays, got {type(state_dict).__name__}"
            )
        own = self.state_dict(keep_vars=True)
        # a shared parameter or buffer is listed under each of its paths; one of them loads it
        # (state dicts saved before minitrain listed every path have just the first)
        loaded = {id(target) for key, target in own.items() if key in state_dict}
        missing = [key for key, target in own.items() if id(target) not in loaded]
        unexpected = self._in_load_order([key for key in state_dict if key not in own])
        problems = []
        if strict and missing:
            problems.append(f"missing keys: {missing}")
        if strict and unexpected:
            problems.append(f"unexpected keys: {unexpected}")
        values = {}
        for key, target in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            array = value.array if isinstance(value, Tensor) else value
            if not hasattr(array, "shape"):
                try:
                    array = np.asarray(array)
                except ValueError:  # a ragged list
                    problems.append(f"'{key}': a {type(value).__name__} that is not an array")
                    continue
            if tuple(array.shape) != target.shape:
                problems.append(
                    f"'{key}': shape {tuple(array.shape)} in the state dict, "
                    f"{target.shape} in the module"
                )
            elif array.dtype.kind not in "fiub":
                problems.append(f"'{key}': dtype {array.dtype} cannot be loaded")
            else:
                # cast here, where a cast may fail (np.errstate, -W error on an overflow), not
                # halfway through the copies below
                values[key] = array.astype(target.array.dtype, copy=False)
        if problems:
            raise StateDictError(
                f"load_state_dict for {type(self).__name__}: " + "; ".join(problems)
            )
        with no_grad():
            for key, array in values.items():
                target = own[key]
                target.array[...] = backend.to_device(
                    np.asarray(array) if not backend.is_array(array) else array, target.device
                )
                target.bump_version()
        return IncompatibleKeys(missing, unexpected)

    def _in_load_order(self, keys: list[str]) -> list[str]:
        """Unexpected keys ordered as PyTorch reports them: by the module their path leads to
        (in depth-first order, parents first), then in state-dict order."""
        rank = {path: i for i, (path, _) in enumerate(self.named_modules(remove_duplicate=False))}

        def owner(key) -> int:
            if not isinstance(key, str):
                return len(rank)
            module, path = self, ""
            for part in key.split(".")[:-1]:
                module = module._modules.get(part)
                if module is None:
                    break
                path = f"{path}.{part}" if path else part
            return rank.get(path, len(rank))

        return sorted(keys, key=owner)

    # Repr

    def extra_repr(self) -> str:
        """The layer's own settings for its repr (override: 'in_features=2, out_features=3')."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [
            f"({name}): " + repr(child).replace("\n", "\n  ")
            for name, child in self._modules.items()
        ]
        name = type(self).__name__
        if len(extra_lines) == 1 and not child_lines:
            return f"{name}({extra_lines[0]})"
        if not extra_lines and not child_lines:
            return f"{name}()"
        return name + "(\n  " + "\n  ".join(extra_lines + child_lines) + "\n)"


def _add_hook(hooks: list, hook) -> RemovableHandle:
    if not callable(hook):
        raise DTypeError(f"hook must be callable, got {type(hook).__name__}")
    hooks.append(hook)
    return RemovableHandle(hooks, hook)
