"""The activations in the tails (logits of 1e4, sigmoid of 1e4, the gelu family at 1e30) and at
the kinks (relu and leaky relu at 0), silu as quick_gelu, and gelu against PyTorch over a wide
range."""

from __future__ import annotations

import math

import numpy as np
import pytest
from activation_cases import no_float_warnings, torch_value_and_grad, value_and_grad

import minitrain as mt
from minitrain import backend, ops


@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "generic"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_of_logits_1e4_is_finite_and_exact(use_numba, dtype):
    x = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4 + 1.0]], dtype=dtype)
    dy = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]], dtype=dtype)
    with backend.use_numba(use_numba), no_float_warnings():
        y, dx = value_and_grad(ops.softmax, x, dy)
        log_y, log_dx = value_and_grad(ops.log_softmax, x, dy)
    for array in (y, dx, log_y, log_dx):
        assert np.isfinite(array).all() and array.dtype == dtype
    e = math.e
    np.testing.assert_allclose(y, [[1, 0, 0], [1 / (e + 2), 1 / (e + 2), e / (e + 2)]], rtol=1e-6)
    np.testing.assert_allclose(log_y[0], [0.0, -2e4, -1e4], rtol=1e-6)
    # row 0 is one-hot: the gradient Y * (dY - sum(Y dY)) vanishes everywhere
    np.testing.assert_allclose(dx[0], 0.0, atol=1e-6)
    # log_softmax: dY - softmax * sum(dY) = dY - (1, 0, 0) * 6
    np.testing.assert_allclose(log_dx[0], [-5.0, 2.0, 3.0], rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_of_1e4_is_exactly_0_and_1_without_warnings(dtype):
    x = mt.tensor(np.array([-1e4, -50.0, 0.0, 50.0, 1e4], dtype=dtype), requires_grad=True)
    with no_float_warnings():
        y = ops.sigmoid(x)
        y.sum().backward()
    assert y.array[0] == 0.0 and y.array[-1] == 1.0 and y.array[2] == 0.5
    assert 0.0 < y.array[1] < 1e-21  # e^-50, kept to full relative precision by the two branches
    np.testing.assert_allclose(y.array[1], math.exp(-50.0) / (1 + math.exp(-50.0)), rtol=1e-6)
    assert np.isfinite(x.grad.array).all()
    assert x.grad.array[0] == 0.0 and x.grad.array[-1] == 0.0 and x.grad.array[2] == 0.25


# Each: the call, and its limits as x -> -inf and +inf: (value, gradient) on each side, in units
# of x for the value (gelu(x) -> x for x >> 0, so "1" means the value is x itself).
TAIL_LIMITS = {
    "quick_gelu": (ops.quick_gelu, ((0, 0), (1, 1))),
    "silu": (ops.silu, ((0, 0), (1, 1))),
    "gelu": (ops.gelu, ((0, 0), (1, 1))),
    "gelu_tanh": (lambda x: ops.gelu(x, "tanh"), ((0, 0), (1, 1))),
    "quick_gelu_negative_alpha": (lambda x: ops.quick_gelu(x, -2.0), ((1, 1), (0, 0))),
}


@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "generic"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(TAIL_LIMITS))
def test_gelu_family_in_the_tails_is_exact_without_warnings(name, dtype, use_numba):
    call, (left, right) = TAIL_LIMITS[name]
    values = np.array([-1e30, -1e4, 1e4, 1e30], dtype=dtype)
    x = mt.tensor(values, requires_grad=True)
    with backend.use_numba(use_numba), no_float_warnings():
        y = call(x)
        y.sum().backward()
    value_units, grads = zip(left, left, right, right, strict=True)
    np.testing.assert_array_equal(y.array, values * np.array(value_units, dtype=dtype))
    np.testing.assert_array_equal(x.grad.array, grads)


def test_relu_gradient_at_exactly_zero_is_zero():
    x = mt.tensor(np.array([-1.0, 0.0, -0.0, 2.0]), requires_grad=True)
    ops.relu(x).sum().backward()
    np.testing.assert_array_equal(x.grad.array, [0.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(
        ops.relu_grad(np.full(3, 5.0), np.array([-1.0, 0.0, 1.0])), [0, 0, 5]
    )


@pytest.mark.parametrize("alpha", [0.01, 0.25, 0.0, 2.0])
def test_leaky_relu_gradient_at_exactly_zero_is_alpha(alpha):
    x = mt.tensor(np.array([-3.0, 0.0, 4.0]), requires_grad=True)
    y = ops.leaky_relu(x, alpha)
    np.testing.assert_array_equal(y.array, [-3.0 * alpha, 0.0, 4.0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.array, [alpha, alpha, 1.0])
    np.testing.assert_array_equal(
        ops.leaky_relu_grad(np.full(3, 2.0), np.array([-0.5, 0.0, 1.0]), alpha),
        [2 * alpha] * 2 + [2],
    )


def test_silu_is_quick_gelu_with_alpha_1_and_matches_torch(torch):
    values = np.random.default_rng(6).standard_normal((4, 5))
    x, x1 = mt.tensor(values, requires_grad=True), mt.tensor(values, requires_grad=True)
    y, y1 = ops.silu(x), ops.quick_gelu(x1, alpha=1.0)
    assert y.grad_fn.name == "QuickGeluGrad"
    np.testing.assert_array_equal(y.array, y1.array)
    y.sum().backward()
    y1.sum().backward()
    np.testing.assert_array_equal(x.grad.array, x1.grad.array)

    tx = torch.tensor(values, requires_grad=True)
    ty = torch.nn.functional.silu(tx)
    ty.sum().backward()
    np.testing.assert_allclose(y.array, ty.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.array, tx.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "generic"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_torch_over_a_wide_range(torch, approximate, dtype, use_numba):
    values = np.concatenate([np.linspace(-12.0, 12.0, 481), [0.0, -40.0, 40.0]]).astype(dtype)
    upstream = np.random.default_rng(7).standard_normal(values.shape).astype(dtype)
    with backend.use_numba(use_numba):
        y, dx = value_and_grad(lambda t: ops.gelu(t, approximate), values, upstream)
    y_want, dx_want = torch_value_and_grad(
        torch, lambda t: torch.nn.functional.gelu(t, approximate=approximate), values, upstream
    )
    # float32 near x = -5, where tanh(u) rounds to -1 or one ulp above it, 1 - t*t is 0 or 1e-7
    # (times |x| * 4 in the gradient): PyTorch and minitrain may land on either side.
    tol = {"rtol": 1e-6, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-14}
    assert y.dtype == dx.dtype == dtype
    np.testing.assert_allclose(y, y_want, **tol)
    np.testing.assert_allclose(dx, dx_want, **tol)
