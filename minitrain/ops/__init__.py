"""Every op as a function, every backward kernel, and `registry()`, which lists the ops with
their backward kernels. Each family folder lists its modules' public names, and each module its
own once, in its `__all__`."""

from types import ModuleType as _ModuleType

from .activations import *  # noqa: F403
from .convolution import *  # noqa: F403
from .core import *  # noqa: F403
from .linalg import *  # noqa: F403
from .losses import *  # noqa: F403
from .normalization import *  # noqa: F403
from .pointwise import *  # noqa: F403
from .random import *  # noqa: F403
from .reductions import *  # noqa: F403
from .resampling import *  # noqa: F403
from .sequence import *  # noqa: F403
from .shapes import *  # noqa: F403

# every public name the families' star imports bound here; the subpackages are not exported
__all__ = [
    name
    for name, value in list(globals().items())
    if not name.startswith("_") and not isinstance(value, _ModuleType)
]

# last, once every family exists: kernels handed Tensors compute with recorded ops
from .core import graph_math as _graph_math  # noqa: E402, F401
