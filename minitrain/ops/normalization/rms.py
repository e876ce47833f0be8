"""RMS norm (layer norm without centring): rms_norm, its op and its gradient kernel
simplified_layer_norm_grad (docs/kernels.md section 3), on the layer-norm family's rows
(rows.py: the checks, the generic and numba kernels it shares with layer norm).

RMSNorm saves exactly what its gradient kernel reads: x, scale (the weight) and inv_std. Under
create_graph its backward runs in tensor ops, inv_std recomputed from x.
"""

from __future__ import annotations

import numpy as np

from ...tensor import Tensor
from ..core.checks import check_eps, check_same_shape, check_shape
from ..core.op import Op, as_tensor
from .common import needed_grads, work_dtype
from .rows import (
    check_row_stats,
    check_rows,
    layer_norm_forward,
    normalized_axis,
    numba_row_grads,
    numba_rows_forward,
    row_axis,
    row_grads,
    tensor_row_grads,
)

__all__ = ["rms_norm", "simplified_layer_norm_grad"]


def simplified_layer_norm_grad(dY, X, scale, inv_std, axis: int = -1):
    """SimplifiedLayerNormalizationGrad: (dX, dscale) of RMS norm over the dims from `axis` on.

    inv_std = 1 / sqrt(mean_row(X^2) + eps), one per row (X.shape[:axis] + (1,) * k); with
    x_hat = X * inv_std and B = dY * scale * inv_std:

        dX     = B - x_hat * mean_row(B * x_hat)        (no mean_row(B) term: nothing centred)
        dscale = sum over rows(dY * x_hat)
    """
    kernel = "simplified_layer_norm_grad"
    check_same_shape(kernel, dY, X, "X")
    axis = row_axis(kernel, X.shape, axis, "X")
    check_shape(kernel, "scale", scale, X.shape[axis:], f"X {tuple(X.shape)}, axis {axis}")
    check_row_stats(kernel, X.shape, axis, inv_std=inv_std)
    work = work_dtype(dY, X, inv_std)
    x_hat = X.astype(work) * inv_std.astype(work, copy=False)
    dX, dscale, _ = row_grads(dY, x_hat, scale, inv_std, axis, work, X.dtype, centered=False)
    return dX, dscale


class RMSNorm(Op):
    """RMS normalization of x over its dims from `axis` on (see `rms_norm`). On the CPU with numba
    enabled, a fused row kernel runs instead (rows in parallel for large inputs)."""

    name = "rms_norm"
    inputs = ("x", "weight")
    saved_as = {"scale": "weight"}  # the kernels' name for the weight
    attrs = ("axis", "eps")
    saved = ("x", "scale", "inv_std")
    grad_kernel = "SimplifiedLayerNormalizationGrad"
    exact_dtype = True
    fused_backward = "rms_norm 8192x768"

    @staticmethod
    def forward(ctx, x, weight):
        check_rows(RMSNorm.name, x, weight, None, ctx.axis)
        y, _, inv_std = layer_norm_forward(ctx.xp, x, weight, None, ctx.eps, ctx.axis, False)
        ctx.save(x=x, scale=weight, inv_std=inv_std)
        return y

    @staticmethod
    def numba_forward(ctx, x, weight):
        check_rows(RMSNorm.name, x, weight, None, ctx.axis)
        x, y, _, inv_std = numba_rows_forward(x, weight, None, ctx.eps, ctx.axis, False)
        ctx.save(x=x, scale=weight, inv_std=inv_std)
        return y

    @staticmethod
    def backward(ctx, grad):
        """dx = B - x_hat * mean_row(B * x_hat), with B = grad * scale * inv_std.

        scale is the saved weight (None counts as 1); its gradient dscale = sum over rows(grad *
        x_hat); x_hat = x * inv_std. No mean_row(B) term: nothing is centred (kernel:
        simplified_layer_norm_grad)."""
        grads = simplified_layer_norm_grad(grad, ctx.x, ctx.scale, ctx.inv_std, ctx.axis)
        return needed_grads(ctx, grads)

    @staticmethod
    def numba_backward(ctx, grad):
        grads = numba_row_grads(grad, ctx.x, ctx.scale, ctx.inv_std, ctx.axis)
        return needed_grads(ctx, grads[:2])

    @staticmethod
    def tensor_backward(ctx, grad):
        """backward in tensor ops, inv_std recomputed from x so that a second derivative sees
        it move with x."""
        return needed_grads(ctx, tensor_row_grads(ctx, grad, centered=False)[:2])


def rms_norm(
    x, normalized_shape=None, weight=None, eps: float | None = None, *, axis: int | None = None
) -> Tensor:
    """RMS normalization over the last dims of x (`normalized_shape`, PyTorch's) or every dim from
    `axis` on (default -1): Y = weight * x / sqrt(mean_row(x^2) + eps), at least one value per row;
    one op (SimplifiedLayerNormalizationGrad). weight is optional. eps=None is PyTorch's default,
    the machine epsilon of the dtype the statistics are computed in: float32's for float16 and
    float32 input, float64's for float64.
    """
    caller = "rms_norm"
    x = as_tensor(x)
    axis = normalized_axis(caller, x.shape, normalized_shape, axis)
    eps = float(np.finfo(work_dtype(x.array)).eps) if eps is None else check_eps(caller, eps)
    return RMSNorm.apply(x, weight, axis=axis, eps=eps)
