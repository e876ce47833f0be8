"""Batch, layer, RMS and group normalization and their gradient kernels."""

from types import ModuleType as _ModuleType

from .batch import *  # noqa: F403
from .group import *  # noqa: F403
from .layer import *  # noqa: F403
from .rms import *  # noqa: F403

__all__ = [
    name
    for name, value in list(globals().items())
    if not name.startswith("_") and not isinstance(value, _ModuleType)
]
