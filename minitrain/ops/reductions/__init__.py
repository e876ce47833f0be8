"""Ops that reduce or scan along dims: sums and extremes, cumulative scans, statistics, sorting."""

from types import ModuleType as _ModuleType

from .extremes import *  # noqa: F403
from .reduction import *  # noqa: F403
from .scans import *  # noqa: F403
from .sorting import *  # noqa: F403
from .statistics import *  # noqa: F403

__all__ = [
    name
    for name, value in list(globals().items())
    if not name.startswith("_") and not isinstance(value, _ModuleType)
]
