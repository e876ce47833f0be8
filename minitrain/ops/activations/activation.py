"""Activations with public gradient kernels: relu, leaky_relu, sigmoid, tanh, quick_gelu, gelu.

Op by op: its gradient kernel (docs/kernels.md section 1), its Op class, its numba kernels where
it has them, its function (silu beside quick_gelu). First `floating_input`, the input check the
whole activation family shares.

Each backward calls its public kernel (`relu_grad`, `tanh_grad`, ...): a plain array function,
numpy or CuPy in and out, callable on its own. Sigmoid, tanh and leaky relu save their forward
*output*: their gradients need only that, so the input can be freed. Relu and gelu (both forms)
also have numba kernels, which run instead on the CPU when numba is enabled (serial builds for
small inputs, parallel loops for large ones: see _PARALLEL_ELEMENTS). Each kernel is written
with `backend.array_module` of its arguments, so the backward that calls it serves create_graph
too: handed Tensors, it records itself (the sigmoids in it as the sigmoid op, exact gelu's Phi as
the erfc op), and every derivative has a form in ops again. softmax and log_softmax live in
ops/softmax_family.py, PyTorch's other activations in ops/pytorch_activations.py, and
the special functions they compute with (erfc, the normal CDF, the stable sigmoid) in
ops/special.py.
"""

from __future__ import annotations

import functools
import importlib
import math
from types import SimpleNamespace

import numpy as np

from ... import backend
from ...errors import ArgumentError, DTypeError
from ...tensor import Tensor
from ..core import numba_math
from ..core.checks import NOT_BOOL, check_real, check_same_shape, require_kind
from ..core.op import Op, as_tensor
from ..core.variants import variants
from .special import ERFC_SCALED, GAUSSIAN_TAIL, SQRT1_2, normal_cdf, stable_sigmoid

__all__ = [
    "gelu",
    "gelu_grad",
    "leaky_relu",
    "leaky_relu_grad",
    "quick_gelu",
    "quick_gelu_grad",
    "relu",
    "relu_grad",
    "sigmoid",
    "sigmoid_grad",
    "silu",
    "tanh",
    "tanh_grad",
]

# Elements from which each numba kernel below runs its parallel build (see numba_math.loop).
_PARALLEL_ELEMENTS = {
    # memory-bound, and run between GEMMs whose BLAS threads hold the cores: serial but for huge x
    "relu": 1 << 24,
    "relu_grad": 1 << 24,
    # vectorised (about 0.6 ns an element serially) and run between the GEMMs of an MLP: on 2
    # cores a parallel build there costs more than it saves. With libgomp's default spin it
    # made a GELU MLP block (16x64x128 -> 512 -> 128, fwd+bwd) 2.7-3.2x slower, as OpenMP's and
    # OpenBLAS's idle threads spun on each other's cores; with runtime/numba_pool.py's short
    # spin 1.02-1.08x: no fight, but no gain while OpenBLAS's threads spin after each GEMM.
    # Re-measured with the short spin (parallel / serial, medians of alternating rounds, on the
    # 2 cores shared with other jobs): the MLP block 1.00x, a transformer's MLP (2048x256 ->
    # 1024 -> 256) 1.02x; alone, exact fwd+bwd 3.06x at 2^15 elements, 1.60x at 2^17, 1.18x at
    # 2^19, 1.03x at 2^22 (tanh form 3.4x, 1.8x, 1.15x, 1.21x). It paid alone only on a quiet
    # machine (0.57x at 2^19). So serial but for huge x, as relu
    "gelu": 1 << 24,
    "gelu_grad": 1 << 24,
    "gelu_tanh": 1 << 24,
    "gelu_tanh_grad": 1 << 24,
}


