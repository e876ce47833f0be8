"""softmax and log_softmax: their ops, gradient kernels (docs/kernels.md section 1) and numba.

The functions take PyTorch's arguments (input, dim, dtype; numpy's `axis` as dim's other name),
one softmax along one dim. The public gradient kernels keep ONNX's `opset` too: before opset 13 a
softmax spans every dim from its axis on (kernels.md).

Both save their forward *output*: their gradients need only that, so the input can be freed (and
under create_graph their backward, the gradient kernel handed Tensors, differentiates through
it). On the CPU with numba enabled, numba row kernels run both ways instead: they see the tensor
as a C-contiguous (rows, cols) matrix, one softmax per row, and run their parallel build from
_PARALLEL_ELEMENTS on.
"""

from __future__ import annotations

import functools
import math
from types import SimpleNamespace

import numpy as np

from ... import backend
from ...arguments import dim_arg
from ...errors import ArgumentError, DTypeError
from ...tensor import Tensor
from ..core import numba_math
from ..core.checks import check_same_shape, normalize_axis
from ..core.op import Op, as_tensor
from ..core.variants import variants
from ..pointwise.conversion import cast_first
from .activation import floating_input

__all__ = ["log_softmax", "log_softmax_grad", "softmax", "softmax_grad"]

# Rows * cols from which each row kernel runs its parallel build: only where a serial pass takes
# well over the time a parallel region may wait for a core (see numba_math.loop).
_PARALLEL_ELEMENTS = {
    "softmax": 1 << 20,
    "log_softmax": 1 << 20,
    "softmax_grad": 1 << 20,
    "log_softmax_grad": 1 << 20,
}


def _softmax_axes(
    caller: str, ndim: int, axis, opset, name: str = "axis"
) -> tuple[int, tuple[int, ...]]:
    """The checked softmax axis (non-negative) and the axes one softmax spans.

    opset >= 13 (PyTorch's `dim`): the one axis, None meaning -1. opset < 13: the tensor is
    flattened to 2-D at `axis` (None meaning 1), so one softmax spans every dim from axis on.
    A 0-d tensor is a single element (axis 0 or -1), its softmax spanning no axes.
    """
    if isinstance(opset, bool) or not isinstance(opset, (int, np.integer)) or opset < 1:
        raise ArgumentError(f"{caller}: opset must be an ONNX opset number >= 1, got {opset!r}")
    if axis is None:
        axis = -1 if opset >= 13 else 1
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise DTypeError(f"{caller}: {name} must be one int, got {axis!r}")
    if ndim == 0:
        normalize_axis(axis, 0, caller)  # 0 and -1 only
        return 0, ()
    (axis,) = normalize_axis(axis, ndim, caller)
    return axis, (axis,) if opset >= 13 else tuple(range(axis, ndim))


def _shifted(x, axes):
    """x minus its max over axes: every exponent is <= 0, so exp cannot overflow (logits of
    magnitude 1e4 are fine)."""
    return x - x.max(axis=axes, keepdims=True)


