"""Elementwise math of two tensors (lerp: three): atan2, hypot, logaddexp, xlogy, copysign, lerp,
and division's remainders and quotient: fmod, remainder, floor_divide.

Op by op, each with PyTorch's backward beside it, written with ctx.xp so that it serves
create_graph too. Operands broadcast and promote as PyTorch's do (either may be a number); the
functions refuse the dtypes PyTorch refuses (bool remainders, integer hypot and logaddexp,
integer lerp)."""

from __future__ import annotations

import numpy as np

from ... import backend
from ...arguments import as_array
from ...errors import DTypeError
from ...tensor import Tensor
from ..core.checks import check_integer_divisor
from ..core.op import Op, array_of, as_tensor
from ..core.promotion import result_type
from ..core.variants import variants
from .arithmetic import widened
from .rounding import rounded_div
from .transcendental import floating_or_float32

__all__ = [
    "atan2",
    "copysign",
    "floor_divide",
    "fmod",
    "hypot",
    "lerp",
    "logaddexp",
    "remainder",
    "xlogy",
]


def _described(value) -> str:
    """An operand as an error message shows it: its dtype, or a number's type."""
    dtype = getattr(value, "dtype", None)
    return str(dtype) if dtype is not None else type(value).__name__


def _check_kinds(caller: str, kinds: str, wanted: str, **operands) -> None:
    """Refuse operands whose promoted dtype (PyTorch's result_type) is not of `kinds` (numpy's
    kind letters: "b" bool, "iu" integers, "f" floating), as PyTorch refuses them: a DTypeError
    naming the caller and each operand's dtype."""
    for name, value in operands.items():
        if not isinstance(value, (Tensor, bool, int, float, list, tuple, np.generic)) and not (
            backend.is_array(value)
        ):
            raise DTypeError(
                f"{caller}: {name} must be a Tensor, an array or a number, got "
                f"{type(value).__name__}"
            )
    values = [as_array(v) if isinstance(v, (list, tuple)) else v for v in operands.values()]
    if result_type(values).kind not in kinds:
        given = ", ".join(f"{name} {_described(value)}" for name, value in operands.items())
        raise DTypeError(f"{caller}: takes {wanted} operands, got {given}")


class Atan2(Op):
    """The angle of the point (other, input), in [-pi, pi]."""

    name = "atan2"
    inputs = ("input", "other")
    saved = ("input", "other")
    broadcast = True
    promoted = ("input", "other")

    @staticmethod
    def forward(ctx, a, b):
        ctx.save(input=a, other=b)
        return ctx.xp.arctan2(floating_or_float32(a), floating_or_float32(b))

    @staticmethod
    def backward(ctx, grad):
        """dinput = grad * other / r2, dother = -grad * input / r2, r2 = input^2 + other^2.

        At the origin both are 0, as in PyTorch: r2 is taken as 1 there, where both numerators
        are 0 (a constant mask, so this serves arrays and tensors alike)."""
        a, b = ctx.input, ctx.other
        r2 = a * a + b * b
        r2 = r2 + (array_of(r2) == 0)
        return (
            grad * b / r2 if ctx.needs_grad[0] else None,
            -grad * a / r2 if ctx.needs_grad[1] else None,
        )


@variants("function", "method", "inplace", aliases=("arctan2",))
def atan2(input, other):  # noqa: A002 (PyTorch's name)
    """The angle of the point (other, input), elementwise, in [-pi, pi]; integers and bools as
    float32."""
    return Atan2.apply(input, other)


class Hypot(Op):
    name = "hypot"
    inputs = ("input", "other")
    saved = ("input", "other", "out")
    broadcast = True
    promoted = ("input", "other")

    @staticmethod
    def forward(ctx, a, b):
        out = ctx.xp.hypot(a, b)
        ctx.save(
            input=a if ctx.needs_grad[0] else None, other=b if ctx.needs_grad[1] else None, out=out
        )
        return out

    @staticmethod
    def backward(ctx, grad):
        """dinput = grad * input / out, dother = grad * other / out (nan at the origin, as in
        PyTorch: the cone has no slope there)."""
        return (
            grad * ctx.input / ctx.out if ctx.needs_grad[0] else None,
            grad * ctx.other / ctx.out if ctx.needs_grad[1] else None,
        )


@variants("function", "method", "inplace")
def hypot(input, other):  # noqa: A002
    """sqrt(input^2 + other^2), elementwise, without overflow; floating operands only, as in
    PyTorch."""
    _check_kinds("hypot", "f", "floating-point", input=input, other=other)
    return Hypot.apply(input, other)


