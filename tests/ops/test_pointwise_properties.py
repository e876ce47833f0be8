"""Property tests of the pointwise ops against PyTorch, with hypothesis drawing the inputs: every
shape from 0-d and empty to 3 dims (broadcast pairs for the binary ops), float32 and float64,
and every value a float can hold, nan, infinities, signed zeros, subnormals and huge magnitudes
included. Forward: the same shape, dtype, nan and infinity pattern and values as PyTorch's.
Backward, on finite inputs away from the ops' kinks: the same gradients. How many examples each
property draws is the hypothesis profile's (tests/conftest.py: "ci" by default, "fuzz" for
`make fuzz`)."""

from __future__ import annotations

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import minitrain as mt  # noqa: E402

F = mt.nn.functional

# inf and nan are what these tests feed in: minitrain's kernels make them silently, as PyTorch's
# do (runtime/float_warnings.py), not the errors pytest's configuration makes RuntimeWarnings
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning:minitrain")

# (minitrain's function, PyTorch's name under torch or torch.nn.functional)
UNARY = {
    "neg": (mt.neg, "neg"),
    "exp": (mt.exp, "exp"),
    "log": (mt.log, "log"),
    "sqrt": (mt.sqrt, "sqrt"),
    "abs": (mt.abs, "abs"),
    "sin": (mt.sin, "sin"),
    "cos": (mt.cos, "cos"),
    "tan": (mt.tan, "tan"),
    "tanh": (mt.tanh, "tanh"),
    "sigmoid": (mt.sigmoid, "sigmoid"),
    "log1p": (mt.log1p, "log1p"),
    "expm1": (mt.expm1, "expm1"),
    "log2": (mt.log2, "log2"),
    "log10": (mt.log10, "log10"),
    "exp2": (mt.exp2, "exp2"),
    "erf": (mt.erf, "erf"),
    "erfc": (mt.erfc, "erfc"),
    "asin": (mt.asin, "asin"),
    "acos": (mt.acos, "acos"),
    "atan": (mt.atan, "atan"),
    "sinh": (mt.sinh, "sinh"),
    "cosh": (mt.cosh, "cosh"),
    "asinh": (mt.asinh, "asinh"),
    "acosh": (mt.acosh, "acosh"),
    "atanh": (mt.atanh, "atanh"),
    "sign": (mt.sign, "sign"),
    "floor": (mt.floor, "floor"),
    "ceil": (mt.ceil, "ceil"),
    "trunc": (mt.trunc, "trunc"),
    "round": (mt.round, "round"),
    "relu": (mt.relu, "relu"),
    "gelu": (F.gelu, "nn.functional.gelu"),
    "silu": (F.silu, "nn.functional.silu"),
    "softplus": (F.softplus, "nn.functional.softplus"),
    "elu": (F.elu, "nn.functional.elu"),
    "selu": (F.selu, "nn.functional.selu"),
    "celu": (F.celu, "nn.functional.celu"),
    "mish": (F.mish, "nn.functional.mish"),
    "logsigmoid": (F.logsigmoid, "nn.functional.logsigmoid"),
    "softsign": (F.softsign, "nn.functional.softsign"),
    "hardswish": (F.hardswish, "nn.functional.hardswish"),
    "hardsigmoid": (F.hardsigmoid, "nn.functional.hardsigmoid"),
    "hardtanh": (F.hardtanh, "nn.functional.hardtanh"),
    "relu6": (F.relu6, "nn.functional.relu6"),
    "leaky_relu": (F.leaky_relu, "nn.functional.leaky_relu"),
    "tanhshrink": (F.tanhshrink, "nn.functional.tanhshrink"),
}

BINARY = {
    "add": (mt.add, "add"),
    "sub": (mt.sub, "sub"),
    "mul": (mt.mul, "mul"),
    "div": (mt.div, "div"),
    "pow": (mt.pow, "pow"),
    "maximum": (mt.maximum, "maximum"),
    "minimum": (mt.minimum, "minimum"),
    "atan2": (mt.atan2, "atan2"),
    "hypot": (mt.hypot, "hypot"),
    "logaddexp": (mt.logaddexp, "logaddexp"),
    "xlogy": (mt.xlogy, "xlogy"),
    "copysign": (mt.copysign, "copysign"),
    "fmod": (mt.fmod, "fmod"),
    "remainder": (mt.remainder, "remainder"),
}

DTYPES = (np.float32, np.float64)


def _torch_function(torch, name: str):
    target = torch
    for part in name.split("."):
        target = getattr(target, part)
    return target


def _floats(dtype, finite: bool, bound: float | None = None):
    width = 32 if dtype == np.float32 else 64
    if finite:
        return st.floats(-bound, bound, width=width, allow_subnormal=False).filter(
            lambda v: abs(v) > 1e-3
        )
    return st.floats(width=width, allow_nan=True, allow_infinity=True, allow_subnormal=True)


def _arrays(dtype, shape, finite=False, bound=None):
    return hnp.arrays(dtype, shape, elements=_floats(dtype, finite, bound))


SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def _exact_remainder(numpy_function):
    """Where PyTorch's fmod / remainder is nan for finite inputs and a nonzero divisor (x / y
    overflowed: a subnormal divisor), numpy's exact one."""

    def fixed(inputs, theirs):
        x, y = np.broadcast_arrays(*inputs)
        with np.errstate(all="ignore"):
            wrong = np.isnan(theirs) & np.isfinite(x) & np.isfinite(y) & (y != 0)
            return np.where(wrong, numpy_function(x, y), theirs)

    return fixed


