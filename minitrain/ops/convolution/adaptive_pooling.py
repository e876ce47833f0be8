"""Adaptive average pooling: the op adaptive_avg_pool and its kernel adaptive_avg_pool_grad.

PyTorch's adaptive_avg_pool over 1 to 3 spatial dims, as a product with one averaging matrix per
spatial dim.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ... import backend
from ...errors import ShapeError
from ...tensor import Tensor
from ..core.op import Op, shape_of
from .pooling_common import check_pool_float
from .window import check_pool_input, spatial_ints

__all__ = ["adaptive_avg_pool", "adaptive_avg_pool_grad"]


def _adaptive_matrices(xp, spatial, out, dtype) -> list:
    """Per dim, the (out, L) averaging matrix of adaptive pooling: row i is 1 / size on input
    positions floor(i * L / out) .. ceil((i + 1) * L / out) - 1 (PyTorch's windows)."""
    matrices = []
    for length, n in zip(spatial, out, strict=True):
        i = np.arange(n)
        start, stop = (i * length) // n, -(-(i + 1) * length // n)
        j = np.arange(length)
        inside = (j >= start[:, None]) & (j < stop[:, None])
        matrices.append(xp.asarray((inside / (stop - start)[:, None]).astype(dtype)))
    return matrices


def _per_dim(xp, x, matrices, transpose: bool):
    """x (N, C, *spatial) with each spatial dim contracted against its matrix (transposed for
    the gradient), as numpy's tensordot does it: dim 2 moved last, every other dim one row of a
    single GEMM, the new dim appended last, so that the order comes back. Arrays, or Tensors
    with xp the graph math (each step then recorded: a permute, reshapes and a matmul)."""
    cycle = (0, 1, *range(3, x.ndim), 2)
    for matrix in matrices:
        moved = xp.transpose(x, cycle)
        rows = moved.reshape((-1, moved.shape[-1]))
        product = xp.matmul(rows, matrix if transpose else matrix.T)
        x = product.reshape(tuple(moved.shape[:-1]) + (product.shape[-1],))
    return x


def adaptive_avg_pool_grad(dY, x_shape):
    """AdaptiveAveragePoolGrad: every input position gets dY[o] / size(o) from each window o
    holding it, i.e. dY contracted with each dim's averaging matrix transposed. The output size
    comes from dY (N, C, *out); dX has x_shape. Linear in dY: a Tensor dY (create_graph) gives
    dX recorded, its own gradient the averaging again."""
    x_shape = tuple(int(n) for n in x_shape)
    dy_shape = shape_of(dY)
    if len(dy_shape) != len(x_shape) or dy_shape[:2] != x_shape[:2]:
        raise ShapeError(
            f"adaptive_avg_pool_grad: dY {dy_shape} must be (N, C, *out) for x_shape {x_shape}"
        )
    xp = backend.array_module(dY)  # the graph math for a Tensor dY (create_graph)
    spatial = x_shape[2:]
    if all(n == 1 for n in dy_shape[2:]):  # global average pooling
        return xp.ascontiguousarray(xp.broadcast_to(dY / math.prod(spatial), x_shape))
    matrices = _adaptive_matrices(xp, spatial, dy_shape[2:], dY.dtype)
    return _per_dim(xp, dY, matrices, transpose=True)


class AdaptiveAveragePool(Op):
    """The mean over PyTorch's adaptive windows, as a product with one averaging matrix per
    spatial dim (the windows are boxes, so the mean separates by dim); a plain mean for global
    average pooling (every output size 1)."""

    name = "adaptive_avg_pool"
    inputs = ("x",)
    attrs = ("output_size",)

    @staticmethod
    def forward(ctx, x):
        if all(n == 1 for n in ctx.output_size):
            return x.mean(axis=tuple(range(2, x.ndim)), keepdims=True)
        matrices = _adaptive_matrices(ctx.xp, x.shape[2:], ctx.output_size, x.dtype)
        return _per_dim(ctx.xp, x, matrices, transpose=False)

    @staticmethod
    def backward(ctx, grad):
        """dx = sum over the windows o holding x of grad[o] / size(o)."""
        return adaptive_avg_pool_grad(grad, ctx.shapes[0])


def adaptive_avg_pool(input, output_size: Sequence[int | None] | int) -> Tensor:  # noqa: A002
    """The mean over adaptive windows of input (N, C, *spatial), 1 to 3 spatial dims (taken from
    input's rank), as PyTorch's adaptive_avg_pool1d/2d/3d: output position i of a dim of length
    L averages input positions floor(i * L / out) to ceil((i + 1) * L / out) - 1. output_size:
    an int or one per spatial dim (None keeps the input's size); all 1 is global average
    pooling."""
    return adaptive_avg_pool_as("adaptive_avg_pool", input, output_size)


def adaptive_avg_pool_as(caller, input, output_size) -> Tensor:  # noqa: A002
    """`adaptive_avg_pool` called as `caller`: its errors name caller."""
    x_shape = shape_of(input)
    check_pool_input(caller, x_shape)
    spatial = x_shape[2:]
    if isinstance(output_size, Sequence) and len(output_size) == len(spatial):
        output_size = tuple(
            n if o is None else o for o, n in zip(output_size, spatial, strict=True)
        )
    out = spatial_ints(output_size, len(spatial), "output_size", caller, 1)
    check_pool_float(caller, input)
    return AdaptiveAveragePool.apply(input, output_size=out)
