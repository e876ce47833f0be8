"""`import torch` answered by minitrain: an import hook that makes every `torch` and
`torch.<path>` import load `minitrain` and `minitrain.<path>`, so that a PyTorch program runs on
minitrain unchanged (`python -m minitrain program.py`, or `install()` before its imports).

A path minitrain lacks fails as an import of it would, naming both modules. Packages that import
torch themselves (torchvision, a tokenizer's torch helpers) then get minitrain too, and work as
far as they keep to what minitrain has."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

__all__ = ["install", "uninstall", "installed"]


class _Loaded(importlib.abc.Loader):
    """Hands the import system a module that is already loaded."""

    def __init__(self, module) -> None:
        self.module = module
        self.own_spec = getattr(module, "__spec__", None)

    def create_module(self, spec):
        return self.module

    def exec_module(self, module) -> None:
        if self.own_spec is not None:  # the import system set the torch spec: keep minitrain's
            module.__spec__ = self.own_spec


class TorchAsMinitrain(importlib.abc.MetaPathFinder):
    """The meta path finder: `torch[.x]` is `minitrain[.x]`."""

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        name = "minitrain" + fullname.removeprefix("torch")
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as missing:
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: minitrain has no {name!r} ({missing})",
                name=fullname,
            ) from None
        # a package, or a module minitrain registers names under (`minitrain.backends.cudnn`):
        # the import system looks for the children of packages only
        package = hasattr(module, "__path__") or any(n.startswith(f"{name}.") for n in sys.modules)
        return importlib.util.spec_from_loader(fullname, _Loaded(module), is_package=package)


def installed() -> bool:
    """Whether `import torch` is answered by minitrain in this process."""
    return any(isinstance(finder, TorchAsMinitrain) for finder in sys.meta_path)


def install() -> None:
    """From now on, `import torch` and `import torch.<path>` load minitrain and its module of
    that path, in this process and in the processes it starts by 'spawn' (DataLoader workers,
    multiprocessing.spawn): their preparation carries the alias in before they import the
    program. Refused where the real torch is imported already (the two would mix)."""
    if installed():
        return
    real = sys.modules.get("torch")
    if real is not None and not getattr(real, "__name__", "").startswith("minitrain"):
        raise ImportError(
            "minitrain.compat.torch_alias.install: PyTorch is imported already in this process; "
            "install the alias before anything imports torch"
        )
    sys.meta_path.insert(0, TorchAsMinitrain())
    _carry_into_spawned_processes()


class _InstallWhenUnpickled:
    """Unpickled in a spawned child before it prepares (imports the parent's main module):
    installs the alias there first."""

    def __reduce__(self):
        return install, ()


def _carry_into_spawned_processes() -> None:
    # A spawned child unpickles its preparation data, then imports the parent's __main__ from
    # its path; an entry of that data that installs the alias as it is unpickled comes first.
    # ('fork' children inherit the hook; 'forkserver' ones are not covered.)
    from multiprocessing import spawn

    prepared = spawn.get_preparation_data
    if getattr(prepared, "carries_torch_alias", False):
        return

    def get_preparation_data(name):
        data = prepared(name)
        if installed():
            data["minitrain_torch_alias"] = _InstallWhenUnpickled()
        return data

    get_preparation_data.carries_torch_alias = True
    spawn.get_preparation_data = get_preparation_data


def uninstall() -> None:
    """Undo `install`: the hook goes, and the torch names it put in sys.modules with it."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, TorchAsMinitrain)]
    for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
        if getattr(sys.modules[name], "__name__", "").startswith("minitrain"):
            del sys.modules[name]
