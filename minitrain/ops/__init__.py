"""Every op as a function, every backward kernel, and `registry()`, which lists the ops with
their backward kernels. Each family module lists its public names once, in its `__all__`."""

from types import ModuleType as _ModuleType

from .activation import *  # noqa: F403
from .adaptive_pooling import *  # noqa: F403
from .attention import *  # noqa: F403
from .batch_normalization import *  # noqa: F403
from .binary_math import *  # noqa: F403
from .class_loss import *  # noqa: F403
from .columns import *  # noqa: F403
from .contraction import *  # noqa: F403
from .convolution import *  # noqa: F403
from .elementwise import *  # noqa: F403
from .indexing import *  # noqa: F403
from .layer_normalization import *  # noqa: F403
from .linalg import *  # noqa: F403
from .masking import *  # noqa: F403
from .op import *  # noqa: F403
from .pair_loss import *  # noqa: F403
from .pointwise_loss import *  # noqa: F403
from .pooling import *  # noqa: F403
from .predicates import *  # noqa: F403
from .pytorch_activations import *  # noqa: F403
from .random import *  # noqa: F403
from .rearrange import *  # noqa: F403
from .recurrent import *  # noqa: F403
from .reduction import *  # noqa: F403
from .resampling import *  # noqa: F403
from .rounding import *  # noqa: F403
from .scans import *  # noqa: F403
from .scattering import *  # noqa: F403
from .shape import *  # noqa: F403
from .similarity import *  # noqa: F403
from .softmax_family import *  # noqa: F403
from .sorting import *  # noqa: F403
from .statistics import *  # noqa: F403
from .transcendental import *  # noqa: F403
from .transposed_convolution import *  # noqa: F403

# every public name the families' star imports bound here (each family lists its own once,
# in its __all__); the submodules themselves are not exported
__all__ = [
    name
    for name, value in list(globals().items())
    if not name.startswith("_") and not isinstance(value, _ModuleType)
]
