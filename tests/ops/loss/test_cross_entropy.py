"""cross_entropy: float64 gradient checks of every reduction and option, agreement with
PyTorch, the fused op against the same math composed from primitive ops, its public backward
kernel, stability at logits of magnitude 1e4, and ignored targets."""

from __future__ import annotations

import math

import numpy as np
import pytest
from loss_cases import (
    CASES,
    REDUCTIONS,
    Case,
    case_params,
    grads_of,
    minitrain_xent,
    random_upstream,
)

import minitrain as mt
from minitrain import ops


@pytest.mark.parametrize("case, reduction", case_params(CASES))
def test_cross_entropy_gradcheck(case, reduction, numba):
    logits, target, weight, options = case.make()
    inputs = [mt.tensor(logits, requires_grad=True), mt.tensor(target)]
    inputs[1].requires_grad = case.probabilities
    w = None if weight is None else mt.tensor(weight)
    assert mt.gradcheck(
        lambda x, t: ops.cross_entropy(x, t, w, reduction=reduction, **options), inputs
    )


@pytest.mark.parametrize("case, reduction", case_params(CASES))
def test_cross_entropy_matches_torch(case, reduction, numba):
    torch = pytest.importorskip("torch")
    logits, target, weight, options = case.make()
    out, inputs = minitrain_xent(case, reduction)
    x = torch.tensor(logits, requires_grad=True)
    t = torch.tensor(target, requires_grad=case.probabilities)
    w = None if weight is None else torch.tensor(weight)
    expected = torch.nn.functional.cross_entropy(x, t, w, reduction=reduction, **options)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-12, atol=1e-14)

    upstream = random_upstream(out)
    want = torch.autograd.grad(
        expected, [x, t] if case.probabilities else [x], torch.tensor(upstream)
    )
    for got, theirs in zip(grads_of(out, inputs, upstream), want, strict=True):
        np.testing.assert_allclose(got, theirs.numpy(), rtol=1e-12, atol=1e-14)


def _log_softmax(x):
    """log-softmax over axis 1, composed from primitives: x - logsumexp(x)."""
    return x - ops.logsumexp(x, axis=1, keepdims=True)


def _composite_xent(x, target, weight, reduction, ignore_index=-100, smoothing=0.0):
    """PyTorch's cross entropy as written in ATen (cross_entropy_loss_label_smoothing and
    cross_entropy_loss_prob_target), from minitrain's primitive ops and nll_loss."""
    log_probs = _log_softmax(x)
    classes = x.shape[1]
    w = np.ones(classes) if weight is None else weight.array
    w_axis = mt.tensor(w.reshape((1, -1) + (1,) * (x.ndim - 2)))
    if target.dtype.kind == "f":
        q = target * (1 - smoothing) + smoothing / classes
        losses = -(q * log_probs * w_axis).sum(axis=1)
        if reduction == "mean":
            return losses.sum() / losses.numel()
        return losses.sum() if reduction == "sum" else losses
    nll = ops.nll_loss(log_probs, target, weight, ignore_index=ignore_index, reduction=reduction)
    if not smoothing:
        return nll
    valid = target.array != ignore_index
    smooth = -(log_probs * w_axis).sum(axis=1) * mt.tensor(valid.astype(np.float64))
    if reduction == "mean":
        smooth = smooth.sum() / w[np.where(valid, target.array, 0)][valid].sum()
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1 - smoothing) * nll + (smoothing / classes) * smooth


