"""Second derivatives of the losses against formulas worked out by hand (the registry's tests
compare them with finite differences and PyTorch): Hessians of cross entropy, the binary cross
entropies and the regression losses, the mixed derivatives in a probability target, and the
cases the sample table leaves out (numba's forward, a 'sum' with every target ignored)."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import ops


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _hessian(loss_of, x):
    """The Hessian of the scalar loss_of(x) in x, flattened to (x.size, x.size), one
    create_graph gradient and one row of its gradient at a time."""
    (first,) = mt.grad(loss_of(x), [x], create_graph=True)
    rows = []
    for k in range(x.array.size):
        pick = np.zeros(x.array.size)
        pick[k] = 1
        (row,) = mt.grad(
            (first * mt.tensor(pick.reshape(x.shape))).sum(),
            [x],
            retain_graph=True,
            allow_unused=True,
        )
        rows.append(np.zeros(x.array.size) if row is None else row.array.ravel())
    return np.stack(rows)


def test_cross_entropy_hessian_is_the_softmax_jacobian(numba):
    """Per row, d2/dlogits2 of -log softmax(x)[t] is diag(p) - p p^T, whatever t; rows do not
    mix. With 'mean' over N rows it is that over N."""
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((3, 4))
    target = np.array([0, 3, 1])
    x = mt.tensor(logits, requires_grad=True)
    hessian = _hessian(lambda v: ops.cross_entropy(v, target), x)
    p = _softmax(logits)
    expected = np.zeros((12, 12))
    for row in range(3):
        block = slice(4 * row, 4 * row + 4)
        expected[block, block] = (np.diag(p[row]) - np.outer(p[row], p[row])) / 3
    np.testing.assert_allclose(hessian, expected, rtol=1e-12, atol=1e-15)


def test_cross_entropy_with_weight_smoothing_and_ignored_rows_scales_the_jacobian():
    """q = w * ((1 - eps) onehot + eps / C): the Hessian of a row is sum_c(q_c) times softmax's
    Jacobian, 0 for an ignored row; 'sum' adds the rows up."""
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((3, 3))
    target = np.array([2, -100, 0])
    weight = np.array([0.5, 2.0, 1.5])
    eps = 0.3
    x = mt.tensor(logits, requires_grad=True)
    hessian = _hessian(
        lambda v: ops.cross_entropy(
            v, target, mt.tensor(weight), reduction="sum", label_smoothing=eps
        ),
        x,
    )
    p = _softmax(logits)
    expected = np.zeros((9, 9))
    for row, t in enumerate(target):
        if t == -100:
            continue
        q_sum = (1 - eps) * weight[t] + eps / 3 * weight.sum()
        block = slice(3 * row, 3 * row + 3)
        expected[block, block] = q_sum * (np.diag(p[row]) - np.outer(p[row], p[row]))
    np.testing.assert_allclose(hessian, expected, rtol=1e-12, atol=1e-15)


def test_cross_entropy_mixed_derivative_in_a_probability_target():
    """dlogits_k = s (sum_c(q_c) p_k - q_k), q = w ((1 - eps) t + eps / C), so
    d(dlogits_k)/dt_j = s (1 - eps) (w_j p_k - w_k [j = k]); and dtarget = -s (1 - eps) w
    log p is flat in t."""
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((2, 3))
    probs = _softmax(rng.standard_normal((2, 3)))
    weight = np.array([1.5, 0.5, 2.0])
    eps = 0.2
    x = mt.tensor(logits, requires_grad=True)
    t = mt.tensor(probs, requires_grad=True)
    loss = ops.cross_entropy(x, t, mt.tensor(weight), reduction="sum", label_smoothing=eps)
    dx, dt = mt.grad(loss, [x, t], create_graph=True)
    p = _softmax(logits)
    for row in range(2):
        for k in range(3):
            pick = np.zeros((2, 3))
            pick[row, k] = 1
            (mixed,) = mt.grad((dx * mt.tensor(pick)).sum(), [t], retain_graph=True)
            expected = np.zeros((2, 3))
            expected[row] = (1 - eps) * weight * p[row, k]
            expected[row, k] -= (1 - eps) * weight[k]
            np.testing.assert_allclose(mixed.array, expected, rtol=1e-12, atol=1e-15)
    (flat,) = mt.grad(dt.sum(), [t], allow_unused=True)
    assert flat is None or not np.any(flat.array)


def test_cross_entropy_numba_forward_takes_the_same_second_derivative(numba):
    """The tensor backward recomputes softmax from the saved logits, so the kernels that ran
    the forward do not matter: generic and numba agree with the hand formula."""
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((4, 5))
    target = np.array([1, 4, 0, 2])
    direction = rng.standard_normal((4, 5))
    x = mt.tensor(logits, requires_grad=True)
    (dx,) = mt.grad(ops.cross_entropy(x, target, reduction="sum"), [x], create_graph=True)
    (second,) = mt.grad((dx * mt.tensor(direction)).sum(), [x])
    p = _softmax(logits)
    expected = p * direction - p * (p * direction).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(second.array, expected, rtol=1e-12, atol=1e-15)


def test_cross_entropy_sum_with_every_target_ignored_has_zero_second_derivative():
    """Only 'mean' divides by the summed target weights: a 'sum' over ignored targets is 0,
    and so are its derivatives, create_graph or not (no division by 0 is raised)."""
    x = mt.tensor(np.random.default_rng(4).standard_normal((2, 3)), requires_grad=True)
    loss = ops.cross_entropy(x, np.array([-100, -100]), reduction="sum")
    (dx,) = mt.grad(loss, [x], create_graph=True)
    assert not np.any(dx.array)
    (second,) = mt.grad(dx.sum(), [x], allow_unused=True)
    assert second is None or not np.any(second.array)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_nll_loss_gradient_is_linear_in_the_upstream_gradient(reduction):
    """dlog_probs = -s w[t] onehot(t): flat in log_probs, and its derivative in the upstream
    gradient g is -w[t] (over D for 'mean') at the target class, summed over the direction."""
    rng = np.random.default_rng(5)
    log_probs = rng.standard_normal((3, 4))
    target = np.array([1, -100, 3])
    weight = np.array([0.5, 2.0, 1.0, 3.0])
    x = mt.tensor(log_probs, requires_grad=True)
    out = ops.nll_loss(x, target, mt.tensor(weight), reduction=reduction)
    upstream = mt.tensor(rng.standard_normal(out.shape), requires_grad=True)
    (dx,) = mt.grad(out, [x], upstream, create_graph=True)
    direction = rng.standard_normal((3, 4))
    total = (dx * mt.tensor(direction)).sum()
    d_upstream, d_logp = mt.grad(total, [upstream, x], allow_unused=True)
    assert d_logp is None or not np.any(d_logp.array)
    picked = np.array([-weight[1] * direction[0, 1], 0.0, -weight[3] * direction[2, 3]])
    if reduction == "mean":
        picked /= weight[1] + weight[3]
    expected = picked if reduction == "none" else picked.sum()
    np.testing.assert_allclose(d_upstream.array, expected, rtol=1e-13)


def test_binary_cross_entropy_second_derivatives_are_exact():
    """l = -(t log x + (1 - t) log(1 - x)): d2l/dx2 = (x^2 - 2 x t + t) / (x (1 - x))^2 and
    d2l/dx dt = -1 / (x (1 - x)), exactly (PyTorch's d2l/dx2 adds 1e-12 to x and 1 - x), and
    d2l/dt2 = 0."""
    x_values = np.array([1e-3, 0.3, 0.7, 0.999])
    t_values = np.array([0.02, 0.5, 1.0, 0.0])
    x = mt.tensor(x_values, requires_grad=True)
    t = mt.tensor(t_values, requires_grad=True)
    loss = ops.binary_cross_entropy(x, t, reduction="sum")
    dx, dt = mt.grad(loss, [x, t], create_graph=True)
    d_xx, d_xt = mt.grad(dx.sum(), [x, t])
    d_tx, d_tt = mt.grad(dt.sum(), [x, t], allow_unused=True)
    spread = x_values * (1 - x_values)
    expected_xx = (x_values**2 - 2 * x_values * t_values + t_values) / spread**2
    np.testing.assert_allclose(d_xx.array, expected_xx, rtol=1e-12)
    np.testing.assert_allclose(d_xt.array, -1 / spread, rtol=1e-12)
    np.testing.assert_allclose(d_tx.array, -1 / spread, rtol=1e-12)
    assert d_tt is None or not np.any(d_tt.array)


def test_binary_cross_entropy_with_logits_second_derivatives():
    """l = w [(1 - t) x + (1 + (p - 1) t) softplus(-x)]: d2l/dx2 = w (1 + (p - 1) t)
    sigmoid(x) sigmoid(-x), d2l/dx dt = -w (1 + (p - 1) sigmoid(-x)), d2l/dt2 = 0."""
    rng = np.random.default_rng(6)
    x_values = 3 * rng.standard_normal((2, 3))
    t_values = rng.uniform(0, 1, (2, 3))
    weight = rng.uniform(0.5, 2, (2, 1))
    pos_weight = rng.uniform(0.5, 3, (3,))
    x = mt.tensor(x_values, requires_grad=True)
    t = mt.tensor(t_values, requires_grad=True)
    loss = ops.binary_cross_entropy_with_logits(
        x, t, mt.tensor(weight), reduction="sum", pos_weight=mt.tensor(pos_weight)
    )
    dx, dt = mt.grad(loss, [x, t], create_graph=True)
    d_xx, d_xt = mt.grad(dx.sum(), [x, t])
    (d_tt,) = mt.grad(dt.sum(), [t], allow_unused=True)
    sig, sig_neg = _sigmoid(x_values), _sigmoid(-x_values)
    expected_xx = weight * (1 + (pos_weight - 1) * t_values) * sig * sig_neg
    np.testing.assert_allclose(d_xx.array, expected_xx, rtol=1e-12)
    np.testing.assert_allclose(d_xt.array, -weight * (1 + (pos_weight - 1) * sig_neg), rtol=1e-12)
    assert d_tt is None or not np.any(d_tt.array)


@pytest.mark.parametrize(
    "loss_of, inside, outside",
    [
        (lambda x, t: ops.mse_loss(x, t, reduction="sum"), 2.0, 2.0),
        (lambda x, t: ops.l1_loss(x, t, reduction="sum"), 0.0, 0.0),
        (lambda x, t: ops.huber_loss(x, t, reduction="sum", delta=0.5), 1.0, 0.0),
        (lambda x, t: ops.smooth_l1_loss(x, t, reduction="sum", beta=0.5), 2.0, 0.0),
        (lambda x, t: ops.smooth_l1_loss(x, t, reduction="sum", beta=0.0), 0.0, 0.0),
    ],
    ids=["mse", "l1", "huber", "smooth_l1", "smooth_l1_beta_0"],
)
def test_regression_losses_curvature_inside_and_outside_the_quadratic_part(
    loss_of, inside, outside
):
    """d2l/dx2 per position of a loss of d = x - t: its curvature where |d| < 0.5 (inside)
    and where |d| > 0.5 (outside); d2l/dx dt is its negative."""
    d = np.array([0.1, -0.3, 1.2, -2.0])
    t_values = np.array([0.4, -1.0, 0.5, 2.0])
    x = mt.tensor(t_values + d, requires_grad=True)
    t = mt.tensor(t_values, requires_grad=True)
    (dx,) = mt.grad(loss_of(x, t), [x], create_graph=True)
    # a flat slope (l1's sign) is a constant: dx then has no graph at all, as abs's has not
    d_xx, d_xt = mt.grad(dx.sum(), [x, t], allow_unused=True) if dx.requires_grad else (None, None)
    expected = np.where(np.abs(d) < 0.5, inside, outside)
    np.testing.assert_allclose(np.zeros(4) if d_xx is None else d_xx.array, expected, rtol=1e-13)
    np.testing.assert_allclose(np.zeros(4) if d_xt is None else d_xt.array, -expected, rtol=1e-13)


def test_mse_mean_hessian_is_two_over_the_size():
    x = mt.tensor(np.random.default_rng(7).standard_normal((2, 3)), requires_grad=True)
    target = np.random.default_rng(8).standard_normal((2, 3))
    np.testing.assert_allclose(
        _hessian(lambda v: ops.mse_loss(v, target), x), np.eye(6) * 2 / 6, rtol=1e-13
    )
