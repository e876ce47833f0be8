"""Convolutions (direct and transposed) and pooling, with the window, column and chunking helpers
they share."""

from types import ModuleType as _ModuleType

from .adaptive_pooling import *  # noqa: F403
from .average_pooling import *  # noqa: F403
from .columns import *  # noqa: F403
from .max_pooling import *  # noqa: F403
from .standard import *  # noqa: F403
from .transposed import *  # noqa: F403

__all__ = [
    name
    for name, value in list(globals().items())
    if not name.startswith("_") and not isinstance(value, _ModuleType)
]
