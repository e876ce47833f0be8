"""Normalization layers: BatchNorm1d/2d/3d, LayerNorm (also invertible), RMSNorm, GroupNorm,
LocalResponseNorm."""

from __future__ import annotations

import numpy as np

from ... import ops
from ...autograd.grad_mode import no_grad
from ...errors import ArgumentError, DTypeError, ShapeError
from ...tensor import Tensor
from ..functional.normalization import local_response_norm
from .linear import layer_dtype
from .module import Module, Parameter


class BatchNormBase(Module):
    """What BatchNorm1d/2d/3d and SyncBatchNorm share: PyTorch's parameters and buffers, the
    momentum rule, the input checks; `_normalize` is the one step a subclass replaces."""

    ranks: tuple[int, ...] = ()

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ):
        super().__init__()
        dtype = layer_dtype(dtype, type(self).__name__)
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.register_parameter(
            "weight", Parameter(np.ones(num_features, dtype)) if affine else None
        )
        has_bias = affine and bias
        self.register_parameter(
            "bias", Parameter(np.zeros(num_features, dtype)) if has_bias else None
        )
        if track_running_stats:
            self.register_buffer("running_mean", Tensor(np.zeros(num_features, dtype)))
            self.register_buffer("running_var", Tensor(np.ones(num_features, dtype)))
            self.register_buffer("num_batches_tracked", Tensor(np.zeros((), np.int64)))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)
        if device is not None:
            self.to(device)

    def reset_running_stats(self) -> None:
        """Reset running_mean to 0, running_var to 1 and num_batches_tracked to 0, in place (nothing
        without track_running_stats)."""
        if self.track_running_stats:
            self.running_mean.array[...] = 0
            self.running_var.array[...] = 1
            self.num_batches_tracked.array[...] = 0

    def forward(self, x: Tensor) -> Tensor:
        """Input (N, C, *) (the ranks the class takes) -> the same shape, normalized per channel C:
        with the batch's statistics in training mode, updating the running ones (momentum=None:
        their cumulative average); with the running ones in eval mode; with the batch's always when
        track_running_stats=False."""
        self._check_input(x)
        momentum = 0.0 if self.momentum is None else self.momentum
        updating = self.training and self.track_running_stats
        if updating and self.momentum is None:  # cumulative moving average, as in PyTorch
            momentum = 1.0 / (int(self.num_batches_tracked.array) + 1)
        out = self._normalize(x, momentum, updating)
        if updating:  # counted only once the op has checked its input and run
            with no_grad():  # an in-place op, as PyTorch's: a compiled module replays it
                self.num_batches_tracked.add_(1)
        return out

    def _check_input(self, x: Tensor) -> None:
        """x's rank is one of `ranks` (any from 2 where `ranks` is empty) and its axis 1 holds
        num_features channels."""
        if (x.ndim not in self.ranks) if self.ranks else (x.ndim < 2):
            expected = " or ".join(map(str, self.ranks)) if self.ranks else "2 or more"
            dims = ", ..." if not self.ranks or max(self.ranks) > 2 else ""
            raise ShapeError(
                f"{type(self).__name__}: expected input of rank {expected} (N, C{dims}), got "
                f"shape {tuple(x.shape)}"
            )
        if x.shape[1] != self.num_features:
            raise ShapeError(
                f"{type(self).__name__}: input has {x.shape[1]} channels (axis 1), the layer "
                f"was built for num_features={self.num_features}"
            )

    def _normalize(self, x: Tensor, momentum: float, updating: bool) -> Tensor:
        """The batch norm op: batch statistics in training (or without running ones), updating
        the running ones where `updating`; the running ones in eval."""
        use_running = self.track_running_stats and (updating or not self.training)
        return ops.batch_norm(
            x,
            self.weight,
            self.bias,
            self.eps,
            running_mean=self.running_mean if use_running else None,
            running_var=self.running_var if use_running else None,
            training=self.training or not self.track_running_stats,
            momentum=momentum,
        )

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(BatchNormBase):
    """Batch norm over (N, C) or (N, C, L), per channel C."""

    ranks = (2, 3)


