"""The machinery every op family builds on: `Op`, `Ctx`, `Op.apply` and the registry (op.py), the
argument checks several families share (checks.py), scalar helpers for numba kernels
(numba_math.py)."""

from types import ModuleType as _ModuleType

from .op import *  # noqa: F403

__all__ = [
    name
    for name, value in list(globals().items())
    if not name.startswith("_") and not isinstance(value, _ModuleType)
]
