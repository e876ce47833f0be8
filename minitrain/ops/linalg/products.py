"""Matrix products: matmul (batched, broadcasting, numpy's 1-D rules) and linear."""

from __future__ import annotations

import math

import numpy as np

from ...autograd import unbroadcast
from ...errors import ShapeError
from ..core.op import Op, shape_of
from ..core.variants import variants

__all__ = ["linear", "matmul"]


class MatMul(Op):
    """a @ b. A 1-D a is a row vector and a 1-D b a column vector, their added dim dropped from
    the result; leading (batch) dims broadcast."""

    name = "matmul"
    inputs = ("a", "b")
    saved = ("a", "b")
    grad_kernel = "MatMulGrad"
    same_dtype = True

    @staticmethod
    def forward(ctx, a, b):
        # da reads b and db reads a: keep only what a needed gradient reads
        ctx.save(a=a if ctx.needs_grad[1] else None, b=b if ctx.needs_grad[0] else None)
        return ctx.xp.matmul(a, b)

    @staticmethod
    def backward(ctx, grad):
        """da = grad @ b^T, db = a^T @ grad, batch dims summed back to each operand's shape.

        1-D operands count as a row vector (a) or a column vector (b), as in forward."""
        xp, a, b = ctx.xp, ctx.a, ctx.b  # each None when the gradient that reads it is not needed
        (a_shape, b_shape), (need_a, need_b) = ctx.shapes, ctx.needs_grad
        if len(a_shape) == 1 and len(b_shape) == 1:
            return (grad * b if need_a else None), (grad * a if need_b else None)
        # Treat 1-D operands as matrices, so grad_a = grad @ b^T and grad_b = a^T @ grad hold.
        grad2 = grad
        if len(a_shape) == 1:
            grad2 = xp.expand_dims(grad2, -2)
        if len(b_shape) == 1:
            grad2 = xp.expand_dims(grad2, -1)
        grad_a = grad_b = None
        if need_a:
            b2 = xp.expand_dims(b, -1) if len(b_shape) == 1 else b
            grad_a = xp.matmul(grad2, xp.swapaxes(b2, -1, -2))
            grad_a = grad_a[..., 0, :] if len(a_shape) == 1 else grad_a
        if need_b:
            a2 = xp.expand_dims(a, 0) if len(a_shape) == 1 else a
            grad_b = xp.matmul(xp.swapaxes(a2, -1, -2), grad2)
            grad_b = grad_b[..., :, 0] if len(b_shape) == 1 else grad_b
        # batch dims that broadcast are summed back down to each operand's own
        return (
            None if grad_a is None else unbroadcast(grad_a, a_shape),
            None if grad_b is None else unbroadcast(grad_b, b_shape),
        )


@variants("function", "method")
def matmul(input, other):  # noqa: A002
    """The matrix product `input @ other`, with numpy's rules: 1-D operands are vectors, dims
    before the last two are batch dims and broadcast. Both must share a dtype (DTypeError
    otherwise): no promotion, as in PyTorch."""
    sa, sb = shape_of(input), shape_of(other)
    if not sa or not sb:
        raise ShapeError(f"matmul: operands must have at least 1 dim, got {sa} and {sb}")
    inner_a, inner_b = sa[-1], (sb[0] if len(sb) == 1 else sb[-2])
    if inner_a != inner_b:
        raise ShapeError(
            f"matmul: input {sa} and other {sb} do not fit: input's last dim {inner_a} != "
            f"other's {'only' if len(sb) == 1 else 'second-to-last'} dim {inner_b}"
        )
    try:
        np.broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:
        raise ShapeError(
            f"matmul: batch dims of input {sa} and other {sb} do not broadcast"
        ) from None
    return MatMul.apply(input, other)


class Linear(Op):
    """x @ weight^T + bias, with weight (out_features, in_features) as in PyTorch."""

    name = "linear"
    inputs = ("x", "weight", "bias")
    saved = ("x", "weight")
    same_dtype = True

    @staticmethod
    def forward(ctx, x, weight, bias):
        # dx reads weight and dweight reads x: keep only what a needed gradient reads
        ctx.save(x=x if ctx.needs_grad[1] else None, weight=weight if ctx.needs_grad[0] else None)
        if x.ndim > 2:  # as one (rows, features) product: numpy's stacked matmul is far slower
            out = (x.reshape(math.prod(x.shape[:-1]), x.shape[-1]) @ weight.T).reshape(
                x.shape[:-1] + (weight.shape[0],)
            )
        else:
            out = x @ weight.T
        if bias is not None:
            out += bias
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad @ weight, dweight = grad^T @ x, dbias = grad summed over all but the last dim.

        dweight takes x and grad with their leading dims merged into one: (rows, features)."""
        x, weight = ctx.x, ctx.weight
        rows = math.prod(grad.shape[:-1])  # not reshape(-1, ...): ambiguous with 0 features
        grad_2d = grad.reshape(rows, grad.shape[-1])
        grad_x = (grad_2d @ weight).reshape(ctx.shapes[0]) if ctx.needs_grad[0] else None
        grad_w = grad_2d.T @ x.reshape(rows, x.shape[-1]) if ctx.needs_grad[1] else None
        grad_b = grad_2d.sum(axis=0) if ctx.needs_grad[2] else None
        return grad_x, grad_w, grad_b


def linear(x, weight, bias=None):
    """x @ weight.T + bias: x (..., in_features), weight (out_features, in_features),
    bias (out_features,) or None, all of one dtype, as in PyTorch."""
    sx, sw = shape_of(x), shape_of(weight)
    if len(sw) != 2 or not sx or sx[-1] != sw[1]:
        raise ShapeError(
            f"linear: input {sx} and weight {sw} do not fit: weight must be "
            f"(out_features, in_features) with in_features == input's last dim"
        )
    if bias is not None and shape_of(bias) != (sw[0],):
        raise ShapeError(f"linear: bias must have shape ({sw[0]},), got {shape_of(bias)}")
    return Linear.apply(x, weight, bias)
