"""Second and third derivatives of the activations (create_graph), checked by hand in float64:
closed forms to the third order (sigmoid'' = s (1 - s) (1 - 2 s), tanh'', gelu'' = phi (2 - x^2),
...), the kinked ones' zero second derivative with a gradient still linear in the upstream
gradient, softmax and log_softmax against their Hessians, and every sample's call at every kink
and in the far tails against PyTorch's double backward (the samples compare second derivatives
with PyTorch's away from the kinks: tests/ops/test_second_order.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from activation_cases import one_input_calls
from samples.activations import activation, pytorch_activations

import minitrain as mt
from minitrain import ops

X = np.array([-30.0, -6.0, -2.5, -1.0, -0.3, 0.2, 0.7, 1.5, 3.2, 7.0, 25.0])


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _phi(x):
    return np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def _cdf(x):
    return 0.5 * np.vectorize(math.erfc)(-x / math.sqrt(2.0))


def _derivatives(fn, values, order: int) -> list[np.ndarray]:
    """The elementwise fn's derivatives of orders 1 to `order` at values: each the gradient of
    the sum of the one before, taken with create_graph."""
    x = mt.tensor(values, requires_grad=True)
    current, found = fn(x), []
    for _ in range(order):
        (current,) = mt.grad(current.sum(), [x], create_graph=True)
        found.append(current.array.copy())
    return found


s, t = _sigmoid(X), np.tanh(X)
# to the third order (the second derivatives of every activation against PyTorch's: below)
CLOSED_FORMS = {
    "sigmoid": (
        ops.sigmoid,
        [s * (1 - s), s * (1 - s) * (1 - 2 * s), s * (1 - s) * (1 - 6 * s + 6 * s * s)],
    ),
    "tanh": (ops.tanh, [1 - t * t, -2 * t * (1 - t * t), (1 - t * t) * (6 * t * t - 2)]),
    # gelu = x Phi(x): gelu' = Phi + x phi, gelu'' = phi (2 - x^2), gelu''' = phi (x^3 - 4 x)
    "gelu": (
        ops.gelu,
        [_cdf(X) + X * _phi(X), _phi(X) * (2 - X * X), _phi(X) * (X**3 - 4 * X)],
    ),
}


@pytest.mark.parametrize("name", list(CLOSED_FORMS))
def test_higher_derivatives_match_their_closed_forms(name):
    fn, expected = CLOSED_FORMS[name]
    found = _derivatives(fn, X, len(expected))
    for order, (got, want) in enumerate(zip(found, expected, strict=True), start=1):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15, err_msg=f"order {order}")


def test_gelu_tanh_second_derivative_matches_its_closed_form():
    # gelu = x/2 (1 + tanh(u)), u = c (x + k x^3): with T = tanh(u) and u' = c (1 + 3 k x^2),
    # gelu'' = (1 - T^2) u' + x/2 (1 - T^2) (-2 T u'^2 + 6 c k x)
    c, k = math.sqrt(2 / math.pi), 0.044715
    big_t = np.tanh(c * (X + k * X**3))
    slope = c * (1 + 3 * k * X * X)
    want = (1 - big_t**2) * slope + X / 2 * (1 - big_t**2) * (-2 * big_t * slope**2 + 6 * c * k * X)
    (_, got) = _derivatives(lambda x: ops.gelu(x, "tanh"), X, 2)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


# (function, the slope its gradient multiplies the upstream gradient by, at X)
KINKED = {
    "relu": (ops.relu, (X > 0) * 1.0),
    "leaky_relu": (lambda x: ops.leaky_relu(x, 0.2), np.where(X > 0, 1.0, 0.2)),
    "hardtanh": (lambda x: ops.hardtanh(x, -2.0, 3.0), ((X > -2) & (X < 3)) * 1.0),
    "relu6": (ops.relu6, ((X > 0) & (X < 6)) * 1.0),
    "hardsigmoid": (ops.hardsigmoid, ((X > -3) & (X < 3)) / 6.0),
}


@pytest.mark.parametrize("name", list(KINKED))
def test_piecewise_linear_ones_have_gradients_linear_in_grad_and_no_curvature(name):
    fn, slope = KINKED[name]
    rng = np.random.default_rng(0)
    x = mt.tensor(X, requires_grad=True)
    upstream = mt.tensor(rng.standard_normal(X.shape), requires_grad=True)
    across = rng.standard_normal(X.shape)
    (first,) = mt.grad(fn(x), [x], upstream, create_graph=True)
    assert first.requires_grad  # a graph in the upstream gradient
    np.testing.assert_allclose(first.array, slope * upstream.array, rtol=1e-15, atol=0)
    d_x, d_upstream = mt.grad((first * mt.tensor(across)).sum(), [x, upstream], allow_unused=True)
    assert d_x is None or not np.any(d_x.array)
    np.testing.assert_allclose(d_upstream.array, slope * across, rtol=1e-15, atol=0)


def test_prelu_mixed_second_derivatives_are_the_upstream_gradient_where_x_is_not_positive():
    rng = np.random.default_rng(1)
    # at x = 0, dx = weight * grad exactly (PyTorch's first derivative too), so its derivative
    # in weight is grad there; PyTorch's double backward says 0 (it tests x >= 0), which
    # contradicts its own first derivative
    values = np.array([[-1.5, 0.5, 0.0], [2.0, -3.0, 0.7]])
    x = mt.tensor(values, requires_grad=True)
    weight = mt.tensor(np.array([0.25, -0.5, 0.1]), requires_grad=True)
    upstream = rng.standard_normal(values.shape)
    dx, dweight = mt.grad(ops.prelu(x, weight), [x, weight], mt.tensor(upstream), create_graph=True)
    wx = rng.standard_normal(values.shape)
    ww = rng.standard_normal(3)
    total = (dx * mt.tensor(wx)).sum() + (dweight * mt.tensor(ww)).sum()
    d_x, d_weight = mt.grad(total, [x, weight])
    negative = values <= 0
    # d<dx, wx>/dweight_c = sum of upstream * wx where x <= 0; d<dweight, ww>/dx = upstream * ww_c
    np.testing.assert_allclose(d_weight.array, np.where(negative, upstream * wx, 0).sum(axis=0))
    np.testing.assert_allclose(d_x.array, np.where(negative, upstream * ww, 0))


@pytest.mark.parametrize("axis", [0, 1])
def test_softmax_and_log_softmax_second_derivatives_match_their_hessians(axis):
    rng = np.random.default_rng(2)
    values = rng.standard_normal((3, 4))
    v, w = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    p = np.exp(values) / np.exp(values).sum(axis=axis, keepdims=True)

    def along(a):
        return a.sum(axis=axis, keepdims=True)

    def second(fn):
        x = mt.tensor(values, requires_grad=True)
        (first,) = mt.grad(fn(x, axis), [x], mt.tensor(v), create_graph=True)
        (found,) = mt.grad((first * mt.tensor(w)).sum(), [x])
        return found.array

    # log_softmax: first = v - p sum(v); d<first, w>/dx = -sum(v) (p w - p (p . w)), the
    # Hessian of logsumexp being diag(p) - p p^T
    np.testing.assert_allclose(
        second(ops.log_softmax), -along(v) * (p * w - p * along(p * w)), rtol=1e-12, atol=1e-15
    )
    # softmax: first = p (v - c), c = p . v; with a = w (v - c),
    # d<first, w>/dx = p (a - p . a) - (p . w) p (v - c)
    c = along(p * v)
    a = w * (v - c)
    np.testing.assert_allclose(
        second(ops.softmax), p * (a - along(p * a)) - along(p * w) * p * (v - c), rtol=1e-12
    )


# Every kink and threshold exactly and a little either side, and far tails.
GRID = np.array(
    [-3.0, -2.0, -1.0, 0.0, 1.0, 3.0, 6.0, 10.0, 20.0, 1e-8, -1e-8, 0.5, -0.5, 2.5, -7.0]
    + [-2.999, 2.999, 19.999, 20.001, 40.0, -40.0, 100.0, -100.0, 700.0, -700.0, -800.0]
)
# every one-input call of the activations' samples, and PyTorch's, where PyTorch's own op has a
# double backward consistent with its first derivative (not where a sample stands in for it,
# `second_order_ref`: hardsigmoid's has none, mish's overflows; prelu, which takes a weight too:
# see the prelu test above)
AT_KINKS = {
    name: sample
    for name, sample in one_input_calls(
        activation.SAMPLES, pytorch_activations.SAMPLES, pytorch_activations.COMPOSED
    ).items()
    if sample.second_order_ref is None
}


@pytest.mark.parametrize("name", sorted(AT_KINKS))
def test_second_derivatives_at_kinks_and_in_the_tails_match_torch(name, torch):
    sample = AT_KINKS[name]
    grid = np.stack([GRID, -GRID])  # (glu halves either dim)
    rng = np.random.default_rng(3)

    x = mt.tensor(grid, requires_grad=True)
    out = sample.call(x)
    upstream, across = rng.standard_normal(out.shape), rng.standard_normal(grid.shape)
    v = mt.tensor(upstream, requires_grad=True)
    (first,) = mt.grad(out, [x], v, create_graph=True)
    ours = mt.grad((first * mt.tensor(across)).sum(), [x, v], allow_unused=True)
    ours = [
        np.zeros(g.shape) if d is None else d.array
        for d, g in zip(ours, (grid, upstream), strict=True)
    ]

    tx = torch.tensor(grid, requires_grad=True)
    tv = torch.tensor(upstream, requires_grad=True)
    (their_first,) = torch.autograd.grad(sample.ref(tx), tx, tv, create_graph=True)
    theirs = torch.autograd.grad(
        (their_first * torch.from_numpy(across)).sum(), [tx, tv], allow_unused=True
    )
    theirs = [
        np.zeros(g.shape) if d is None else d.numpy()
        for d, g in zip(theirs, (grid, upstream), strict=True)
    ]

    # (an absolute tolerance for the far tails, where PyTorch's formulas round differently:
    # gelu's tanh form 3e-15 apart at x = 6)
    np.testing.assert_allclose(first.array, their_first.detach().numpy(), rtol=1e-12, atol=1e-15)
    for wrt, got, want in zip(("x", "grad"), ours, theirs, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-14, err_msg=f"d/d{wrt}")


def test_mish_second_derivative_is_zero_far_right_where_torch_overflows(torch):
    # PyTorch's double backward of mish is nan for x past ~709 (exp overflows in its softplus
    # double backward); mish(x) = x there, so mish'' is 0: ours, finite everywhere, is 0 there
    # and PyTorch's elsewhere.
    values = np.array([-800.0, -40.0, -1.3, 0.2, 3.0, 300.0, 710.0, 800.0, 1e30])
    first, second = _derivatives(ops.mish, values, 2)
    assert np.all(np.isfinite(second))
    np.testing.assert_array_equal(second[-3:], 0.0)
    np.testing.assert_array_equal(first[-3:], 1.0)
    tx = torch.tensor(values[:-3], requires_grad=True)
    (their_first,) = torch.autograd.grad(torch.nn.functional.mish(tx).sum(), tx, create_graph=True)
    (their_second,) = torch.autograd.grad(their_first.sum(), tx)
    np.testing.assert_allclose(second[:-3], their_second.numpy(), rtol=1e-10, atol=1e-300)


@pytest.mark.parametrize("fn", [ops.gelu, ops.softmax, ops.log_softmax, ops.mish, ops.elu])
def test_third_derivatives_pass_gradgradcheck_of_the_gradient(fn):
    # the gradient's own gradient is recorded too: gradgradcheck of x -> fn'(x) checks fn'''
    values = np.array([[-2.0, -0.4, 0.3], [0.8, 1.7, -1.1]])
    x = mt.tensor(values, requires_grad=True)

    def gradient(x):
        (found,) = mt.grad(fn(x).sum(), [x], create_graph=True)
        return found

    assert mt.gradgradcheck(gradient, [x])
