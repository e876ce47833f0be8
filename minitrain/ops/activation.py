"""Activations and their gradient kernels: relu, leaky_relu, sigmoid, tanh, quick_gelu (silu),
gelu, softmax and log_softmax; and PyTorch's other activations: hardtanh (relu6), elu (selu,
celu), softplus, mish, hardswish, hardsigmoid, logsigmoid, softsign and prelu as ops, and
tanhshrink and glu composed from ops.

Each backward calls a public kernel of KERNELS.md section 1 (`relu_grad`, `softmax_grad`, ...):
a plain array function, numpy or CuPy in and out, callable on its own. Sigmoid, tanh, leaky relu,
softmax and log_softmax save their forward *output*: their gradients need only that, so the
input can be freed. Relu, softmax, log_softmax and exact gelu also have numba kernels, which run
instead on the CPU when numba is enabled (serial builds for small inputs, parallel loops for
large ones: see _PARALLEL_ELEMENTS).
"""

from __future__ import annotations

import functools
import importlib
import math
from types import SimpleNamespace

import numpy as np

from .. import backend
from ..errors import ArgumentError, DTypeError, ShapeError
from ..tensor import Tensor
from . import elementwise, numba_math
from .reduction import normalize_axis, normalize_one_axis
from .registry import Op, shape_of
from .shape import split

_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_TANH_CUBIC = 0.044715
# |x| beyond which the Gaussian density, and tanh'(inner) of gelu's tanh form, are 0 in float64:
# clamping there first keeps x*x and x**3 from overflowing (and warning) for huge inputs.
_GAUSSIAN_TAIL = 40.0
# Elements from which each numba kernel runs its parallel build (see numba_math.loop). relu's
# kernels are memory-bound (1 ms serially for 800k float32) and run between GEMMs in a training
# step, while OpenBLAS's worker threads spin for ~0.1 s after each GEMM: a parallel region then
# waits for a core they hold, and the CNN benchmark's step ran 1.5-2x slower with parallel relu
# and pooling than with serial ones. gelu's erfc is compute-bound: always parallel. The softmax
# family, by the rows * cols of its matrix: parallel only where a serial pass takes well over
# the ~2 ms a parallel region can wait for a core (numba_math.loop).
_PARALLEL_ELEMENTS = {
    "relu": 1 << 24,
    "relu_grad": 1 << 24,
    "gelu": 0,
    "gelu_grad": 0,
    "softmax": 1 << 20,
    "log_softmax": 1 << 20,
    "softmax_grad": 1 << 20,
    "log_softmax_grad": 1 << 20,
}


# --- checks -------------------------------------------------------------------------------------


def _check_same_shape(kernel: str, dY, other, other_name: str) -> None:
    if dY.shape != other.shape:
        raise ShapeError(
            f"{kernel}: dY {tuple(dY.shape)} and {other_name} {tuple(other.shape)} must have "
            f"the same shape"
        )


