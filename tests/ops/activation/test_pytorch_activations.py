"""PyTorch's other activations (relu6, hardtanh, elu, selu, celu, softplus, mish, hardswish,
hardsigmoid, logsigmoid, softsign, tanhshrink, prelu, glu): values and gradients against PyTorch
at the kinks and in the far tails, in float64, float32 and float16, gradchecks, integer input,
and every bad argument."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn, ops
from minitrain.errors import ArgumentError, DTypeError, ShapeError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)

SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
PRELU_WEIGHT = np.array([0.25])  # a float64 slope: the tests' inputs are float64 unless cast


def _prelu(x):
    return F.prelu(x, mt.tensor(PRELU_WEIGHT.astype(x.dtype)))


# name -> (minitrain call, the name of PyTorch's F function and its extra arguments)
FUNCTIONS = {
    "relu6": (F.relu6, ("relu6",)),
    "hardtanh": (F.hardtanh, ("hardtanh",)),
    "hardtanh_-2_3": (lambda x: F.hardtanh(x, -2.0, 3.0), ("hardtanh", -2.0, 3.0)),
    "elu": (F.elu, ("elu",)),
    "elu_alpha0.5": (lambda x: F.elu(x, 0.5), ("elu", 0.5)),
    "elu_alpha-1": (lambda x: F.elu(x, -1.0), ("elu", -1.0)),
    "selu": (F.selu, ("selu",)),
    "celu": (F.celu, ("celu",)),
    "celu_alpha2": (lambda x: F.celu(x, 2.0), ("celu", 2.0)),
    "softplus": (F.softplus, ("softplus",)),
    "softplus_beta2_threshold10": (lambda x: F.softplus(x, 2.0, 10.0), ("softplus", 2.0, 10.0)),
    "softplus_beta-1": (lambda x: F.softplus(x, -1.0), ("softplus", -1.0)),
    "mish": (F.mish, ("mish",)),
    "hardswish": (F.hardswish, ("hardswish",)),
    "hardsigmoid": (F.hardsigmoid, ("hardsigmoid",)),
    "logsigmoid": (F.logsigmoid, ("logsigmoid",)),
    "softsign": (F.softsign, ("softsign",)),
    "tanhshrink": (F.tanhshrink, ("tanhshrink",)),
    "prelu": (_prelu, ("prelu",)),
    "glu": (F.glu, ("glu",)),
    "glu_dim0": (lambda x: F.glu(x, 0), ("glu", 0)),
}

# Every kink and threshold of the functions above, exactly, and either side of it; zero; and
# magnitudes from small to far beyond where exp overflows.
KINKS = [-3.0, -2.0, -1.0, 0.0, 1.0, 3.0, 5.0, 6.0, 10.0, 20.0]
GRID = np.concatenate(
    [
        KINKS,
        np.array(KINKS) - 1e-3,
        np.array(KINKS) + 1e-3,
        [1e-8, -1e-8, 0.5, -0.5, 2.5, -7.0, 15.0, -25.0, 40.0, -40.0],
        [88.0, -88.0, 100.0, -100.0, 800.0, -800.0, 1e4, -1e4, 1e30, -1e30],
    ]
)  # 50 values: an even count, so glu halves it


def _torch_call(torch, spec, x):
    name, *args = spec
    if name == "prelu":
        return torch.nn.functional.prelu(x, torch.tensor(PRELU_WEIGHT, dtype=x.dtype))
    return getattr(torch.nn.functional, name)(x, *args)


def _both(torch, name, values, dtype, upstream):
    """(ours, theirs): each the (value, gradient) of FUNCTIONS[name] at values."""
    call, spec = FUNCTIONS[name]
    x = mt.tensor(values.astype(dtype), requires_grad=True)
    out = call(x)
    out.backward(upstream.astype(dtype))
    x_ref = torch.tensor(values.astype(dtype), requires_grad=True)
    expected = _torch_call(torch, spec, x_ref)
    expected.backward(torch.from_numpy(upstream.astype(dtype)))
    assert out.dtype == np.dtype(dtype) and x.grad.dtype == np.dtype(dtype)
    assert out.shape == tuple(expected.shape)
    return (out.data, x.grad.data), (expected.detach().numpy(), x_ref.grad.numpy())


def _upstream(shape):
    return np.random.default_rng(3).uniform(0.5, 1.5, shape)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_float64_values_and_gradients_match_torch_at_kinks_and_in_the_tails(torch, name):
    values = GRID.reshape(2, 25) if name == "glu_dim0" else GRID
    (out, grad), (want_out, want_grad) = _both(
        torch, name, values, np.float64, _upstream(_out_shape(name, values.shape))
    )
    np.testing.assert_allclose(out, want_out, rtol=1e-13, atol=1e-300)
    # PyTorch's float64 hardsigmoid gradient is 1/6 rounded to float32; ours is 1/6. Its
    # softsign gradient (composed: 1/b - |x|/b^2) cancels for large |x|; ours is 1/b^2.
    rtol = 5e-8 if name == "hardsigmoid" else 1e-13
    atol = 1e-18 if name == "softsign" else 1e-300
    np.testing.assert_allclose(grad, want_grad, rtol=rtol, atol=atol)
    assert np.isfinite(out).all() and np.isfinite(grad).all()


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_float64_gradients_against_a_random_upstream(torch, name):
    values = np.random.default_rng(5).standard_normal((4, 6)) * 4
    (out, grad), (want_out, want_grad) = _both(
        torch, name, values, np.float64, _upstream(_out_shape(name, values.shape))
    )
    np.testing.assert_allclose(out, want_out, rtol=1e-13, atol=1e-15)
    rtol = 5e-8 if name == "hardsigmoid" else 1e-12
    np.testing.assert_allclose(grad, want_grad, rtol=rtol, atol=1e-15)


def _out_shape(name, shape):
    """The output shape of FUNCTIONS[name] on an input of `shape`: glu halves a dim."""
    if name.startswith("glu"):
        dim = 0 if name == "glu_dim0" else len(shape) - 1
        return shape[:dim] + (shape[dim] // 2,) + shape[dim + 1 :]
    return shape


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_float32_matches_torch_without_overflow(torch, name):
    values = GRID.reshape(2, 25) if name == "glu_dim0" else GRID
    (out, grad), (want_out, want_grad) = _both(
        torch, name, values, np.float32, _upstream(_out_shape(name, values.shape))
    )
    assert np.isfinite(out).all() and np.isfinite(grad).all()
    np.testing.assert_allclose(out, want_out, rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(grad, want_grad, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_float16_stays_float16_and_matches_torch(torch, name):
    values = np.linspace(-8.0, 8.0, 34)
    values = values.reshape(2, 17) if name == "glu_dim0" else values
    (out, grad), (want_out, want_grad) = _both(
        torch, name, values, np.float16, _upstream(_out_shape(name, values.shape))
    )
    np.testing.assert_allclose(out, want_out, rtol=1e-2, atol=2e-3)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-2, atol=2e-3)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_gradcheck(name):
    # values at least 0.05 from every kink, and some large ones
    rng = np.random.default_rng(11)
    values = np.concatenate([rng.uniform(-4.0, 4.0, 30), [-30.0, 30.0, 12.5, -12.5]])
    values = values[np.min(np.abs(values[:, None] - np.array(KINKS)), axis=1) > 0.05]
    values = values[: len(values) // 2 * 2].reshape(2, -1)
    x = mt.tensor(values, requires_grad=True)
    assert mt.gradcheck(FUNCTIONS[name][0], [x], mode="full")


def test_prelu_gradcheck_in_both_inputs():
    rng = np.random.default_rng(12)
    x = mt.tensor(rng.choice([-1.0, 1.0], (2, 3, 4)) * rng.uniform(0.1, 2.0, (2, 3, 4)))
    weight = mt.tensor(rng.uniform(-0.5, 0.5, 3), requires_grad=True)
    x.requires_grad = True
    assert mt.gradcheck(F.prelu, [x, weight], mode="full")


# name -> (x, the gradient there as PyTorch defines it)
KINK_GRADIENTS = {
    "relu6": ([0.0, 6.0, 3.0], [0.0, 0.0, 1.0]),
    "hardtanh": ([-1.0, 1.0, 0.0], [0.0, 0.0, 1.0]),
    "elu": ([0.0], [1.0]),
    "elu_alpha0.5": ([0.0], [0.5]),
    "selu": ([0.0], [SELU_SCALE * SELU_ALPHA]),
    "celu_alpha2": ([0.0], [1.0]),
    "hardswish": ([-3.0, 3.0, 0.0], [0.0, 1.0, 0.5]),
    "hardsigmoid": ([-3.0, 3.0, 0.0], [0.0, 0.0, 1 / 6]),
    "prelu": ([0.0, -1.0, 1.0], [0.25, 0.25, 1.0]),
    "softplus": ([20.0, 20.5, 0.0], [1 / (1 + math.exp(-20.0)), 1.0, 0.5]),
    "softsign": ([0.0], [1.0]),
    "mish": ([0.0], [0.6]),
    "logsigmoid": ([0.0], [0.5]),
}


@pytest.mark.parametrize("name", sorted(KINK_GRADIENTS))
def test_gradient_at_the_kinks_is_torchs(name):
    values, expected = KINK_GRADIENTS[name]
    x = mt.tensor(np.array(values), requires_grad=True)
    FUNCTIONS[name][0](x).sum().backward()
    np.testing.assert_allclose(x.grad.data, expected, rtol=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tails_are_exact(dtype):
    x = mt.tensor(np.array([-1e4, -800.0, 800.0, 1e4], dtype))
    np.testing.assert_array_equal(F.softplus(x).data, [0.0, 0.0, 800.0, 1e4])
    np.testing.assert_array_equal(F.softplus(x, 1.0, 1e9).data, [0.0, 0.0, 800.0, 1e4])
    np.testing.assert_array_equal(F.logsigmoid(x).data, [-1e4, -800.0, 0.0, 0.0])
    np.testing.assert_array_equal(F.mish(x).data, [0.0, 0.0, 800.0, 1e4])
    np.testing.assert_array_equal(F.elu(x).data, [-1.0, -1.0, 800.0, 1e4])
    rtol = 1e-7 if dtype == np.float32 else 1e-16
    np.testing.assert_allclose(F.selu(x).data[:2], [-SELU_SCALE * SELU_ALPHA] * 2, rtol=rtol)
    np.testing.assert_allclose(
        F.softsign(x).data, [-1e4 / 10001, -800 / 801, 800 / 801, 1e4 / 10001], rtol=rtol
    )


# the backward kernel at the root of each graph: the composed functions show the op they end in
COMPOSED = {
    "relu6": "HardtanhGrad",
    "selu": "EluGrad",
    "celu": "EluGrad",
    "softsign": "SoftsignGrad",
    "tanhshrink": "SubGrad",
    "glu": "MulGrad",
    "hardswish": "HardswishGrad",
    "hardsigmoid": "HardsigmoidGrad",
    "softplus": "SoftplusGrad",
    "mish": "MishGrad",
    "logsigmoid": "LogsigmoidGrad",
    "prelu": "PreluGrad",
}


@pytest.mark.parametrize("name", sorted(COMPOSED))
def test_graph_root(name):
    out = FUNCTIONS[name][0](mt.tensor(np.ones((2, 4)), requires_grad=True))
    assert out.grad_fn.name == COMPOSED[name]


def test_composed_functions_are_not_registered_ops():
    registered = set(ops.registry())
    assert {"hardtanh", "elu", "softplus", "mish", "hardswish", "hardsigmoid"} <= registered
    assert {"logsigmoid", "softsign", "prelu", "binary_cross_entropy"} <= registered
    assert not {"relu6", "selu", "celu", "tanhshrink", "glu"} & registered


INTEGER_CALLS = {
    "relu6": F.relu6,
    "hardtanh": F.hardtanh,
    "hardtanh_fractional_limits": lambda x: F.hardtanh(x, -0.5, 1.5),
    "elu": F.elu,
    "selu": F.selu,
    "celu": F.celu,
    "softplus": F.softplus,
    "mish": F.mish,
    "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid,
    "logsigmoid": F.logsigmoid,
    "softsign": F.softsign,
    "tanhshrink": F.tanhshrink,
    "glu": F.glu,
}


def _torch_integer_call(torch, name, x):
    if name == "hardtanh_fractional_limits":
        return torch.nn.functional.hardtanh(x, -0.5, 1.5)
    return getattr(torch.nn.functional, name)(x)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("name", sorted(INTEGER_CALLS))
def test_integer_and_bool_input_as_torch(torch, name, dtype):
    """Computed where PyTorch computes it (relu6 and hardtanh stay integer, softsign and
    tanhshrink become float32), a DTypeError naming the function where PyTorch refuses."""
    values = np.array([-2, 0, 1, 3, 7, 200]).astype(dtype)
    try:
        expected = _torch_integer_call(torch, name, torch.from_numpy(values))
    except (RuntimeError, NotImplementedError):
        expected = None
    if expected is None:
        with pytest.raises((DTypeError, ArgumentError), match=f"^{name.split('_')[0]}: "):
            INTEGER_CALLS[name](mt.tensor(values))
        return
    out = INTEGER_CALLS[name](mt.tensor(values))
    assert out.dtype == np.dtype(str(expected.dtype).removeprefix("torch."))
    np.testing.assert_allclose(out.data, expected.numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    "dtype", [np.int8, np.uint8, np.int16, np.int64, np.float16, np.float32, np.float64]
)
@pytest.mark.parametrize(
    "limits",
    [(-1000, 1000), (-1.5, 1.5), (-2, 2), (-1, 1), (0, 2), (-128.5, 127.5), (-129, 0),
     (0.5, 300), (-float("inf"), float("inf")), (-1, 2**63 - 1), (0, 2**53 + 1), (-1, 70000),
     (-1, 3.5e38), (-1.0, 1e300)],
    ids=repr,
)  # fmt: skip
def test_hardtanh_limits_the_dtype_cannot_hold_are_refused_as_in_torch(torch, dtype, limits):
    values = np.arange(-3, 3).astype(dtype)
    try:
        expected = torch.nn.functional.hardtanh(torch.from_numpy(values), *limits).numpy()
    except RuntimeError as error:
        negative = "unsigned type with negative limits" in str(error)
        assert negative or "overflow" in str(error)
        message = "an unsigned input" if negative else r"m.._val=.* without overflow"
        with pytest.raises(ArgumentError, match=rf"^hardtanh: {message}"):
            F.hardtanh(mt.tensor(values), *limits)
        return
    got = F.hardtanh(mt.tensor(values), *limits).data
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_prelu_refuses_integer_input():
    with pytest.raises(DTypeError, match="^prelu: needs a floating-point input, got int64"):
        F.prelu(mt.tensor(np.array([1, -2])), mt.tensor(np.array([0.25])))


x23 = mt.tensor(np.ones((2, 3)))
BAD_ARGUMENTS = [
    (lambda: F.softplus(x23, 0.0), ArgumentError, r"^softplus: beta must be nonzero .*got 0\.0"),
    (lambda: F.softplus(x23, float("nan")), ArgumentError, r"^softplus: beta must be finite"),
    (lambda: F.softplus(x23, 1.0, float("nan")), ArgumentError, r"^softplus: threshold must"),
    (lambda: F.softplus(x23, "1"), DTypeError, r"^softplus: beta must be a number, got str"),
    (lambda: nn.Softplus(0)(x23), ArgumentError, r"^softplus: beta must be nonzero"),
    (lambda: F.celu(x23, 0.0), ArgumentError, r"^celu: alpha must be nonzero .*got 0\.0"),
    (lambda: nn.CELU(0.0)(x23), ArgumentError, r"^celu: alpha must be nonzero"),
    (lambda: F.elu(x23, float("inf")), ArgumentError, r"^elu: alpha must be finite, got inf"),
    (lambda: F.elu(x23, None), DTypeError, r"^elu: alpha must be a number, got NoneType"),
    (lambda: F.hardtanh(x23, 2.0, 1.0), ArgumentError,
     r"^hardtanh: min_val must be <= max_val, got min_val=2\.0, max_val=1\.0"),
    (lambda: F.hardtanh(x23, float("nan")), ArgumentError, r"^hardtanh: min_val must not be nan"),
    (lambda: F.hardtanh(x23, -1.0, "1"), DTypeError, r"^hardtanh: max_val must be a number"),
    (lambda: F.hardtanh(mt.tensor(np.arange(3, dtype=np.uint8))), ArgumentError,
     r"^hardtanh: an unsigned input \(uint8\) takes no negative limit, got min_val=-1\.0"),
    (lambda: nn.Hardtanh(1.0, 1.0), ArgumentError,
     r"^Hardtanh: max_val must be greater than min_val, got min_val=1\.0, max_val=1\.0"),
    (lambda: nn.Hardtanh(3, 2), ArgumentError, r"^Hardtanh: .*min_val=3, max_val=2"),
    (lambda: F.prelu(x23, mt.tensor(np.ones(2))), ShapeError,
     r"^prelu: weight \(2,\) holds 2 slopes, but input \(2, 3\) has 3 channels"),
    (lambda: F.prelu(mt.tensor(np.ones(3)), mt.tensor(np.ones(3))), ShapeError,
     r"^prelu: weight \(3,\) holds 3 slopes, but input \(3,\) has 1 channels"),
    (lambda: F.prelu(x23, mt.tensor(np.ones((3, 1)))), ShapeError,
     r"^prelu: weight must be 0-d or 1-D, got shape \(3, 1\)"),
    (lambda: F.prelu(x23, mt.tensor(np.ones(3, np.float32))), DTypeError,
     r"^prelu: inputs must share one dtype, got x float64, weight float32"),
    (lambda: nn.PReLU(4, dtype=np.float64)(x23), ShapeError,
     r"^prelu: weight \(4,\) holds 4 slopes, but input \(2, 3\) has 3 channels"),
    (lambda: nn.PReLU(0), ArgumentError, r"^PReLU: num_parameters must be >= 1, got 0"),
    (lambda: nn.PReLU(2.0), DTypeError, r"^PReLU: num_parameters must be an int, got 2\.0"),
    (lambda: nn.PReLU(2, dtype=np.int32), DTypeError, r"^PReLU: dtype must be a floating"),
    (lambda: F.glu(x23), ShapeError, r"^glu: dim -1 of input \(2, 3\) has odd size 3"),
    (lambda: F.glu(x23, 1), ShapeError, r"^glu: dim 1 of input \(2, 3\) has odd size 3"),
    (lambda: nn.GLU(0)(mt.tensor(np.ones((3, 2)))), ShapeError, r"^glu: dim 0 of input \(3, 2\)"),
    (lambda: F.glu(mt.tensor(np.float64(1.0))), ShapeError, r"^glu: cannot halve a 0-d tensor"),
    (lambda: F.glu(x23, 2), ShapeError, r"^glu: .*2"),
    (lambda: F.glu(x23, 0.5), DTypeError, r"^glu: takes one int axis, got 0\.5"),
    (lambda: F.mish(mt.tensor(np.array([1, 2]))), DTypeError,
     r"^mish: needs a floating-point input, got int64"),
    (lambda: F.softsign(mt.tensor(np.array([True]))), DTypeError,
     r"^softsign: needs a floating-point or integer input, got bool"),
    (lambda: F.relu6(mt.tensor(np.array([True]))), DTypeError,
     r"^relu6: needs a floating-point or integer input, got bool"),
]  # fmt: skip


@pytest.mark.parametrize(
    "call, error, message", BAD_ARGUMENTS, ids=[m.split(":")[0] for _, _, m in BAD_ARGUMENTS]
)
def test_bad_arguments_raise_a_minitrain_error_naming_them(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_review_hardswish_float16_max_stays_finite_and_nan_takes_torch_gradient():
    torch = pytest.importorskip("torch")
    big = np.array([65504.0, -65504.0], np.float16)
    np.testing.assert_array_equal(
        F.hardswish(mt.tensor(big)).numpy(), torch.nn.functional.hardswish(torch.tensor(big))
    )
    values = np.array([np.nan, -3.0, 3.0])
    x, tx = mt.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    F.hardswish(x).sum().backward()
    torch.nn.functional.hardswish(tx).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
