"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping

from ...errors import ArgumentError, DTypeError
from ...tensor import Tensor
from .module import Module, Parameter


def _check_module(caller: str, module) -> Module:
    if not isinstance(module, Module):
        raise DTypeError(f"{caller}: expected a Module, got {type(module).__name__}")
    return module


class _ModuleSequence(Module):
    """What Sequential and ModuleList share: numbered children, appended, extended, inserted,
    deleted and popped as in a list (deleting and inserting renumber them 0, 1, 2, ...)."""

    _kind = ""  # the class's name in errors

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __delitem__(self, index) -> None:
        modules = list(self._modules.values())
        if isinstance(index, slice):
            del modules[index]
        else:
            del modules[_index(index, len(modules), self._kind)]
        self._renumber(modules)

    def append(self, module: Module):
        """Add `module` at the end; returns self."""
        self.add_module(str(len(self)), _check_module(f"{self._kind}.append", module))
        return self

    def extend(self, modules: Iterable[Module]):
        """Append each module of an iterable, in order; returns self."""
        for module in _check_iterable(f"{self._kind}.extend", modules):
            self.append(module)
        return self

    def _insert(self, index, module) -> None:
        caller = f"{self._kind}.insert"
        _check_module(caller, module)
        modules = list(self._modules.values())
        position = _as_int(index, caller)
        if not -len(modules) <= position <= len(modules):
            raise IndexError(
                f"{caller}: index {position} is out of range for inserting into {len(modules)} "
                f"modules"
            )
        modules.insert(position, module)
        self._renumber(modules)

    def pop(self, index: int) -> Module:
        """Remove the module at `index` and return it; the rest are renumbered 0, 1, 2, ..."""
        module = self[index]
        del self[index]
        return module

    def _renumber(self, modules: list[Module]) -> None:
        """Re-register `modules` under the names 0, 1, 2, ... in place of the children."""
        self._modules.clear()
        for i, module in enumerate(modules):
            self._modules[str(i)] = module


class Sequential(_ModuleSequence):
    """Modules applied one after another: `Sequential(a, b, c)(x) == c(b(a(x)))`. Also takes an
    OrderedDict of named modules. Indexing gives a module; slicing a new Sequential. Deleting,
    inserting or popping renumbers the children 0, 1, 2, ... (names included), as in PyTorch."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, module in modules[0].items():
                self.add_module(name, _check_module("Sequential", module))
        else:
            for i, module in enumerate(modules):
                self.add_module(str(i), _check_module("Sequential", module))

    _kind = "Sequential"

    def forward(self, x):
        """Pass x through every module in order, each one's output the next one's input (one
        argument, as in PyTorch); returns the last module's output."""
        for module in self._modules.values():
            x = module(x)
        return x

    def __getitem__(self, index):
        items = list(self._modules.items())
        if isinstance(index, slice):
            return Sequential(OrderedDict(items[index]))
        return items[_index(index, len(items), "Sequential")][1]

    def __setitem__(self, index: int, module: Module) -> None:
        keys = list(self._modules)
        key = keys[_index(index, len(keys), "Sequential")]
        self._modules[key] = _check_module("Sequential", module)

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise DTypeError(f"Sequential +: expected a Sequential, got {type(other).__name__}")
        return Sequential(*self, *other)

    def __iadd__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise DTypeError(f"Sequential +=: expected a Sequential, got {type(other).__name__}")
        return self.extend(other)

    def insert(self, index: int, module: Module) -> Sequential:
        """Insert before position `index` (-len..len, as list.insert but range-checked)."""
        self._insert(index, module)
        return self


class ModuleList(_ModuleSequence):
    """A list of modules, registered so their parameters are found."""

    _kind = "ModuleList"

    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index):
        modules = list(self._modules.values())
        if isinstance(index, slice):
            return ModuleList(modules[index])
        return modules[_index(index, len(modules), "ModuleList")]

    def __setitem__(self, index: int, module: Module) -> None:
        index = _index(index, len(self), "ModuleList")
        self._modules[str(index)] = _check_module("ModuleList", module)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList([*self, *_check_iterable("ModuleList +", other)])

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __repr__(self) -> str:
        """Runs of modules with the same repr folded into one line, as PyTorch prints them:
        `(0-11): 12 x Block(...)`."""
        runs = []  # [first index, last index, repr]
        for i, module in enumerate(self):
            text = repr(module)
            if runs and runs[-1][2] == text:
                runs[-1][1] = i
            else:
                runs.append([i, i, text])
        if not runs:
            return f"{type(self).__name__}()"
        lines = []
        for first, last, text in runs:
            label = f"({first})" if first == last else f"({first}-{last}): {last - first + 1} x"
            head = f"{label}: " if first == last else f"{label} "
            lines.append(head + text.replace("\n", "\n  "))
        return type(self).__name__ + "(\n  " + "\n  ".join(lines) + "\n)"

    def insert(self, index: int, module: Module) -> None:
        """Insert before position `index` (-len..len, as list.insert but range-checked)."""
        self._insert(index, module)

    def forward(self, *args, **kwargs):
        """Not defined: raises NotImplementedError, as PyTorch's; iterate over the list in your own
        forward."""
        raise NotImplementedError("ModuleList has no forward: iterate over it in yours")


