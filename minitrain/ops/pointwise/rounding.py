"""The piecewise-constant elementwise ops: sign, floor, ceil, trunc and round. Each is flat
wherever it has a derivative, so its gradient is zero."""

from __future__ import annotations

import numpy as np

from ...errors import ArgumentError, DTypeError
from ..core.checks import NOT_BOOL, check_integer_divisor, is_integral, require_kind
from ..core.op import Op, array_of
from ..core.variants import variants
from .arithmetic import widened

__all__ = ["ceil", "floor", "round", "rounded_div", "sign", "trunc"]


class _Step(Op, register=False):
    """A piecewise-constant function of x (sign, floor, ceil, trunc, round): flat wherever it has
    a derivative, so its gradient is zero; at the jumps PyTorch takes zero too."""

    inputs = ("x",)

    @staticmethod
    def backward(ctx, grad):
        """dx = 0: the function is flat between its jumps (and 0 is taken at them)."""
        return ctx.xp.zeros_like(grad)


class Sign(_Step):
    """-1, 0 or 1 as x is negative, zero or positive, 0 for NaN (an integer x keeps its dtype,
    and a bool x is its own sign, as in PyTorch: numpy has no sign of bools)."""

    name = "sign"

    @staticmethod
    def forward(ctx, x):
        if x.dtype == np.bool_:
            return x.copy()
        sign = ctx.xp.sign(x)
        if x.dtype.kind != "f":
            return sign
        return ctx.xp.where(ctx.xp.isnan(x), 0, sign).astype(x.dtype)


@variants("function", "method", "inplace")
def sign(input):
    """-1, 0 or 1 by the sign of `input`; the gradient is zero."""
    return Sign.apply(input)


class _Rounding(_Step, register=False):
    """x rounded to a whole number by `function`; an integer x is whole already and comes back
    as it is, in its own dtype (numpy would make floats of it; PyTorch keeps it)."""

    function = ""

    @classmethod
    def forward(cls, ctx, x):
        return x.copy() if x.dtype.kind in "biu" else getattr(ctx.xp, cls.function)(x)


class Floor(_Rounding):
    name = "floor"
    function = "floor"


@variants("function", "method", "inplace")
def floor(input):
    """The largest whole number <= `input`; the gradient is zero. Bool `input` is refused, as in
    PyTorch."""
    require_kind("floor", input, "iuf", NOT_BOOL, "int")
    return Floor.apply(input)


class Ceil(_Rounding):
    name = "ceil"
    function = "ceil"


@variants("function", "method", "inplace")
def ceil(input):
    """The smallest whole number >= `input`; the gradient is zero. Bool `input` is refused, as in
    PyTorch."""
    require_kind("ceil", input, "iuf", NOT_BOOL, "int")
    return Ceil.apply(input)


class Trunc(_Rounding):
    """x rounded toward zero."""

    name = "trunc"
    function = "trunc"


@variants("function", "method", "inplace")
def trunc(input):
    """`input` rounded toward zero; the gradient is zero. Bool `input` is refused, as in PyTorch."""
    require_kind("trunc", input, "iuf", NOT_BOOL, "int")
    return Trunc.apply(input)


class Round(_Step):
    """x rounded to `decimals` places, halves to even (PyTorch's and numpy's rule)."""

    name = "round"
    attrs = ("decimals",)

    @staticmethod
    def forward(ctx, x):
        # float16's x * 10**decimals would overflow
        return ctx.xp.round(widened(x), ctx.decimals).astype(x.dtype, copy=False)


@variants("function", "method", "inplace")
def round(input, *, decimals: int = 0):  # noqa: A001, A002 (PyTorch's names)
    """`input` rounded to `decimals` places (negative: to tens, hundreds...), halves to even; the
    gradient is zero. As in PyTorch, a bool input is refused, and so is an integer one with
    decimals other than 0 (with 0, an integer input comes back as it is)."""
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
        raise DTypeError(f"round: decimals must be an int, got {decimals!r}")
    if decimals:
        require_kind("round", input, "f", f"floating point for decimals={decimals}", "float")
    else:
        require_kind("round", input, "iuf", NOT_BOOL, "int")
    return Round.apply(input, decimals=int(decimals))


class RoundedDiv(_Step):
    """a / b rounded toward zero ('trunc') or down ('floor', Python's //), as PyTorch's
    div(rounding_mode=...): integers divide exactly in their dtype, floats as their quotient
    rounded. Flat wherever it has a derivative: both gradients are zero, as in PyTorch."""

    name = "rounded_div"
    inputs = ("a", "b")
    attrs = ("rounding_mode",)
    broadcast = True
    promoted = ("a", "b")

    @staticmethod
    def forward(ctx, a, b):
        xp = ctx.xp
        if is_integral(a) and is_integral(b):  # (a zero divisor was refused before)
            with np.errstate(over="ignore"):  # the least integer // -1 wraps, as in PyTorch
                if ctx.rounding_mode == "floor":
                    return xp.floor_divide(a, b)
                return (a - xp.fmod(a, b)) // b  # exact: a - fmod(a, b) is a multiple of b
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # x / 0: inf, nan
            if ctx.rounding_mode == "floor":
                return xp.floor_divide(a, b)
            return xp.trunc(xp.true_divide(a, b))

    @staticmethod
    def backward(ctx, grad):
        """da = db = 0: the quotient is flat between its jumps."""
        zero = ctx.xp.zeros_like(grad)
        return zero, zero


def rounded_div(a, b, rounding_mode: str, caller: str = "div"):
    """a / b rounded by `rounding_mode`, 'trunc' (toward zero) or 'floor' (down); the
    gradient is zero. Two bools are refused (one promotes), and an integer zero divisor, as in
    PyTorch (errors name `caller`: div, floor_divide)."""
    if rounding_mode not in ("trunc", "floor"):
        raise ArgumentError(
            f"{caller}: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}"
        )
    if array_of(a).dtype == np.bool_ and array_of(b).dtype == np.bool_:  # one bool promotes
        raise DTypeError(f"{caller}: takes numeric (not bool) operands, got two bools")
    check_integer_divisor(caller, a, b)
    return RoundedDiv.apply(a, b, rounding_mode=rounding_mode)
