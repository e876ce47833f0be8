"""What batch norm and the layer-norm family share: their dtype scheme and small helpers.

Dtypes follow the three-type scheme of docs/kernels.md section 3. T: the input X and dX. U: the
statistics (mean, inv_std) and every accumulation, float64 for float64 input and float32
otherwise, never float16. V: the parameters (scale, bias), the output Y, dY and the parameter
gradients; V is the parameters' dtype, or X's without parameters. PyTorch returns Y in X's dtype
instead: the two agree whenever X and the parameters share a dtype.
"""

from __future__ import annotations

import importlib

import numpy as np

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
    per row."""
    return min(rows, importlib.import_module("numba").get_num_threads())