def _check_real(value, name: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise DTypeError(f"{where}: {name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ArgumentError(f"{where}: {name} must be finite, got {value}")
    return float(value)  # a Python float: float32 arrays stay float32 (numpy's weak scalars)


def _check_leaky_alpha(alpha, where: str) -> float:
    alpha = _check_real(alpha, "alpha", where)
    if alpha < 0:
        # The backward tells the two sides apart by the sign of the output Y = alpha * X, which a
        # negative slope would flip.
        raise ArgumentError(f"{where}: alpha (the negative slope) must be >= 0, got {alpha}")
    return alpha


def _floating(x, where: str, ints_as_float32: bool = False) -> Tensor:
    """x as a Tensor, refused unless floating point. Every activation but relu has fractional
    values, which an integer or bool input would get truncated (gelu), wrapped (sigmoid of
    unsigned ints) or rounded to float16 (tanh of bools) by numpy's rules; PyTorch raises for
    most of them, and computes sigmoid and tanh of them in float32 (`ints_as_float32`; such an
    x never needs a gradient)."""
    x = x if isinstance(x, Tensor) else Tensor(x)
    if ints_as_float32 and x.dtype.kind in "biu":
        return Tensor(x.data.astype(np.float32))
    if x.dtype.kind != "f":
        raise DTypeError(f"{where}: needs a floating-point input, got {x.dtype}")
    return x


def _check_approximate(approximate, where: str) -> str:
    if approximate not in ("none", "tanh"):
        raise ArgumentError(f"{where}: approximate must be 'none' or 'tanh', got {approximate!r}")
    return approximate


def _softmax_axes(ndim: int, axis, opset, where: str) -> tuple[int, tuple[int, ...]]:
    """The checked softmax axis (non-negative) and the axes one softmax spans.

    opset >= 13 (PyTorch's `dim`): the one axis, None meaning -1. opset < 13: the tensor is
    flattened to 2-D at `axis` (None meaning 1), so one softmax spans every dim from axis on.
    A 0-d tensor is a single element (axis 0 or -1), its softmax spanning no axes.
    """
    if isinstance(opset, bool) or not isinstance(opset, (int, np.integer)) or opset < 1:
        raise ArgumentError(f"{where}: opset must be an ONNX opset number >= 1, got {opset!r}")
    if axis is None:
        axis = -1 if opset >= 13 else 1
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise DTypeError(f"{where}: axis must be one int, got {axis!r}")
    if ndim == 0:
        normalize_axis(axis, 0, where)  # 0 and -1 only
        return 0, ()
    (axis,) = normalize_axis(axis, ndim, where)
    return axis, (axis,) if opset >= 13 else tuple(range(axis, ndim))


# --- kernels ------------------------------------------------------------------------------------


def relu_grad(dY, X):
    """dX = dY where X > 0, else 0 (0 at X == 0). dY and X have the same shape."""
    _check_same_shape("relu_grad", dY, X, "X")
    return backend.array_module(dY, X).where(X > 0, dY, 0)


def leaky_relu_grad(dY, Y, alpha: float = 0.01):
    """dX = dY where Y > 0, else alpha * dY (alpha at Y == 0), from the forward *output* Y.

    Y = X for X > 0 and alpha * X otherwise, so for alpha >= 0 (checked) Y > 0 exactly where
    X > 0 and the input need not be kept.
    """
    _check_same_shape("leaky_relu_grad", dY, Y, "Y")
    alpha = _check_leaky_alpha(alpha, "leaky_relu_grad")
    return backend.array_module(dY, Y).where(Y > 0, dY, dY * alpha)


def sigmoid_grad(dY, Y):
    """dX = dY * Y * (1 - Y), from the forward output Y = sigmoid(X)."""
    _check_same_shape("sigmoid_grad", dY, Y, "Y")
    return dY * Y * (1 - Y)


def tanh_grad(dY, Y):
    """dX = dY * (1 - Y*Y), from the forward output Y = tanh(X)."""
    _check_same_shape("tanh_grad", dY, Y, "Y")
    return dY * (1 - Y * Y)


def quick_gelu_grad(dY, X, alpha: float = 1.702):
    """dX = dY * s * (1 + v * (1 - s)) with v = alpha * X and s = sigmoid(v).

    The derivative of X * sigmoid(alpha * X): s + X * alpha * s * (1 - s). Any real alpha.
    """
    _check_same_shape("quick_gelu_grad", dY, X, "X")
    xp = backend.array_module(dY, X)
    v = X * _check_real(alpha, "alpha", "quick_gelu_grad")
    s = _sigmoid(xp, v)
    return dY * s * (1 + v * (1 - s))


def gelu_grad(dY, X, approximate: str = "none"):
    """dX = dY * d/dX [X * Phi(X)], Phi the standard normal CDF.

    approximate='none' (exact): dX = dY * (Phi(X) + X * phi(X)), phi(x) = exp(-x^2/2)/sqrt(2 pi).
    approximate='tanh': with u = sqrt(2/pi) * (X + 0.044715 X^3) and t = tanh(u), the forward is
    X/2 * (1 + t) and dX = dY * (1/2 (1 + t) + X/2 (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 X^2)).
    """
    _check_same_shape("gelu_grad", dY, X, "X")
    approximate = _check_approximate(approximate, "gelu_grad")
    xp = backend.array_module(dY, X)
    # Clamped where the density terms are exactly 0 anyway (see _GAUSSIAN_TAIL).
    x_tail = xp.clip(X, -_GAUSSIAN_TAIL, _GAUSSIAN_TAIL)
    if approximate == "none":
        pdf = xp.exp(-0.5 * x_tail * x_tail) * _INV_SQRT_2PI
        return dY * (_normal_cdf(xp, X) + X * pdf)
    x_sq = x_tail * x_tail
    t = xp.tanh(_SQRT_2_OVER_PI * x_tail * (1 + _GELU_TANH_CUBIC * x_sq))
    slope = 0.5 * x_tail * (1 - t * t) * _SQRT_2_OVER_PI * (1 + 3 * _GELU_TANH_CUBIC * x_sq)
    return dY * (0.5 * (1 + t) + slope)


def softmax_grad(dY, Y, axis: int | None = None, opset: int = 13):
    """dX = Y * (dY - sum_axis(Y * dY)), from the forward output Y = softmax(X).

    `axis` and `opset` as in `softmax`: axis=None is -1 for opset >= 13 (one axis) and 1 for
    opset < 13 (the tensor flattened to 2-D at axis, each row one softmax).
    """
    _check_same_shape("softmax_grad", dY, Y, "Y")
    _, axes = _softmax_axes(Y.ndim, axis, opset, "softmax_grad")
    return Y * (dY - (Y * dY).sum(axis=axes, keepdims=True))


def log_softmax_grad(dY, Y, axis: int | None = None, opset: int = 13):
    """dX = dY - exp(Y) * sum_axis(dY), from the forward output Y = log_softmax(X)
    (log-probabilities: exp(Y) is the softmax). `axis` and `opset` as in `softmax_grad`."""
    _check_same_shape("log_softmax_grad", dY, Y, "Y")
    _, axes = _softmax_axes(Y.ndim, axis, opset, "log_softmax_grad")
    xp = backend.array_module(dY, Y)
    return dY - xp.exp(Y) * dY.sum(axis=axes, keepdims=True)


# --- forward helpers ----------------------------------------------------------------------------


def _sigmoid(xp, x):
    """1 / (1 + exp(-x)) in the stable two-branch form: with e = exp(-|x|) <= 1 (never
    overflows), 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0. Exact 0 and 1 in the tails."""
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1, e) / (1 + e)


def _normal_cdf(xp, x):
    """Phi(x) = erfc(-x / sqrt(2)) / 2, in x's dtype. erfc rather than 1 + erf(x / sqrt(2)) keeps
    full relative accuracy in the left tail, where 1 + erf cancels."""
    if xp is np:
        return (0.5 * _erfc(-_SQRT1_2 * np.asarray(x, np.float64))).astype(x.dtype, copy=False)
    return 0.5 * importlib.import_module("cupyx.scipy.special").erfc(-_SQRT1_2 * x)


# erfc for numpy, which has none: W. J. Cody, "Rational Chebyshev approximations for the error
# function", Math. Comp. 23 (1969) 631-637, as in netlib's CALERF (SPECFUN), good to about 1e-16
# relative over the whole line, so float64 gradient checks and PyTorch comparisons hold.
# (Abramowitz-Stegun 7.1.26 is good only to 1.5e-7; np.vectorize(math.erfc) is exact but makes a
# Python call per element.) Each pair is p(t) / q(t), coefficients highest degree first.
_ERF_NEAR = (  # erf(x) = x * p(x^2) / q(x^2) for |x| <= 0.46875
    (1.85777706184603153e-1, 3.16112374387056560e00, 1.13864154151050156e02,
     3.77485237685302021e02, 3.20937758913846947e03),
    (1.0, 2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
     2.84423683343917062e03),
)  # fmt: skip
_ERFC_MID = (  # erfc(y) = exp(-y^2) * p(y) / q(y) for 0.46875 < y <= 4
    (2.15311535474403846e-8, 5.64188496988670089e-1, 8.88314979438837594e00,
     6.61191906371416295e01, 2.98635138197400131e02, 8.81952221241769090e02,
     1.71204761263407058e03, 2.05107837782607147e03, 1.23033935479799725e03),
    (1.0, 1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
     1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
     3.43936767414372164e03, 1.23033935480374942e03),
)  # fmt: skip
_ERFC_FAR = (  # erfc(y) = exp(-y^2) / y * (1/sqrt(pi) - z p(z) / q(z)), z = 1/y^2, for y > 4
    (1.63153871373020978e-2, 3.05326634961232344e-1, 3.60344899949804439e-1,
     1.25781726111229246e-1, 1.60837851487422766e-2, 6.58749161529837803e-4),
    (1.0, 2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1,
     6.05183413124413191e-2, 2.33520497626869185e-3),
)  # fmt: skip
_ONE_OVER_SQRT_PI = 5.6418958354775628695e-1
_ERFC_UNDERFLOW = 30.0  # erfc(30) < 1e-392: 0 in float64, as is everything beyond


def _erfc(x: np.ndarray) -> np.ndarray:
    """erfc(x) of a float64 array, by Cody's three rational approximations."""
    y = np.abs(x)
    out = np.empty_like(y)
    near = y <= 0.46875
    if near.any():  # erfc = 1 - erf, with the sign of x inside erf
        x_near = x[near]
        z = x_near * x_near
        out[near] = 1.0 - x_near * _rational(z, _ERF_NEAR)
    tail = ~near  # NaN lands here and stays NaN
    if tail.any():
        y_tail = np.minimum(y[tail], _ERFC_UNDERFLOW)
        ratio = np.empty_like(y_tail)
        mid = y_tail <= 4.0
        ratio[mid] = _rational(y_tail[mid], _ERFC_MID)
        y_far = y_tail[~mid]
        z = 1.0 / (y_far * y_far)
        ratio[~mid] = (_ONE_OVER_SQRT_PI - z * _rational(z, _ERFC_FAR)) / y_far
        ratio *= _exp_minus_square(y_tail)
        out[tail] = np.where(x[tail] < 0, 2.0 - ratio, ratio)  # erfc(-y) = 2 - erfc(y)
    return out


def _rational(t, coefficients):
    """p(t) / q(t) by Horner's rule, updating one array in place (numpy temporaries of large
    arrays cost more than the arithmetic)."""
    p, q = (_horner(t, c) for c in coefficients)
    p /= q
    return p


def _horner(t, coefficients):
    acc = np.full_like(t, coefficients[0])
    for c in coefficients[1:]:
        acc *= t
        acc += c
    return acc


def _exp_minus_square(y):
    """exp(-y^2) without exp amplifying the rounding error of y*y (Cody's split): y = s + r with
    s = y rounded down to a multiple of 1/16, so s*s is exact and y^2 = s^2 + (y - s)(y + s)."""
    s = np.floor(y * 16.0) / 16.0
    result = np.exp(-(s * s))
    result *= np.exp(-(y - s) * (y + s))
    return result


def _shifted(x, axes):
    """x minus its max over axes: every exponent is <= 0, so exp cannot overflow (logits of
    magnitude 1e4 are fine)."""
    return x - x.max(axis=axes, keepdims=True)


# --- numba kernels ------------------------------------------------------------------------------


@functools.cache
def _row_kernels(parallel: bool) -> SimpleNamespace:
    """The softmax family's numba kernels, defined on first use (numba is imported then, not
    with minitrain), in a parallel build (rows in parallel) and a serial one. Each takes
    C-contiguous (rows, cols) float32 or float64 matrices, one softmax per row, and sums in the
    data's dtype in vector lanes (fastmath "reassoc"; "contract" fuses multiply-adds; nan and
    inf keep their meaning). The exp is numba_math's vectorisable one: every argument it gets
    is <= 0 (x - max, or a log-probability). Log-probabilities come from
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


@functools.cache
def _numba_kernels(parallel: bool) -> SimpleNamespace:
    """The elementwise numba kernels, defined on first use, in a parallel and a serial build:
    relu and its gradient, and the exact gelu pair (math.erfc per element, several times faster
    than the numpy erfc above). Each takes flat arrays and writes the last one."""
    loop = numba_math.loop(parallel)

    @backend.jit(parallel=parallel, fastmath=False)
    def relu_flat(x, out):
        zero = out.dtype.type(0)
        for i in loop(x.shape[0]):
            v = x[i]
            out[i] = v if v > 0 or v != v else zero  # NaN stays NaN, as in np.maximum

    @backend.jit(parallel=parallel, fastmath=False)
    def relu_grad_flat(dy, x, dx):
        # a select, not dy * (x > 0): a NaN or inf dY where x <= 0 (or x is NaN) gives 0
        zero = dx.dtype.type(0)
        for i in loop(x.shape[0]):
            dx[i] = dy[i] if x[i] > 0 else zero

    @backend.jit(parallel=parallel, fastmath=False)
    def gelu_flat(x, out):
        for i in loop(x.shape[0]):
            out[i] = x[i] * (0.5 * math.erfc(-x[i] * _SQRT1_2))

    @backend.jit(parallel=parallel, fastmath=False)
    def gelu_grad_flat(dy, x, dx):
        for i in loop(x.shape[0]):
            v = x[i]
            cdf = 0.5 * math.erfc(-v * _SQRT1_2)
            pdf = math.exp(-0.5 * v * v) * _INV_SQRT_2PI
            dx[i] = dy[i] * (cdf + v * pdf)

    return SimpleNamespace(
        relu=relu_flat, relu_grad=relu_grad_flat, gelu=gelu_flat, gelu_grad=gelu_grad_flat
    )


def _numba_applies(arrays) -> bool:
    """Whether the numba kernels take these arrays: float32 or float64, all alike, not empty.
    Elsewhere (float16, mixed dtypes, empty or 0-d tensors) the generic kernel runs."""
    dtype = arrays[0].dtype
    return (
        dtype in (np.float32, np.float64)
        and all(a.dtype == dtype for a in arrays)
        and arrays[0].size > 0
    )


def _by_rows(kernel: str, axis: int, opset: int, *arrays):
    """Run numba row kernel `kernel` on arrays shaped like arrays[0], laid out as C-contiguous
    (rows, cols) matrices: the axis moved last (opset >= 13) or the tensor flattened at axis
    (opset < 13). The result comes back in the input's layout; None where numba does not apply."""
    first = arrays[0]
    if first.ndim == 0 or not _numba_applies(arrays):
        return None
    if opset >= 13:
        arrays = [np.moveaxis(a, axis, -1) for a in arrays]
        cols = first.shape[axis]
    else:
        cols = math.prod(first.shape[axis:])
    matrices = [np.ascontiguousarray(a).reshape(-1, cols) for a in arrays]
    # The kernel writes into `result` through a (rows, cols) view, so `result` owns its memory:
    # with the axis already last it is returned as is, and a gradient can become x.grad
    # without a copy.
    result = np.empty(arrays[0].shape, first.dtype)
    parallel = first.size >= _PARALLEL_ELEMENTS[kernel]
    getattr(_row_kernels(parallel), kernel)(*matrices, result.reshape(-1, cols))
    if opset >= 13 and axis % first.ndim != first.ndim - 1:
        return np.moveaxis(result, -1, axis)
    return result


def _by_elements(kernel: str, *arrays):
    """Run numba elementwise kernel `kernel` on same-shape arrays as flat runs of memory, in
    Fortran order where all of them are laid out so, else in C order (copying any array laid out
    otherwise); the result comes in that order. None where numba does not apply."""
    if not _numba_applies(arrays):
        return None
    fortran = all(a.flags.f_contiguous and not a.flags.c_contiguous for a in arrays)
    order = "F" if fortran else "C"
    out = np.empty(arrays[0].shape, arrays[0].dtype, order=order)
    parallel = out.size >= _PARALLEL_ELEMENTS[kernel]
    flat = [np.ravel(a, order) for a in arrays]  # views, but for arrays laid out otherwise
    getattr(_numba_kernels(parallel), kernel)(*flat, out.ravel(order))
    return out


# --- ops ----------------------------------------------------------------------------------------


class Relu(Op):
    """max(x, 0). On the CPU with numba enabled, numba kernels run both ways instead."""

    name = "relu"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.maximum(x, 0)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad where x > 0, else 0 (a select: NaN grad where x <= 0 gives 0)."""
        return relu_grad(grad, ctx.x)

    @staticmethod
    def numba_forward(ctx, x):
        out = _by_elements("relu", x)
        if out is None:
            return Relu.forward(ctx, x)
        ctx.save(x=x)
        return out

    @staticmethod
    def numba_backward(ctx, grad):
        dx = _by_elements("relu_grad", grad, ctx.x) if grad.shape == ctx.x.shape else None
        return relu_grad(grad, ctx.x) if dx is None else dx


class LeakyRelu(Op):
    """x for x > 0, alpha * x otherwise (alpha >= 0); saves the output."""

    name = "leaky_relu"
    inputs = ("x",)
    attrs = ("alpha",)
    saved = ("out",)

    @staticmethod
    def forward(ctx, x):
        out = ctx.xp.where(x > 0, x, x * ctx.alpha)
        ctx.save(out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad where out > 0, else alpha * grad (out > 0 exactly where x > 0)."""
        return leaky_relu_grad(grad, ctx.out, ctx.alpha)


class Sigmoid(Op):
    """1 / (1 + exp(-x)), stable for any x; saves the output."""

    name = "sigmoid"
    inputs = ("x",)
    saved = ("out",)

    @staticmethod
    def forward(ctx, x):
        out = _sigmoid(ctx.xp, x)
        ctx.save(out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * out * (1 - out)."""
        return sigmoid_grad(grad, ctx.out)


class Tanh(Op):
    """tanh(x); saves the output."""

    name = "tanh"
    inputs = ("x",)
    saved = ("out",)

    @staticmethod
    def forward(ctx, x):
        out = ctx.xp.tanh(x)
        ctx.save(out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * (1 - out * out)."""
        return tanh_grad(grad, ctx.out)


class QuickGelu(Op):
    """x * sigmoid(alpha * x): a sigmoid approximation of GELU at alpha = 1.702, SiLU at 1."""

    name = "quick_gelu"
    inputs = ("x",)
    attrs = ("alpha",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return x * _sigmoid(ctx.xp, x * ctx.alpha)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * s * (1 + v * (1 - s)), v = alpha * x, s = sigmoid(v)."""
        return quick_gelu_grad(grad, ctx.x, ctx.alpha)


class Gelu(Op):
    """x * Phi(x), Phi the standard normal CDF (exact, through erfc), or its tanh approximation
    x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))). On the CPU with numba enabled, the exact
    form runs a numba kernel instead."""

    name = "gelu"
    inputs = ("x",)
    attrs = ("approximate",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        xp = ctx.xp
        if ctx.approximate == "none":
            return x * _normal_cdf(xp, x)
        x_tail = xp.clip(x, -_GAUSSIAN_TAIL, _GAUSSIAN_TAIL)  # tanh is +-1 beyond anyway
        inner = _SQRT_2_OVER_PI * x_tail * (1 + _GELU_TANH_CUBIC * x_tail * x_tail)
        return 0.5 * x * (1 + xp.tanh(inner))

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * (Phi(x) + x * phi(x)); the tanh form's derivative: see gelu_grad."""
        return gelu_grad(grad, ctx.x, ctx.approximate)

    @staticmethod
    def numba_forward(ctx, x):
        out = _by_elements("gelu", x) if ctx.approximate == "none" else None
        if out is None:
            return Gelu.forward(ctx, x)
        ctx.save(x=x)
        return out

    @staticmethod
    def numba_backward(ctx, grad):
        dx = _by_elements("gelu_grad", grad, ctx.x) if ctx.approximate == "none" else None
        return gelu_grad(grad, ctx.x, ctx.approximate) if dx is None else dx


