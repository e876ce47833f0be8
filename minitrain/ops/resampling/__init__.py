"""Interpolation, folding and unfolding of patches, unpooling, pixel shuffle."""

from types import ModuleType as _ModuleType

from .interpolation import *  # noqa: F403
from .patches import *  # noqa: F403
from .shuffle import *  # noqa: F403
from .unpooling import *  # noqa: F403

__all__ = [
    name
    for name, value in list(globals().items())
    if not name.startswith("_") and not isinstance(value, _ModuleType)
]
