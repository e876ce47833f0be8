"""PyTorch, the reference the tests compare against, or a stand-in where it is not installed.

The sample tables name torch's functions at import (`torch.diagonal` as a Sample's reference), so
a bare `torch = None` breaks their collection without PyTorch. Import `torch` from here instead:
where PyTorch is installed it is the real module; where it is not, every attribute chain
(`torch.nn.functional.gelu`, `torch.float64`) is a placeholder that loads, and using one skips
the running test with the reason and the fix. A test that only checks minitrain never touches it
and runs as usual."""

from __future__ import annotations

import pytest

INSTALL = "pip install torch==2.13.0 (the CPU build) into .venv to compare against it"


def _skip(self, *_args, **_kwargs):
    pytest.skip(f"PyTorch is not installed ({self._path} is the reference): {INSTALL}")


class Missing:
    # Stands for `torch.<path>` where PyTorch is not installed. Calling it, converting it,
    # iterating it, comparing it, `isinstance` against it, reading its docstring or signature,
    # or deriving a class from it skips the test: none of these may quietly give a placeholder's
    # answer to a test that compares. It is falsy (`if torch:` reads "where PyTorch is
    # installed"), and other dunders are missing attributes, as the probes of copy, pickle and
    # pytest's parameter ids expect.

    def __init__(self, path: str = "torch"):
        self._path = path

    def __getattr__(self, name: str) -> Missing:
        if name.startswith("__"):
            raise AttributeError(name)
        return Missing(f"{self._path}.{name}")

    __call__ = __iter__ = __len__ = __getitem__ = __index__ = __float__ = __int__ = _skip
    __eq__ = __ne__ = __array__ = __mro_entries__ = __instancecheck__ = __subclasscheck__ = _skip
    __hash__ = object.__hash__  # a placeholder may still be a dict key or a set member
    __doc__ = property(_skip)
    __signature__ = property(_skip)

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"<{self._path}: PyTorch is not installed>"


try:
    import torch
except ImportError:
    torch = Missing()
