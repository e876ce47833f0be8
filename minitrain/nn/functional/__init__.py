"""PyTorch's functional names (`F.relu`, `F.conv2d`, `F.batch_norm`, ...) over minitrain.ops, a
module per kind: activations, dense (linear, dropout, attention, embedding), dropouts (channel-wise
and alpha dropout), convolution (and pooling), lp_pooling, normalization, losses, vision (pad,
interpolate, fold, pixel shuffle, unpooling), grid_sampling and distance. Each takes PyTorch's
signature."""

from . import (
    activations,
    convolution,
    dense,
    distance,
    dropouts,
    grid_sampling,
    losses,
    lp_pooling,
    normalization,
    vision,
)
from .activations import *  # noqa: F403
from .convolution import *  # noqa: F403
from .dense import *  # noqa: F403
from .distance import *  # noqa: F403
from .dropouts import *  # noqa: F403
from .grid_sampling import *  # noqa: F403
from .losses import *  # noqa: F403
from .lp_pooling import *  # noqa: F403
from .normalization import *  # noqa: F403
from .vision import *  # noqa: F403

__all__ = [
    *activations.__all__,
    *dense.__all__,
    *dropouts.__all__,
    *convolution.__all__,
    *lp_pooling.__all__,
    *normalization.__all__,
    *losses.__all__,
    *vision.__all__,
    *grid_sampling.__all__,
    *distance.__all__,
]
