"""PyTorch's other activations (ops/activations/pytorch_activations.py) where their samples
(tests/samples/activations/pytorch_activations.py, which tests/ops/test_ops.py gradchecks and
compares with PyTorch at draws away from the kinks) do not reach: every sample's call against
PyTorch's exactly at each kink and threshold and in the far tails, in float64, float32 and
float16, and on integer and bool input; by hand, the gradient at each kink, exact tails, the op a
composed function ends in, and every bad argument."""

from __future__ import annotations

import math

import numpy as np
import pytest
from activation_cases import one_input_calls
from op_samples import rng_for
from samples.activations import pytorch_activations as sampled

import minitrain as mt
from minitrain import nn, ops
from minitrain.errors import ArgumentError, DTypeError, ShapeError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)

SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


CALLS = one_input_calls(sampled.SAMPLES, sampled.COMPOSED)
# where PyTorch's own gradient is less exact than the reference needs: softsign's, composed
# (1/b - |x|/b^2, b = 1 + |x|), cancels for large |x| (1e-60 at 1e30, where ours is exact)
GRAD_ATOL = {"softsign": 1e-18}

# Every kink and threshold of the functions above, exactly, and either side of it; zero; and
# magnitudes from small to far beyond where exp overflows; and each negated, as a second row
# (glu halves either dim).
KINKS = [-3.0, -2.0, -1.0, 0.0, 1.0, 3.0, 5.0, 6.0, 10.0, 20.0]
GRID = np.concatenate(
    [
        KINKS,
        np.array(KINKS) - 1e-3,
        np.array(KINKS) + 1e-3,
        [1e-8, -1e-8, 0.5, -0.5, 2.5, -7.0, 15.0, -25.0, 40.0, -40.0],
        [88.0, -88.0, 100.0, -100.0, 800.0, -800.0, 1e4, -1e4, 1e30, -1e30],
    ]
)
GRID = np.stack([GRID, -GRID])  # (2, 50)


def _both(torch, name, values, dtype):
    """(ours, theirs): each the (value, gradient) of CALLS[name] at values, seeded with the
    same upstream gradient."""
    sample = CALLS[name]
    x = mt.tensor(values.astype(dtype), requires_grad=True)
    out = sample.call(x)
    upstream = np.random.default_rng(3).uniform(0.5, 1.5, out.shape).astype(dtype)
    out.backward(upstream)
    x_ref = torch.tensor(values.astype(dtype), requires_grad=True)
    expected = sample.ref(x_ref)
    expected.backward(torch.from_numpy(upstream))
    assert out.dtype == np.dtype(dtype) and x.grad.dtype == np.dtype(dtype)
    assert out.shape == tuple(expected.shape)
    return (out.array, x.grad.array), (expected.detach().numpy(), x_ref.grad.numpy())


@pytest.mark.parametrize("name", sorted(CALLS))
def test_float64_values_and_gradients_match_torch_at_kinks_and_in_the_tails(torch, name):
    (out, grad), (want_out, want_grad) = _both(torch, name, GRID, np.float64)
    np.testing.assert_allclose(out, want_out, rtol=1e-13, atol=1e-300)
    # a sample's looser tolerance says where PyTorch's gradient is rounded (hardsigmoid's 1/6,
    # rounded to float32 in its float64 kernel)
    ref_rtol = CALLS[name].ref_rtol
    rtol = ref_rtol if ref_rtol > 1e-10 else 1e-13
    atol = GRAD_ATOL.get(name.split("-")[0], 1e-300)
    np.testing.assert_allclose(grad, want_grad, rtol=rtol, atol=atol)
    assert np.isfinite(out).all() and np.isfinite(grad).all()


