"""Transcendental functions of one tensor: log2, log10, exp2, expm1, log1p, erf, erfc, tan,
asin, acos, atan, sinh, cosh, asinh, acosh, atanh.

Op by op, each with its backward beside it (PyTorch's formulas), written with ctx.xp so that it
serves create_graph too. Integer and bool inputs compute in float32, PyTorch's default float dtype;
float16 stays float16. Outside a function's domain (log2 of a negative, asin of 2) the value is
nan, as in PyTorch, and numpy's warning says so."""

from __future__ import annotations

import functools
import math

import numpy as np

from ... import backend
from ..activations.special import erfc as erfc_float64
from ..core import numba_math
from ..core.op import Op
from ..core.variants import variants

__all__ = [
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "cosh",
    "erf",
    "erfc",
    "exp2",
    "expm1",
    "log10",
    "log1p",
    "log2",
    "sinh",
    "tan",
]

LN2 = math.log(2.0)
LN10 = math.log(10.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)  # d/dx erf(x) = TWO_OVER_SQRT_PI * exp(-x^2)


def floating_or_float32(x):
    """x itself if floating (or a Python number); integer and bool arrays as float32, PyTorch's
    default float dtype (numpy would pick float16 for bool and int8, float64 for int64)."""
    dtype = getattr(x, "dtype", None)
    return x if dtype is None or dtype.kind == "f" else x.astype(np.float32)


class Log2(Op):
    name = "log2"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.log2(floating_or_float32(x))

    @staticmethod
    def backward(ctx, grad):
        """dx = grad / (x * ln 2)."""
        return grad / (ctx.x * LN2)


@variants("function", "method", "inplace")
def log2(input):
    """The base-2 logarithm of `input`; integers and bools as float32."""
    return Log2.apply(input)


class Log10(Op):
    name = "log10"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.log10(floating_or_float32(x))

    @staticmethod
    def backward(ctx, grad):
        """dx = grad / (x * ln 10)."""
        return grad / (ctx.x * LN10)


@variants("function", "method", "inplace")
def log10(input):
    """The base-10 logarithm of `input`; integers and bools as float32."""
    return Log10.apply(input)


