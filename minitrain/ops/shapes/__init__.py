"""Ops that move elements without computing on them: reshapes and joins, rearrangements, indexing,
scatters and gathers."""

from types import ModuleType as _ModuleType

from .indexing import *  # noqa: F403
from .rearrange import *  # noqa: F403
from .scattering import *  # noqa: F403
from .shape import *  # noqa: F403

__all__ = [
    name
    for name, value in list(globals().items())
    if not name.startswith("_") and not isinstance(value, _ModuleType)
]
