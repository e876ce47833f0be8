"""Containers: Sequential, ModuleList, ModuleDict."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping

from ..errors import DTypeError
from .module import Module


def _check_module(where: str, module) -> Module:
    if not isinstance(module, Module):
        raise DTypeError(f"{where}: expected a Module, got {type(module).__name__}")
    return module


class Sequential(Module):
    """Modules applied one after another: `Sequential(a, b, c)(x) == c(b(a(x)))`. Also takes an
    OrderedDict of named modules. Indexing gives a module; slicing a new Sequential."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, module in modules[0].items():
                self.add_module(name, _check_module("Sequential", module))
        else:
            for i, module in enumerate(modules):
                self.add_module(str(i), _check_module("Sequential", module))

    def forward(self, x):
        for module in self._modules.values():
            x = module(x)
        return x

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, index):
        items = list(self._modules.items())
        if isinstance(index, slice):
            return Sequential(OrderedDict(items[index]))
        return items[_index(index, len(items), "Sequential")][1]

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), _check_module("Sequential.append", module))
        return self


class ModuleList(Module):
    """A list of modules, registered so their parameters are found."""

    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, index):
        modules = list(self._modules.values())
        if isinstance(index, slice):
            return ModuleList(modules[index])
        return modules[_index(index, len(modules), "ModuleList")]

    def __setitem__(self, index: int, module: Module) -> None:
        index = _index(index, len(self), "ModuleList")
        self._modules[str(index)] = _check_module("ModuleList", module)

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), _check_module("ModuleList.append", module))
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        modules = list(self._modules.values())
        modules.insert(index, _check_module("ModuleList.insert", module))
        self._modules.clear()
        for i, m in enumerate(modules):
            self._modules[str(i)] = m

    def forward(self, *args, **kwargs):
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
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def update(self, modules) -> None:
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for key, module in pairs:
            self[key] = module

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict has no forward: look modules up in yours")


def _index(index: int, length: int, where: str) -> int:
    if not isinstance(index, int) or isinstance(index, bool):
        raise DTypeError(f"{where}: index must be an int or a slice, got {type(index).__name__}")
    if not -length <= index < length:
        raise IndexError(f"{where}: index {index} is out of range for {length} modules")
    return index % length