class _RowSoftmax(Op, register=False):
    """softmax / log_softmax: one row kernel each way on the CPU with numba, the generic xp
    forward and the KERNELS.md gradient kernel otherwise (and for inputs the rows skip)."""

    inputs = ("x",)
    attrs = ("axis", "opset")
    saved = ("out",)
    rows = ""  # name of the row kernels: `rows` forward, `rows + '_grad'` backward

    @classmethod
    def numba_forward(cls, ctx, x):
        out = _by_rows(cls.rows, ctx.axis, ctx.opset, x)
        if out is None:
            return cls.forward(ctx, x)
        ctx.save(out=out)
        return out

    @classmethod
    def numba_backward(cls, ctx, grad):
        dx = _by_rows(cls.rows + "_grad", ctx.axis, ctx.opset, grad, ctx.out)
        return cls.backward(ctx, grad) if dx is None else dx


class Softmax(_RowSoftmax):
    """exp(x - max) / sum(exp(x - max)) over the softmax axes (see `softmax`); saves the
    output. On the CPU with numba enabled, a row kernel runs instead."""

    name = "softmax"
    rows = "softmax"

    @staticmethod
    def forward(ctx, x):
        _, axes = _softmax_axes(x.ndim, ctx.axis, ctx.opset, "softmax")
        out = ctx.xp.exp(_shifted(x, axes)) if x.size else x.copy()
        out /= out.sum(axis=axes, keepdims=True)
        ctx.save(out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = out * (grad - sum_axis(out * grad))."""
        return softmax_grad(grad, ctx.out, ctx.axis, ctx.opset)


class LogSoftmax(_RowSoftmax):
    """(x - max) - log(sum(exp(x - max))) over the softmax axes (see `softmax`); saves the
    output. On the CPU with numba enabled, a row kernel runs instead."""

    name = "log_softmax"
    rows = "log_softmax"

    @staticmethod
    def forward(ctx, x):
        _, axes = _softmax_axes(x.ndim, ctx.axis, ctx.opset, "log_softmax")
        if x.size:
            shifted = _shifted(x, axes)
            out = shifted - ctx.xp.log(ctx.xp.exp(shifted).sum(axis=axes, keepdims=True))
        else:
            out = x.copy()
        ctx.save(out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad - exp(out) * sum_axis(grad)."""
        return log_softmax_grad(grad, ctx.out, ctx.axis, ctx.opset)


# --- PyTorch's other activations ----------------------------------------------------------------
# Each saves its input x. Their backward formulas, at the kinks too, are PyTorch's (see each op).

# SELU's constants (Klambauer et al. 2017), as PyTorch spells them.
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _stable_softplus(xp, v):
    """log(1 + exp(v)) as max(v, 0) + log1p(exp(-|v|)): exp never overflows, log1p keeps the
    small values exact."""
    return xp.maximum(v, 0) + xp.log1p(xp.exp(-xp.abs(v)))


class Hardtanh(Op):
    """x clipped to [min_val, max_val]; relu6 is hardtanh(x, 0, 6)."""

    name = "hardtanh"
    inputs = ("x",)
    attrs = ("min_val", "max_val")
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.clip(x, ctx.min_val, ctx.max_val)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad where min_val < x < max_val, else 0 (0 at both kinks, as PyTorch)."""
        x = ctx.x
        return ctx.xp.where((x > ctx.min_val) & (x < ctx.max_val), grad, 0)


class Elu(Op):
    """scale * (x for x > 0, alpha * (exp(x * input_scale) - 1) otherwise): PyTorch's one elu
    kernel, which is ELU (scale = input_scale = 1), SELU (its two constants) and CELU
    (input_scale = 1 / alpha). expm1 keeps small negative x exact; exp sees only x <= 0 (with
    input_scale > 0), so it cannot overflow."""

    name = "elu"
    inputs = ("x",)
    attrs = ("alpha", "scale", "input_scale")
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        xp = ctx.xp
        negative = ctx.alpha * xp.expm1(xp.minimum(x, 0) * ctx.input_scale)
        return ctx.scale * xp.where(x > 0, x, negative)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * scale * (1 for x > 0, else alpha * c * exp(c * x)), c = input_scale.

        At x = 0 the second form, as PyTorch: alpha for elu, scale * alpha for selu, 1 for celu."""
        xp, x = ctx.xp, ctx.x
        slope = ctx.alpha * ctx.input_scale * xp.exp(xp.minimum(x, 0) * ctx.input_scale)
        return grad * (ctx.scale * xp.where(x > 0, 1, slope))


class Softplus(Op):
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold (PyTorch's switch
    to the identity); computed as softplus(v) = max(v, 0) + log1p(exp(-|v|)), which no x
    overflows."""

    name = "softplus"
    inputs = ("x",)
    attrs = ("beta", "threshold")
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        scaled = x * ctx.beta
        return ctx.xp.where(scaled > ctx.threshold, x, _stable_softplus(ctx.xp, scaled) / ctx.beta)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * sigmoid(beta * x), and grad where beta * x > threshold."""
        scaled = ctx.x * ctx.beta
        return ctx.xp.where(scaled > ctx.threshold, grad, grad * _sigmoid(ctx.xp, scaled))


class Mish(Op):
    """x * tanh(softplus(x)), softplus in its stable form: no x overflows."""

    name = "mish"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return x * ctx.xp.tanh(_stable_softplus(ctx.xp, x))

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * (t + x * sigmoid(x) * (1 - t^2)), t = tanh(softplus(x)).

        softplus'(x) = sigmoid(x) and tanh' = 1 - tanh^2."""
        xp, x = ctx.xp, ctx.x
        t = xp.tanh(_stable_softplus(xp, x))
        return grad * (t + x * _sigmoid(xp, x) * (1 - t * t))


class Hardswish(Op):
    """x * relu6(x + 3) / 6 (MobileNetV3's hard swish)."""

    name = "hardswish"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return x * (ctx.xp.clip(x + 3, 0, 6) / 6)  # divided first: float16's max stays finite

    @staticmethod
    def backward(ctx, grad):
        """dx = 0 for x <= -3, grad * (x / 3 + 1/2) for -3 < x < 3, grad for x >= 3.

        PyTorch's choice at the kinks: 0 at x = -3, 1 at x = 3 (and at a NaN x)."""
        xp, x = ctx.xp, ctx.x
        slope = xp.where(x < 3, x / 3 + 0.5, 1)
        return xp.where(x <= -3, 0, grad * slope)


class Hardsigmoid(Op):
    """relu6(x + 3) / 6: 0 below -3, 1 above 3, linear between."""

    name = "hardsigmoid"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.clip(x + 3, 0, 6) / 6

    @staticmethod
    def backward(ctx, grad):
        """dx = grad / 6 where -3 < x < 3, else 0 (0 at both kinks, as PyTorch).

        PyTorch's float64 kernel multiplies by 1/6 rounded to float32 (0.16666667163...); this
        one divides by 6 exactly."""
        x = ctx.x
        return ctx.xp.where((x > -3) & (x < 3), grad / 6, 0)


class Logsigmoid(Op):
    """log(sigmoid(x)) = -softplus(-x), in softplus's stable form: finite for every finite x
    (no log of an underflowed 0), exact in both tails."""

    name = "logsigmoid"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return -_stable_softplus(ctx.xp, -x)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * sigmoid(-x) (= grad * (1 - sigmoid(x)), computed without cancellation)."""
        return grad * _sigmoid(ctx.xp, -ctx.x)


class Softsign(Op):
    """x / (1 + |x|), as PyTorch computes it."""

    name = "softsign"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return x / (ctx.xp.abs(x) + 1)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad / (1 + |x|)^2.

        PyTorch composes softsign (abs, add, div), whose gradient 1/b - |x|/b^2 (b = 1 + |x|)
        cancels for large |x|; this form keeps full relative accuracy (1e-60 at |x| = 1e30).
        Divided twice: the square of 1 + |x| would overflow float32 from |x| = 2e19."""
        denominator = ctx.xp.abs(ctx.x) + 1
        return grad / denominator / denominator


class Prelu(Op):
    """x for x > 0, weight * x otherwise, weight one slope for every element or one per
    channel (axis 1)."""

    name = "prelu"
    inputs = ("x", "weight")
    saved = ("x", "weight")
    same_dtype = True

    @staticmethod
    def forward(ctx, x, weight):
        ctx.save(x=x, weight=weight)
        return ctx.xp.where(x > 0, x, _channel_weight(weight, x.ndim) * x)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad where x > 0, else weight * grad; dweight = sum of grad * x where x <= 0.

        The weight's gradient is summed over every axis but the channel axis 1 (over all of
        them for a single weight). At x = 0, dx = weight * grad, as PyTorch."""
        xp, x, weight = ctx.xp, ctx.x, ctx.weight
        positive = x > 0
        dx = dweight = None
        if ctx.needs_grad[0]:
            dx = xp.where(positive, grad, _channel_weight(weight, x.ndim) * grad)
        if ctx.needs_grad[1]:
            contributions = xp.where(positive, 0, grad * x)
            if weight.size == 1:
                dweight = contributions.sum().reshape(weight.shape)
            else:
                axes = tuple(a for a in range(x.ndim) if a != 1)
                dweight = contributions.sum(axis=axes).reshape(weight.shape)
        return dx, dweight


def _channel_weight(weight, ndim: int):
    """PReLU's weight shaped to broadcast along axis 1 of an ndim input: one weight as a 0-d
    array, C weights as (1, C, 1, ..., 1)."""
    if weight.size == 1:
        return weight.reshape(())
    return weight.reshape((1, -1) + (1,) * (ndim - 2))


# --- functional forms ---------------------------------------------------------------------------


def relu(x) -> Tensor:
    """max(x, 0); the gradient at 0 is 0. Integer x stays integer; bool x is refused, as in
    PyTorch."""
    elementwise.require_kind("relu", x, "iuf", elementwise.NOT_BOOL, "int")
    return Relu.apply(x)


def leaky_relu(x, alpha: float = 0.01) -> Tensor:
    """x for x > 0, alpha * x otherwise. alpha is PyTorch's `negative_slope` and must be >= 0;
    the gradient at 0 is alpha."""
    alpha = _check_leaky_alpha(alpha, "leaky_relu")
    return LeakyRelu.apply(_floating(x, "leaky_relu"), alpha=alpha)


def sigmoid(x) -> Tensor:
    """1 / (1 + exp(-x)), finite and exactly 0 or 1 in the far tails, with no overflow. Integer
    and bool input is computed in float32, as PyTorch does."""
    return Sigmoid.apply(_floating(x, "sigmoid", ints_as_float32=True))


def tanh(x) -> Tensor:
    """tanh(x); the backward reads only the output: 1 - tanh(x)^2. Integer and bool input is
    computed in float32, as PyTorch does."""
    return Tanh.apply(_floating(x, "tanh", ints_as_float32=True))


def quick_gelu(x, alpha: float = 1.702) -> Tensor:
    """x * sigmoid(alpha * x). alpha = 1.702 approximates GELU; alpha = 1 is SiLU (Swish);
    any real alpha, negative included."""
    alpha = _check_real(alpha, "alpha", "quick_gelu")
    return QuickGelu.apply(_floating(x, "quick_gelu"), alpha=alpha)


def silu(x) -> Tensor:
    """x * sigmoid(x) (SiLU, Swish): quick_gelu with alpha = 1."""
    return QuickGelu.apply(_floating(x, "silu"), alpha=1.0)


def gelu(x, approximate: str = "none") -> Tensor:
    """x * Phi(x) with Phi the standard normal CDF ('none', exact), or the tanh approximation
    x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) ('tanh'), as torch.nn.functional.gelu."""
    approximate = _check_approximate(approximate, "gelu")
    return Gelu.apply(_floating(x, "gelu"), approximate=approximate)


def _softmax_op(op, x, axis, opset):
    x = _floating(x, op.name)
    axis, _ = _softmax_axes(x.ndim, axis, opset, op.name)
    return op.apply(x, axis=axis, opset=int(opset))


def softmax(x, axis: int | None = None, opset: int = 13) -> Tensor:
    """exp(x) / sum(exp(x)) along `axis`, computed with the max subtracted (stable for logits of
    any magnitude). Floating-point x.

    opset >= 13 (the default, and PyTorch's `dim`): one axis, None meaning -1. opset < 13 (ONNX
    Softmax-1/11): x is flattened to 2-D at `axis`, None meaning 1, so each softmax spans
    every dim from axis on (rows = prod(shape[:axis]), cols = prod(shape[axis:])).
    """
    return _softmax_op(Softmax, x, axis, opset)


def log_softmax(x, axis: int | None = None, opset: int = 13) -> Tensor:
    """log(softmax(x)) = (x - max) - log(sum(exp(x - max))) along `axis`: stable, and finite
    where softmax underflows to 0. `axis` and `opset` as in `softmax`."""
    return _softmax_op(LogSoftmax, x, axis, opset)


def _check_limit(value, name: str, where: str) -> float:
    """A real number, infinities allowed (hardtanh's limits, softplus's threshold); NaN is not."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise DTypeError(f"{where}: {name} must be a number, got {type(value).__name__}")
    if math.isnan(value):
        raise ArgumentError(f"{where}: {name} must not be nan")
    return float(value)


