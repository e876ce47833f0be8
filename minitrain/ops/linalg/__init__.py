"""Matrix products and einsum."""

from types import ModuleType as _ModuleType

from .contraction import *  # noqa: F403
from .products import *  # noqa: F403

__all__ = [
    name
    for name, value in list(globals().items())
    if not name.startswith("_") and not isinstance(value, _ModuleType)
]