class BatchNorm2d(BatchNormBase):
    """Batch norm over (N, C, H, W), per channel C."""

    ranks = (4,)


class BatchNorm3d(BatchNormBase):
    """Batch norm over (N, C, D, H, W), per channel C."""

    ranks = (5,)


def _shape(normalized_shape) -> tuple[int, ...]:
    return (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)


class LayerNorm(Module):
    """Normalize over the last dims (`normalized_shape`), then scale and shift. With
    invertible=True the backward rebuilds x_hat from the output, so the input is not kept for it
    (InvertibleLayerNormalizationGrad): less memory, same gradients."""

    def __init__(
        self,
        normalized_shape,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device=None,
        dtype=None,
        *,
        invertible: bool = False,
    ):
        super().__init__()
        dtype = layer_dtype(dtype, "LayerNorm")
        self.normalized_shape = _shape(normalized_shape)
        self.eps, self.elementwise_affine, self.invertible = eps, elementwise_affine, invertible
        if elementwise_affine:
            self.weight = Parameter(np.ones(self.normalized_shape, dtype))
            if bias:
                self.bias = Parameter(np.zeros(self.normalized_shape, dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if device is not None:
            self.to(device)

    def forward(self, x: Tensor) -> Tensor:
        """Input `(*, *normalized_shape)` -> the same shape, normalized over its last
        len(normalized_shape) dims."""
        return ops.layer_norm(
            x, self.normalized_shape, self.weight, self.bias, self.eps, invertible=self.invertible
        )

    def extra_repr(self) -> str:
        text = (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )
        return text + (", invertible=True" if self.invertible else "")


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) over the last dims, times weight; eps=None is the dtype's
    machine epsilon, as in PyTorch."""

    def __init__(
        self,
        normalized_shape,
        eps: float | None = None,
        elementwise_affine: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        dtype = layer_dtype(dtype, "RMSNorm")
        self.normalized_shape = _shape(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(np.ones(self.normalized_shape, dtype))
        else:
            self.register_parameter("weight", None)
        if device is not None:
            self.to(device)

    def forward(self, x: Tensor) -> Tensor:
        """Input `(*, *normalized_shape)` -> the same shape, normalized over its last
        len(normalized_shape) dims."""
        return ops.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class GroupNorm(Module):
    """Normalize each sample's channels in num_groups groups (over the group's channels and
    positions), then scale and shift per channel; input (N, C, *)."""

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ):
        super().__init__()
        dtype = layer_dtype(dtype, "GroupNorm")
        for name, value in (("num_groups", num_groups), ("num_channels", num_channels)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise DTypeError(f"GroupNorm: {name} must be an int, got {value!r}")
        if num_groups < 1 or num_channels % num_groups:
            raise ArgumentError(
                f"GroupNorm: num_groups ({num_groups}) must be >= 1 and divide num_channels "
                f"({num_channels})"
            )
        self.num_groups, self.num_channels = int(num_groups), int(num_channels)
        self.eps, self.affine = eps, affine
        self.register_parameter(
            "weight", Parameter(np.ones(self.num_channels, dtype)) if affine else None
        )
        self.register_parameter(
            "bias", Parameter(np.zeros(self.num_channels, dtype)) if affine and bias else None
        )
        if device is not None:
            self.to(device)

    def forward(self, x: Tensor) -> Tensor:
        """Input (N, C, *) -> the same shape, C = num_channels."""
        return ops.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


class LocalResponseNorm(Module):
    """Local response normalization across channels (AlexNet's): each channel divided by
    (k + alpha / size * the sum of squares of the `size` channels around it) ** beta. See
    F.local_response_norm."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, x: Tensor) -> Tensor:
        """Input (N, C, *) of 3 or more dims -> the same shape."""
        return local_response_norm(x, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