def _real(x, where: str) -> Tensor:
    """x as a floating Tensor for the composed activations PyTorch computes for integers in
    float32 (softsign, tanhshrink); bool refused, as PyTorch does."""
    x = x if isinstance(x, Tensor) else Tensor(x)
    if x.dtype.kind == "b":
        raise DTypeError(f"{where}: needs a floating-point or integer input, got {x.dtype}")
    return _floating(x, where, ints_as_float32=True)


_INT64 = np.iinfo(np.int64)


def _hardtanh_limits(min_val, max_val, dtype, where: str):
    """hardtanh's limits for an input of `dtype`, checked as PyTorch checks them, in its order.
    Integer dtype: finite and truncated toward 0 (integers taken exactly, past float precision)
    within int64's range, not negative for an unsigned dtype, and within the dtype's range.
    Floating dtype: infinite, or no larger than the dtype's largest value."""
    floating = dtype.kind == "f"
    info = np.finfo(dtype) if floating else np.iinfo(dtype)

    def overflow(name, value):
        return ArgumentError(
            f"{where}: {name}={value} does not fit the input's dtype {dtype} without overflow "
            f"({info.min} to {info.max})"
        )

    limits = {"min_val": min_val, "max_val": max_val}
    for name, value in limits.items():
        if floating:
            if math.isfinite(value) and math.fabs(value) > float(info.max):
                raise overflow(name, value)
            limits[name] = float(value)
        elif not math.isfinite(value):
            raise overflow(name, value)
        else:
            limits[name] = int(value) if isinstance(value, (int, np.integer)) else math.trunc(value)
            if not _INT64.min <= limits[name] <= _INT64.max:  # PyTorch's first conversion
                raise overflow(name, value)
    if floating:
        return limits["min_val"], limits["max_val"]
    if dtype.kind == "u" and min(limits.values()) < 0:
        raise ArgumentError(
            f"{where}: an unsigned input ({dtype}) takes no negative limit, got "
            f"min_val={min_val}, max_val={max_val}"
        )
    for name, whole in limits.items():
        if not info.min <= whole <= info.max:
            raise overflow(name, whole)
    return limits["min_val"], limits["max_val"]


