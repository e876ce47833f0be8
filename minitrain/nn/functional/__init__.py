"""PyTorch's functional names (`F.relu`, `F.conv2d`, `F.batch_norm`, ...) over minitrain.ops, a
module per kind: activations, dense (linear, dropout, attention, embedding), convolution (and
pooling), normalization, losses, vision (pad, interpolate, fold, pixel shuffle, unpooling) and
distance. Each takes PyTorch's signature."""

from . import activations, convolution, dense, distance, losses, normalization, vision
from .activations import *  # noqa: F403
from .convolution import *  # noqa: F403
from .dense import *  # noqa: F403
from .distance import *  # noqa: F403
from .losses import *  # noqa: F403
from .normalization import *  # noqa: F403
from .vision import *  # noqa: F403

__all__ = [
    *activations.__all__,
    *dense.__all__,
    *convolution.__all__,
    *normalization.__all__,
    *losses.__all__,
    *vision.__all__,
    *distance.__all__,
]