@functools.cache
def _row_kernels(parallel: bool) -> SimpleNamespace:
    """The numba kernels of softmax and log_softmax, forward and gradient, defined on first use
    (numba is imported then, not with minitrain), in a parallel build (rows in parallel) and a
    serial one. Each takes C-contiguous (rows, cols) float32 or float64 matrices, one softmax per
    row, and sums in the data's dtype in vector lanes (fastmath "reassoc"; "contract" fuses
    multiply-adds; nan and inf keep their meaning). The exp is numba_math's vectorisable one:
    every argument it gets is <= 0 (x - max, or a log-probability). Log-probabilities come from
    numba_math.log_probability, which "reassoc" cannot regroup into a less accurate form."""
    numba_math.register()
    loop = numba_math.loop(parallel)
    fast = {"reassoc", "contract", "nsz"}

    @backend.jit(parallel=parallel, fastmath=fast)
    def softmax_rows(x, out):
        for i in loop(x.shape[0]):
            row, dst = x[i], out[i]
            top = numba_math.row_max(row)
            total = x.dtype.type(0)
            for j in range(row.shape[0]):
                e = numba_math.exp_nonpositive(row[j] - top)
                dst[j] = e
                total += e
            scale = x.dtype.type(1) / total
            for j in range(row.shape[0]):
                dst[j] *= scale

    @backend.jit(parallel=parallel, fastmath=fast)
    def log_softmax_rows(x, out):
        for i in loop(x.shape[0]):
            row, dst = x[i], out[i]
            top = numba_math.row_max(row)
            total = x.dtype.type(0)
            for j in range(row.shape[0]):
                total += numba_math.exp_nonpositive(row[j] - top)
            log_total = math.log(total)
            for j in range(row.shape[0]):
                dst[j] = numba_math.log_probability(row[j], top, log_total)

    @backend.jit(parallel=parallel, fastmath=fast)
    def softmax_grad_rows(dy, y, dx):
        for i in loop(y.shape[0]):
            dot = y.dtype.type(0)
            for j in range(y.shape[1]):
                dot += y[i, j] * dy[i, j]
            for j in range(y.shape[1]):
                dx[i, j] = y[i, j] * (dy[i, j] - dot)

    @backend.jit(parallel=parallel, fastmath=fast)
    def log_softmax_grad_rows(dy, y, dx):
        for i in loop(y.shape[0]):
            total = y.dtype.type(0)
            for j in range(y.shape[1]):
                total += dy[i, j]
            for j in range(y.shape[1]):
                dx[i, j] = dy[i, j] - numba_math.exp_nonpositive(y[i, j]) * total

    return SimpleNamespace(
        softmax=softmax_rows,
        log_softmax=log_softmax_rows,
        softmax_grad=softmax_grad_rows,
        log_softmax_grad=log_softmax_grad_rows,
    )


def _run_row_kernel(kernel: str, dim: int, *arrays):
    """Run numba row kernel `kernel` on arrays shaped like arrays[0], laid out as C-contiguous
    (rows, cols) matrices, `dim` moved last. The result comes back in the input's layout."""
    first = arrays[0]
    arrays = [np.moveaxis(a, dim, -1) for a in arrays]
    cols = first.shape[dim]
    matrices = [np.ascontiguousarray(a).reshape(-1, cols) for a in arrays]
    # The kernel writes into `result` through a (rows, cols) view, so `result` owns its memory:
    # with the axis already last it is returned as is, and a gradient can become x.grad
    # without a copy.
    result = np.empty(arrays[0].shape, first.dtype)
    parallel = first.size >= _PARALLEL_ELEMENTS[kernel]
    getattr(_row_kernels(parallel), kernel)(*matrices, result.reshape(-1, cols))
    if dim % first.ndim != first.ndim - 1:
        return np.moveaxis(result, -1, dim)
    return result


class _RowSoftmax(Op, register=False):
    """softmax / log_softmax: on the CPU with numba, the row kernels named after the op run each
    way (`name` forward, `name + '_grad'` backward); otherwise the generic xp forward and the
    gradient kernel of docs/kernels.md section 1."""

    inputs = ("x",)
    attrs = ("dim",)
    saved = ("out",)
    # log_softmax's row kernels are softmax's with a log: the softmax row measures both
    numba_bench = "softmax 4096x1000"

    @staticmethod
    def numba_applies(ctx, x) -> bool:
        """The row kernels take numba's arrays (backend.numba_takes) with a row: not 0-d."""
        return backend.numba_takes(x) and x.ndim > 0

    @classmethod
    def numba_forward(cls, ctx, x):
        out = _run_row_kernel(cls.name, ctx.dim, x)
        ctx.save(out=out)
        return out

    @classmethod
    def numba_backward(cls, ctx, grad):
        return _run_row_kernel(cls.name + "_grad", ctx.dim, grad, ctx.out)


