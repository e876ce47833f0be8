"""Containers: Sequential, ModuleList, ModuleDict."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping

from ...errors import DTypeError
from .module import Module


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