class LogAddExp(Op):
    name = "logaddexp"
    inputs = ("input", "other")
    saved = ("input", "other")
    broadcast = True
    promoted = ("input", "other")

    @staticmethod
    def forward(ctx, a, b):
        ctx.save(input=a, other=b)
        return ctx.xp.logaddexp(a, b)

    @staticmethod
    def backward(ctx, grad):
        """dinput = grad / (1 + exp(other - input)), dother = grad / (1 + exp(input - other)).

        PyTorch's form: an exp that overflows gives a 0 gradient, rightly; inf - inf (both
        operands -inf, or both inf) gives nan, as in PyTorch."""
        xp, a, b = ctx.xp, ctx.input, ctx.other
        with np.errstate(over="ignore", invalid="ignore"):
            return (
                grad / (1 + xp.exp(b - a)) if ctx.needs_grad[0] else None,
                grad / (1 + xp.exp(a - b)) if ctx.needs_grad[1] else None,
            )


@variants("function", "method")
def logaddexp(input, other):  # noqa: A002
    """log(exp(input) + exp(other)), elementwise, without overflow; floating operands only, as
    in PyTorch."""
    _check_kinds("logaddexp", "f", "floating-point", input=input, other=other)
    return LogAddExp.apply(input, other)


class XLogY(Op):
    """input * log(other), 0 where input is 0 (nan where other is nan)."""

    name = "xlogy"
    inputs = ("input", "other")
    saved = ("input", "other")
    broadcast = True
    promoted = ("input", "other")

    @staticmethod
    def forward(ctx, x, y):
        xp = ctx.xp
        ctx.save(input=x, other=y)  # each gradient reads both
        with np.errstate(divide="ignore", invalid="ignore"):  # log(0) and 0 * -inf, replaced
            return xp.where((x == 0) & ~xp.isnan(y), 0, x * xp.log(y))

    @staticmethod
    def backward(ctx, grad):
        """dinput = xlogy(grad, other), taken as 0 where input is 0 and other <= 0 (the forward
        is flat 0 there), as PyTorch's; dother = grad * input / other."""
        xp, x, y = ctx.xp, ctx.input, ctx.other
        grad_x = grad_y = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if ctx.needs_grad[0]:
                flat = xp.logical_or(  # xlogy(0, other) is 0 unless other is nan
                    xp.logical_and(x == 0, y <= 0), xp.logical_and(grad == 0, ~xp.isnan(y))
                )
                grad_x = xp.where(flat, 0, grad * xp.log(y))
            if ctx.needs_grad[1]:
                grad_y = grad * x / y
        return grad_x, grad_y


@variants("function", "method", "inplace")
def xlogy(input, other):  # noqa: A002
    """input * log(other), elementwise, broadcasting, and 0 where input is 0 unless other is nan:
    0 * log(0) is 0, the limit entropy and KL terms want (PyTorch's xlogy). Either operand may be
    a number; integers compute in float32."""
    return XLogY.apply(input, other)


