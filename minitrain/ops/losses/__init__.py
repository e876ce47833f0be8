"""Loss functions: class losses, pointwise losses, pair losses, similarities, and `reduction=`."""

from types import ModuleType as _ModuleType

from .class_loss import *  # noqa: F403
from .nll import *  # noqa: F403
from .pair_loss import *  # noqa: F403
from .pointwise_loss import *  # noqa: F403
from .similarity import *  # noqa: F403

__all__ = [
    name
    for name, value in list(globals().items())
    if not name.startswith("_") and not isinstance(value, _ModuleType)
]
