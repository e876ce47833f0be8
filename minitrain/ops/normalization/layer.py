"""Layer norm and its invertible form (which saves its output instead of x), each with its
gradient kernel (docs/kernels.md section 3) and its functional form; the row machinery they share
with RMS norm, numba row kernels included, is in rows.py.

Each op saves exactly what its gradient kernel reads: LayerNorm x, scale (the weight), mean and
inv_std; the invertible layer norm its *output*, scale, bias and inv_std, so x can be freed.

Under create_graph each op's backward runs in tensor ops instead (normalization_common), its
statistics recomputed from x; the invertible layer norm, which keeps no x, takes inv_std's
derivative from x_hat instead (RowInvStd), so its second derivative costs no memory either.
"""

from __future__ import annotations

import math

import numpy as np

from ... import backend
from ...errors import ArgumentError
from ...tensor import Tensor
from ..core.checks import check_eps, check_same_shape, check_shape
from ..core.op import Op, array_of, as_tensor, input_place
from .common import needed_grads, tensor_normalization_grads, work_dtype
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

__all__ = ["invertible_layer_norm_grad", "layer_norm", "layer_norm_grad"]


def layer_norm_grad(dY, X, scale, mean, inv_std, axis: int = -1):
    """LayerNormalizationGrad: (dX, dscale, dbias) of layer norm over the dims from `axis` on.

    X and dY: R rows of M = prod(X.shape[axis:]) values; scale: X.shape[axis:] (None means 1);
    mean and inv_std: one per row, shaped X.shape[:axis] + (1,) * k. With x_hat = (X - mean) *
    inv_std and B = dY * scale * inv_std, per row:

        dX     = B - mean_row(B) - x_hat * mean_row(B * x_hat)
        dscale = sum over rows(dY * x_hat)
        dbias  = sum over rows(dY)
    """
    kernel = "layer_norm_grad"
    check_same_shape(kernel, dY, X, "X")
    axis = row_axis(kernel, X.shape, axis, "X")
    check_shape(kernel, "scale", scale, X.shape[axis:], f"X {tuple(X.shape)}, axis {axis}")
    check_row_stats(kernel, X.shape, axis, mean=mean, inv_std=inv_std)
    work = work_dtype(dY, X, inv_std)
    x_hat = X.astype(work, copy=False) - mean.astype(work, copy=False)
    x_hat *= inv_std.astype(work, copy=False)
    return row_grads(dY, x_hat, scale, inv_std, axis, work, X.dtype, centered=True)


class LayerNorm(Op):
    """Layer normalization of x over its dims from `axis` on (see `layer_norm`). On the CPU with
    numba enabled, a fused row kernel runs instead (rows in parallel for large inputs)."""

    name = "layer_norm"
    inputs = ("x", "weight", "bias")
    saved_as = {"scale": "weight"}  # the kernels' name for the weight
    attrs = ("axis", "eps")
    saved = ("x", "scale", "mean", "inv_std")
    grad_kernel = "LayerNormalizationGrad"
    exact_dtype = True
    fused_backward = "layer_norm 8192x768"

    @staticmethod
    def forward(ctx, x, weight, bias):
        check_rows(LayerNorm.name, x, weight, bias, ctx.axis)
        y, mean, inv_std = layer_norm_forward(ctx.xp, x, weight, bias, ctx.eps, ctx.axis, True)
        ctx.save(x=x, scale=weight, mean=mean, inv_std=inv_std)
        return y

    @staticmethod
    def numba_forward(ctx, x, weight, bias):
        check_rows(LayerNorm.name, x, weight, bias, ctx.axis)
        x, y, mean, inv_std = numba_rows_forward(x, weight, bias, ctx.eps, ctx.axis, True)
        ctx.save(x=x, scale=weight, mean=mean, inv_std=inv_std)
        return y

    @staticmethod
    def backward(ctx, grad):
        """dx = B - mean_row(B) - x_hat * mean_row(B * x_hat), with B = grad * scale * inv_std.

        scale is the saved weight (None counts as 1); its gradient dscale = sum over rows(grad *
        x_hat), and dbias = sum over rows(grad); x_hat = (x - mean) * inv_std (kernel:
        layer_norm_grad)."""
        grads = layer_norm_grad(grad, ctx.x, ctx.scale, ctx.mean, ctx.inv_std, ctx.axis)
        return needed_grads(ctx, grads)

    @staticmethod
    def numba_backward(ctx, grad):
        grads = numba_row_grads(grad, ctx.x, ctx.scale, ctx.inv_std, ctx.axis, mean=ctx.mean)
        return needed_grads(ctx, grads)

    @staticmethod
    def tensor_backward(ctx, grad):
        """backward in tensor ops, mean and inv_std recomputed from x so that a second
        derivative sees them move with it."""
        return needed_grads(ctx, tensor_row_grads(ctx, grad, centered=True))


