"""Instance normalization layers: InstanceNorm1d/2d/3d."""

from __future__ import annotations

import warnings

from ...errors import ShapeError
from ...tensor import Tensor
from ..functional.normalization import instance_norm
from .normalization import BatchNormBase


class InstanceNormBase(BatchNormBase):
    """What InstanceNorm1d/2d/3d share: batch norm's parameters, buffers and printout (with
    PyTorch's instance-norm defaults affine=False, track_running_stats=False), each sample's
    each channel normalized over its positions, and an unbatched input taken as a batch of one.
    `spatial` is the number of position dims."""

    spatial = 0

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ):
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )

    def forward(self, x: Tensor) -> Tensor:
        """(N, C, *spatial) or unbatched (C, *spatial) -> the same shape: in training, or without
        track_running_stats, each instance's own statistics (the running ones, if tracked,
        updated; num_batches_tracked is left alone, as in PyTorch); in eval mode with tracked
        statistics, the running ones."""
        unbatched = self.spatial + 1
        if x.ndim not in (unbatched, unbatched + 1):
            raise ShapeError(
                f"{type(self).__name__}: expected {unbatched}D or {unbatched + 1}D input, got "
                f"shape {tuple(x.shape)}"
            )
        channel_dim = x.ndim - unbatched
        if x.shape[channel_dim] != self.num_features:
            message = (
                f"{type(self).__name__}: expected input's size at dim={channel_dim} to match "
                f"num_features ({self.num_features}), got shape {tuple(x.shape)}"
            )
            if self.affine:
                raise ShapeError(message)
            # PyTorch only warns where no per-channel parameter needs the count to match
            warnings.warn(message, stacklevel=2)
        if x.ndim == unbatched:
            return self._normalize_batch(x.unsqueeze(0)).squeeze(0)
        return self._normalize_batch(x)

    def _normalize_batch(self, x: Tensor) -> Tensor:
        return instance_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            0.0 if self.momentum is None else self.momentum,
            self.eps,
        )


class InstanceNorm1d(InstanceNormBase):
    """Instance norm of (N, C, L) or (C, L): each channel over its L positions."""

    spatial = 1


class InstanceNorm2d(InstanceNormBase):
    """Instance norm of (N, C, H, W) or (C, H, W): each channel over its H x W positions."""

    spatial = 2


class InstanceNorm3d(InstanceNormBase):
    """Instance norm of (N, C, D, H, W) or (C, D, H, W): each channel over its positions."""

    spatial = 3
