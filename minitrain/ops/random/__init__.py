"""Ops that draw random numbers: dropout, multinomial."""

from types import ModuleType as _ModuleType

from .dropout import *  # noqa: F403
from .sampling import *  # noqa: F403

__all__ = [
    name
    for name, value in list(globals().items())
    if not name.startswith("_") and not isinstance(value, _ModuleType)
]