def _check_no_zero(caller: str, name: str, scale) -> None:
    """The invertible layer norm divides by scale: refuse a zero (never return inf or nan)."""
    if scale is not None and bool((scale == 0).any()):
        index = tuple(int(i) for i in np.argwhere(backend.to_device(scale == 0, backend.CPU))[0])
        raise ArgumentError(
            f"{caller}: {name} {tuple(scale.shape)} has a zero at {index}, so x_hat = (Y - bias) "
            f"/ {name} cannot be rebuilt from Y; use the standard layer norm, which keeps X"
        )


def invertible_layer_norm_grad(dY, Y, scale, bias, inv_std, axis: int = -1):
    """InvertibleLayerNormalizationGrad: layer_norm_grad from the forward *output* Y.

    The same (dX, dscale, dbias) as `layer_norm_grad`, with x_hat = (Y - bias) / scale rebuilt
    from Y (bias None means 0, scale None means 1), so the forward need not keep X. A zero in
    scale makes that undefined: it raises ValueError rather than return inf or nan. dX comes back
    in Y's dtype (X's is not known here).
    """
    kernel = "invertible_layer_norm_grad"
    check_same_shape(kernel, dY, Y, "Y")
    axis = row_axis(kernel, Y.shape, axis, "Y")
    context = f"Y {tuple(Y.shape)}, axis {axis}"
    check_shape(kernel, "scale", scale, Y.shape[axis:], context)
    check_shape(kernel, "bias", bias, Y.shape[axis:], context)
    check_row_stats(kernel, Y.shape, axis, inv_std=inv_std)
    _check_no_zero(kernel, "scale", scale)
    work = work_dtype(dY, Y, inv_std)
    x_hat = Y.astype(work) if bias is None else Y.astype(work) - bias.astype(work, copy=False)
    if scale is not None:
        x_hat /= scale.astype(work, copy=False)
    return row_grads(dY, x_hat, scale, inv_std, axis, work, Y.dtype, centered=True)


class InvertibleLayerNorm(Op):
    """Layer normalization that saves its output instead of x: backward rebuilds x_hat =
    (out - bias) / weight, so x can be freed. Refuses a weight with a zero (`layer_norm` falls
    back to LayerNorm there). On the CPU with numba enabled, fused row kernels run instead.
    Higher derivatives need no x either: only its place in the graph (tensor_backward)."""

    name = "invertible_layer_norm"
    inputs = ("x", "weight", "bias")
    saved_as = {"scale": "weight"}  # the kernels' name for the weight
    attrs = ("axis", "eps")
    saved = ("out", "scale", "bias", "inv_std")
    grad_kernel = "InvertibleLayerNormalizationGrad"
    exact_dtype = True
    fused_backward = "layer_norm 8192x768"  # its numba row kernel is layer norm's

    @staticmethod
    def forward(ctx, x, weight, bias):
        check_rows(InvertibleLayerNorm.name, x, weight, bias, ctx.axis)
        _check_no_zero(InvertibleLayerNorm.name, "weight", weight)
        y, _, inv_std = layer_norm_forward(ctx.xp, x, weight, bias, ctx.eps, ctx.axis, True)
        ctx.save(out=y, scale=weight, bias=bias, inv_std=inv_std)
        return y

    @staticmethod
    def numba_forward(ctx, x, weight, bias):
        check_rows(InvertibleLayerNorm.name, x, weight, bias, ctx.axis)
        _check_no_zero(InvertibleLayerNorm.name, "weight", weight)
        _, y, _, inv_std = numba_rows_forward(x, weight, bias, ctx.eps, ctx.axis, True)
        ctx.save(out=y, scale=weight, bias=bias, inv_std=inv_std)
        return y

    @staticmethod
    def backward(ctx, grad):
        """dx = B - mean_row(B) - x_hat * mean_row(B * x_hat), with B = grad * scale * inv_std.

        As layer_norm's, with x_hat = (out - bias) / scale rebuilt from the saved output out:
        dscale (the weight's gradient) = sum over rows(grad * x_hat), dbias = sum over rows(grad)
        (kernel: invertible_layer_norm_grad)."""
        grads = invertible_layer_norm_grad(
            grad, ctx.out, ctx.scale, ctx.bias, ctx.inv_std, ctx.axis
        )
        return needed_grads(ctx, grads)

    @staticmethod
    def numba_backward(ctx, grad):
        grads = numba_row_grads(
            grad, ctx.out, ctx.scale, ctx.inv_std, ctx.axis, bias=ctx.bias, output=True
        )
        return needed_grads(ctx, grads)

    @staticmethod
    def tensor_backward(ctx, grad):
        """backward in tensor ops without x: x_hat = (out - bias) / scale, which moves with x,
        scale and bias through out (its derivatives in scale and bias cancel to 0, as they
        should), and inv_std as a RowInvStd on x's place in the graph."""
        x_hat = ctx.out if ctx.bias is None else ctx.out - ctx.bias
        if ctx.scale is not None:
            x_hat = x_hat / ctx.scale
        row_axes, batch_axes = tuple(range(ctx.axis, x_hat.ndim)), tuple(range(ctx.axis))
        grads = tensor_normalization_grads(
            grad, x_hat, _inv_std_of_x(ctx, x_hat), ctx.scale, row_axes, batch_axes, None, True
        )
        return needed_grads(ctx, grads)


