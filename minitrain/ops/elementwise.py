"""Elementwise ops: arithmetic, exp/log/sqrt/abs, sin/cos, maximum/minimum, where, clip, the
step functions sign/floor/ceil/trunc/round (zero gradient), cast, device moves; masked_fill and
tril/triu as compositions over where; and the comparisons, which have no gradient."""

from __future__ import annotations

import math

import numpy as np

from .. import backend
from ..errors import ArgumentError, DTypeError, ShapeError
from ..tensor import Tensor, as_dtype
from .registry import Op, dtype_of, shape_of


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


class Pow(Op):
    """a ** b for a tensor or number base and exponent."""

    name = "pow"
    inputs = ("a", "b")
    saved = ("a", "b", "out")
    broadcast = True
    promoted = ("a", "b")

    @staticmethod
    def forward(ctx, a, b):
        out = ctx.xp.power(a, b)
        ctx.save(a=a, b=b, out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """da = grad * b * a^(b - 1), db = grad * a^b * log(a), each summed over broadcast dims.

        da is taken as 0 where b == 0 (so 0 ** 0 has gradient 0, not nan), db as 0 where a == 0
        and b >= 0 (the one-sided limit)."""
        xp, a, b = ctx.xp, ctx.a, ctx.b
        grad_a = grad_b = None
        # where() picks the defined value after both branches ran: silence the discarded ones
        with np.errstate(divide="ignore", invalid="ignore"):
            if ctx.needs_grad[0]:
                # b * a^(b-1), taken as 0 where b == 0 (so 0 ** 0 has gradient 0, not nan)
                grad_a = grad * xp.where(b == 0, 0, b * xp.power(a, b - 1))
            if ctx.needs_grad[1]:
                # a^b * log(a), taken as 0 where a == 0 and b >= 0 (the one-sided limit)
                grad_b = grad * xp.where((a == 0) & (b >= 0), 0, ctx.out * xp.log(a))
        return grad_a, grad_b


class Exp(Op):
    name = "exp"
    inputs = ("x",)
    saved = ("out",)

    @staticmethod
    def forward(ctx, x):
        out = ctx.xp.exp(_floating(x))
        ctx.save(out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * out, from the forward output out = exp(x)."""
        return grad * ctx.out


class Log(Op):
    name = "log"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.log(_floating(x))

    @staticmethod
    def backward(ctx, grad):
        """dx = grad / x."""
        return grad / ctx.x


class Sqrt(Op):
    name = "sqrt"
    inputs = ("x",)
    saved = ("out",)

    @staticmethod
    def forward(ctx, x):
        out = ctx.xp.sqrt(_floating(x))
        ctx.save(out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad / (2 * out), from the forward output out = sqrt(x)."""
        return grad / (2 * ctx.out)


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
        return grad * ctx.xp.sign(ctx.x)


class Sin(Op):
    name = "sin"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.sin(_floating(x))

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * cos(x)."""
        return grad * ctx.xp.cos(ctx.x)


class Cos(Op):
    name = "cos"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.cos(_floating(x))

    @staticmethod
    def backward(ctx, grad):
        """dx = -grad * sin(x)."""
        return -grad * ctx.xp.sin(ctx.x)


NOT_BOOL = "numeric (not bool)"


def require_kind(op: str, x, kinds: str, wanted: str, cast: str) -> None:
    """Refuse x, before the op runs, unless its dtype's kind is one of `kinds` (numpy's: "b"
    bool, "i" / "u" signed / unsigned integers, "f" floating), as PyTorch refuses it: a
    DTypeError naming the op, x, its dtype, and the cast that makes it acceptable (`wanted`
    says what x must be: "floating point", NOT_BOOL)."""
    dtype = dtype_of(x)
    if dtype.kind not in kinds:
        raise DTypeError(f"{op}: x must be {wanted}, got {dtype} (cast it first: x.{cast}())")


def _floating(x):
    """x itself if floating; integers and bools as float32, PyTorch's default float dtype (numpy
    would pick float16 for bool and int8, float64 for int64)."""
    return x if x.dtype.kind == "f" else x.astype(np.float32)


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
            return x
        sign = ctx.xp.sign(x)
        if x.dtype.kind != "f":
            return sign
        return ctx.xp.where(ctx.xp.isnan(x), 0, sign).astype(x.dtype)


class _Rounding(_Step, register=False):
    """x rounded to a whole number by `function`; an integer x is whole already and comes back
    as it is, in its own dtype (numpy would make floats of it; PyTorch keeps it)."""

    function = ""

    @classmethod
    def forward(cls, ctx, x):
        return x if x.dtype.kind in "biu" else getattr(ctx.xp, cls.function)(x)


class Floor(_Rounding):
    name = "floor"
    function = "floor"


class Ceil(_Rounding):
    name = "ceil"
    function = "ceil"


class Trunc(_Rounding):
    """x rounded toward zero."""

    name = "trunc"
    function = "trunc"


class Round(_Step):
    """x rounded to `decimals` places, halves to even (PyTorch's and numpy's rule)."""

    name = "round"
    attrs = ("decimals",)

    @staticmethod
    def forward(ctx, x):
        # float16's x * 10**decimals would overflow
        return ctx.xp.round(widened(x), ctx.decimals).astype(x.dtype, copy=False)


def widened(x):
    """x in float32 if float16, else as it is: float16 sums, squares and scalings overflow or
    lose their low digits early, and PyTorch computes them in float32 too."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _pick_grads(ctx, grad, a_wins):
    """Gradients of maximum/minimum: to the winner, split evenly on ties (a subgradient)."""
    xp, a, b = ctx.xp, ctx.a, ctx.b
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
        return _pick_grads(ctx, grad, ctx.a > ctx.b)


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
        return _pick_grads(ctx, grad, ctx.a < ctx.b)