class Copysign(Op):
    """|input| with the sign (bit) of other: -0.0 counts as negative."""

    name = "copysign"
    inputs = ("input", "other")
    saved = ("slope",)
    broadcast = True
    promoted = ("input", "other")

    @staticmethod
    def forward(ctx, a, b):
        xp = ctx.xp
        out = xp.copysign(floating_or_float32(a), floating_or_float32(b))
        # d out / d input: +-1 as input's and out's signs agree or not; 0 where input is 0
        ctx.save(slope=xp.sign(a) * xp.sign(out) if ctx.needs_grad[0] else None)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dinput = grad * sign(input) * sign(out) (0 where input is 0), dother = 0, as in
        PyTorch."""
        return (
            grad * ctx.slope if ctx.needs_grad[0] else None,
            ctx.xp.zeros_like(grad) if ctx.needs_grad[1] else None,
        )


@variants("function", "method", "inplace")
def copysign(input, other):  # noqa: A002
    """|input| with the sign of other (-0.0 counts as negative), elementwise; integers and bools
    as float32."""
    return Copysign.apply(input, other)


class Lerp(Op):
    """input + weight * (end - input), in PyTorch's two-sided form: from input for |weight| <
    0.5, from end (end - (end - input) * (1 - weight)) otherwise, so weight 1 gives end
    exactly."""

    name = "lerp"
    inputs = ("input", "end", "weight")
    saved = ("input", "end", "weight")
    broadcast = True

    @staticmethod
    def forward(ctx, start, end, weight):
        xp = ctx.xp
        if getattr(weight, "dtype", start.dtype) != start.dtype:
            weight = weight.astype(start.dtype)  # a 0-d weight: PyTorch's number (lerp checks)
        needs_weight = ctx.needs_grad[2]
        ctx.save(
            input=start if needs_weight else None,
            end=end if needs_weight else None,
            weight=weight if ctx.needs_grad[0] or ctx.needs_grad[1] else None,
        )
        dtype = start.dtype
        if dtype == np.float16:  # as PyTorch, in float32, rounded once
            start, end = widened(start), widened(end)
            weight = widened(weight) if backend.is_array(weight) else weight
        diff = end - start
        if backend.is_array(weight):
            out = xp.where(xp.abs(weight) < 0.5, start + weight * diff, end - diff * (1 - weight))
        else:
            out = start + weight * diff if abs(weight) < 0.5 else end - diff * (1 - weight)
        return out.astype(dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        """dinput = grad * (1 - weight), dend = grad * weight, dweight = grad * (end - input)."""
        weight = ctx.weight
        return (
            grad * (1 - weight) if ctx.needs_grad[0] else None,
            grad * weight if ctx.needs_grad[1] else None,
            grad * (ctx.end - ctx.input) if ctx.needs_grad[2] else None,
        )


@variants("function", "method", "inplace")
def lerp(input, end, weight):  # noqa: A002
    """input + weight * (end - input), elementwise, all three broadcast; weight a tensor or a
    number. As in PyTorch, input and end are floating tensors of one dtype, and a weight tensor
    of more than 0 dims has it too (a 0-d one stands for its number)."""
    input, end = as_tensor(input), as_tensor(end)  # noqa: A001
    if input.dtype.kind != "f":
        raise DTypeError(f"lerp: input must be floating point, got {input.dtype}")
    if end.dtype != input.dtype:
        raise DTypeError(f"lerp: end must have input's dtype {input.dtype}, got {end.dtype}")
    if backend.is_array(weight):
        weight = as_tensor(weight)
    if isinstance(weight, Tensor):
        if weight.ndim and weight.dtype != input.dtype:
            raise DTypeError(
                f"lerp: weight must have input's dtype {input.dtype}, got {weight.dtype}"
            )
    elif isinstance(weight, bool) or not isinstance(weight, (int, float, np.integer, np.floating)):
        raise DTypeError(f"lerp: weight must be a Tensor or a number, got {weight!r}")
    else:
        weight = float(weight)
    return Lerp.apply(input, end, weight)


class Fmod(Op):
    """The remainder of input / other with the sign of input (C's fmod)."""

    name = "fmod"
    inputs = ("input", "other")
    saved = ("quotient",)
    broadcast = True
    promoted = ("input", "other")

    @staticmethod
    def forward(ctx, a, b):
        xp = ctx.xp
        with np.errstate(divide="ignore", invalid="ignore"):
            out = xp.fmod(a, b)
            ctx.save(quotient=xp.trunc(a / b) if ctx.needs_grad[1] else None)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dinput = grad, dother = -grad * trunc(input / other) (a constant between jumps)."""
        return (
            grad if ctx.needs_grad[0] else None,
            -grad * ctx.quotient if ctx.needs_grad[1] else None,
        )


@variants("function", "method", "inplace")
def fmod(input, other):  # noqa: A002
    """The remainder of input / other with input's sign (C's fmod), elementwise; integers stay
    integers (a zero divisor is refused), bools are refused, as in PyTorch."""
    _check_kinds("fmod", "iuf", "numeric (not bool)", input=input, other=other)
    check_integer_divisor("fmod", input, other)
    return Fmod.apply(input, other)


class Remainder(Op):
    """The remainder of input / other with the sign of other (Python's %)."""

    name = "remainder"
    inputs = ("input", "other")
    saved = ("quotient",)
    broadcast = True
    promoted = ("input", "other")

    @staticmethod
    def forward(ctx, a, b):
        xp = ctx.xp
        with np.errstate(divide="ignore", invalid="ignore"):
            out = xp.remainder(a, b)
            ctx.save(quotient=xp.floor_divide(a, b) if ctx.needs_grad[1] else None)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dinput = grad, dother = -grad * floor(input / other) (a constant between jumps)."""
        return (
            grad if ctx.needs_grad[0] else None,
            -grad * ctx.quotient if ctx.needs_grad[1] else None,
        )


@variants("method")
def remainder(input, other):  # noqa: A002
    """input % other, with other's sign (Python's %), elementwise; input may be a number.
    Integers stay integers (a zero divisor is refused), bools are refused, as in PyTorch.

    Where input is a number, other's gradient is -floor(input / other), as it is for a tensor
    input; PyTorch has none there (its derivative is not implemented)."""
    _check_kinds("remainder", "iuf", "numeric (not bool)", input=input, other=other)
    check_integer_divisor("remainder", input, other)
    return Remainder.apply(input, other)


@variants("method")
def floor_divide(input, other):  # noqa: A002
    """input // other, rounded down (Python's //), elementwise; input may be a number: div's
    'floor' rounding (`rounded_div`). Integers stay integers (a zero divisor is refused), bools
    are refused, as in PyTorch. The gradient is zero, as that of PyTorch's
    div(rounding_mode='floor') (PyTorch's floor_divide has none)."""
    _check_kinds("floor_divide", "iuf", "numeric (not bool)", input=input, other=other)
    return rounded_div(input, other, "floor", caller="floor_divide")
