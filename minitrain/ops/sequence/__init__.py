"""Attention and the fused recurrent cells."""

from types import ModuleType as _ModuleType

from .attention import *  # noqa: F403
from .gru import *  # noqa: F403
from .lstm import *  # noqa: F403

__all__ = [
    name
    for name, value in list(globals().items())
    if not name.startswith("_") and not isinstance(value, _ModuleType)
]
