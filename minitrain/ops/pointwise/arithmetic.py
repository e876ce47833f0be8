"""Elementwise arithmetic and math: add, sub, mul, div, neg, pow, exp, log, sqrt, abs, sin,
cos, maximum, minimum, clip (casts, device moves and comparisons: conversion.py)."""

from __future__ import annotations

import numpy as np

from ...errors import ArgumentError, DTypeError
from ...tensor import Tensor
from ..core.checks import NOT_BOOL, is_integral, require_kind
from ..core.op import Op
from ..core.variants import variants

__all__ = [
    "abs",
    "add",
    "clamp_max",
    "clamp_min",
    "clip",
    "cos",
    "div",
    "exp",
    "log",
    "maximum",
    "minimum",
    "mul",
    "neg",
    "pow",
    "reciprocal",
    "rsqrt",
    "sin",
    "sqrt",
    "square",
    "sub",
]


def _floating_or_float32(x):
    """x itself if floating; integers and bools as float32, PyTorch's default float dtype (numpy
    would pick float16 for bool and int8, float64 for int64)."""
    return x if x.dtype.kind == "f" else x.astype(np.float32)


def widened(x):
    """x in float32 if float16, else as it is: float16 sums, squares and scalings overflow or
    lose their low digits early, and PyTorch computes them in float32 too."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


class Add(Op):
    name = "add"
    inputs = ("a", "b")
    broadcast = True
    promoted = ("a", "b")

    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, grad):
        """da = grad, db = grad (each summed back over broadcast dims)."""
        return grad, grad


@variants("function", "method", "inplace")
def add(input, other, *, alpha=1):
    """`input` + alpha * `other`, broadcasting (PyTorch's add: alpha scales `other` first)."""
    return Add.apply(input, _scaled("add", input, other, alpha))


def _scaled(caller: str, a, b, alpha):
    """b * alpha for add and sub; b itself for alpha 1. An integer a and b take an integer
    alpha only, as in PyTorch (a float alpha would make a float result of integers)."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)):
        raise DTypeError(f"{caller}: alpha must be a number, got {type(alpha).__name__}")
    if isinstance(alpha, (float, np.floating)):
        if {getattr(v, "dtype", np.asarray(v).dtype).kind for v in (a, b)} <= set("biu"):
            raise DTypeError(
                f"{caller}: alpha must be an integer for integer inputs, got {alpha!r} (as in "
                f"PyTorch)"
            )
    if alpha == 1:
        return b
    if isinstance(b, (int, float, np.integer, np.floating)):  # a number stays a number
        return b * alpha
    return Mul.apply(b, alpha)


class Sub(Op):
    name = "sub"
    inputs = ("a", "b")
    broadcast = True
    promoted = ("a", "b")

    @staticmethod
    def forward(ctx, a, b):
        return a - b

    @staticmethod
    def backward(ctx, grad):
        """da = grad, db = -grad (each summed back over broadcast dims)."""
        return grad, -grad if ctx.needs_grad[1] else None


@variants("function", "method", "inplace", aliases=("subtract",))
def sub(input, other, *, alpha=1):
    """`input` - alpha * `other`, broadcasting (PyTorch's sub)."""
    return Sub.apply(input, _scaled("sub", input, other, alpha))


class Mul(Op):
    name = "mul"
    inputs = ("a", "b")
    saved = ("a", "b")
    broadcast = True
    promoted = ("a", "b")

    @staticmethod
    def forward(ctx, a, b):
        # each gradient reads the other operand: keep only what a needed gradient reads
        ctx.save(a=a if ctx.needs_grad[1] else None, b=b if ctx.needs_grad[0] else None)
        return a * b

    @staticmethod
    def backward(ctx, grad):
        """da = grad * b, db = grad * a (each summed back over broadcast dims)."""
        return (
            grad * ctx.b if ctx.needs_grad[0] else None,
            grad * ctx.a if ctx.needs_grad[1] else None,
        )


def mul(a, b):
    """a * b, broadcasting."""
    return Mul.apply(a, b)


class Div(Op):
    name = "div"
    inputs = ("a", "b")
    saved = ("a", "b")
    broadcast = True
    promoted = ("a", "b")

    @staticmethod
    def forward(ctx, a, b):
        ctx.save(a=a if ctx.needs_grad[1] else None, b=b)  # only db reads a
        return a / b

    @staticmethod
    def backward(ctx, grad):
        """da = grad / b, db = -grad * a / b^2 (each summed back over broadcast dims)."""
        grad_a = grad / ctx.b
        # d(a/b)/db = -a/b^2 = -(grad/b) * a/b
        return (
            grad_a if ctx.needs_grad[0] else None,
            -grad_a * ctx.a / ctx.b if ctx.needs_grad[1] else None,
        )


@variants("function", "method", "inplace", aliases=("divide",))
def div(input, other, *, rounding_mode=None):
    """`input` / `other`, broadcasting; with `rounding_mode` 'trunc' or 'floor', the quotient
    rounded (PyTorch's div: integers then divide exactly, and the gradient is zero)."""
    if rounding_mode is None:
        return Div.apply(input, other)
    from .rounding import rounded_div  # rounding builds on this module

    return rounded_div(input, other, rounding_mode)


class Neg(Op):
    """-x; a bool x is refused, as PyTorch refuses it (here, not in `neg`: the `-` operator
    calls this op directly; and by catching the array module's refusal, free where x is not
    bool)."""

    name = "neg"
    inputs = ("x",)

    @staticmethod
    def forward(ctx, x):
        try:
            return -x
        except TypeError:
            require_kind("neg", x, "iuf", NOT_BOOL, "int")
            raise

    @staticmethod
    def backward(ctx, grad):
        """dx = -grad."""
        return -grad


def neg(x):
    """-x."""
    return Neg.apply(x)


class Pow(Op):
    """a ** b for a tensor or number base and exponent."""

    name = "pow"
    inputs = ("a", "b")
    saved = ("a", "b", "out")
    broadcast = True
    promoted = ("a", "b")

    @staticmethod
    def forward(ctx, a, b):
        try:
            out = ctx.xp.power(a, b)
        except ValueError:  # numpy's refusal of integers to negative integer powers
            out = _integer_power(ctx.xp, a, b)
        ctx.save(a=a, b=b, out=out if ctx.needs_grad[1] else None)  # only db reads it
        return out

    @staticmethod
    def backward(ctx, grad):
        """da = grad * b * a^(b - 1), db = grad * a^b * log(a), each summed over broadcast dims.

        da is taken as 0 where b == 0 (so 0 ** 0 has gradient 0, not nan), db as 0 where a == 0
        and b >= 0 (the one-sided limit). The masks read the values: constants to a second
        derivative."""
        xp, a, b = ctx.xp, ctx.a, ctx.b
        grad_a = grad_b = None
        # where() picks the defined value after both branches ran: silence the discarded ones
        with np.errstate(divide="ignore", invalid="ignore"):
            if ctx.needs_grad[0]:
                # b * a^(b-1), taken as 0 where b == 0 (so 0 ** 0 has gradient 0, not nan); a
                # number b makes the mask a bool, an array of it for where
                grad_a = grad * xp.where(xp.asarray(b == 0), 0, b * xp.power(a, b - 1))
            if ctx.needs_grad[1]:
                # a^b * log(a), taken as 0 where a == 0 and b >= 0 (the one-sided limit)
                grad_b = grad * xp.where((a == 0) & (b >= 0), 0, ctx.out * xp.log(a))
        return grad_a, grad_b


def _integer_power(xp, a, b):
    """Integers to integer powers, some negative, as PyTorch computes them: 1 and -1 to a
    negative power are 1 and -1 ** |b|, every other base 0 (0 included)."""
    b = xp.asarray(b)
    out = xp.power(a, xp.maximum(b, 0))
    odd = (b % 2) != 0
    negative = xp.where(a == 1, 1, xp.where(a == -1, xp.where(odd, -1, 1), 0))
    return xp.where(b < 0, negative, out).astype(out.dtype)


@variants("method", "inplace")
def pow(input, exponent):  # noqa: A001 (the op's name)
    """`input` ** `exponent`; either may be a tensor or a number. An integer to a negative
    integer power is refused, as in PyTorch (its value is not an integer)."""
    base = input.array if isinstance(input, Tensor) else input
    # as PyTorch: a negative number exponent is refused for an integer base (a tensor of
    # exponents holding negatives gives 0 there, numpy's and PyTorch's integer power)
    if (
        isinstance(exponent, (int, np.integer))
        and not isinstance(exponent, bool)
        and exponent < 0
        and is_integral(base)
    ):
        raise ArgumentError(
            f"pow: integers to negative integer powers are not allowed (base of dtype "
            f"{getattr(base, 'dtype', type(base).__name__)}, exponent {int(exponent)}); cast the "
            f"base to a floating dtype first"
        )
    return Pow.apply(input, exponent)


class Exp(Op):
    name = "exp"
    inputs = ("x",)
    saved = ("out",)

    @staticmethod
    def forward(ctx, x):
        out = ctx.xp.exp(_floating_or_float32(x))
        ctx.save(out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * out, from the forward output out = exp(x)."""
        return grad * ctx.out


@variants("function", "method", "inplace")
def exp(input):
    """e ** `input`; integers and bools as float32."""
    return Exp.apply(input)


class Log(Op):
    name = "log"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.log(_floating_or_float32(x))

    @staticmethod
    def backward(ctx, grad):
        """dx = grad / x."""
        return grad / ctx.x


@variants("function", "method", "inplace")
def log(input):
    """The natural logarithm of `input`; integers and bools as float32."""
    return Log.apply(input)


class Sqrt(Op):
    name = "sqrt"
    inputs = ("x",)
    saved = ("out",)

    @staticmethod
    def forward(ctx, x):
        out = ctx.xp.sqrt(_floating_or_float32(x))
        ctx.save(out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad / (2 * out), from the forward output out = sqrt(x)."""
        return grad / (2 * ctx.out)


@variants("function", "method", "inplace")
def sqrt(input):
    """The square root of `input`; integers and bools as float32."""
    return Sqrt.apply(input)


class Abs(Op):
    name = "abs"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.abs(x)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * sign(x) (0 at x == 0)."""
        return grad * ctx.xp.sign(ctx.x)  # flat: a constant to the second derivative


@variants("function", "method", "inplace")
def abs(input):  # noqa: A001
    """|`input`|; the gradient at 0 is 0. Bool `input` is refused, as in PyTorch."""
    require_kind("abs", input, "iuf", NOT_BOOL, "int")
    return Abs.apply(input)


class Sin(Op):
    name = "sin"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.sin(_floating_or_float32(x))

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * cos(x)."""
        return grad * ctx.xp.cos(ctx.x)


@variants("function", "method", "inplace")
def sin(input):
    """The sine of `input` (radians); integers and bools as float32."""
    return Sin.apply(input)


class Cos(Op):
    name = "cos"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.cos(_floating_or_float32(x))

    @staticmethod
    def backward(ctx, grad):
        """dx = -grad * sin(x)."""
        return -grad * ctx.xp.sin(ctx.x)


@variants("function", "method", "inplace")
def cos(input):
    """The cosine of `input` (radians); integers and bools as float32."""
    return Cos.apply(input)


def _pick_grads(xp, grad, a, b, a_wins):
    """Gradients of maximum/minimum for a and b (arrays or numbers): to the winner, split
    evenly on ties (a subgradient). The shares are computed on the values (where of constants):
    under create_graph, where grad, a and b are Tensors, they are constants to the second
    derivative."""
    share_a = xp.where(a_wins, 1.0, xp.where(a == b, 0.5, 0.0)).astype(grad.dtype)
    return grad * share_a, grad * (1 - share_a)


class Maximum(Op):
    name = "maximum"
    inputs = ("a", "b")
    saved = ("a", "b")
    broadcast = True
    promoted = ("a", "b")

    @staticmethod
    def forward(ctx, a, b):
        ctx.save(a=a, b=b)
        return ctx.xp.maximum(a, b)

    @staticmethod
    def backward(ctx, grad):
        """da = grad where a > b, db = grad where a < b, else 0; a tie gives each grad / 2.

        Each gradient is summed back over broadcast dims."""
        return _pick_grads(ctx.xp, grad, ctx.a, ctx.b, ctx.a > ctx.b)


@variants("method")
def maximum(input, other):
    """Elementwise max; tied elements share the gradient equally."""
    return Maximum.apply(input, other)


class Minimum(Op):
    name = "minimum"
    inputs = ("a", "b")
    saved = ("a", "b")
    broadcast = True
    promoted = ("a", "b")

    @staticmethod
    def forward(ctx, a, b):
        ctx.save(a=a, b=b)
        return ctx.xp.minimum(a, b)

    @staticmethod
    def backward(ctx, grad):
        """da = grad where a < b, db = grad where a > b, else 0; a tie gives each grad / 2.

        Each gradient is summed back over broadcast dims."""
        return _pick_grads(ctx.xp, grad, ctx.a, ctx.b, ctx.a < ctx.b)


@variants("method")
def minimum(input, other):
    """Elementwise min; tied elements share the gradient equally."""
    return Minimum.apply(input, other)


class Clip(Op):
    """x limited to [min, max] (either may be None); the gradient passes where min <= x <= max."""

    name = "clip"
    inputs = ("x",)
    attrs = ("min", "max")
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.clip(x, ctx.min, ctx.max)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad where min <= x <= max, else 0 (a None bound does not limit)."""
        return grad * _inside(ctx, ctx.x)


def _inside(ctx, x):
    """Where min <= x <= max: where clip passes its gradient (of a Tensor x, a bool Tensor
    outside the graph: a constant mask)."""
    inside = True
    if ctx.min is not None:
        inside = inside & (x >= ctx.min)
    if ctx.max is not None:
        inside = inside & (x <= ctx.max)
    return inside


def _bound(value, name: str):
    """A clip bound as a Python number or None; a numpy scalar is its number."""
    if isinstance(value, np.generic):
        return value.item()
    if value is not None and not isinstance(value, (int, float)):
        raise DTypeError(
            f"clip: {name} must be a number or None, got {type(value).__name__} (for a tensor "
            f"bound, use maximum / minimum)"
        )
    return value


@variants("function", "method", "inplace", aliases=("clamp",))
def clip(input, min=None, max=None):  # noqa: A002
    """`input` limited to [min, max]. Numpy scalar bounds count as Python numbers, as in PyTorch: an
    np.float64 bound leaves a float16 `input` float16. At least one bound must be given, as in
    PyTorch."""
    if min is None and max is None:
        raise ArgumentError("clip: at least one of min and max must not be None")
    return Clip.apply(input, min=_bound(min, "min"), max=_bound(max, "max"))


# PyTorch's other names for a clip, a power and a division, composed of those ops


@variants("function", "method", "inplace")
def clamp_min(input, min):  # noqa: A002 (PyTorch's names)
    """The elements limited from below by the number `min`: `clamp(input, min=min)`."""
    return clip(input, min, None)


@variants("function", "method", "inplace")
def clamp_max(input, max):  # noqa: A002 (PyTorch's names)
    """The elements limited from above by the number `max`: `clamp(input, max=max)`."""
    return clip(input, None, max)


@variants("function", "method", "inplace")
def square(input):  # noqa: A002
    """`input ** 2` (a bool tensor gives int64, as in PyTorch)."""
    return pow(input, 2)


@variants("function", "method", "inplace")
def rsqrt(input):  # noqa: A002
    """`1 / sqrt(input)`, as `input ** -0.5`."""
    return pow(input, -0.5)


@variants("function", "method", "inplace")
def reciprocal(input):  # noqa: A002
    """`1 / input` (an integer tensor gives float32, as in PyTorch)."""
    return div(1, input)