class Exp2(Op):
    name = "exp2"
    inputs = ("x",)
    saved = ("out",)

    @staticmethod
    def forward(ctx, x):
        out = ctx.xp.exp2(floating_or_float32(x))
        ctx.save(out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * out * ln 2, from the forward output out = 2^x."""
        return grad * ctx.out * LN2


@variants("function", "method", "inplace")
def exp2(input):
    """2 ** `input`; integers and bools as float32."""
    return Exp2.apply(input)


class Expm1(Op):
    name = "expm1"
    inputs = ("x",)
    saved = ("out",)

    @staticmethod
    def forward(ctx, x):
        out = ctx.xp.expm1(floating_or_float32(x))
        ctx.save(out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * (out + 1), from the forward output out = exp(x) - 1."""
        return grad * (ctx.out + 1)


@variants("function", "method", "inplace")
def expm1(input):
    """exp(`input`) - 1, exact for small `input`; integers and bools as float32."""
    return Expm1.apply(input)


class Log1p(Op):
    name = "log1p"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.log1p(floating_or_float32(x))

    @staticmethod
    def backward(ctx, grad):
        """dx = grad / (1 + x)."""
        return grad / (ctx.x + 1)


@variants("function", "method", "inplace")
def log1p(input):
    """log(1 + `input`), exact for small `input`; integers and bools as float32."""
    return Log1p.apply(input)


# erf near 0 by its Maclaurin series, erf(x) = 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1)),
# the coefficients of x^(2n+1) highest n first (Horner in x^2). For |x| < 0.5 the 13 terms leave
# a remainder below 1e-17 relative; beyond, 1 - erfc(|x|) is exact to float64 rounding, since
# erfc(|x|) < 0.48 there (near 0, 1 - erfc would lose a small erf's relative accuracy).
_ERF_SERIES = tuple(
    TWO_OVER_SQRT_PI * (-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(12, -1, -1)
)
_ERF_SERIES_BOUND = 0.5


def _erf_float64(x):
    """erf(x) of a float64 numpy array."""
    near = np.abs(x) < _ERF_SERIES_BOUND  # NaN falls to the erfc branch and stays NaN
    out = np.empty_like(x)
    x_near = x[near]
    z = x_near * x_near
    series = np.full_like(z, _ERF_SERIES[0])
    for coefficient in _ERF_SERIES[1:]:
        series *= z
        series += coefficient
    out[near] = x_near * series
    x_far = x[~near]
    out[~near] = np.sign(x_far) * (1.0 - erfc_float64(np.abs(x_far)))
    return out


_FLOAT64_KERNELS = {"erf": _erf_float64, "erfc": erfc_float64}


_PARALLEL_WORK = 1 << 16  # elements from which erf's numba loop runs on several threads


@functools.cache
def _numba_special(name: str, parallel: bool):
    """erf or erfc elementwise as a numba kernel over flat arrays (math.erf / math.erfc, in
    float64 whatever the dtype), in a parallel and a serial build."""
    loop = numba_math.loop(parallel)
    if name == "erf":

        @backend.jit(parallel=parallel, fastmath=False)
        def kernel(x, out):
            for i in loop(x.size):
                out[i] = math.erf(x[i])

    else:

        @backend.jit(parallel=parallel, fastmath=False)
        def kernel(x, out):
            for i in loop(x.size):
                out[i] = math.erfc(x[i])

    return kernel


def _special(xp, name: str, x):
    """erf or erfc (`name`) of x in its floating dtype: on numpy computed in float64 (numpy has
    neither), by a numba kernel where numba takes x (the float64 series is its reference), on
    CuPy by cupyx.scipy.special."""
    x = floating_or_float32(x)
    if xp is not np:  # CuPy's computes float16 in float32 or float64 (by version)
        return getattr(backend.special(xp), name)(x).astype(x.dtype, copy=False)
    if backend.numba_takes(x):
        flat = np.ascontiguousarray(x).reshape(-1)
        out = np.empty_like(flat)
        _numba_special(name, flat.size >= _PARALLEL_WORK)(flat, out)
        return out.reshape(x.shape)
    return _FLOAT64_KERNELS[name](np.asarray(x, np.float64)).astype(x.dtype, copy=False)


class Erf(Op):
    name = "erf"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return _special(ctx.xp, "erf", x)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * 2 / sqrt(pi) * exp(-x^2)."""
        x = ctx.x
        return grad * (TWO_OVER_SQRT_PI * ctx.xp.exp(-(x * x)))


@variants("function", "method", "inplace")
def erf(input):
    """The error function, 2 / sqrt(pi) * integral of exp(-t^2) from 0 to `input`; integers and
    bools as float32."""
    return Erf.apply(input)


class Erfc(Op):
    name = "erfc"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return _special(ctx.xp, "erfc", x)

    @staticmethod
    def backward(ctx, grad):
        """dx = -grad * 2 / sqrt(pi) * exp(-x^2)."""
        x = ctx.x
        return grad * (-TWO_OVER_SQRT_PI * ctx.xp.exp(-(x * x)))


@variants("function", "method", "inplace")
def erfc(input):
    """1 - erf(`input`), exact in the right tail where 1 - erf cancels; integers and bools as
    float32."""
    return Erfc.apply(input)


class Tan(Op):
    name = "tan"
    inputs = ("x",)
    saved = ("out",)

    @staticmethod
    def forward(ctx, x):
        out = ctx.xp.tan(floating_or_float32(x))
        ctx.save(out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * (1 + out^2), from the forward output out = tan(x)."""
        out = ctx.out
        return grad * (1 + out * out)


@variants("function", "method", "inplace")
def tan(input):
    """The tangent of `input` (radians); integers and bools as float32."""
    return Tan.apply(input)


class Asin(Op):
    name = "asin"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.arcsin(floating_or_float32(x))

    @staticmethod
    def backward(ctx, grad):
        """dx = grad / sqrt(1 - x^2) (inf at |x| = 1, nan beyond)."""
        x = ctx.x
        return grad / ctx.xp.sqrt(1 - x * x)


@variants("function", "method", "inplace", aliases=("arcsin",))
def asin(input):
    """The arcsine of `input`, in [-pi/2, pi/2] (nan outside [-1, 1]); integers and bools as
    float32."""
    return Asin.apply(input)


class Acos(Op):
    name = "acos"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.arccos(floating_or_float32(x))

    @staticmethod
    def backward(ctx, grad):
        """dx = -grad / sqrt(1 - x^2) (-inf at |x| = 1, nan beyond)."""
        x = ctx.x
        return -grad / ctx.xp.sqrt(1 - x * x)


@variants("function", "method", "inplace", aliases=("arccos",))
def acos(input):
    """The arccosine of `input`, in [0, pi] (nan outside [-1, 1]); integers and bools as float32."""
    return Acos.apply(input)


class Atan(Op):
    name = "atan"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.arctan(floating_or_float32(x))

    @staticmethod
    def backward(ctx, grad):
        """dx = grad / (1 + x^2)."""
        x = ctx.x
        return grad / (1 + x * x)


@variants("function", "method", "inplace", aliases=("arctan",))
def atan(input):
    """The arctangent of `input`, in (-pi/2, pi/2); integers and bools as float32."""
    return Atan.apply(input)


class Sinh(Op):
    name = "sinh"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.sinh(floating_or_float32(x))

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * cosh(x)."""
        return grad * ctx.xp.cosh(ctx.x)


@variants("function", "method", "inplace")
def sinh(input):
    """The hyperbolic sine of `input`; integers and bools as float32."""
    return Sinh.apply(input)


class Cosh(Op):
    name = "cosh"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.cosh(floating_or_float32(x))

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * sinh(x)."""
        return grad * ctx.xp.sinh(ctx.x)


@variants("function", "method", "inplace")
def cosh(input):
    """The hyperbolic cosine of `input`; integers and bools as float32."""
    return Cosh.apply(input)


class Asinh(Op):
    name = "asinh"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.arcsinh(floating_or_float32(x))

    @staticmethod
    def backward(ctx, grad):
        """dx = grad / sqrt(x^2 + 1)."""
        x = ctx.x
        return grad / ctx.xp.sqrt(x * x + 1)


@variants("function", "method", "inplace", aliases=("arcsinh",))
def asinh(input):
    """The inverse hyperbolic sine of `input`; integers and bools as float32."""
    return Asinh.apply(input)


class Acosh(Op):
    name = "acosh"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.arccosh(floating_or_float32(x))

    @staticmethod
    def backward(ctx, grad):
        """dx = grad / sqrt(x^2 - 1) (inf at x = 1, nan below)."""
        x = ctx.x
        return grad / ctx.xp.sqrt(x * x - 1)


@variants("function", "method", "inplace", aliases=("arccosh",))
def acosh(input):
    """The inverse hyperbolic cosine of `input`, >= 0 (nan below 1); integers and bools as
    float32."""
    return Acosh.apply(input)


class Atanh(Op):
    name = "atanh"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.arctanh(floating_or_float32(x))

    @staticmethod
    def backward(ctx, grad):
        """dx = grad / (1 - x^2) (inf at |x| = 1)."""
        x = ctx.x
        return grad / (1 - x * x)


@variants("function", "method", "inplace", aliases=("arctanh",))
def atanh(input):
    """The inverse hyperbolic tangent of `input` (+-inf at +-1, nan beyond); integers and bools as
    float32."""
    return Atanh.apply(input)