@pytest.mark.parametrize("case, reduction", case_params([c for c in CASES if len(c.shape) > 1]))
def test_fused_cross_entropy_equals_the_composite(case, reduction, numba):
    logits, target, weight, options = case.make()
    fused, fused_inputs = minitrain_xent(case, reduction)
    x = mt.tensor(logits, requires_grad=True)
    t = mt.tensor(target, requires_grad=case.probabilities)
    w = None if weight is None else mt.tensor(weight)
    composite = _composite_xent(
        x, t, w, reduction, options.get("ignore_index", -100), options["label_smoothing"]
    )
    np.testing.assert_allclose(fused.array, composite.array, rtol=1e-12, atol=1e-14)
    upstream = random_upstream(fused)
    inputs = [x, t] if case.probabilities else [x]
    for got, want in zip(
        grads_of(fused, fused_inputs, upstream), grads_of(composite, inputs, upstream), strict=True
    ):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_fused_cross_entropy_records_one_node():
    x = mt.tensor(np.zeros((3, 4)), requires_grad=True)
    with mt.Tape() as tape:
        out = ops.cross_entropy(x, np.array([0, 1, 2]))
    assert [node.name for node in tape.nodes] == ["SoftmaxCrossEntropyGrad"]
    assert out.grad_fn.name == "SoftmaxCrossEntropyGrad"
    # class targets: the probabilities are all it keeps (log_probs only for a target's gradient)
    saved = out.grad_fn.saved_arrays()
    assert saved["log_probs"] is None and saved["probs"].shape == (3, 4)


def test_probability_target_keeps_log_probs_only_when_it_needs_a_gradient():
    x = mt.tensor(np.zeros((2, 3)), requires_grad=True)
    target = np.full((2, 3), 1 / 3)
    assert ops.cross_entropy(x, target).grad_fn.saved_arrays()["log_probs"] is None
    t = mt.tensor(target, requires_grad=True)
    assert ops.cross_entropy(x, t).grad_fn.saved_arrays()["log_probs"].shape == (2, 3)


def test_softmax_cross_entropy_grad_by_hand():
    # uniform logits over 4 classes: probs 1/4; mean over 2 rows: dX = (probs - onehot) / 2
    probs = np.full((2, 4), 0.25)
    dx = ops.softmax_cross_entropy_grad(np.array(1.0), probs, np.array([1, 3]))
    np.testing.assert_allclose(dx, [[0.125, -0.375, 0.125, 0.125], [0.125, 0.125, 0.125, -0.375]])
    # label smoothing 0.4: q = 0.6 onehot + 0.1; 'sum': dX = probs - q
    dx = ops.softmax_cross_entropy_grad(
        np.array(1.0), probs, np.array([1, 3]), reduction="sum", label_smoothing=0.4
    )
    np.testing.assert_allclose(dx[0], [0.15, -0.45, 0.15, 0.15])


@pytest.mark.parametrize("case, reduction", case_params(CASES[:8]))
def test_softmax_cross_entropy_grad_is_the_backward(case, reduction):
    out, inputs = minitrain_xent(case, reduction)
    upstream = random_upstream(out)
    logits, target, weight, options = case.make()
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    dx = ops.softmax_cross_entropy_grad(
        upstream, probs, target, weight, reduction=reduction, **options
    )
    np.testing.assert_allclose(dx, grads_of(out, inputs[:1], upstream)[0], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "case",
    [Case("classes", (8, 6), weight=True, ignore_index=-100, smoothing=0.1)]
    + [Case("probabilities", (8, 6), probabilities=True, smoothing=0.1)],
    ids=lambda c: c.name,
)
@pytest.mark.parametrize("offset", [0.0, 1e4], ids=["spread_1e4", "all_near_1e4"])
def test_cross_entropy_logits_of_magnitude_1e4_stay_finite(case, offset, dtype, numba):
    # spread: logits 1e4 apart (exp(x) overflows, exp(-x) underflows); near: all about 1e4
    logits, target, weight, options = case.make(dtype, scale=1e4 if offset == 0 else 1.0)
    x = mt.tensor(logits + dtype(offset), requires_grad=True)
    t = mt.tensor(target, requires_grad=case.probabilities)
    w = None if weight is None else mt.tensor(weight)
    for reduction in REDUCTIONS:
        out = ops.cross_entropy(x, t, w, reduction=reduction, **options)
        grads = grads_of(out, [x, t] if case.probabilities else [x], random_upstream(out))
        assert np.all(np.isfinite(out.array))
        assert all(np.all(np.isfinite(g)) for g in grads)


