"""Every op as a function, every backward kernel, and `registry()`, which lists the ops with
their backward kernels. Each family module lists its public names once, in its `__all__`."""

import sys

from .activation import *  # noqa: F403
from .adaptive_pooling import *  # noqa: F403
from .batch_normalization import *  # noqa: F403
from .class_loss import *  # noqa: F403
from .columns import *  # noqa: F403
from .convolution import *  # noqa: F403
from .elementwise import *  # noqa: F403
from .layer_normalization import *  # noqa: F403
from .linalg import *  # noqa: F403
from .masking import *  # noqa: F403
from .op import *  # noqa: F403
from .pointwise_loss import *  # noqa: F403
from .pooling import *  # noqa: F403
from .pytorch_activations import *  # noqa: F403
from .random import *  # noqa: F403
from .reduction import *  # noqa: F403
from .rounding import *  # noqa: F403
from .shape import *  # noqa: F403
from .softmax_family import *  # noqa: F403
from .transposed_convolution import *  # noqa: F403

# every family module's public names, each listed once, in its own `__all__`
__all__ = [
    name
    for module in sorted(sys.modules)
    if module.startswith(__name__ + ".") and hasattr(sys.modules[module], "__all__")
    for name in sys.modules[module].__all__
]
