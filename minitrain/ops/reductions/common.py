"""What every reduction shares: PyTorch's dim arguments resolved once, the reduced dims put back
for a backward, the count of values reduced into each output.

The public functions take PyTorch's `dim` (None for all, an int, or a tuple of ints; negatives
allowed) and `keepdim`, and PyTorch's numpy spellings `axis` and `keepdims` (torch.sum(x, axis=0,
keepdims=True) runs there too). The ops' attrs hold the dims normalised to a sorted tuple,
`axis`, as numpy's reductions inside the kernels take them, so that a backward can always put the
reduced dims back with a reshape.
"""

from __future__ import annotations

import builtins

import numpy as np

from ...arguments import dim_arg, keepdim_arg
from ...errors import ShapeError
from ..core.checks import normalize_axis
from ..core.op import shape_of

__all__ = ["accumulator", "count_reduced", "keep_reduced", "over_dims", "require_nonempty"]


def over_dims(op, x, dim, keepdim, axis=None, keepdims=None, **attrs):
    """Run the reduction `op` over PyTorch's dims (`dim` or `axis`, `keepdim` or `keepdims`),
    normalised to a sorted tuple."""
    dim, keepdim = dim_arg(dim, axis, op.name), keepdim_arg(keepdim, keepdims)
    dims = normalize_axis(dim, len(shape_of(x)), op.name)
    return op.apply(x, axis=dims, keepdims=keepdim, **attrs)


def keep_reduced(ctx, grad):
    """The upstream gradient (or the saved output) with the reduced dims back in place (size
    1): an array, or a Tensor under create_graph."""
    if ctx.keepdims:
        return grad
    return grad.reshape(tuple(1 if d in ctx.axis else n for d, n in enumerate(ctx.shapes[0])))


def count_reduced(shape, axis) -> int:
    """The number of values reduced into each output: the sizes of the dims, multiplied."""
    return int(np.prod([shape[a] for a in axis], dtype=np.int64))


def accumulator(x):
    """The dtype sum, prod and cumsum give x: int64 for every integer and bool dtype, as in
    PyTorch (numpy gives uint64 for unsigned ones); None (x's own) for floating x."""
    return np.int64 if x.dtype.kind in "biu" else None


def require_nonempty(x, dim, caller: str) -> None:
    """Refuse a reduction over an empty dim (the max of nothing, argmax of nothing)."""
    shape = shape_of(x)
    dims = normalize_axis(dim, len(shape), caller)
    if builtins.any(shape[a] == 0 for a in dims):
        raise ShapeError(f"{caller}: reducing over an empty dim (input shape {shape}, dim {dim!r})")
