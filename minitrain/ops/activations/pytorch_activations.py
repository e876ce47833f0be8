"""PyTorch's other activations: each op's backward formula in its class (no gradient kernel).

Op by op: hardtanh (relu6), elu (selu, celu), softplus, mish, hardswish, hardsigmoid, logsigmoid,
softsign and prelu as ops, and tanhshrink and glu composed from ops.

Each op saves its input x; its backward formulas, at the kinks too, are PyTorch's (see each
op). Written with ctx.xp, each backward serves create_graph too (handed Tensors, it records
itself), the masks of its selects constants; where a second derivative jumps (elu at 0, softplus
at its threshold), its value there is PyTorch's too.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ...errors import ArgumentError, DTypeError, ShapeError
from ...tensor import Tensor
from ..core.checks import check_real, normalize_one_axis
from ..core.op import Op, as_tensor, shape_of
from ..core.variants import variants
from ..pointwise import arithmetic as elementwise
from ..shapes.shape import split
from .activation import floating_input, sigmoid, tanh
from .special import stable_sigmoid, stable_softplus

__all__ = [
    "celu",
    "elu",
    "glu",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "logsigmoid",
    "mish",
    "prelu",
    "relu6",
    "selu",
    "softplus",
    "softsign",
    "tanhshrink",
]


def _check_limit(caller: str, name: str, value) -> float:
    """A real number, infinities allowed (hardtanh's limits, softplus's threshold); NaN is not."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise DTypeError(f"{caller}: {name} must be a number, got {type(value).__name__}")
    if math.isnan(value):
        raise ArgumentError(f"{caller}: {name} must not be nan")
    return float(value)


@functools.cache
def _largest_below(kink: float, dtype: np.dtype):
    """The largest number of `dtype` below `kink`: a backward that reads x through
    minimum(x, _largest_below(kink)) reads x itself wherever x < kink and a constant from the
    kink on, with no tie at the kink (where minimum would split the slope evenly)."""
    with np.errstate(over="ignore"):  # a kink past the dtype's range: inf, below which is its max
        return np.nextafter(dtype.type(kink), dtype.type(-np.inf))


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
        """dx = grad where min_val < x < max_val, else 0 (0 at both kinks, as PyTorch). The
        mask is a constant, the select linear in grad: the second derivative in x is 0."""
        x = ctx.x
        return ctx.xp.where((x > ctx.min_val) & (x < ctx.max_val), grad, 0)


_INT64 = np.iinfo(np.int64)


def _hardtanh_limits(caller: str, min_val, max_val, dtype):
    """hardtanh's limits for an input of `dtype`, checked as PyTorch checks them, in its order.
    Integer dtype: finite and truncated toward 0 (integers taken exactly, past float precision)
    within int64's range, not negative for an unsigned dtype, and within the dtype's range.
    Floating dtype: infinite, or no larger than the dtype's largest value."""
    floating = dtype.kind == "f"
    info = np.finfo(dtype) if floating else np.iinfo(dtype)

    def overflow(name, value):
        return ArgumentError(
            f"{caller}: {name}={value} does not fit the input's dtype {dtype} without overflow "
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
            f"{caller}: an unsigned input ({dtype}) takes no negative limit, got "
            f"min_val={min_val}, max_val={max_val}"
        )
    for name, whole in limits.items():
        if not info.min <= whole <= info.max:
            raise overflow(name, whole)
    return limits["min_val"], limits["max_val"]


def _clip_as_hardtanh(caller: str, x, min_val, max_val) -> Tensor:
    """hardtanh(x, min_val, max_val), its arguments checked with errors naming `caller` (hardtanh,
    or relu6, which is hardtanh(x, 0, 6))."""
    for name, value in (("min_val", min_val), ("max_val", max_val)):
        _check_limit(caller, name, value)
    if min_val > max_val:
        raise ArgumentError(
            f"{caller}: min_val must be <= max_val, got min_val={min_val}, max_val={max_val}"
        )
    x = as_tensor(x)
    if x.dtype.kind not in "iuf":
        raise DTypeError(f"{caller}: needs a floating-point or integer input, got {x.dtype}")
    min_val, max_val = _hardtanh_limits(caller, min_val, max_val, x.dtype)
    return Hardtanh.apply(x, min_val=min_val, max_val=max_val)


