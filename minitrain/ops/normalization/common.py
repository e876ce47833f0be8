"""What batch norm and the layer-norm family share: their dtype scheme, small helpers and their
backward in tensor ops (what create_graph differentiates).

Dtypes follow the three-type scheme of docs/kernels.md section 3. T: the input X and dX. U: the
statistics (mean, inv_std) and every accumulation, float64 for float64 input and float32
otherwise, never float16. V: the parameters (scale, bias), the output Y, dY and the parameter
gradients; V is the parameters' dtype, or X's without parameters. PyTorch returns Y in X's dtype
instead: the two agree whenever X and the parameters share a dtype.
"""

from __future__ import annotations

import numpy as np

from ...runtime import numba_pool
from ..pointwise.arithmetic import add, div, mul, sqrt
from ..reductions import reduction
from ..shapes.shape import reshape

_FLOAT64 = np.dtype(np.float64)

# "reassoc" lets LLVM split each sum of the numba kernels into vector lanes and "contract" fuse
# multiply-adds; NaN and inf keep their meaning.
FASTMATH = {"reassoc", "contract"}


def work_dtype(*arrays) -> np.dtype:
    """U: float64 when any of the arrays (None skipped) is float64, else float32."""
    if any(a is not None and a.dtype == _FLOAT64 for a in arrays):
        return _FLOAT64
    return np.dtype(np.float32)


def param_dtype(fallback, *params) -> np.dtype:
    """V: the parameters' common dtype (None skipped), or `fallback` without parameters."""
    dtypes = [p.dtype for p in params if p is not None]
    return np.result_type(*dtypes) if dtypes else np.dtype(fallback)


def needed_grads(ctx, grads) -> tuple:
    """The gradients, None where the input needs none."""
    return tuple(g if need else None for g, need in zip(grads, ctx.needs_grad, strict=True))


def scale_shift(x_hat, scale, bias, shape, work):
    """x_hat * scale + bias in place (None parameters skipped), the parameters as `shape` and
    cast to `work` (U)."""
    if scale is not None:
        x_hat *= scale.astype(work, copy=False).reshape(shape)
    if bias is not None:
        x_hat += bias.astype(work, copy=False).reshape(shape)
    return x_hat


def as_vector(value, size: int, fill: float, dtype):
    """A parameter or statistic as a contiguous 1-D array of `dtype` for a numba kernel; `fill`
    where it is None."""
    if value is None:
        return np.full(size, fill, dtype)
    return np.ascontiguousarray(value, dtype=dtype).reshape(-1)


def row_blocks(rows: int) -> int:
    """Row blocks for the numba kernels that sum per block: one per numba thread, at most one
    per row. The count comes through numba_pool, so that a norm running before any parallel
    kernel (a GPT's first RMSNorm) starts numba's pool under minitrain's thread policy."""
    return min(rows, numba_pool.numba_threads())


def tensor_statistics(x, eps: float, stat_axes: tuple, centered: bool) -> tuple:
    """(x_hat, inv_std) of x, a Tensor, in tensor ops, so that they move with x under a second
    derivative (the forward's saved mean and inv_std are constants to it): inv_std = 1 /
    sqrt(mean((x - mean)^2) + eps), x_hat = (x - mean) * inv_std, means over `stat_axes` (kept);
    without centring (RMS norm) the mean is 0. In U, as the forward computes them."""
    work = work_dtype(x.array)
    if x.dtype != work:
        x = x.astype(work)
    shifted = x - reduction.mean(x, stat_axes, keepdims=True) if centered else x
    variance = reduction.mean(mul(shifted, shifted), stat_axes, keepdims=True)
    inv_std = div(1.0, sqrt(add(variance, eps)))
    return mul(shifted, inv_std), inv_std


def tensor_normalization_grads(
    grad, x_hat, inv_std, scale, stat_axes: tuple, param_axes: tuple, scale_shape, centered: bool
) -> tuple:
    """(dx, dscale, dbias) of batch norm, layer norm (`centered`) or RMS norm in tensor ops: the
    ops' tensor_backward, the same formulas as their kernels'. All Tensors, scale None for 1;
    statistics over `stat_axes` (kept), parameter gradients summed over `param_axes`, scale
    reshaped to `scale_shape` to broadcast against x (None: it does as it is). dbias is None
    without centring (RMS norm). With B = grad * scale * inv_std, means over stat_axes:

        dx = B - mean(B) - x_hat * mean(B * x_hat)    (no mean(B) term without centring)
        dscale = sum(grad * x_hat), dbias = sum(grad)   (sums over param_axes)
    """
    if scale is not None and scale_shape is not None:
        scale = reshape(scale, scale_shape)
    b = mul(grad, inv_std if scale is None else mul(scale, inv_std))
    dx = b - mul(x_hat, reduction.mean(mul(b, x_hat), stat_axes, keepdims=True))
    if centered:
        dx = dx - reduction.mean(b, stat_axes, keepdims=True)
    dscale = reduction.sum(mul(grad, x_hat), param_axes)
    dbias = reduction.sum(grad, param_axes) if centered else None
    return dx, dscale, dbias