def test_cross_entropy_of_huge_logits_by_hand(numba):
    # the target's logit 1e4 below the max: the loss is 1e4 (to rounding), the gradient one-hot
    x = mt.tensor(np.array([[1e4, 0.0], [0.0, -1e4]]), requires_grad=True)
    out = ops.cross_entropy(x, np.array([1, 1]), reduction="none")
    np.testing.assert_allclose(out.array, [1e4, 1e4])
    (dx,) = grads_of(out, [x], np.ones(2))
    np.testing.assert_allclose(dx, [[1.0, -1.0], [1.0, -1.0]])


def test_masked_classes_at_minus_inf(numba):
    # -inf logits (masked classes): probability 0, no gradient there, the rest unaffected
    logits = np.array([[0.5, -np.inf, 1.5, -np.inf], [-np.inf, 2.0, 0.0, 1.0]])
    x = mt.tensor(logits, requires_grad=True)
    out = ops.cross_entropy(x, np.array([2, 3]), reduction="none")
    want = [
        math.log(math.exp(0.5) + math.exp(1.5)) - 1.5,
        math.log(math.exp(2.0) + math.exp(0.0) + math.exp(1.0)) - 1.0,
    ]
    np.testing.assert_allclose(out.array, want)
    (dx,) = grads_of(out, [x], np.ones(2))
    assert dx[0, 1] == 0 and dx[0, 3] == 0 and dx[1, 0] == 0
    np.testing.assert_allclose(dx.sum(axis=1), [0.0, 0.0], atol=1e-15)


def test_nan_logits_give_nan_in_their_row_only(numba):
    logits = np.array([[0.0, np.nan, 1.0], [0.0, 1.0, 2.0]])
    out = ops.cross_entropy(mt.tensor(logits), np.array([0, 2]), reduction="none")
    assert np.isnan(out.array[0]) and np.isfinite(out.array[1])


def test_ignored_positions_have_no_loss_and_no_gradient(numba):
    x = mt.tensor(np.random.default_rng(0).standard_normal((4, 3, 2)), requires_grad=True)
    target = np.array([[0, -100], [2, 1], [-100, -100], [1, 0]])
    w = mt.tensor(np.array([1.0, 2.0, 0.5]))
    out = ops.cross_entropy(x, target, w, reduction="none", label_smoothing=0.2)
    ignored = target == -100
    assert np.all(out.array[ignored] == 0) and np.all(out.array[~ignored] > 0)
    (dx,) = grads_of(out, [x], np.ones(out.shape))
    assert np.all(np.moveaxis(dx, 1, -1)[ignored] == 0)


@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
def test_mean_with_every_target_ignored_raises_where_torch_gives_nan(loss, numba):
    # Our choice: PyTorch returns nan (0 / 0); a nan loss silently poisons every parameter
    # through the optimizer step, so minitrain raises and says what to do instead.
    fn = getattr(ops, loss)
    x = mt.tensor(np.zeros((2, 3)), requires_grad=True)
    target = np.array([-100, -100])
    with pytest.raises(ValueError, match=f"{loss}: reduction='mean'.*PyTorch returns nan"):
        fn(x, target)
    # 'sum' and 'none' are well defined: zero, and zero gradients
    out = fn(x, target, reduction="sum")
    assert out.item() == 0.0
    out.backward()
    np.testing.assert_array_equal(x.grad.array, np.zeros((2, 3)))
    np.testing.assert_array_equal(fn(x, target, reduction="none").array, [0.0, 0.0])


def test_mean_with_target_weights_summing_to_zero_raises(numba):
    x = mt.tensor(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="divides by 0"):
        ops.cross_entropy(x, np.array([0, 0]), mt.tensor(np.array([0.0, 1.0, 1.0])))


def test_mean_of_an_empty_batch_raises():
    with pytest.raises(ValueError, match="divides by 0"):
        ops.cross_entropy(mt.tensor(np.zeros((0, 3))), np.zeros(0, np.int64))
    with pytest.raises(ValueError, match="divides by 0"):
        ops.mse_loss(mt.tensor(np.zeros(0)), mt.tensor(np.zeros(0)))
    assert ops.cross_entropy(mt.tensor(np.zeros((0, 3))), np.zeros(0, int), reduction="sum") == 0
