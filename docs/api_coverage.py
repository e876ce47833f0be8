"""Whether the API reference is complete: every public module has `__all__` and a page in
docs/api/, every public class and function a module defines is in its `__all__`, and every public
name has a docstring. The documentation build (docs/hooks.py) fails where one does not hold;
`python docs/api_coverage.py` prints them.

A public name is one a public module exports (its `__all__`) and, of a public class, each method
and property without a leading underscore that it defines or inherits from minitrain's classes
(a docstring inherited from the method it overrides counts, as `help()` shows it)."""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

API_PAGES = Path(__file__).resolve().parent / "api"

# Every module a user imports from, each rendered on one of the pages in docs/api/.
PUBLIC_MODULES = [
    "minitrain",
    "minitrain.creation",
    "minitrain.functions",
    "minitrain.autograd",
    "minitrain.autograd.functional",
    "minitrain.autograd.gradcheck",
    "minitrain.ops",
    "minitrain.nn",
    "minitrain.nn.functional",
    "minitrain.nn.init",
    "minitrain.nn.utils",
    "minitrain.nn.utils.rnn",
    "minitrain.nn.parallel",
    "minitrain.optim",
    "minitrain.optim.lr_scheduler",
    "minitrain.utils.data",
    "minitrain.utils.tensorboard",
    "minitrain.train",
    "minitrain.io",
    "minitrain.io.safetensors",
    "minitrain.onnx",
    "minitrain.viz",
    "minitrain.distributed",
    "minitrain.cuda",
    "minitrain.errors",
    "minitrain.compat",
    "minitrain.compat.backends",
    "minitrain.compat.amp",
    "minitrain.compat.accelerator",
    "minitrain.runtime.defaults",
    "minitrain.runtime.generator",
]


def left_out_of_all() -> list[str]:
    """Public-looking classes and functions a public module defines but leaves out of its
    `__all__`: a user reaches them, the reference would not show them. Export them, or give
    them a leading underscore."""
    left = []
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        exported = set(getattr(module, "__all__", ()))
        left += [
            f"{name}.{member}"
            for member, value in vars(module).items()
            if not member.startswith("_")
            and (inspect.isclass(value) or inspect.isfunction(value))
            and value.__module__ == name
            and member not in exported
        ]
    return left


def modules_without_all() -> list[str]:
    """The public modules that do not say what they offer (`__all__`): the API pages render a
    module's __all__, and without one they would render everything it imports too."""
    return [
        name for name in PUBLIC_MODULES if not hasattr(importlib.import_module(name), "__all__")
    ]


def _members(cls) -> dict[str, object]:
    """The public methods and properties of `cls`, its own and those it inherits from
    minitrain's classes (Tensor's in-place methods, a layer's from Module), as `cls` has them."""
    members = {}
    for klass in reversed(cls.__mro__):
        if not klass.__module__.startswith("minitrain"):
            continue
        for name, value in vars(klass).items():
            if name.startswith("_"):
                continue
            routine = isinstance(value, property | staticmethod | classmethod)
            if routine or inspect.isfunction(value):
                members[name] = value
    return members


def undocumented() -> list[str]:
    """The public names without a docstring, each once (by its first public path)."""
    missing, seen = [], set()
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        if not module.__doc__:
            missing.append(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.ismodule(value) or not callable(value) or id(value) in seen:
                continue  # modules have their own entry; dtypes and constants need none
            seen.add(id(value))
            path = f"{module_name}.{name}"
            if not inspect.getdoc(value) or (inspect.isclass(value) and value.__doc__ is None):
                missing.append(path)
            if not inspect.isclass(value) or not value.__module__.startswith("minitrain"):
                continue
            for member, raw in _members(value).items():
                if id(raw) in seen:
                    continue  # an inherited method, met on an earlier class
                seen.add(id(raw))
                if not inspect.getdoc(getattr(value, member)):
                    missing.append(f"{path}.{member}")
    return missing


def modules_without_a_page() -> list[str]:
    """The public modules that no page of docs/api/ renders (`::: module` on a line)."""
    rendered = set()
    for page in API_PAGES.glob("*.md"):
        rendered |= set(re.findall(r"^::: ([\w.]+)", page.read_text(encoding="utf-8"), re.M))
    return [name for name in PUBLIC_MODULES if name not in rendered]


def problems() -> list[str]:
    """Everything the documentation build refuses, one line each ([] where all is well)."""
    lines = [f"{name}: a public module without __all__" for name in modules_without_all()]
    lines += [
        f"{name}: a public module without a page in docs/api/" for name in modules_without_a_page()
    ]
    lines += [f"{name}: public, but not in its module's __all__" for name in left_out_of_all()]
    if not lines:  # without __all__, what a module offers is not defined yet
        lines += [f"{name}: a public name without a docstring" for name in undocumented()]
    return lines


if __name__ == "__main__":
    found = problems()
    print("\n".join(found) or "the API reference is complete")
    sys.exit(1 if found else 0)
