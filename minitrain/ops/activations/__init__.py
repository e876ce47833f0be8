"""Activation functions, softmax and log-softmax, and the array math they share."""

from types import ModuleType as _ModuleType

from .activation import *  # noqa: F403
from .pytorch_activations import *  # noqa: F403
from .softmax_family import *  # noqa: F403

__all__ = [
    name
    for name, value in list(globals().items())
    if not name.startswith("_") and not isinstance(value, _ModuleType)
]