class ModuleDict(Module):
    """A dict of modules by name, registered so their parameters are found."""

    def __init__(self, modules: Mapping[str, Module] | None = None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, _check_module("ModuleDict", module))

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key) -> bool:
        return key in self._modules

    def keys(self):
        """The modules' names, in insertion order (a live view)."""
        return self._modules.keys()

    def values(self):
        """The modules, in insertion order (a live view)."""
        return self._modules.values()

    def items(self):
        """(name, module) pairs, in insertion order (a live view)."""
        return self._modules.items()

    def pop(self, key: str) -> Module:
        """Remove the module named `key` and return it; KeyError if there is none."""
        module = self[key]
        del self[key]
        return module

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def update(self, modules) -> None:
        """Add or replace modules from a mapping (a ModuleDict too) or (name, module) pairs."""
        if isinstance(modules, (Mapping, ModuleDict)):
            pairs = modules.items()
        else:
            pairs = _check_iterable("ModuleDict.update", modules)
        for key, module in pairs:
            self[key] = module

    def forward(self, *args, **kwargs):
        """Not defined: raises NotImplementedError, as PyTorch's; look the modules up by name in
        your own forward."""
        raise NotImplementedError("ModuleDict has no forward: look modules up in yours")


def _as_entry(value):
    """What a parameter container stores: a Parameter as it is, any other Tensor made a
    Parameter (as PyTorch's containers do), anything else kept as a plain value."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


class _ParameterTable(Module):
    """What ParameterList and ParameterDict share: entries by name, a Parameter registered (so
    named_parameters, state_dict and optimizers see it as '0', '1', ... or its key) and any
    other value kept beside them, in one order; PyTorch's printout of them."""

    def __init__(self) -> None:
        super().__init__()
        self._entry_names: dict[str, None] = {}  # every entry's name, in order
        self._plain_values: dict[str, object] = {}  # the entries that are not Parameters

    def _set_entry(self, name: str, value) -> None:
        value = _as_entry(value)
        self._entry_names[name] = None
        self._parameters.pop(name, None)
        self._plain_values.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        else:
            self._plain_values[name] = value

    def _get_entry(self, name: str):
        if name in self._parameters:
            return self._parameters[name]
        return self._plain_values[name]

    def _delete_entry(self, name: str) -> None:
        del self._entry_names[name]
        self._parameters.pop(name, None)
        self._plain_values.pop(name, None)

    def __len__(self) -> int:
        return len(self._entry_names)

    def extra_repr(self) -> str:
        lines = []
        for name in self._entry_names:
            value = self._get_entry(name)
            if isinstance(value, Tensor):
                kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
                size = "x".join(str(n) for n in value.shape)
                where = "" if value.device.type == "cpu" else f" ({value.device})"
                text = f"{kind} containing: [minitrain.{value.dtype} of size {size}{where}]"
            else:
                text = type(value).__name__
            lines.append(f"  ({name}): {text}")
        return "\n".join(lines)

    def forward(self, *args, **kwargs):
        """Not defined: raises NotImplementedError (a RuntimeError, as PyTorch's)."""
        raise NotImplementedError(f"{type(self).__name__} should not be called")