def hardtanh(x, min_val: float = -1.0, max_val: float = 1.0, *, where: str = "hardtanh") -> Tensor:
    """x clipped to [min_val, max_val] (min_val <= max_val); the gradient is 1 strictly between
    the limits and 0 outside and at them. Integer input stays integer, the limits truncated
    toward 0, as in PyTorch; a limit the input's dtype cannot hold is refused (an unsigned input
    takes no negative limit); bool is refused. `where` names the caller in errors."""
    for name, value in (("min_val", min_val), ("max_val", max_val)):
        _check_limit(value, name, where)
    if min_val > max_val:
        raise ArgumentError(
            f"{where}: min_val must be <= max_val, got min_val={min_val}, max_val={max_val}"
        )
    x = x if isinstance(x, Tensor) else Tensor(x)
    if x.dtype.kind not in "iuf":
        raise DTypeError(f"{where}: needs a floating-point or integer input, got {x.dtype}")
    min_val, max_val = _hardtanh_limits(min_val, max_val, x.dtype, where)
    return Hardtanh.apply(x, min_val=min_val, max_val=max_val)


def relu6(x) -> Tensor:
    """min(max(x, 0), 6): hardtanh(x, 0, 6), with its gradient (0 at 0 and at 6)."""
    return hardtanh(x, 0.0, 6.0, where="relu6")