def floating_input(caller: str, x, ints_as_float32: bool = False) -> Tensor:
    """x as a Tensor, refused unless floating point. Every activation but relu has fractional
    values, which an integer or bool input would get truncated (gelu), wrapped (sigmoid of
    unsigned ints) or rounded to float16 (tanh of bools) by numpy's rules; PyTorch raises for
    most of them, and computes sigmoid and tanh of them in float32 (`ints_as_float32`; such an
    x never needs a gradient). Errors name `caller`."""
    x = as_tensor(x)
    if ints_as_float32 and x.dtype.kind in "biu":
        return Tensor(x.array.astype(np.float32))
    if x.dtype.kind != "f":
        raise DTypeError(f"{caller}: needs a floating-point input, got {x.dtype}")
    return x


def _run_elementwise_kernel(kernels, name: str, *arrays):
    """Run numba kernel `name` of the builds `kernels(parallel)` on same-shape arrays as flat
    runs of memory, in Fortran order where all of them are laid out so, else in C order (copying
    any array laid out otherwise); the result comes in that order."""
    fortran = all(a.flags.f_contiguous and not a.flags.c_contiguous for a in arrays)
    order = "F" if fortran else "C"
    out = np.empty(arrays[0].shape, arrays[0].dtype, order=order)
    parallel = out.size >= _PARALLEL_ELEMENTS[name]
    flat = [np.ravel(a, order) for a in arrays]  # views, but for arrays laid out otherwise
    getattr(kernels(parallel), name)(*flat, out.ravel(order))
    return out


def relu_grad(dY, X):
    """dX = dY where X > 0, else 0 (0 at X == 0). dY and X have the same shape."""
    check_same_shape("relu_grad", dY, X, "X")
    return backend.array_module(dY, X).where(X > 0, dY, 0)


class Relu(Op):
    """max(x, 0). On the CPU with numba enabled, numba kernels run both ways instead."""

    name = "relu"
    numba_bench = "train step mlp"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return ctx.xp.maximum(x, 0)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad where x > 0, else 0 (a select: NaN grad where x <= 0 gives 0). The mask
        is a constant, the select linear in grad: the second derivative in x is 0."""
        return relu_grad(grad, ctx.x)

    @staticmethod
    def numba_forward(ctx, x):
        out = _run_elementwise_kernel(_relu_kernels, "relu", x)
        ctx.save(x=x)
        return out

    @staticmethod
    def numba_backward(ctx, grad):
        return _run_elementwise_kernel(_relu_kernels, "relu_grad", grad, ctx.x)


@functools.cache
def _relu_kernels(parallel: bool) -> SimpleNamespace:
    """relu's numba kernels, defined on first use (numba is imported then, not with minitrain),
    in a parallel and a serial build. Each takes flat arrays and writes the last one."""
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

    return SimpleNamespace(relu=relu_flat, relu_grad=relu_grad_flat)


@variants("function", "method", "inplace", "functional", module="ReLU", inplace_flag="shown")
def relu(input) -> Tensor:
    """max(`input`, 0); the gradient at 0 is 0. Integer `input` stays integer; bool `input` is
    refused, as in PyTorch."""
    require_kind("relu", input, "iuf", NOT_BOOL, "int")
    return Relu.apply(input)


def _check_leaky_alpha(caller: str, alpha, name: str = "alpha") -> float:
    alpha = check_real(caller, name, alpha)
    if alpha < 0:
        # The backward tells the two sides apart by the sign of the output Y = alpha * X, which a
        # negative slope would flip.
        raise ArgumentError(f"{caller}: {name} (the negative slope) must be >= 0, got {alpha}")
    return alpha


def leaky_relu_grad(dY, Y, alpha: float = 0.01):
    """dX = dY where Y > 0, else alpha * dY (alpha at Y == 0), from the forward *output* Y.

    Y = X for X > 0 and alpha * X otherwise, so for alpha >= 0 (checked) Y > 0 exactly where
    X > 0 and the input need not be kept.
    """
    check_same_shape("leaky_relu_grad", dY, Y, "Y")
    alpha = _check_leaky_alpha("leaky_relu_grad", alpha)
    return backend.array_module(dY, Y).where(Y > 0, dY, dY * alpha)


class LeakyRelu(Op):
    """x for x > 0, negative_slope * x otherwise (negative_slope >= 0); saves the output."""

    name = "leaky_relu"
    inputs = ("x",)
    attrs = ("negative_slope",)
    saved = ("out",)

    @staticmethod
    def forward(ctx, x):
        out = ctx.xp.where(x > 0, x, x * ctx.negative_slope)
        ctx.save(out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad where out > 0, else negative_slope * grad (out > 0 exactly where x > 0).
        out only picks the side, a constant mask: the second derivative in x is 0."""
        return leaky_relu_grad(grad, ctx.out, ctx.negative_slope)