@variants("functional", inplace_flag="shown")  # its layer: nn.Hardtanh (deprecated names)
def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """`input` clipped to [min_val, max_val] (min_val <= max_val); the gradient is 1 strictly
    between the limits and 0 outside and at them. Integer input stays integer, the limits
    truncated toward 0, as in PyTorch; a limit the input's dtype cannot hold is refused (an
    unsigned input takes no negative limit); bool is refused."""
    return _clip_as_hardtanh("hardtanh", input, min_val, max_val)


@variants("functional", inplace_flag="shown")  # its layer: nn.ReLU6, a Hardtanh
def relu6(input) -> Tensor:
    """min(max(`input`, 0), 6): hardtanh(`input`, 0, 6), with its gradient (0 at 0 and at 6)."""
    return _clip_as_hardtanh("relu6", input, 0.0, 6.0)


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

        At x = 0 the second form, as PyTorch: alpha for elu, scale * alpha for selu, 1 for celu.
        The second derivative is scale * alpha * c^2 * exp(c * x) for x < 0 and 0 from x = 0 on
        (PyTorch's choice at the kink): exp reads min(x, z), z the largest negative number of
        x's dtype, which is x itself wherever x < 0 and from 0 on a constant whose exp is 1 (a
        min with 0 would split the slope at 0 evenly; a select would cost a compare more)."""
        xp, x, c = ctx.xp, ctx.x, ctx.input_scale
        negative_part = xp.minimum(x, _largest_below(0, x.dtype))
        slope = xp.exp(negative_part * c) * (ctx.scale * ctx.alpha * c)
        return grad * xp.where(x > 0, ctx.scale, slope)


@variants("functional", module="ELU", inplace_flag="shown")
def elu(input, alpha: float = 1.0) -> Tensor:
    """x for x > 0, alpha * (exp(x) - 1) otherwise, x the `input`; any real alpha. The gradient
    at 0 is alpha, as in PyTorch."""
    alpha = check_real("elu", "alpha", alpha)
    return Elu.apply(floating_input("elu", input), alpha=alpha, scale=1.0, input_scale=1.0)


# SELU's constants (Klambauer et al. 2017), as PyTorch spells them.
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@variants("function", "functional", module="SELU", inplace_flag="shown")
def selu(input) -> Tensor:
    """scale * elu(`input`, alpha) with SELU's constants alpha = 1.6732632..., scale =
    1.0507009... (one elu op); the gradient at 0 is scale * alpha."""
    x = floating_input("selu", input)
    return Elu.apply(x, alpha=_SELU_ALPHA, scale=_SELU_SCALE, input_scale=1.0)


@variants("function", "functional", module="CELU", inplace_flag="shown")
def celu(input, alpha: float = 1.0) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)), x the `input` (one elu op,
    input_scale = 1 / alpha); alpha must be nonzero. The gradient at 0 is 1."""
    alpha = check_real("celu", "alpha", alpha)
    if alpha == 0:
        raise ArgumentError("celu: alpha must be nonzero (it divides x), got 0.0")
    x = floating_input("celu", input)
    return Elu.apply(x, alpha=alpha, scale=1.0, input_scale=1.0 / alpha)


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
        return ctx.xp.where(scaled > ctx.threshold, x, stable_softplus(ctx.xp, scaled) / ctx.beta)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * sigmoid(beta * x), and grad where beta * x > threshold.

        The second derivative is grad * beta * s * (1 - s) where beta * x < threshold, 0 from it
        on (PyTorch's choice: at the threshold the first derivative is the sigmoid's, of a
        constant). So the sigmoid reads min(beta * x, t), t the largest number of x's dtype below
        the threshold: beta * x itself below the threshold, from it on a constant whose sigmoid
        is the threshold's to within a rounding (one min pass, cheaper than a select)."""
        xp = ctx.xp
        scaled = ctx.x * ctx.beta
        curved = xp.minimum(scaled, _largest_below(ctx.threshold, scaled.dtype))
        return xp.where(scaled > ctx.threshold, grad, grad * stable_sigmoid(xp, curved))