def elu(x, alpha: float = 1.0) -> Tensor:
    """x for x > 0, alpha * (exp(x) - 1) otherwise; any real alpha. The gradient at 0 is alpha,
    as in PyTorch."""
    alpha = _check_real(alpha, "alpha", "elu")
    return Elu.apply(_floating(x, "elu"), alpha=alpha, scale=1.0, input_scale=1.0)


def selu(x) -> Tensor:
    """scale * elu(x, alpha) with SELU's constants alpha = 1.6732632..., scale = 1.0507009...
    (one elu op); the gradient at 0 is scale * alpha."""
    return Elu.apply(_floating(x, "selu"), alpha=_SELU_ALPHA, scale=_SELU_SCALE, input_scale=1.0)


def celu(x, alpha: float = 1.0) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) (one elu op, input_scale = 1 / alpha);
    alpha must be nonzero. The gradient at 0 is 1."""
    alpha = _check_real(alpha, "alpha", "celu")
    if alpha == 0:
        raise ArgumentError("celu: alpha must be nonzero (it divides x), got 0.0")
    return Elu.apply(_floating(x, "celu"), alpha=alpha, scale=1.0, input_scale=1.0 / alpha)


def softplus(x, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, reverting to x where beta * x > threshold, as PyTorch's;
    stable for any x. beta must be nonzero (PyTorch returns inf for 0); any sign otherwise."""
    beta = _check_real(beta, "beta", "softplus")
    if beta == 0:
        raise ArgumentError("softplus: beta must be nonzero (it divides), got 0.0")
    threshold = _check_limit(threshold, "threshold", "softplus")
    return Softplus.apply(_floating(x, "softplus"), beta=beta, threshold=threshold)


