"""Dropout layers: Dropout, Dropout1d/2d/3d (whole channels), AlphaDropout and
FeatureAlphaDropout (for SELU networks)."""

from __future__ import annotations

from ... import ops
from ...ops.random.dropout import check_probability
from ...tensor import Tensor
from ..functional import dropouts
from .module import Module


class DropoutBase(Module):
    """What the dropout layers share: p (checked), inplace (accepted; the result is a new
    tensor) and PyTorch's printout `p=0.5, inplace=False`."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        self.p = check_probability(p, type(self).__name__)
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(DropoutBase):
    """In training mode, zero each element with probability p and scale the rest by 1/(1-p);
    the identity in eval mode."""

    def forward(self, x: Tensor) -> Tensor:
        """Input (*) -> the same shape: in training mode each element zeroed with probability p and
        the rest scaled by 1 / (1 - p); in eval mode x itself."""
        return ops.dropout(x, self.p, self.training)


class Dropout1d(DropoutBase):
    """In training mode, zero whole channels of (N, C, L) or (C, L), each with probability p,
    and scale the rest by 1/(1-p); the identity in eval mode."""

    def forward(self, x: Tensor) -> Tensor:
        """(N, C, L) or (C, L) -> the same shape. See F.dropout1d."""
        return dropouts.dropout1d(x, self.p, self.training)


class Dropout2d(DropoutBase):
    """In training mode, zero whole channels of (N, C, H, W), each with probability p, and
    scale the rest by 1/(1-p); the identity in eval mode. A 3-D input is read as (N, C, L),
    with a warning, as in PyTorch."""

    def forward(self, x: Tensor) -> Tensor:
        """(N, C, H, W) -> the same shape. See F.dropout2d."""
        return dropouts.dropout2d(x, self.p, self.training)


class Dropout3d(DropoutBase):
    """In training mode, zero whole channels of (N, C, D, H, W) or (C, D, H, W), each with
    probability p, and scale the rest by 1/(1-p); the identity in eval mode."""

    def forward(self, x: Tensor) -> Tensor:
        """(N, C, D, H, W) or (C, D, H, W) -> the same shape. See F.dropout3d."""
        return dropouts.dropout3d(x, self.p, self.training)


class AlphaDropout(DropoutBase):
    """Alpha dropout in training mode (elements dropped to SELU's negative saturation, then
    scaled and shifted so the mean and variance are kept); the identity in eval mode."""

    def forward(self, x: Tensor) -> Tensor:
        """Input (*) -> the same shape. See F.alpha_dropout."""
        return dropouts.alpha_dropout(x, self.p, self.training)


class FeatureAlphaDropout(DropoutBase):
    """Alpha dropout of whole channels of (N, C, *) in training mode; the identity in eval
    mode."""

    def forward(self, x: Tensor) -> Tensor:
        """(N, C, *) -> the same shape. See F.feature_alpha_dropout."""
        return dropouts.feature_alpha_dropout(x, self.p, self.training)