class RowInvStd(Op, register=False):
    """The invertible layer norm's inv_std = 1 / sqrt(var_row(x) + eps) for its tensor_backward,
    which has no x: the value is the forward's (the attribute inv_std), and the derivative
    comes from x_hat, rebuilt from the output. Input x stands for x's place in the graph: its
    values are not read, so it may be a placeholder without memory."""

    name = "row_inv_std"
    inputs = ("x", "x_hat")
    attrs = ("inv_std", "count")
    saved = ("out", "x_hat")
    exact_dtype = True

    @staticmethod
    def forward(ctx, x, x_hat):
        ctx.save(out=ctx.inv_std, x_hat=x_hat)
        return ctx.inv_std

    @staticmethod
    def backward(ctx, grad):
        """dx = -grad * out^2 * x_hat / M; x_hat gets none (it only gives x's direction).

        From dvar_row/dx = 2 (x - mean) / M and out = (var_row + eps)^(-1/2): dout/dx = -out^3
        (x - mean) / M = -out^2 x_hat / M, per row of M = count values."""
        return -(grad * ctx.out * ctx.out * ctx.x_hat) / ctx.count, None

    # arithmetic on grad, out and x_hat, Tensors under create_graph: differentiable again


def _inv_std_of_x(ctx, x_hat) -> Tensor:
    """inv_std of an invertible layer norm's tensor_backward (ctx), as a Tensor that moves with
    x: a RowInvStd on x's place in the graph (`input_place`: the invertible norm keeps no x);
    the saved constant where x needs no gradient."""
    place = input_place(ctx, 0)
    if place is None:
        return Tensor.wrap(ctx.inv_std)
    count = math.prod(ctx.shapes[0][ctx.axis :])
    return RowInvStd.apply(place, x_hat, inv_std=ctx.inv_std, count=count)


def layer_norm(
    x,
    normalized_shape=None,
    weight=None,
    bias=None,
    eps: float = 1e-5,
    *,
    axis: int | None = None,
    invertible: bool = False,
) -> Tensor:
    """Layer normalization over the last dims of x: those of `normalized_shape` (PyTorch's), or
    every dim from `axis` on (default -1); at least one value per row (one gives x_hat = 0).

    Per row: Y = weight * (x - mean) / sqrt(var + eps) + bias, var biased. weight and bias have
    the normalized shape and are optional (PyTorch's elementwise_affine=False, bias=False); one
    op (LayerNormalizationGrad). `invertible=True` saves the output instead of x and rebuilds
    x_hat = (Y - bias) / weight in backward (InvertibleLayerNormalizationGrad), so x can be freed;
    where weight has a zero (a zero-initialised gain, say) that is undefined, and the standard op
    runs instead.
    """
    caller = "layer_norm"
    x = as_tensor(x)
    axis = normalized_axis(caller, x.shape, normalized_shape, axis)
    op = LayerNorm
    if invertible:
        gain = array_of(weight)
        op = LayerNorm if gain is not None and bool((gain == 0).any()) else InvertibleLayerNorm
    return op.apply(x, weight, bias, axis=axis, eps=check_eps(caller, eps))