def mish(x) -> Tensor:
    """x * tanh(softplus(x)), stable for any x."""
    return Mish.apply(_floating(x, "mish"))


def hardswish(x) -> Tensor:
    """x * relu6(x + 3) / 6; the gradient is 0 at -3 and 1 at 3, as in PyTorch."""
    return Hardswish.apply(_floating(x, "hardswish"))


def hardsigmoid(x) -> Tensor:
    """relu6(x + 3) / 6; the gradient is 1/6 strictly between -3 and 3, 0 elsewhere."""
    return Hardsigmoid.apply(_floating(x, "hardsigmoid"))


def logsigmoid(x) -> Tensor:
    """log(sigmoid(x)) = -softplus(-x), finite and exact in both tails."""
    return Logsigmoid.apply(_floating(x, "logsigmoid"))


def softsign(x) -> Tensor:
    """x / (1 + |x|), with the exact gradient 1 / (1 + |x|)^2 at every magnitude. Integer input
    is computed in float32, as PyTorch does."""
    return Softsign.apply(_real(x, "softsign"))


def tanhshrink(x) -> Tensor:
    """x - tanh(x), composed as PyTorch composes it (its gradient tanh(x)^2 comes out as
    1 - (1 - tanh^2), as PyTorch's). Integer input is computed in float32, as PyTorch does."""
    x = _real(x, "tanhshrink")
    return elementwise.sub(x, tanh(x))


