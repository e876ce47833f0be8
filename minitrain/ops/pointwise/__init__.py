"""Elementwise ops: arithmetic, transcendental and two-argument math, rounding, predicates and
masks."""

from types import ModuleType as _ModuleType

from .arithmetic import *  # noqa: F403
from .binary_math import *  # noqa: F403
from .conversion import *  # noqa: F403
from .masking import *  # noqa: F403
from .predicates import *  # noqa: F403
from .rounding import *  # noqa: F403
from .transcendental import *  # noqa: F403

__all__ = [
    name
    for name, value in list(globals().items())
    if not name.startswith("_") and not isinstance(value, _ModuleType)
]