def _apply_softmax_op(op, input, dim, dtype, axis):  # noqa: A002 (PyTorch's name)
    """input cast to dtype first (recorded) where given, its dim (or axis) checked, in the name
    of `op`'s function, then the op applied."""
    x = cast_first(as_tensor(input), dtype, op.name)
    x = floating_input(op.name, x)
    dim, _ = _softmax_axes(op.name, x.ndim, dim_arg(dim, axis, op.name), 13, "dim")
    return op.apply(x, dim=dim)


def softmax_grad(dY, Y, axis: int | None = None, opset: int = 13):
    """dX = Y * (dY - sum_axis(Y * dY)), from the forward output Y = softmax(X).

    `opset` says what `axis` means, as ONNX: from opset 13 on (the default, and PyTorch's
    `dim`), one axis, None meaning -1; before (ONNX Softmax-1/11), Y is flattened to 2-D at
    axis, None meaning 1, each row one softmax (rows = prod(shape[:axis]), cols =
    prod(shape[axis:])).
    """
    check_same_shape("softmax_grad", dY, Y, "Y")
    _, axes = _softmax_axes("softmax_grad", Y.ndim, axis, opset)
    return Y * (dY - (Y * dY).sum(axis=axes, keepdims=True))


class Softmax(_RowSoftmax):
    """exp(x - max) / sum(exp(x - max)) over the softmax axes (see `softmax`); saves the
    output. On the CPU with numba enabled, a row kernel runs instead."""

    name = "softmax"

    @staticmethod
    def forward(ctx, x):
        axes = (ctx.dim,) if x.ndim else ()
        out = ctx.xp.exp(_shifted(x, axes)) if x.size else x.copy()
        out /= out.sum(axis=axes, keepdims=True)
        ctx.save(out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = out * (grad - sum_axis(out * grad)); out in the graph under create_graph."""
        return softmax_grad(grad, ctx.out, ctx.dim)


@variants("function", "method")
def softmax(input, dim: int | None = None, dtype=None, *, axis: int | None = None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim` (None: the last), x the `input` cast to `dtype` first
    where given (a floating dtype, recorded), computed with the max subtracted (stable for
    logits of any magnitude). Floating-point input. `axis` is numpy's name for dim."""
    return _apply_softmax_op(Softmax, input, dim, dtype, axis)


def log_softmax_grad(dY, Y, axis: int | None = None, opset: int = 13):
    """dX = dY - exp(Y) * sum_axis(dY), from the forward output Y = log_softmax(X)
    (log-probabilities: exp(Y) is the softmax). `axis` and `opset` as in `softmax_grad`."""
    check_same_shape("log_softmax_grad", dY, Y, "Y")
    _, axes = _softmax_axes("log_softmax_grad", Y.ndim, axis, opset)
    xp = backend.array_module(dY, Y)
    return dY - xp.exp(Y) * dY.sum(axis=axes, keepdims=True)


class LogSoftmax(_RowSoftmax):
    """(x - max) - log(sum(exp(x - max))) over the softmax axes (see `softmax`); saves the
    output. On the CPU with numba enabled, a row kernel runs instead."""

    name = "log_softmax"

    @staticmethod
    def forward(ctx, x):
        axes = (ctx.dim,) if x.ndim else ()
        if x.size:
            shifted = _shifted(x, axes)
            out = shifted - ctx.xp.log(ctx.xp.exp(shifted).sum(axis=axes, keepdims=True))
        else:
            out = x.copy()
        ctx.save(out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad - exp(out) * sum_axis(grad); out in the graph under create_graph (exp(out)
        the softmax)."""
        return log_softmax_grad(grad, ctx.out, ctx.dim)


@variants("function", "method")
def log_softmax(input, dim: int | None = None, dtype=None, *, axis: int | None = None) -> Tensor:
    """log(softmax(x)) = (x - max) - log(sum(exp(x - max))) along `dim`: stable, and finite
    where softmax underflows to 0. `dim`, `dtype` and `axis` as in `softmax`."""
    return _apply_softmax_op(LogSoftmax, input, dim, dtype, axis)