def prelu(x, weight) -> Tensor:
    """x for x > 0, weight * x otherwise, as PyTorch's F.prelu. weight: 0-d or 1-D, holding one
    slope or one per channel (axis 1 of x; an x of fewer than 2 dims has 1 channel), of x's
    floating dtype. The gradient at x = 0 is weight."""
    where = "prelu"
    x = _floating(x, where)
    weight_shape = shape_of(weight)
    if len(weight_shape) > 1:
        raise ShapeError(f"{where}: weight must be 0-d or 1-D, got shape {weight_shape}")
    count = math.prod(weight_shape)
    channels = x.shape[1] if x.ndim >= 2 else 1
    if count not in (1, channels):
        raise ShapeError(
            f"{where}: weight {weight_shape} holds {count} slopes, but input {x.shape} has "
            f"{channels} channels (axis 1): give 1 slope or {channels}"
        )
    return Prelu.apply(x, weight)


def glu(x, axis: int = -1) -> Tensor:
    """a * sigmoid(b), a and b the two halves of x along `axis` (of even size), as PyTorch's
    F.glu: composed (split, sigmoid, mul), whose gradients are exactly PyTorch's."""
    where = "glu"
    x = _floating(x, where)
    if x.ndim == 0:
        raise ShapeError(f"{where}: cannot halve a 0-d tensor")
    dim = normalize_one_axis(axis, x.ndim, where)
    size = x.shape[dim]
    if size % 2:
        raise ShapeError(
            f"{where}: dim {axis} of input {x.shape} has odd size {size}; it must halve evenly"
        )
    first, second = split(x, size // 2, dim)
    return elementwise.mul(first, sigmoid(second))
