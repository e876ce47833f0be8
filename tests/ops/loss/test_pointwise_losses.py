"""The other losses: nll_loss, the pointwise losses and the binary cross entropy of logits, by
float64 gradient checks and against PyTorch; and every loss's backward kernel name."""

from __future__ import annotations

import numpy as np
import pytest
from loss_cases import REDUCTIONS, grads_of, random_upstream

import minitrain as mt
from minitrain import ops

POINTWISE = [
    ("mse_loss", {}),
    ("l1_loss", {}),
    ("smooth_l1_loss", {"beta": 0.7}),
    ("smooth_l1_loss", {"beta": 0.0}),
    ("huber_loss", {"delta": 0.7}),
]


def _pointwise_params():
    return [
        pytest.param(name, kw, reduction, id=f"{name}{kw}-{reduction}".replace("'", ""))
        for name, kw in POINTWISE
        for reduction in REDUCTIONS
    ]


@pytest.mark.parametrize("name, kw, reduction", _pointwise_params())
def test_pointwise_losses_gradcheck_and_torch(name, kw, reduction):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4))
    fn = getattr(ops, name)
    inputs = [mt.tensor(a, requires_grad=True), mt.tensor(b, requires_grad=True)]
    assert mt.gradcheck(lambda x, y: fn(x, y, reduction=reduction, **kw), inputs)
    torch = pytest.importorskip("torch")
    out = fn(*inputs, reduction=reduction, **kw)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    expected = getattr(torch.nn.functional, name)(ta, tb, reduction=reduction, **kw)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-13)
    upstream = random_upstream(out)
    want = torch.autograd.grad(expected, [ta, tb], torch.tensor(upstream))
    for got, theirs in zip(grads_of(out, inputs, upstream), want, strict=True):
        np.testing.assert_allclose(got, theirs.numpy(), rtol=1e-13, atol=1e-15)


def test_huber_is_delta_times_smooth_l1():
    rng = np.random.default_rng(0)
    a, b = mt.tensor(rng.standard_normal(20)), mt.tensor(rng.standard_normal(20))
    np.testing.assert_allclose(
        ops.huber_loss(a, b, delta=0.4).array, 0.4 * ops.smooth_l1_loss(a, b, beta=0.4).array
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "weights", ["none", "weight", "pos_weight", "both"], ids=lambda w: f"weights_{w}"
)
def test_bce_with_logits_gradcheck_and_torch(weights, reduction):
    rng = np.random.default_rng(0)
    x, t = 3 * rng.standard_normal((2, 3, 4)), rng.uniform(0, 1, (2, 3, 4))
    w = rng.uniform(0.5, 2, (3, 1)) if weights in ("weight", "both") else None
    pw = rng.uniform(0.5, 3, 4) if weights in ("pos_weight", "both") else None
    inputs = [mt.tensor(x, requires_grad=True), mt.tensor(t, requires_grad=True)]

    def loss(logits, target):
        return ops.binary_cross_entropy_with_logits(
            logits, target, w, reduction=reduction, pos_weight=pw
        )

    assert mt.gradcheck(loss, inputs)
    torch = pytest.importorskip("torch")
    out = loss(*inputs)
    tx, tt = torch.tensor(x, requires_grad=True), torch.tensor(t, requires_grad=True)
    expected = torch.nn.functional.binary_cross_entropy_with_logits(
        tx,
        tt,
        None if w is None else torch.tensor(w),
        reduction=reduction,
        pos_weight=None if pw is None else torch.tensor(pw),
    )
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-13)
    upstream = random_upstream(out)
    want = torch.autograd.grad(expected, [tx, tt], torch.tensor(upstream))
    for got, theirs in zip(grads_of(out, inputs, upstream), want, strict=True):
        np.testing.assert_allclose(got, theirs.numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bce_with_logits_of_magnitude_1e4(dtype):
    x = mt.tensor(np.array([1e4, -1e4, 1e4, -1e4], dtype), requires_grad=True)
    t = mt.tensor(np.array([1.0, 1.0, 0.0, 0.0], dtype), requires_grad=True)
    pos_weight = np.array(3.0, dtype)
    out = ops.binary_cross_entropy_with_logits(x, t, reduction="none", pos_weight=pos_weight)
    # confident and right: 0; confident and wrong: |x|, times pos_weight for a missed positive
    np.testing.assert_allclose(out.array, [0.0, 3e4, 1e4, 0.0])
    dx, dt = grads_of(out, [x, t], np.ones(4, dtype))
    np.testing.assert_allclose(dx, [0.0, -3.0, 1.0, 0.0])
    assert np.all(np.isfinite(dt))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_rank4_gradcheck_and_torch(reduction):
    rng = np.random.default_rng(0)
    log_probs = rng.standard_normal((2, 3, 2, 2))
    target = rng.integers(0, 3, (2, 2, 2))
    target[0, 0, 0] = -100
    weight = rng.uniform(0.5, 2, 3)
    x = mt.tensor(log_probs, requires_grad=True)
    assert mt.gradcheck(lambda v: ops.nll_loss(v, target, weight, reduction=reduction), [x])
    torch = pytest.importorskip("torch")
    out = ops.nll_loss(x, target, weight, reduction=reduction)
    tx = torch.tensor(log_probs, requires_grad=True)
    expected = torch.nn.functional.nll_loss(
        tx, torch.tensor(target), torch.tensor(weight), reduction=reduction
    )
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-13)
    upstream = random_upstream(out)
    (want,) = torch.autograd.grad(expected, [tx], torch.tensor(upstream))
    np.testing.assert_allclose(grads_of(out, [x], upstream)[0], want.numpy(), rtol=1e-13)


@pytest.mark.parametrize(
    "op_name, kernel",
    [
        ("cross_entropy", "SoftmaxCrossEntropyGrad"),
        ("nll_loss", "NLLLossGrad"),
        ("mse_loss", "MSELossGrad"),
        ("l1_loss", "L1LossGrad"),
        ("smooth_l1_loss", "SmoothL1LossGrad"),
        ("huber_loss", "HuberLossGrad"),
        ("binary_cross_entropy_with_logits", "BinaryCrossEntropyWithLogitsGrad"),
    ],
)
def test_backward_kernel_display_names(op_name, kernel):
    assert ops.registry()[op_name].grad_kernel == kernel