@pytest.mark.parametrize("name", sorted(CALLS))
def test_float32_matches_torch_without_overflow(torch, name):
    (out, grad), (want_out, want_grad) = _both(torch, name, GRID, np.float32)
    assert np.isfinite(out).all() and np.isfinite(grad).all()
    np.testing.assert_allclose(out, want_out, rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(grad, want_grad, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_float16_stays_float16_and_matches_torch(torch, name):
    # -8 to 8 twice, and small values, laid out so that glu's gate (the second half, along
    # either dim) is large only where the value it gates is small: minitrain computes a float16
    # sigmoid in float16, where 1 + exp(-8) rounds to 1, and PyTorch's in float32, so their
    # sigmoid'(8) = s (1 - s) differ wholly (a float16 difference of the sigmoid op's own)
    wide, small = np.linspace(-8.0, 8.0, 17), np.linspace(-0.5, 0.5, 17)
    values = np.stack([np.concatenate([wide, small]), np.concatenate([small[::-1], wide])])
    (out, grad), (want_out, want_grad) = _both(torch, name, values, np.float16)
    np.testing.assert_allclose(out, want_out, rtol=1e-2, atol=2e-3)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-2, atol=2e-3)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_integer_and_bool_input_as_torch(torch, name, dtype):
    """Computed where PyTorch computes it (relu6 and hardtanh stay integer, their fractional
    limits truncated toward 0; softsign and tanhshrink become float32), a DTypeError or
    ArgumentError naming the function where PyTorch refuses."""
    values = np.array([[-2, 0, 1, 3], [7, 200, -5, 4]]).astype(dtype)
    sample = CALLS[name]
    try:
        expected = sample.ref(torch.from_numpy(values))
    except (RuntimeError, NotImplementedError):
        expected = None
    if expected is None:
        with pytest.raises((DTypeError, ArgumentError), match=r"^[a-z0-9_]+: "):
            sample.call(mt.tensor(values))
        return
    out = sample.call(mt.tensor(values))
    assert out.dtype == np.dtype(str(expected.dtype).removeprefix("torch."))
    np.testing.assert_allclose(out.array, expected.numpy(), rtol=1e-6)


# (call, x, the gradient there as PyTorch defines it)
KINK_GRADIENTS = {
    "relu6": (ops.relu6, [0.0, 6.0, 3.0], [0.0, 0.0, 1.0]),
    "hardtanh": (ops.hardtanh, [-1.0, 1.0, 0.0], [0.0, 0.0, 1.0]),
    "elu": (ops.elu, [0.0], [1.0]),
    "elu_alpha0.5": (lambda x: ops.elu(x, 0.5), [0.0], [0.5]),
    "selu": (ops.selu, [0.0], [SELU_SCALE * SELU_ALPHA]),
    "celu_alpha2": (lambda x: ops.celu(x, 2.0), [0.0], [1.0]),
    "hardswish": (ops.hardswish, [-3.0, 3.0, 0.0], [0.0, 1.0, 0.5]),
    "hardsigmoid": (ops.hardsigmoid, [-3.0, 3.0, 0.0], [0.0, 0.0, 1 / 6]),
    "prelu": (
        lambda x: ops.prelu(x, mt.tensor(np.array([0.25]))),
        [0.0, -1.0, 1.0],
        [0.25, 0.25, 1.0],
    ),
    "softplus": (ops.softplus, [20.0, 20.5, 0.0], [1 / (1 + math.exp(-20.0)), 1.0, 0.5]),
    "softsign": (ops.softsign, [0.0], [1.0]),
    "mish": (ops.mish, [0.0], [0.6]),
    "logsigmoid": (ops.logsigmoid, [0.0], [0.5]),
}


@pytest.mark.parametrize("name", sorted(KINK_GRADIENTS))
def test_gradient_at_the_kinks_is_torchs(name):
    call, values, expected = KINK_GRADIENTS[name]
    x = mt.tensor(np.array(values), requires_grad=True)
    call(x).sum().backward()
    np.testing.assert_allclose(x.grad.array, expected, rtol=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tails_are_exact(dtype):
    x = mt.tensor(np.array([-1e4, -800.0, 800.0, 1e4], dtype))
    np.testing.assert_array_equal(F.softplus(x).array, [0.0, 0.0, 800.0, 1e4])
    np.testing.assert_array_equal(F.softplus(x, 1.0, 1e9).array, [0.0, 0.0, 800.0, 1e4])
    np.testing.assert_array_equal(F.logsigmoid(x).array, [-1e4, -800.0, 0.0, 0.0])
    np.testing.assert_array_equal(F.mish(x).array, [0.0, 0.0, 800.0, 1e4])
    np.testing.assert_array_equal(F.elu(x).array, [-1.0, -1.0, 800.0, 1e4])
    rtol = 1e-7 if dtype == np.float32 else 1e-16
    np.testing.assert_allclose(F.selu(x).array[:2], [-SELU_SCALE * SELU_ALPHA] * 2, rtol=rtol)
    np.testing.assert_allclose(
        F.softsign(x).array, [-1e4 / 10001, -800 / 801, 800 / 801, 1e4 / 10001], rtol=rtol
    )


# the backward kernel at the root of each composed function's graph: the op it ends in
COMPOSED_ROOTS = {
    "relu6": "HardtanhGrad",
    "selu": "EluGrad",
    "celu": "EluGrad",
    "tanhshrink": "SubGrad",
    "glu": "MulGrad",
}


@pytest.mark.parametrize("name", sorted(COMPOSED_ROOTS))
def test_a_composed_function_ends_in_the_op_it_is_made_of(name):
    out = getattr(ops, name)(mt.tensor(np.ones((2, 4)), requires_grad=True))
    assert out.grad_fn.name == COMPOSED_ROOTS[name]
    assert name not in ops.registry()


@pytest.mark.parametrize("op_name", sorted(sampled.SAMPLES))
def test_an_ops_graph_ends_in_its_own_kernel(op_name):
    sample = sampled.SAMPLES[op_name][0]
    inputs = [mt.tensor(v, requires_grad=True) for v in sample.make(rng_for(op_name, sample))]
    assert sample.call(*inputs).grad_fn.name == ops.registry()[op_name].grad_kernel


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
    got = F.hardtanh(mt.tensor(values), *limits).array
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
    (lambda: F.glu(x23, 0.5), DTypeError, r"^glu: takes one int dim, got 0\.5"),
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
