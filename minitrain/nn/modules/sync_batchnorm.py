"""SyncBatchNorm: batch norm whose statistics (and the two sums its backward needs) are all-reduced
across the processes of minitrain.distributed, and convert_sync_batchnorm."""

from __future__ import annotations

import numpy as np

from ... import distributed
from ...errors import ArgumentError, ShapeError
from ...ops.core.checks import check_eps, check_floating, check_real
from ...ops.core.op import Op
from ...ops.normalization.common import needed_grads, param_dtype, scale_shift, work_dtype
from ...tensor import Tensor
from .module import Module
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, BatchNormBase

__all__ = ["SyncBatchNorm", "SyncBatchNormalization"]


def _channel_axes(ndim: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The axes the statistics reduce over, and the shape that broadcasts (C,) along axis 1."""
    return (0, *range(2, ndim)), (1, -1) + (1,) * (ndim - 2)


class SyncBatchNormalization(Op, register=False):
    """Training-mode batch norm over the batch of every rank: each rank's per-channel sum, sum
    of squares and count, all-reduced in one buffer, give the global mean and biased variance
    (the sums in float64). Backward all-reduces sum(dy) and sum(dy * x_hat) for dx; the
    gradients of weight and bias stay each rank's own sums, which DistributedDataParallel then
    averages, as PyTorch's SyncBatchNorm. Not in the op registry: its forward and backward are
    collectives, tested across processes against batch_norm on the whole batch."""

    name = "sync_batch_norm"
    inputs = ("x", "weight", "bias")
    saved_as = {"scale": "weight"}
    attrs = ("eps", "momentum", "running_mean", "running_var")
    saved = ("x", "scale", "saved_mean", "saved_inv_std", "total")
    grad_kernel = "SyncBatchNormalizationGrad"
    exact_dtype = True
    no_double_backward = "its backward all-reduces sums across processes"

    @staticmethod
    def forward(ctx, x, weight, bias):
        axes, shape = _channel_axes(x.ndim)
        channels = x.shape[1]
        wide = x.astype(np.float64)
        stats = np.empty(2 * channels + 1)
        stats[:channels] = wide.sum(axis=axes)
        stats[channels:-1] = np.square(wide).sum(axis=axes)
        stats[-1] = x.size // channels
        distributed.all_reduce(Tensor(stats))
        total = stats[-1]
        if total < 2:
            raise ShapeError(
                f"SyncBatchNorm: training needs more than one value per channel over all ranks, "
                f"got {int(total)} (input {tuple(x.shape)} on this rank)"
            )
        mean = stats[:channels] / total
        var = np.maximum(stats[channels:-1] / total - np.square(mean), 0)
        work = work_dtype(x)
        inv_std = (1 / np.sqrt(var + ctx.eps)).astype(work)
        mean = mean.astype(work)
        x_hat = (x.astype(work) - mean.reshape(shape)) * inv_std.reshape(shape)
        y = scale_shift(x_hat, weight, bias, shape, work)
        if ctx.running_mean is not None:  # PyTorch's convention, the variance unbiased
            momentum = ctx.momentum
            ctx.running_mean *= 1 - momentum
            ctx.running_mean += momentum * mean
            ctx.running_var *= 1 - momentum
            ctx.running_var += momentum * var * (total / (total - 1))
        ctx.save(x=x, scale=weight, saved_mean=mean, saved_inv_std=inv_std, total=total)
        return y.astype(param_dtype(x.dtype, weight, bias), copy=False)

    @staticmethod
    def backward(ctx, grad):
        """dx = scale * inv_std * (dy - S1 / M - x_hat * S2 / M), with S1 = sum(dy) and S2 =
        sum(dy * x_hat) over every rank's values and M their count; dscale = this rank's S2,
        dbias = this rank's S1 (the sum over ranks is DistributedDataParallel's average)."""
        x, scale = ctx.x, ctx.scale
        axes, shape = _channel_axes(x.ndim)
        work = work_dtype(grad, x, ctx.saved_inv_std)
        inv_std = ctx.saved_inv_std.astype(work, copy=False).reshape(shape)
        x_hat = (x.astype(work) - ctx.saved_mean.reshape(shape)) * inv_std
        dy = grad.astype(work, copy=False)
        sum_dy = dy.sum(axis=axes)
        sum_dy_x_hat = (dy * x_hat).sum(axis=axes)
        dx = None
        if ctx.needs_grad[0]:  # the same on every rank: the same model
            sums = np.concatenate([sum_dy, sum_dy_x_hat]).astype(np.float64)
            distributed.all_reduce(Tensor(sums))
            channels = x.shape[1]
            mean_dy = (sums[:channels] / ctx.total).astype(work).reshape(shape)
            mean_dy_x_hat = (sums[channels:] / ctx.total).astype(work).reshape(shape)
            gain = inv_std if scale is None else scale.astype(work).reshape(shape) * inv_std
            dx = (gain * (dy - mean_dy - x_hat * mean_dy_x_hat)).astype(x.dtype, copy=False)
        dtype = param_dtype(grad.dtype, scale)
        return needed_grads(ctx, (dx, sum_dy_x_hat.astype(dtype), sum_dy.astype(dtype)))


class SyncBatchNorm(BatchNormBase):
    """Batch norm over (N, C, *) whose training statistics are those of the whole batch across
    the ranks of minitrain.distributed (PyTorch's SyncBatchNorm): with the batch split over the
    ranks, outputs, gradients and running statistics are those of BatchNorm on the whole batch.
    In eval mode, or before init_process_group, it is BatchNorm."""

    ranks = ()  # any rank from 2

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        process_group=None,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ):
        if process_group is not None:
            raise ArgumentError(
                "SyncBatchNorm: only the default process group exists; leave process_group None"
            )
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )

    def _normalize(self, x: Tensor, momentum: float, updating: bool) -> Tensor:
        """Batch statistics over every rank's batch (SyncBatchNormalization) in training where a
        process group is up; BatchNorm's op otherwise. As PyTorch's, eval mode never
        synchronizes, even without running statistics: ranks may evaluate different numbers of
        batches, and a collective that one rank skips would hang the others."""
        if not self.training or not distributed.is_initialized():
            return super()._normalize(x, momentum, updating)
        check_floating("SyncBatchNorm", x=x.array)
        return SyncBatchNormalization.apply(
            x,
            self.weight,
            self.bias,
            eps=check_eps("SyncBatchNorm", self.eps),
            momentum=check_real("SyncBatchNorm", "momentum", momentum),
            running_mean=self.running_mean.array if updating else None,
            running_var=self.running_var.array if updating else None,
        )

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """`module` with every BatchNorm1d/2d/3d in it replaced by a SyncBatchNorm holding the
        same parameters and buffers (the same tensors, not copies) and training flag; a
        BatchNorm given itself comes back converted."""
        converted = module
        if isinstance(module, (BatchNorm1d, BatchNorm2d, BatchNorm3d)):
            converted = cls(
                module.num_features,
                module.eps,
                module.momentum,
                module.affine,
                module.track_running_stats,
                process_group,
            )
            for name in ("weight", "bias"):  # a bias=False BatchNorm's None included
                converted.register_parameter(name, getattr(module, name))
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                converted.register_buffer(name, getattr(module, name))
            converted.train(module.training)
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted
