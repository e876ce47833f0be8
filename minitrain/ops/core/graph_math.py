"""numpy's names over recorded ops: the array module a backward rule computes with when its
gradient and saved inputs are Tensors, so that one rule serves the first derivative (on arrays,
`ctx.xp` numpy or cupy) and every higher one (on Tensors, `ctx.xp` this module's `GraphMath`).

A backward written against `ctx.xp` (or against `backend.array_module(...)` of its arguments,
as the public gradient kernels are) and Python's operators is then differentiable again under
create_graph, with no second copy of its formula. PyTorch gets the same from derivatives.yaml's
formulas being ATen calls; JAX from its rules being traced.

Each function takes what numpy's does. Where any argument is a Tensor it records the op of the
same meaning, else it is the array module's own, so constants (masks, saved indices) stay arrays.
Functions whose value has no derivative (sign, floor, isnan, argsort, the constructors) compute on
the values, as constants. A name this module lacks raises an AttributeError naming it, never
falls back to numpy on a Tensor's values, which would cut the graph silently.
"""

from __future__ import annotations

import functools
import types

import numpy as np

from ... import backend
from ...tensor import Tensor
from .. import activations, linalg, pointwise, reductions, shapes

__all__ = ["GraphMath", "graph_math"]


def _values(value):
    """The array behind a Tensor; anything else as it is."""
    return value.array if isinstance(value, Tensor) else value


def _like(x, array):
    """`array`, made from x's shape, as a constant Tensor where x is a Tensor."""
    return Tensor.wrap(array) if isinstance(x, Tensor) else array


def _any_tensor(values) -> bool:
    return any(isinstance(value, Tensor) for value in values)


def _recorded(op, numpy_name: str | None = None):
    """A function of numpy's name `numpy_name` that records `op` where an argument is a Tensor."""

    def function(self, *args, **kwargs):
        if _any_tensor(args) or _any_tensor(kwargs.values()):
            return op(*args, **kwargs)
        return getattr(self.xp, numpy_name or op.__name__)(*args, **kwargs)

    function.__name__ = numpy_name or op.__name__
    return function


def _constant(numpy_name: str):
    """A function without a derivative: the array module's own, on the values."""

    def function(self, *args, **kwargs):
        args = [_values(a) for a in args]
        kwargs = {k: _values(v) for k, v in kwargs.items()}
        return getattr(self.xp, numpy_name)(*args, **kwargs)

    function.__name__ = numpy_name
    return function


def _reduction(op, numpy_name: str):
    """numpy's sum and mean (axis, keepdims, dtype) as the op."""

    def function(self, x, axis=None, dtype=None, keepdims=False):
        if not isinstance(x, Tensor):
            return getattr(self.xp, numpy_name)(x, axis=axis, dtype=dtype, keepdims=keepdims)
        if dtype is not None and x.dtype != dtype:
            x = pointwise.cast(x, dtype)
        return op(x, axis, keepdims)

    function.__name__ = numpy_name
    return function


class GraphMath:
    """The array module of Tensors on one device: numpy's functions as ops (see the module's
    docstring). `xp` is the device's own module, for constants."""

    def __init__(self, xp):
        self.xp = xp

    def __repr__(self):
        return f"<minitrain graph math over {self.xp.__name__}>"

    def __getattr__(self, name):
        # dtypes and constants (float32, inf, newaxis) are the array module's; a function is
        # refused, so that no numpy function runs on a Tensor's values behind the graph's back
        value = getattr(self.xp, name)
        if isinstance(value, types.ModuleType) or (
            callable(value) and not isinstance(value, type)
        ):  # a function, or a module of them (xp.linalg, xp.fft)
            raise AttributeError(
                f"graph math has no '{name}': a backward rule that computes with xp.{name} has "
                f"no form in recorded ops yet, so create_graph cannot differentiate it (add "
                f"'{name}' to minitrain/ops/core/graph_math.py, or give the op no_double_backward)"
            )
        return value

    errstate = staticmethod(np.errstate)

    # differentiable: the op of the same meaning
    exp = _recorded(pointwise.exp)
    exp2 = _recorded(pointwise.exp2)
    expm1 = _recorded(pointwise.expm1)
    log = _recorded(pointwise.log)
    log2 = _recorded(pointwise.log2)
    log10 = _recorded(pointwise.log10)
    log1p = _recorded(pointwise.log1p)
    sqrt = _recorded(pointwise.sqrt)
    sin = _recorded(pointwise.sin)
    cos = _recorded(pointwise.cos)
    tan = _recorded(pointwise.tan)
    sinh = _recorded(pointwise.sinh)
    cosh = _recorded(pointwise.cosh)
    tanh = _recorded(activations.tanh)
    arcsin = _recorded(pointwise.asin, "arcsin")
    arccos = _recorded(pointwise.acos, "arccos")
    arctan = _recorded(pointwise.atan, "arctan")
    arcsinh = _recorded(pointwise.asinh, "arcsinh")
    arccosh = _recorded(pointwise.acosh, "arccosh")
    arctanh = _recorded(pointwise.atanh, "arctanh")
    arctan2 = _recorded(pointwise.atan2, "arctan2")
    hypot = _recorded(pointwise.hypot)
    logaddexp = _recorded(pointwise.logaddexp)
    abs = _recorded(pointwise.abs)  # noqa: A003 (numpy's name)
    maximum = _recorded(pointwise.maximum)
    minimum = _recorded(pointwise.minimum)
    power = _recorded(pointwise.pow, "power")
    matmul = _recorded(linalg.matmul)
    broadcast_to = _recorded(shapes.broadcast_to)
    swapaxes = _recorded(shapes.swapaxes)
    moveaxis = _recorded(shapes.moveaxis)
    flip = _recorded(shapes.flip)
    reshape = _recorded(shapes.reshape)
    cumsum = _recorded(reductions.cumsum)

    def cumprod(self, x, axis=None):
        if isinstance(x, Tensor):
            return reductions.cumprod(x, axis)
        return self.xp.cumprod(x, axis=axis)

    sum = _reduction(reductions.sum, "sum")  # noqa: A003
    mean = _reduction(reductions.mean, "mean")

    def square(self, x):
        return x * x

    def negative(self, x):
        return -x

    def multiply(self, a, b):
        return a * b

    def true_divide(self, a, b):
        return a / b

    divide = true_divide

    def erf(self, x):
        if isinstance(x, Tensor):
            return pointwise.erf(x)
        return backend.special(self.xp).erf(x)

    def erfc(self, x):
        if isinstance(x, Tensor):
            return pointwise.erfc(x)
        return backend.special(self.xp).erfc(x)

    def expit(self, x):
        """The logistic sigmoid (scipy.special's name): the sigmoid op, whose slope s (1 - s)
        holds at 0 too (stable_sigmoid's two-branch form would take abs's slope there, 0)."""
        if isinstance(x, Tensor):
            return activations.sigmoid(x)
        return activations.special.stable_sigmoid(self.xp, x)

    def where(self, condition, a, b):
        if isinstance(a, Tensor) or isinstance(b, Tensor):
            return pointwise.where(condition, a, b)
        return self.xp.where(_values(condition), a, b)

    def clip(self, x, low, high):
        if _any_tensor((x, low, high)):
            return pointwise.clip(x, low, high)
        return self.xp.clip(x, low, high)

    def einsum(self, subscripts, *operands):
        if _any_tensor(operands):
            return linalg.einsum(subscripts, *operands)
        return self.xp.einsum(subscripts, *operands)

    def expand_dims(self, x, axis):
        if not isinstance(x, Tensor):
            return self.xp.expand_dims(x, axis)
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        ndim = x.ndim + len(axes)
        axes = {a % ndim for a in axes}
        sizes = iter(x.shape)
        return shapes.reshape(x, tuple(1 if d in axes else next(sizes) for d in range(ndim)))

    def transpose(self, x, axes=None):
        if not isinstance(x, Tensor):
            return self.xp.transpose(x, axes)
        return shapes.permute(x, tuple(reversed(range(x.ndim))) if axes is None else axes)

    def concatenate(self, arrays, axis=0):
        if _any_tensor(arrays):
            return shapes.concat(list(arrays), axis)
        return self.xp.concatenate(arrays, axis)

    def stack(self, arrays, axis=0):
        if _any_tensor(arrays):
            return shapes.stack(list(arrays), axis)
        return self.xp.stack(arrays, axis)

    def take_along_axis(self, x, indices, axis):
        if isinstance(x, Tensor):
            return shapes.take_along_dim(x, _values(indices), axis)
        return self.xp.take_along_axis(x, _values(indices), axis)

    def tril(self, x, k=0):
        return pointwise.tril(x, k) if isinstance(x, Tensor) else self.xp.tril(x, k)

    def triu(self, x, k=0):
        return pointwise.triu(x, k) if isinstance(x, Tensor) else self.xp.triu(x, k)

    def asarray(self, value, dtype=None):
        if isinstance(value, Tensor):
            return value if dtype is None or value.dtype == dtype else pointwise.cast(value, dtype)
        return self.xp.asarray(value, dtype)

    def ascontiguousarray(self, value):
        return value if isinstance(value, Tensor) else self.xp.ascontiguousarray(value)

    # no derivative: computed on the values
    sign = _constant("sign")
    floor = _constant("floor")
    ceil = _constant("ceil")
    trunc = _constant("trunc")
    round = _constant("round")  # noqa: A003
    isnan = _constant("isnan")
    isinf = _constant("isinf")
    isfinite = _constant("isfinite")
    equal = _constant("equal")
    greater = _constant("greater")
    less = _constant("less")
    argsort = _constant("argsort")
    logical_and = _constant("logical_and")
    logical_or = _constant("logical_or")
    logical_not = _constant("logical_not")
    zeros = _constant("zeros")
    ones = _constant("ones")
    empty = _constant("empty")
    full = _constant("full")
    arange = _constant("arange")
    eye = _constant("eye")
    tri = _constant("tri")
    may_share_memory = _constant("may_share_memory")

    # as torch's: a constant Tensor for a Tensor (what a backward returns must be a Tensor)
    def zeros_like(self, x, dtype=None):
        return _like(x, self.xp.zeros(x.shape, dtype or x.dtype))

    def ones_like(self, x, dtype=None):
        return _like(x, self.xp.ones(x.shape, dtype or x.dtype))

    def full_like(self, x, fill_value, dtype=None):
        return _like(x, self.xp.full(x.shape, fill_value, dtype or x.dtype))


@functools.cache
def graph_math(xp) -> GraphMath:
    """The graph math of Tensors whose arrays are `xp`'s (numpy or cupy)."""
    return GraphMath(xp)


# kernels that ask backend.array_module for their arguments' module get this one for Tensors
backend.register_array_type(Tensor, lambda tensor: graph_math(backend.array_module(tensor.array)))