class Where(Op):
    """cond ? a : b, elementwise; cond is boolean and gets no gradient."""

    name = "where"
    inputs = ("cond", "a", "b")
    saved = ("cond",)
    broadcast = True
    promoted = ("a", "b")

    @staticmethod
    def forward(ctx, cond, a, b):
        if getattr(cond, "dtype", None) != np.bool_:
            raise DTypeError(
                f"where: 'cond' must be boolean, got {getattr(cond, 'dtype', type(cond).__name__)}"
            )
        ctx.save(cond=cond)
        return ctx.xp.where(cond, a, b)

    @staticmethod
    def backward(ctx, grad):
        """da = grad where cond, else 0; db = grad where not cond, else 0; cond gets none.

        Each gradient is summed back over broadcast dims."""
        xp, cond = ctx.xp, ctx.cond
        zero = grad.dtype.type(0)
        return (
            None,
            xp.where(cond, grad, zero) if ctx.needs_grad[1] else None,
            xp.where(cond, zero, grad) if ctx.needs_grad[2] else None,
        )


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
        x, inside = ctx.x, True
        if ctx.min is not None:
            inside = inside & (x >= ctx.min)
        if ctx.max is not None:
            inside = inside & (x <= ctx.max)
        return grad * inside


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


class ToDevice(Op):
    """x copied to another device; the gradient is copied back."""

    name = "to_device"
    inputs = ("x",)
    attrs = ("device",)
    saved = ("source",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(source=backend.device_of(x))
        return backend.to_device(x, ctx.device)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad copied back to x's device."""
        return backend.to_device(grad, ctx.source)


def add(a, b):
    """a + b, broadcasting."""
    return Add.apply(a, b)


def sub(a, b):
    """a - b, broadcasting."""
    return Sub.apply(a, b)


def mul(a, b):
    """a * b, broadcasting."""
    return Mul.apply(a, b)


def div(a, b):
    """a / b, broadcasting."""
    return Div.apply(a, b)


def neg(x):
    """-x."""
    return Neg.apply(x)


def pow(a, b):  # noqa: A001 (the op's name)
    """a ** b; either may be a tensor or a number."""
    return Pow.apply(a, b)


def exp(x):
    return Exp.apply(x)


def log(x):
    return Log.apply(x)


def sqrt(x):
    return Sqrt.apply(x)


def abs(x):  # noqa: A001
    """|x|; the gradient at 0 is 0. Bool x is refused, as in PyTorch."""
    require_kind("abs", x, "iuf", NOT_BOOL, "int")
    return Abs.apply(x)


def sin(x):
    return Sin.apply(x)


def cos(x):
    return Cos.apply(x)


def sign(x):
    """-1, 0 or 1 by the sign of x; the gradient is zero."""
    return Sign.apply(x)


def floor(x):
    """The largest whole number <= x; the gradient is zero. Bool x is refused, as in PyTorch."""
    require_kind("floor", x, "iuf", NOT_BOOL, "int")
    return Floor.apply(x)


def ceil(x):
    """The smallest whole number >= x; the gradient is zero. Bool x is refused, as in PyTorch."""
    require_kind("ceil", x, "iuf", NOT_BOOL, "int")
    return Ceil.apply(x)


def trunc(x):
    """x rounded toward zero; the gradient is zero. Bool x is refused, as in PyTorch."""
    require_kind("trunc", x, "iuf", NOT_BOOL, "int")
    return Trunc.apply(x)


def round(x, decimals: int = 0):  # noqa: A001 (the op's name)
    """x rounded to `decimals` places (negative: to tens, hundreds...), halves to even; the
    gradient is zero. As in PyTorch, bool x is refused, and so is integer x with decimals other
    than 0 (with 0, an integer x comes back as it is)."""
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
        raise DTypeError(f"round: decimals must be an int, got {decimals!r}")
    if decimals:
        require_kind("round", x, "f", f"floating point for decimals={decimals}", "float")
    else:
        require_kind("round", x, "iuf", NOT_BOOL, "int")
    return Round.apply(x, decimals=int(decimals))


def maximum(a, b):
    """Elementwise max; tied elements share the gradient equally."""
    return Maximum.apply(a, b)


def minimum(a, b):
    """Elementwise min; tied elements share the gradient equally."""
    return Minimum.apply(a, b)


def where(cond, a, b):
    """Elements of a where cond is True, of b elsewhere."""
    return Where.apply(cond, a, b)


def masked_fill(x, mask, value):
    """x with `value` where the boolean mask is True (PyTorch's masked_fill): where(mask, value,
    x). mask broadcasts against x; value is a number or a 0-d tensor (which gets the gradient of
    the places it fills), and the result keeps x's dtype (a float fills an int x truncated)."""
    x_shape, mask_shape = shape_of(x), shape_of(mask)
    if getattr(mask, "dtype", None) != np.bool_:
        raise DTypeError(
            f"masked_fill: mask must be boolean, got {getattr(mask, 'dtype', type(mask).__name__)}"
        )
    number = isinstance(value, (bool, int, float, np.generic))
    if not (number or isinstance(value, Tensor) or backend.is_array(value)):
        raise DTypeError(
            f"masked_fill: value must be a number or a 0-d tensor, got {type(value).__name__}"
        )
    if not number and shape_of(value) != ():
        raise ShapeError(
            f"masked_fill: value must be a number or a 0-d tensor, got shape {shape_of(value)}"
        )
    try:
        np.broadcast_shapes(x_shape, mask_shape)
    except ValueError:
        raise ShapeError(
            f"masked_fill: mask of shape {mask_shape} does not broadcast with x of shape {x_shape}"
        ) from None
    dtype = x.dtype
    if isinstance(value, Tensor):
        if value.dtype != dtype:
            _fill_value("masked_fill", value.data.item(), dtype)  # refused where PyTorch does
            value = cast(value, dtype)
    else:
        # a numpy number of x's dtype: it cannot change the result's
        value = _fill_value("masked_fill", value, dtype)
    return Where.apply(mask, value, x)


def _fill_value(op: str, value, dtype: np.dtype):
    """The number `value` as x's dtype, refused where PyTorch refuses it as overflowing: out of
    an integer dtype's range (a float in range fills truncated; a negative integer wraps into
    an unsigned dtype, as in PyTorch, down to -max), or finite and past a floating dtype's
    largest (an infinity stays one, a nan a nan)."""
    if backend.is_array(value):  # a 0-d array: its number
        value = value.item()
    if dtype.kind == "b" or isinstance(value, (bool, np.bool_)):
        return dtype.type(value)
    number = float(value) if isinstance(value, (float, np.floating)) else int(value)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        wraps = dtype.kind == "u" and isinstance(number, int)
        if math.isfinite(number) and (-info.max if wraps else info.min) <= number <= info.max:
            whole = math.trunc(number)
            return dtype.type(whole % (int(info.max) + 1) if wraps else whole)
    elif not math.isfinite(number) or math.fabs(number) <= float(np.finfo(dtype).max):
        return dtype.type(value)
    raise ArgumentError(f"{op}: value {value!r} does not fit x's dtype {dtype} without overflow")


def tril(x, diagonal: int = 0):
    """The lower triangle of the last two dims, zeros above: elements (i, j) with
    j <= i + diagonal kept (where over a constant mask; the gradient passes where kept)."""
    return _triangle(x, diagonal, "tril")


def triu(x, diagonal: int = 0):
    """The upper triangle of the last two dims, zeros below: elements (i, j) with
    j >= i + diagonal kept (where over a constant mask; the gradient passes where kept)."""
    return _triangle(x, diagonal, "triu")


def _triangle(x, diagonal, name):
    shape = shape_of(x)
    if len(shape) < 2:
        raise ShapeError(f"{name}: needs a tensor with at least 2 dims, got shape {shape}")
    if isinstance(diagonal, bool) or not isinstance(diagonal, (int, np.integer)):
        raise DTypeError(f"{name}: diagonal must be an int, got {diagonal!r}")
    xp = backend.array_module(x.data if isinstance(x, Tensor) else x)
    rows, columns = shape[-2:]
    if name == "tril":  # tri(k)[i, j] is j <= i + k
        keep = xp.tri(rows, columns, int(diagonal), dtype=bool)
    else:
        keep = ~xp.tri(rows, columns, int(diagonal) - 1, dtype=bool)
    return Where.apply(keep, x, x.dtype.type(0))


def clip(x, min=None, max=None):  # noqa: A002
    """x limited to [min, max]. Numpy scalar bounds count as Python numbers, as in PyTorch: an
    np.float64 bound leaves a float16 x float16."""
    return Clip.apply(x, min=_bound(min, "min"), max=_bound(max, "max"))


def _bound(value, name: str):
    if isinstance(value, np.generic):
        return value.item()
    if value is not None and not isinstance(value, (int, float)):
        raise DTypeError(
            f"clip: {name} must be a number or None, got {type(value).__name__} (for a tensor "
            f"bound, use maximum / minimum)"
        )
    return value


def cast(x, dtype):
    """x as another dtype: recorded to a floating dtype (the gradient comes back in x's),
    outside the graph to an integer or bool one, which has no gradient, as in PyTorch."""
    dtype = as_dtype(dtype, "cast")
    if dtype.kind != "f" and isinstance(x, Tensor):
        x = x.detach()
    return Cast.apply(x, dtype=dtype)


def to_device(x, device):
    """x on another device (recorded: the gradient comes back to x's device)."""
    return ToDevice.apply(x, device=backend.device(device))


def _comparison(ufunc_name):
    def compare(a, b):
        x, y = (v.data if isinstance(v, Tensor) else v for v in (a, b))
        xp = backend.array_module(x, y)
        try:
            return Tensor(getattr(xp, ufunc_name)(x, y))
        except ValueError:
            raise ShapeError(
                f"{ufunc_name}: shapes do not broadcast: {np.shape(x)} and {np.shape(y)}"
            ) from None

    compare.__name__ = ufunc_name
    compare.__doc__ = f"Elementwise {ufunc_name} as a boolean tensor (no gradient)."
    return compare


equal = _comparison("equal")
not_equal = _comparison("not_equal")
less = _comparison("less")
less_equal = _comparison("less_equal")
greater = _comparison("greater")
greater_equal = _comparison("greater_equal")