@variants("functional", module="Softplus")
def softplus(input, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, x the `input`, reverting to x where beta * x > threshold,
    as PyTorch's; stable for any x. beta must be nonzero (PyTorch returns inf for 0); any sign
    otherwise."""
    beta = check_real("softplus", "beta", beta)
    if beta == 0:
        raise ArgumentError("softplus: beta must be nonzero (it divides), got 0.0")
    threshold = _check_limit("softplus", "threshold", threshold)
    return Softplus.apply(floating_input("softplus", input), beta=beta, threshold=threshold)


class Mish(Op):
    """x * tanh(softplus(x)), softplus in its stable form: no x overflows."""

    name = "mish"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return x * ctx.xp.tanh(stable_softplus(ctx.xp, x))

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * (t + x * sigmoid(x) * (1 - t^2)), t = tanh(softplus(x)).

        softplus'(x) = sigmoid(x) and tanh' = 1 - tanh^2."""
        xp, x = ctx.xp, ctx.x
        t = xp.tanh(stable_softplus(xp, x))
        return grad * (t + x * stable_sigmoid(xp, x) * (1 - t * t))


@variants("functional", module="Mish", inplace_flag="shown")
def mish(input) -> Tensor:
    """x * tanh(softplus(x)), x the `input`, stable for any x."""
    return Mish.apply(floating_input("mish", input))


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

        PyTorch's choice at the kinks: 0 at x = -3, 1 at x = 3 (and at a NaN x). The second
        derivative is grad / 3 for -3 < x < 3, 0 elsewhere."""
        xp, x = ctx.xp, ctx.x
        slope = xp.where(x < 3, x / 3 + 0.5, 1)
        return xp.where(x <= -3, 0, grad * slope)


@variants("functional", module="Hardswish", inplace_flag="hidden")
def hardswish(input) -> Tensor:
    """x * relu6(x + 3) / 6, x the `input`; the gradient is 0 at -3 and 1 at 3, as in
    PyTorch."""
    return Hardswish.apply(floating_input("hardswish", input))


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
        one divides by 6 exactly. The mask is a constant, the select linear in grad: the second
        derivative in x is 0."""
        x = ctx.x
        return ctx.xp.where((x > -3) & (x < 3), grad / 6, 0)


@variants("functional", module="Hardsigmoid", inplace_flag="hidden")
def hardsigmoid(input) -> Tensor:
    """relu6(x + 3) / 6, x the `input`; the gradient is 1/6 strictly between -3 and 3, 0
    elsewhere."""
    return Hardsigmoid.apply(floating_input("hardsigmoid", input))


class Logsigmoid(Op):
    """log(sigmoid(x)) = -softplus(-x), in softplus's stable form: finite for every finite x
    (no log of an underflowed 0), exact in both tails."""

    name = "logsigmoid"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return -stable_softplus(ctx.xp, -x)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * sigmoid(-x) (= grad * (1 - sigmoid(x)), computed without cancellation)."""
        return grad * stable_sigmoid(ctx.xp, -ctx.x)


@variants("functional", module="LogSigmoid")
def logsigmoid(input) -> Tensor:
    """log(sigmoid(x)) = -softplus(-x), x the `input`, finite and exact in both tails."""
    return Logsigmoid.apply(floating_input("logsigmoid", input))


def _real_input(caller: str, x) -> Tensor:
    """x as a floating Tensor for the activations PyTorch computes for integers in float32
    (softsign, tanhshrink); bool refused, as PyTorch does."""
    x = as_tensor(x)
    if x.dtype.kind == "b":
        raise DTypeError(f"{caller}: needs a floating-point or integer input, got {x.dtype}")
    return floating_input(caller, x, ints_as_float32=True)


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
        Divided twice: the square of 1 + |x| would overflow float32 from |x| = 2e19. Its
        derivative: softsign'' = -2 sign(x) / (1 + |x|)^3."""
        denominator = ctx.xp.abs(ctx.x) + 1
        return grad / denominator / denominator


@variants("functional", module="Softsign")
def softsign(input) -> Tensor:
    """x / (1 + |x|), x the `input`, with the exact gradient 1 / (1 + |x|)^2 at every
    magnitude. Integer input is computed in float32, as PyTorch does."""
    return Softsign.apply(_real_input("softsign", input))


@variants("functional", module="Tanhshrink")
def tanhshrink(input) -> Tensor:
    """x - tanh(x), x the `input`, composed as PyTorch composes it (its gradient tanh(x)^2 comes
    out as 1 - (1 - tanh^2), as PyTorch's). Integer input is computed in float32, as PyTorch
    does."""
    x = _real_input("tanhshrink", input)
    return elementwise.sub(x, tanh(x))


def _channel_weight(weight, ndim: int):
    """PReLU's weight (an array, or a Tensor under create_graph) shaped to broadcast along axis
    1 of an ndim input: one weight as 0-d, C weights as (1, C, 1, ..., 1)."""
    if math.prod(weight.shape) == 1:
        return weight.reshape(())
    return weight.reshape((1, -1) + (1,) * (ndim - 2))


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
        them for a single weight). At x = 0, dx = weight * grad, as PyTorch. The mixed second
        derivatives (dx in weight, dweight in x) are grad where x <= 0."""
        xp, x, weight = ctx.xp, ctx.x, ctx.weight
        positive = x > 0
        dx = dweight = None
        if ctx.needs_grad[0]:
            dx = xp.where(positive, grad, _channel_weight(weight, x.ndim) * grad)
        if ctx.needs_grad[1]:
            contributions = xp.where(positive, 0, grad * x)
            if math.prod(weight.shape) == 1:
                dweight = contributions.sum().reshape(weight.shape)
            else:
                axes = tuple(a for a in range(x.ndim) if a != 1)
                dweight = contributions.sum(axis=axes).reshape(weight.shape)
        return dx, dweight


@variants("function", "functional")  # its layer: nn.PReLU, which holds the weight
def prelu(input, weight) -> Tensor:
    """x for x > 0, weight * x otherwise, x the `input`, as PyTorch's F.prelu. weight: 0-d or
    1-D, holding one slope or one per channel (axis 1 of x; an x of fewer than 2 dims has 1
    channel), of x's floating dtype. The gradient at x = 0 is weight."""
    caller = "prelu"
    x = floating_input(caller, input)
    weight_shape = shape_of(weight)
    if len(weight_shape) > 1:
        raise ShapeError(f"{caller}: weight must be 0-d or 1-D, got shape {weight_shape}")
    count = math.prod(weight_shape)
    channels = x.shape[1] if x.ndim >= 2 else 1
    if count not in (1, channels):
        raise ShapeError(
            f"{caller}: weight {weight_shape} holds {count} slopes, but input {x.shape} has "
            f"{channels} channels (axis 1): give 1 slope or {channels}"
        )
    return Prelu.apply(x, weight)


@variants("functional", module="GLU")
def glu(input, dim: int = -1) -> Tensor:
    """a * sigmoid(b), a and b the two halves of `input` along `dim` (of even size), as
    PyTorch's F.glu: composed (split, sigmoid, mul), whose gradients are exactly PyTorch's."""
    caller = "glu"
    x = floating_input(caller, input)
    if x.ndim == 0:
        raise ShapeError(f"{caller}: cannot halve a 0-d tensor")
    axis = normalize_one_axis(dim, x.ndim, caller)
    size = x.shape[axis]
    if size % 2:
        raise ShapeError(
            f"{caller}: dim {dim} of input {x.shape} has odd size {size}; it must halve evenly"
        )
    first, second = split(x, size // 2, axis)
    return elementwise.mul(first, sigmoid(second))