class ParameterList(_ParameterTable):
    """A list of parameters, registered under the names '0', '1', ... so a module holding it
    finds them (`model.params.0` in its state_dict). A Tensor put in becomes a Parameter, as in
    PyTorch; other values are kept as they are. Indexing, slicing (a new ParameterList),
    append, extend and += work as on a list."""

    def __init__(self, values: Iterable | None = None) -> None:
        super().__init__()
        if values is not None:
            self.extend(values)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ParameterList([self._get_entry(str(i)) for i in range(len(self))[index]])
        return self._get_entry(str(_index(index, len(self), "ParameterList")))

    def __setitem__(self, index: int, value) -> None:
        self._set_entry(str(_index(index, len(self), "ParameterList")), value)

    def __iter__(self) -> Iterator:
        return (self._get_entry(str(i)) for i in range(len(self)))

    def __iadd__(self, values: Iterable) -> ParameterList:
        return self.extend(values)

    def append(self, value) -> ParameterList:
        """Add `value` at the end (a Tensor made a Parameter); returns self."""
        self._set_entry(str(len(self)), value)
        return self

    def extend(self, values: Iterable) -> ParameterList:
        """Append each value of an iterable, in order; returns self."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise DTypeError(
                f"ParameterList.extend: expected an iterable of parameters, got "
                f"{type(values).__name__}"
            )
        for value in values:
            self.append(value)
        return self


class ParameterDict(_ParameterTable):
    """A dict of parameters by name (str keys without '.'), registered under their keys so a
    module holding it finds them. A Tensor put in becomes a Parameter, as in PyTorch; other
    values are kept as they are. Built or updated from a mapping (a plain dict's items sorted by
    key, an OrderedDict's or ParameterDict's in order, as PyTorch's) or (key, value) pairs."""

    def __init__(self, parameters=None) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str):
        if key not in self._entry_names:
            raise KeyError(key)
        return self._get_entry(key)

    def __setitem__(self, key: str, value) -> None:
        if not isinstance(key, str):
            raise DTypeError(f"ParameterDict: keys must be strings, got {type(key).__name__}")
        if not key or "." in key:
            raise KeyError(
                f"ParameterDict: a key must be a non-empty string without '.', got {key!r}"
            )
        self._set_entry(key, value)

    def __delitem__(self, key: str) -> None:
        if key not in self._entry_names:
            raise KeyError(key)
        self._delete_entry(key)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._entry_names))

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._entry_names))

    def __contains__(self, key) -> bool:
        return key in self._entry_names

    def __or__(self, other) -> ParameterDict:
        merged = self.copy()
        merged.update(other)
        return merged

    def __ior__(self, other) -> ParameterDict:
        self.update(other)
        return self

    def keys(self):
        """The keys, in order."""
        return list(self._entry_names)

    def values(self) -> list:
        """The values, in key order."""
        return [self._get_entry(key) for key in self._entry_names]

    def items(self) -> list:
        """(key, value) pairs, in order."""
        return [(key, self._get_entry(key)) for key in self._entry_names]

    def get(self, key: str, default=None):
        """The value of `key`, or `default` where there is none."""
        return self[key] if key in self else default

    def setdefault(self, key: str, default=None):
        """The value of `key`, first set to `default` where there is none."""
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key: str):
        """Remove `key` and return its value; KeyError if there is none."""
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple:
        """Remove the last (key, value) pair and return it; KeyError when empty."""
        if not self._entry_names:
            raise KeyError("ParameterDict.popitem: the dict is empty")
        key = next(reversed(self._entry_names))
        return key, self.pop(key)

    def clear(self) -> None:
        """Remove every entry."""
        for key in list(self._entry_names):
            self._delete_entry(key)

    def copy(self) -> ParameterDict:
        """A new ParameterDict holding the same values (the Parameters shared, not copied)."""
        return ParameterDict(OrderedDict(self.items()))

    def fromkeys(self, keys: Iterable[str], default=None) -> ParameterDict:
        """A new ParameterDict with each of `keys` set to `default`."""
        return ParameterDict(OrderedDict((key, default) for key in keys))

    def update(self, parameters) -> None:
        """Add or replace entries from a mapping or an iterable of (key, value) pairs."""
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())
        elif isinstance(parameters, Iterable) and not isinstance(parameters, (str, Tensor)):
            pairs = []
            for position, pair in enumerate(parameters):
                if not isinstance(pair, Iterable) or len(pair := tuple(pair)) != 2:
                    raise ArgumentError(
                        f"ParameterDict.update: element #{position} of the iterable must be a "
                        f"(key, value) pair, got {pair!r}"
                    )
                pairs.append(pair)
        else:
            raise DTypeError(
                f"ParameterDict.update: expected a mapping or (key, value) pairs, got "
                f"{type(parameters).__name__}"
            )
        for key, value in pairs:
            self[key] = value


def _check_iterable(caller: str, modules) -> Iterable:
    if not isinstance(modules, Iterable):
        raise DTypeError(f"{caller}: expected an iterable of Modules, got {type(modules).__name__}")
    return modules


def _as_int(index, caller: str) -> int:
    """An index as an int: anything with __index__ (numpy integers too), as PyTorch takes."""
    try:
        return operator.index(index)
    except TypeError:
        raise DTypeError(
            f"{caller}: index must be an int or a slice, got {type(index).__name__}"
        ) from None


def _index(index, length: int, caller: str) -> int:
    index = _as_int(index, caller)
    if not -length <= index < length:
        raise IndexError(f"{caller}: index {index} is out of range for {length} modules")
    return index % length