# Where PyTorch's value is not the function's: minitrain's is, and these give it, from the
# inputs and PyTorch's result. gelu(x) = x from 10 up (the normal CDF is 1 in floats), which
# PyTorch's float32 kernel overflows to inf near float32's largest value, and makes nan at inf;
# hardswish(x) = x from 3 up, which PyTorch's 0-d path overflows to inf above 3e307
# (x * 6 / 6); fmod and remainder by a subnormal divisor.
EXACT = {
    "gelu": lambda inputs, theirs: np.where(inputs[0] > 10, inputs[0], theirs),
    "hardswish": lambda inputs, theirs: np.where(inputs[0] >= 3, inputs[0], theirs),
    "fmod": _exact_remainder(np.fmod),
    "remainder": _exact_remainder(np.remainder),
}


def _assert_like_torch(ours, theirs, name: str, dtype, inputs) -> None:
    """Shape, dtype, where nan and infinities fall (with their signs), and the rest to float
    rounding: a few ulps of the result or of the largest input (x - tanh(x) cancels), looser
    for float32's transcendental functions."""
    theirs = theirs.detach().numpy()
    ours = ours.numpy()
    if name in EXACT:
        theirs = EXACT[name](inputs, theirs).astype(theirs.dtype)
    assert ours.shape == theirs.shape, name
    assert ours.dtype == theirs.dtype, name
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs), err_msg=f"{name}: nan")
    np.testing.assert_array_equal(
        np.nan_to_num(ours, nan=0.0, posinf=1.0, neginf=-1.0) * np.isinf(ours),
        np.nan_to_num(theirs, nan=0.0, posinf=1.0, neginf=-1.0) * np.isinf(theirs),
        err_msg=f"{name}: infinities",
    )
    finite = np.isfinite(ours) & np.isfinite(theirs)
    rtol = 2e-5 if dtype == np.float32 else 1e-12
    info = np.finfo(dtype)
    with np.errstate(all="ignore"):
        scale = np.broadcast_to(
            np.nan_to_num(sum(np.abs(v).astype(np.float64) for v in inputs), posinf=0.0),
            ours.shape,
        )
    allowed = rtol * np.abs(theirs[finite]) + 8 * info.eps * scale[finite] + 1e3 * info.tiny
    error = np.abs(ours[finite].astype(np.float64) - theirs[finite])
    assert np.all(error <= allowed), f"{name}: {ours[finite]} against {theirs[finite]}"


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_forward_on_every_float_matches_torch(name, dtype, torch):
    ours_fn, theirs_name = UNARY[name]
    theirs_fn = _torch_function(torch, theirs_name)

    @given(SHAPES.flatmap(lambda shape: _arrays(dtype, shape)))
    def check(values):
        ours, theirs = ours_fn(mt.tensor(values)), theirs_fn(torch.tensor(values))
        _assert_like_torch(ours, theirs, name, dtype, [values])

    check()


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_forward_on_every_float_and_broadcast_matches_torch(name, dtype, torch):
    ours_fn, theirs_name = BINARY[name]
    theirs_fn = _torch_function(torch, theirs_name)
    pairs = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4)

    @given(pairs.flatmap(lambda s: st.tuples(*(_arrays(dtype, shape) for shape in s.input_shapes))))
    def check(values):
        left, right = values
        ours = ours_fn(mt.tensor(left), mt.tensor(right))
        theirs = theirs_fn(torch.tensor(left), torch.tensor(right))
        _assert_like_torch(ours, theirs, name, dtype, [left, right])

    check()


# Finite inputs inside each op's domain, away from its kinks (|x| > 1e-3: relu's and abs's 0,
# hardtanh's and relu6's bounds are at integers, which random floats almost never hit).
DOMAINS = {"log": (1e-3, 50), "sqrt": (1e-3, 50), "log2": (1e-3, 50), "log10": (1e-3, 50)}
DOMAINS.update(
    {"asin": (-0.99, 0.99), "acos": (-0.99, 0.99), "atanh": (-0.99, 0.99), "acosh": (1.01, 50)}
)
DOMAINS.update({"log1p": (-0.99, 50), "tan": (-1.4, 1.4)})
NO_GRADIENT = {"sign", "floor", "ceil", "trunc", "round"}
# PyTorch's float64 hardsigmoid gradient multiplies by 1/6 rounded to float32; minitrain's is
# the exact 1/6 (ops/activations/pytorch_activations.py)
EXACT_GRADIENT = {"hardsigmoid": lambda x: np.where((x > -3) & (x < 3), 1 / 6, 0.0)}


@pytest.mark.parametrize("name", sorted(set(UNARY) - NO_GRADIENT))
def test_unary_gradient_on_its_domain_matches_torch(name, torch):
    ours_fn, theirs_name = UNARY[name]
    theirs_fn = _torch_function(torch, theirs_name)
    low, high = DOMAINS.get(name, (-20.0, 20.0))
    elements = st.floats(low, high, allow_subnormal=False).filter(
        lambda v: abs(v) > 1e-3 and abs(v - round(v)) > 1e-3  # off kinks at 0 and the integers
    )

    @given(SHAPES.flatmap(lambda shape: hnp.arrays(np.float64, shape, elements=elements)))
    def check(values):
        x = mt.tensor(values, requires_grad=True)
        t = torch.tensor(values, requires_grad=True)
        ours_fn(x).sum().backward()
        theirs_fn(t).sum().backward()
        expected = t.grad.numpy()
        if name in EXACT_GRADIENT:
            expected = EXACT_GRADIENT[name](values)
        np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-9, atol=1e-12)

    check()