@variants("functional", module="LeakyReLU", inplace_flag="shown")
def leaky_relu(input, negative_slope: float = 0.01) -> Tensor:
    """`input` for `input` > 0, negative_slope * `input` otherwise; negative_slope must be >= 0
    (PyTorch takes any). The gradient at 0 is negative_slope."""
    slope = _check_leaky_alpha("leaky_relu", negative_slope, "negative_slope")
    return LeakyRelu.apply(floating_input("leaky_relu", input), negative_slope=slope)


def sigmoid_grad(dY, Y):
    """dX = dY * Y * (1 - Y), from the forward output Y = sigmoid(X)."""
    check_same_shape("sigmoid_grad", dY, Y, "Y")
    return dY * Y * (1 - Y)


class Sigmoid(Op):
    """1 / (1 + exp(-x)), stable for any x; saves the output."""

    name = "sigmoid"
    inputs = ("x",)
    saved = ("out",)

    @staticmethod
    def forward(ctx, x):
        out = stable_sigmoid(ctx.xp, x)
        ctx.save(out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * out * (1 - out); out in the graph under create_graph, so sigmoid'' =
        s (1 - s) (1 - 2 s)."""
        return sigmoid_grad(grad, ctx.out)


@variants("function", "method", "inplace", "functional", module="Sigmoid")
def sigmoid(input) -> Tensor:
    """1 / (1 + exp(-`input`)), finite and exactly 0 or 1 in the far tails, with no overflow.
    Integer and bool input is computed in float32, as PyTorch does."""
    return Sigmoid.apply(floating_input("sigmoid", input, ints_as_float32=True))


def tanh_grad(dY, Y):
    """dX = dY * (1 - Y*Y), from the forward output Y = tanh(X)."""
    check_same_shape("tanh_grad", dY, Y, "Y")
    return dY * (1 - Y * Y)


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
        """dx = grad * (1 - out * out); out in the graph under create_graph, so tanh'' =
        -2 t (1 - t^2)."""
        return tanh_grad(grad, ctx.out)


@variants("function", "method", "inplace", "functional", module="Tanh")
def tanh(input) -> Tensor:
    """tanh(`input`); the backward reads only the output: 1 - tanh(`input`)^2. Integer and bool
    input is computed in float32, as PyTorch does."""
    return Tanh.apply(floating_input("tanh", input, ints_as_float32=True))


def quick_gelu_grad(dY, X, alpha: float = 1.702):
    """dX = dY * s * (1 + v * (1 - s)) with v = alpha * X and s = sigmoid(v).

    The derivative of X * sigmoid(alpha * X): s + X * alpha * s * (1 - s). Any real alpha.
    """
    check_same_shape("quick_gelu_grad", dY, X, "X")
    xp = backend.array_module(dY, X)
    v = X * check_real("quick_gelu_grad", "alpha", alpha)
    s = stable_sigmoid(xp, v)
    return dY * s * (1 + v * (1 - s))


class QuickGelu(Op):
    """x * sigmoid(alpha * x): a sigmoid approximation of GELU at alpha = 1.702, SiLU at 1."""

    name = "quick_gelu"
    inputs = ("x",)
    attrs = ("alpha",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return x * stable_sigmoid(ctx.xp, x * ctx.alpha)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * s * (1 + v * (1 - s)), v = alpha * x, s = sigmoid(v)."""
        return quick_gelu_grad(grad, ctx.x, ctx.alpha)


@variants("functional", module="QuickGELU")
def quick_gelu(input, alpha: float = 1.702) -> Tensor:
    """`input` * sigmoid(alpha * `input`). alpha = 1.702 approximates GELU; alpha = 1 is SiLU
    (Swish); any real alpha, negative included. Not in PyTorch."""
    alpha = check_real("quick_gelu", "alpha", alpha)
    return QuickGelu.apply(floating_input("quick_gelu", input), alpha=alpha)


@variants("functional", module="SiLU", inplace_flag="shown")
def silu(input) -> Tensor:
    """`input` * sigmoid(`input`) (SiLU, Swish): quick_gelu with alpha = 1."""
    return QuickGelu.apply(floating_input("silu", input), alpha=1.0)


_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_TANH_CUBIC = 0.044715


def _check_approximate(caller: str, approximate) -> str:
    if approximate not in ("none", "tanh"):
        raise ArgumentError(f"{caller}: approximate must be 'none' or 'tanh', got {approximate!r}")
    return approximate


def gelu_grad(dY, X, approximate: str = "none"):
    """dX = dY * d/dX [X * Phi(X)], Phi the standard normal CDF.

    approximate='none' (exact): dX = dY * (Phi(X) + X * phi(X)), phi(x) = exp(-x^2/2)/sqrt(2 pi).
    approximate='tanh': with u = sqrt(2/pi) * (X + 0.044715 X^3) and t = tanh(u), the forward is
    X/2 * (1 + t) and dX = dY * (1/2 (1 + t) + X/2 (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 X^2)).
    """
    check_same_shape("gelu_grad", dY, X, "X")
    approximate = _check_approximate("gelu_grad", approximate)
    xp = backend.array_module(dY, X)
    # Clamped where the density terms are exactly 0 anyway (see GAUSSIAN_TAIL).
    x_tail = xp.clip(X, -GAUSSIAN_TAIL, GAUSSIAN_TAIL)
    if approximate == "none":
        pdf = xp.exp(-0.5 * x_tail * x_tail) * _INV_SQRT_2PI
        return dY * (normal_cdf(xp, X) + X * pdf)
    x_sq = x_tail * x_tail
    t = xp.tanh(_SQRT_2_OVER_PI * x_tail * (1 + _GELU_TANH_CUBIC * x_sq))
    slope = 0.5 * x_tail * (1 - t * t) * _SQRT_2_OVER_PI * (1 + 3 * _GELU_TANH_CUBIC * x_sq)
    return dY * (0.5 * (1 + t) + slope)


class Gelu(Op):
    """x * Phi(x), Phi the standard normal CDF (exact, through erfc), or its tanh approximation
    x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))). On the CPU with numba enabled, either
    form runs numba kernels instead (vectorised loops: see _gelu_kernels)."""

    name = "gelu"
    numba_bench = "gelu (exact) 16x64x512"
    inputs = ("x",)
    attrs = ("approximate",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        xp = ctx.xp
        if ctx.approximate == "none":
            return x * normal_cdf(xp, x)
        x_tail = xp.clip(x, -GAUSSIAN_TAIL, GAUSSIAN_TAIL)  # tanh is +-1 beyond anyway
        inner = _SQRT_2_OVER_PI * x_tail * (1 + _GELU_TANH_CUBIC * x_tail * x_tail)
        return 0.5 * x * (1 + xp.tanh(inner))

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * (Phi(x) + x * phi(x)); the tanh form's derivative: see gelu_grad. Under
        create_graph Phi is the erfc op's, so gelu'' = phi(x) (2 - x^2) for the exact form, and
        every further derivative has a form in ops too."""
        return gelu_grad(grad, ctx.x, ctx.approximate)

    @staticmethod
    def numba_forward(ctx, x):
        name = "gelu" if ctx.approximate == "none" else "gelu_tanh"
        out = _run_elementwise_kernel(_gelu_kernels, name, x)
        ctx.save(x=x)
        return out

    @staticmethod
    def numba_backward(ctx, grad):
        name = "gelu_grad" if ctx.approximate == "none" else "gelu_tanh_grad"
        return _run_elementwise_kernel(_gelu_kernels, name, grad, ctx.x)


def _normal_cdf_and_pdf(v):
    """(Phi(v), phi(v)) of a float: the exact gelu is v * Phi(v), its derivative Phi + v phi. In
    numba code (after `_register_gelu_parts()`) the vectorisable form above, in v's dtype, one
    exp(-v^2 / 2) for both (numba_math.exp_nonpositive_loose: P / Q's error dwarfs its extra
    ulp in float32); in Python, math.erfc and math.exp."""
    return 0.5 * math.erfc(-v * SQRT1_2), math.exp(-0.5 * v * v) * _INV_SQRT_2PI


def _gelu_tanh_parts(v):
    """(s, slope) of a float, for gelu's tanh form: gelu(v) = v * s and gelu'(v) = s + slope.

    s = (1 + tanh(u)) / 2 = sigmoid(2 u) with u = sqrt(2/pi) (v + 0.044715 v^3), and slope =
    v/2 (1 - tanh(u)^2) u' = 2 v s (1 - s) u'. In numba code (after `_register_gelu_parts()`)
    both come from one e = exp(-2|u|) (a vectorisable exp): s = 1 / (1 + e) for u >= 0 and
    e / (1 + e) below, s (1 - s) = e / (1 + e)^2, each to a few ulps in either tail (where
    1 + tanh(u) cancels); in Python, math.tanh as gelu_grad computes it.
    """
    x = min(max(v, -GAUSSIAN_TAIL), GAUSSIAN_TAIL)
    t = math.tanh(_SQRT_2_OVER_PI * x * (1 + _GELU_TANH_CUBIC * x * x))
    return 0.5 * (1 + t), 0.5 * x * (1 - t * t) * _SQRT_2_OVER_PI * (
        1 + 3 * _GELU_TANH_CUBIC * x * x
    )


@functools.cache
def _register_gelu_parts() -> None:
    """Give `_normal_cdf_and_pdf` and `_gelu_tanh_parts` their numba implementations, on first
    use (as numba_math.register does, and for the same reason: overloads, not jitted closures,
    keep the kernels that call them in numba's on-disk cache). Each is built for its argument's
    dtype, every constant in it, so float32 is computed in float32 (the fastmath flag "contract"
    only fuses multiply-adds)."""
    numba_math.register()
    extending = importlib.import_module("numba.extending")
    types = importlib.import_module("numba.core.types")
    # error_model "numpy": under numba's default (Python's), each float division checks for a
    # zero divisor to raise ZeroDivisionError, a branch that keeps the loop from vectorising (no
    # divisor here is ever 0)
    options = {"fastmath": {"contract"}, "error_model": "numpy"}

    def real_of(v):
        if not isinstance(v, types.Float) or np.dtype(v.name) not in ERFC_SCALED:
            return None
        return np.dtype(v.name).type

    # inlined in numba's IR (its flags are its callers'): left to LLVM, the float64 build (degree
    # 9 and 10 polynomials) stayed a call in the loop, which did not vectorise: 8.7 -> 1.2 ms
    # for exact gelu on 2^19 float64 elements (float32 unchanged: LLVM inlined it already)
    @extending.overload(_normal_cdf_and_pdf, jit_options=options, inline="always")
    def _normal_cdf_and_pdf_numba(v):
        real = real_of(v)
        if real is None:
            return None
        a_max, numerator, denominator = ERFC_SCALED[np.dtype(real)]
        numerator = tuple(real(c) for c in reversed(numerator))  # highest degree first
        denominator = tuple(real(c) for c in reversed(denominator))
        zero, half, one = real(0), real(0.5), real(1)
        tail, sqrt1_2, inv_sqrt_2pi = real(a_max / SQRT1_2), real(SQRT1_2), real(_INV_SQRT_2PI)

        def cdf_and_pdf(v):
            x = min(max(v, -tail), tail)  # Phi is 0 or 1 and phi is 0 beyond, in v's dtype
            a = abs(x) * sqrt1_2
            p = q = zero
            for coefficient in numerator:
                p = p * a + coefficient
            for coefficient in denominator:
                q = q * a + coefficient
            gauss = numba_math.exp_nonpositive_loose(-half * x * x)  # exp(-a^2)
            lower_tail = half * gauss * (p / q)  # Phi(-|x|) = erfc(a) / 2
            return (one - lower_tail if x > zero else lower_tail), gauss * inv_sqrt_2pi

        return cdf_and_pdf

    @extending.overload(_gelu_tanh_parts, jit_options=options)
    def _gelu_tanh_parts_numba(v):
        real = real_of(v)
        if real is None:
            return None
        zero, one, two = real(0), real(1), real(2)
        tail, scale = real(GAUSSIAN_TAIL), real(_SQRT_2_OVER_PI)
        cubic, slope_cubic = real(_GELU_TANH_CUBIC), real(3 * _GELU_TANH_CUBIC)

        def parts(v):
            x = min(max(v, -tail), tail)  # tanh(u) is +-1 and its slope 0 beyond
            x_sq = x * x
            u = scale * x * (one + cubic * x_sq)
            e = numba_math.exp_nonpositive_loose(-two * abs(u))
            r = one / (one + e)
            s = r if u >= zero else e * r  # nan stays nan (the else side)
            return s, two * x * (e * r * r) * scale * (one + slope_cubic * x_sq)

        return parts


@functools.cache
def _gelu_kernels(parallel: bool) -> SimpleNamespace:
    """gelu's numba kernels, exact and tanh form, defined on first use, in a parallel and a
    serial build. Each takes flat arrays and writes the last one. Their loops vectorise (see
    ERFC_SCALED and _gelu_tanh_parts; error_model "numpy" as in _register_gelu_parts), in the
    arrays' dtype; they agree with the generic kernels to about 1e-6 relative in float32 and
    1e-14 in float64 (closer to the true values than the generic tanh form in its left tail)."""
    _register_gelu_parts()
    loop = numba_math.loop(parallel)

    @backend.jit(parallel=parallel, fastmath={"contract"}, error_model="numpy")
    def gelu_flat(x, out):
        for i in loop(x.shape[0]):
            v = x[i]
            out[i] = v * _normal_cdf_and_pdf(v)[0]

    @backend.jit(parallel=parallel, fastmath={"contract"}, error_model="numpy")
    def gelu_grad_flat(dy, x, dx):
        for i in loop(x.shape[0]):
            v = x[i]
            cdf, pdf = _normal_cdf_and_pdf(v)
            dx[i] = dy[i] * (cdf + v * pdf)

    @backend.jit(parallel=parallel, fastmath={"contract"}, error_model="numpy")
    def gelu_tanh_flat(x, out):
        for i in loop(x.shape[0]):
            v = x[i]
            out[i] = v * _gelu_tanh_parts(v)[0]

    @backend.jit(parallel=parallel, fastmath={"contract"}, error_model="numpy")
    def gelu_tanh_grad_flat(dy, x, dx):
        for i in loop(x.shape[0]):
            s, slope = _gelu_tanh_parts(x[i])
            dx[i] = dy[i] * (s + slope)

    return SimpleNamespace(
        gelu=gelu_flat,
        gelu_grad=gelu_grad_flat,
        gelu_tanh=gelu_tanh_flat,
        gelu_tanh_grad=gelu_tanh_grad_flat,
    )


@variants("functional", module="GELU")
def gelu(input, approximate: str = "none") -> Tensor:
    """x * Phi(x), x the `input`, with Phi the standard normal CDF ('none', exact), or the tanh
    approximation x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) ('tanh'), as
    torch.nn.functional.gelu."""
    approximate = _check_approximate("gelu", approximate)
    return Gelu.apply(floating_input("gelu", input), approximate=approximate)
