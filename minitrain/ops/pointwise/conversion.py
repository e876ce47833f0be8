"""Casts and device moves, recorded (the gradient comes back in the input's dtype and on its
device), and the comparisons, which have no gradient."""

from __future__ import annotations

import numpy as np

from ... import backend
from ...arguments import as_dtype
from ...autograd.grad_mode import is_grad_enabled
from ...errors import DTypeError, ShapeError
from ...tensor import Tensor
from ..core.op import Op
from ..core.operands import array_step
from ..core.variants import variants

__all__ = ["cast", "cast_first", "eq", "ge", "gt", "le", "lt", "ne", "to_device"]


class Cast(Op):
    """x converted to another dtype; the gradient is converted back."""

    name = "cast"
    inputs = ("x",)
    attrs = ("dtype",)
    exact_dtype = True

    @staticmethod
    def forward(ctx, x):
        return x.astype(ctx.dtype)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad cast back to x's dtype."""
        return grad.astype(ctx.dtypes[0])


def cast(x, dtype):
    """x as another dtype: recorded to a floating dtype (the gradient comes back in x's),
    outside the graph to an integer or bool one, which has no gradient, as in PyTorch."""
    dtype = as_dtype(dtype, "cast")
    if dtype.kind != "f" and isinstance(x, Tensor):
        x = x.detach()
    return Cast.apply(x, dtype=dtype)


def cast_first(x, dtype, caller: str, int64: bool = False):
    """x cast to a reduction's or softmax's `dtype=` argument, if given (recorded: the gradient
    flows back), as PyTorch casts before the op. Only to a floating dtype, or to int64 where
    `int64` is set (sum, prod and cumsum keep it; their results of other integer dtypes come
    out int64, where PyTorch keeps the dtype asked for). As in PyTorch, int64 is refused for an
    x that requires grad while gradients are recorded: it has none."""
    if dtype is None:
        return x
    dtype = as_dtype(dtype, caller)
    if dtype.kind != "f" and not (int64 and dtype == np.int64):
        raise DTypeError(
            f"{caller}: dtype must be a floating dtype (np.float32, np.float64, ...)"
            f"{' or int64' if int64 else ''}, got {dtype}"
        )
    if dtype.kind != "f" and x.requires_grad and is_grad_enabled():
        raise DTypeError(
            f"{caller}: dtype {dtype} has no gradient, and the input requires grad (as in "
            f"PyTorch); pass input.detach(), or compute under minitrain.no_grad()"
        )
    return x.to(dtype=dtype)


class ToDevice(Op):
    """x copied to another device; the gradient is copied back."""

    name = "to_device"
    inputs = ("x",)
    attrs = ("device",)
    saved = ("source",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(source=backend.device_of(x))
        out = backend.to_device(x, ctx.device)
        return out.copy() if out is x else out  # an op's output never aliases its input

    @staticmethod
    def backward(ctx, grad):
        """dx = grad copied back to x's device."""
        return _moved(grad, ctx.source)


def _moved(value, device):
    """value copied to `device`. No array module moves arrays between devices, so there is no
    graph math of it: a Tensor (create_graph's gradient) is moved by the recorded op, whose own
    gradient moves back again, an array by the backend's copy."""
    if isinstance(value, Tensor):
        return to_device(value, device)
    return backend.to_device(value, device)


def to_device(x, device):
    """x on another device (recorded: the gradient comes back to x's device)."""
    return ToDevice.apply(x, device=backend.device(device))


def _compared(name: str, ufunc_name: str, input, other):  # noqa: A002
    """`ufunc_name` (numpy's) of input and other, broadcast, as a bool tensor outside the graph."""
    for argument, value in (("input", input), ("other", other)):
        if not isinstance(value, (Tensor, bool, int, float, list, tuple, np.generic)) and not (
            backend.is_array(value)
        ):
            raise DTypeError(
                f"{name}: {argument} must be a Tensor, an array or a number, got "
                f"{type(value).__name__}"
            )
    x, y = (v.array if isinstance(v, Tensor) else v for v in (input, other))
    xp = backend.array_module(x, y)
    if xp is not np:
        backend.check_same_device(name, (x, y))
    try:  # outside the ops: a step of a compiled program of its own (array_step)
        return Tensor(array_step(getattr(xp, ufunc_name), x, y))
    except TypeError:  # numpy's UFuncTypeError: strings, objects
        raise DTypeError(
            f"{name}: cannot compare input of dtype {getattr(x, 'dtype', type(x).__name__)} "
            f"with other of dtype {getattr(y, 'dtype', type(y).__name__)}"
        ) from None
    except ValueError:
        raise ShapeError(
            f"{name}: shapes do not broadcast: input {np.shape(x)} and other {np.shape(y)}"
        ) from None


# The comparisons: PyTorch's eq, ne, lt, le, gt, ge (and its other names for them), elementwise,
# broadcasting, each a bool tensor with no gradient. An in-place twin (x.lt_(y)) writes 1 and 0
# into x in x's own dtype, as PyTorch's does. `minitrain.equal` is torch.equal, one bool
# (ops.array_equal); `==` is eq.


@variants("function", "method", "inplace")
def eq(input, other):  # noqa: A002
    """`input == other`, elementwise, broadcasting (other may be a number): a bool tensor, no
    gradient. (`minitrain.equal` is one bool: whether the shapes and all elements agree.)"""
    return _compared("eq", "equal", input, other)


@variants("function", "method", "inplace", aliases=("not_equal",))
def ne(input, other):  # noqa: A002
    """`input != other`, elementwise, broadcasting (other may be a number): a bool tensor, no
    gradient. `not_equal` is the same."""
    return _compared("ne", "not_equal", input, other)


@variants("function", "method", "inplace", aliases=("less",))
def lt(input, other):  # noqa: A002
    """`input < other`, elementwise, broadcasting (other may be a number): a bool tensor, no
    gradient. `less` is the same."""
    return _compared("lt", "less", input, other)


@variants("function", "method", "inplace", aliases=("less_equal",))
def le(input, other):  # noqa: A002
    """`input <= other`, elementwise, broadcasting (other may be a number): a bool tensor, no
    gradient. `less_equal` is the same."""
    return _compared("le", "less_equal", input, other)


@variants("function", "method", "inplace", aliases=("greater",))
def gt(input, other):  # noqa: A002
    """`input > other`, elementwise, broadcasting (other may be a number): a bool tensor, no
    gradient. `greater` is the same."""
    return _compared("gt", "greater", input, other)


@variants("function", "method", "inplace", aliases=("greater_equal",))
def ge(input, other):  # noqa: A002
    """`input >= other`, elementwise, broadcasting (other may be a number): a bool tensor, no
    gradient. `greater_equal` is the same."""
    return _compared("ge", "greater_equal", input, other)
