"""The losses: float64 gradient checks of every reduction and option, agreement with PyTorch, the
fused cross entropy against the same math composed from primitive ops, stability at logits of
magnitude 1e4, the numba kernels against the generic ones, and the errors."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pytest

import minitrain as mt
from minitrain import backend, ops
from minitrain.errors import DTypeError, GraphError, ShapeError

REDUCTIONS = ["none", "mean", "sum"]


@pytest.fixture(params=[False, True], ids=["generic", "numba"])
def numba(request):
    """Run the test with the generic kernels, then with the numba ones."""
    previous = backend.set_numba(request.param)
    yield request.param
    backend.set_numba(previous)


def _grads(out, inputs, upstream):
    """Gradients of out, seeded with upstream, with respect to inputs (arrays, None if unused)."""
    found = mt.grad(out, inputs, grad_outputs=mt.tensor(upstream), allow_unused=True)
    return [None if g is None else g.data for g in found]


def _upstream(out, seed=1):
    return np.random.default_rng(seed).standard_normal(out.shape).astype(out.dtype)


# --- cross entropy configurations ---------------------------------------------------------------


class Case(NamedTuple):
    """One way to call cross_entropy: logits shape, target kind and options."""

    name: str
    shape: tuple
    probabilities: bool = False
    weight: bool = False
    ignore_index: int | None = None  # None: the default -100, and no position ignored
    smoothing: float = 0.0

    def make(self, dtype=np.float64, seed=0, scale=1.0):
        """(logits, target, weight) arrays, and the keyword options."""
        rng = np.random.default_rng(seed)
        logits = (scale * rng.standard_normal(self.shape)).astype(dtype)
        classes = self.shape[1] if len(self.shape) > 1 else self.shape[0]
        positions = self.shape[:1] + self.shape[2:] if len(self.shape) > 1 else ()
        if self.probabilities:
            target = np.moveaxis(
                rng.dirichlet(np.ones(classes), positions), -1, 1 % len(self.shape)
            )
            target = target.astype(dtype)
        else:
            target = rng.integers(0, classes, positions)
            if self.ignore_index is not None and target.ndim:
                target.flat[0] = self.ignore_index
                target.flat[1] = (self.ignore_index + 1) % classes
        weight = rng.uniform(0.5, 2.0, classes).astype(dtype) if self.weight else None
        options = {"label_smoothing": self.smoothing}
        if self.ignore_index is not None:
            options["ignore_index"] = self.ignore_index
        return logits, target, weight, options


CASES = [
    Case("classes", (6, 5)),
    Case("classes_weight_ignored", (6, 5), weight=True, ignore_index=-100),
    Case(
        "classes_weight_ignored_smoothing", (6, 5), weight=True, ignore_index=-100, smoothing=0.25
    ),
    Case("classes_ignore_a_class_smoothing", (7, 4), ignore_index=3, smoothing=0.1),
    Case("rank3_classes", (3, 4, 5)),
    Case("rank4_classes_weight_ignored_smoothing", (2, 4, 3, 2), False, True, -100, 0.2),
    Case("probabilities", (5, 4), probabilities=True),
    Case("probabilities_weight_smoothing", (5, 4), probabilities=True, weight=True, smoothing=0.3),
    Case("rank4_probabilities_weight", (2, 3, 2, 2), probabilities=True, weight=True),
    Case("single_sample_weight_smoothing", (5,), weight=True, smoothing=0.2),
    Case("single_sample_probabilities", (5,), probabilities=True),
]
CLASS_CASES = [c for c in CASES if not c.probabilities]


def _case_params(cases):
    return [
        pytest.param(case, reduction, id=f"{case.name}-{reduction}")
        for case in cases
        for reduction in REDUCTIONS
    ]


def _minitrain_xent(case, reduction, dtype=np.float64, seed=0, scale=1.0):
    """(loss, differentiable inputs) of minitrain's cross_entropy on the case's inputs."""
    logits, target, weight, options = case.make(dtype, seed, scale)
    x = mt.tensor(logits, requires_grad=True)
    t = mt.tensor(target, requires_grad=case.probabilities)
    w = None if weight is None else mt.tensor(weight)
    out = ops.cross_entropy(x, t, w, reduction=reduction, **options)
    return out, ([x, t] if case.probabilities else [x])


@pytest.mark.parametrize("case, reduction", _case_params(CASES))
def test_cross_entropy_gradcheck(case, reduction, numba):
    logits, target, weight, options = case.make()
    inputs = [mt.tensor(logits, requires_grad=True), mt.tensor(target)]
    inputs[1].requires_grad = case.probabilities
    w = None if weight is None else mt.tensor(weight)
    assert mt.gradcheck(
        lambda x, t: ops.cross_entropy(x, t, w, reduction=reduction, **options), inputs
    )


@pytest.mark.parametrize("case, reduction", _case_params(CASES))
def test_cross_entropy_matches_torch(case, reduction, numba):
    torch = pytest.importorskip("torch")
    logits, target, weight, options = case.make()
    out, inputs = _minitrain_xent(case, reduction)
    x = torch.tensor(logits, requires_grad=True)
    t = torch.tensor(target, requires_grad=case.probabilities)
    w = None if weight is None else torch.tensor(weight)
    expected = torch.nn.functional.cross_entropy(x, t, w, reduction=reduction, **options)
    np.testing.assert_allclose(out.data, expected.detach().numpy(), rtol=1e-12, atol=1e-14)

    upstream = _upstream(out)
    want = torch.autograd.grad(
        expected, [x, t] if case.probabilities else [x], torch.tensor(upstream)
    )
    for got, theirs in zip(_grads(out, inputs, upstream), want, strict=True):
        np.testing.assert_allclose(got, theirs.numpy(), rtol=1e-12, atol=1e-14)


# --- the fused op against the same math from primitive ops -------------------------------------


def _log_softmax(x):
    """log-softmax over axis 1, composed from primitives: x - logsumexp(x)."""
    return x - ops.logsumexp(x, axis=1, keepdims=True)


def _composite_xent(x, target, weight, reduction, ignore_index=-100, smoothing=0.0):
    """PyTorch's cross entropy as written in ATen (cross_entropy_loss_label_smoothing and
    cross_entropy_loss_prob_target), from minitrain's primitive ops and nll_loss."""
    log_probs = _log_softmax(x)
    classes = x.shape[1]
    w = np.ones(classes) if weight is None else weight.data
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
    valid = target.data != ignore_index
    smooth = -(log_probs * w_axis).sum(axis=1) * mt.tensor(valid.astype(np.float64))
    if reduction == "mean":
        smooth = smooth.sum() / w[np.where(valid, target.data, 0)][valid].sum()
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1 - smoothing) * nll + (smoothing / classes) * smooth


@pytest.mark.parametrize("case, reduction", _case_params([c for c in CASES if len(c.shape) > 1]))
def test_fused_cross_entropy_equals_the_composite(case, reduction, numba):
    logits, target, weight, options = case.make()
    fused, fused_inputs = _minitrain_xent(case, reduction)
    x = mt.tensor(logits, requires_grad=True)
    t = mt.tensor(target, requires_grad=case.probabilities)
    w = None if weight is None else mt.tensor(weight)
    composite = _composite_xent(
        x, t, w, reduction, options.get("ignore_index", -100), options["label_smoothing"]
    )
    np.testing.assert_allclose(fused.data, composite.data, rtol=1e-12, atol=1e-14)
    upstream = _upstream(fused)
    inputs = [x, t] if case.probabilities else [x]
    for got, want in zip(
        _grads(fused, fused_inputs, upstream), _grads(composite, inputs, upstream), strict=True
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


# --- the public backward kernel ----------------------------------------------------------------


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


@pytest.mark.parametrize("case, reduction", _case_params(CASES[:8]))
def test_softmax_cross_entropy_grad_is_the_backward(case, reduction):
    out, inputs = _minitrain_xent(case, reduction)
    upstream = _upstream(out)
    logits, target, weight, options = case.make()
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    dx = ops.softmax_cross_entropy_grad(
        upstream, probs, target, weight, reduction=reduction, **options
    )
    np.testing.assert_allclose(dx, _grads(out, inputs[:1], upstream)[0], rtol=1e-13, atol=1e-15)


# --- numba against the generic kernels ---------------------------------------------------------


NUMBA_CASES = [
    Case("wide", (40, 37), weight=True, ignore_index=-100),
    Case("smoothing", (40, 37), weight=True, ignore_index=-100, smoothing=0.15),
    Case("a_class_ignored", (33, 9), ignore_index=4, smoothing=0.3),
    Case("few_classes", (17, 3)),
    Case("one_class", (5, 1)),
    Case("rank4", (3, 6, 4, 5), weight=True, ignore_index=-100, smoothing=0.1),
]


def _run_xent(case, reduction, dtype, use_numba, scale=3.0, backward_numba=None):
    """Loss and logits gradient with the numba kernels on or off (backward may differ)."""
    previous = backend.set_numba(use_numba)
    try:
        out, inputs = _minitrain_xent(case, reduction, dtype, scale=scale)
        if backward_numba is not None:
            backend.set_numba(backward_numba)
        return out.data, _grads(out, inputs[:1], _upstream(out))[0]
    finally:
        backend.set_numba(previous)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case, reduction", _case_params(NUMBA_CASES))
def test_numba_matches_generic(case, reduction, dtype):
    tolerance = {"rtol": 2e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-13}
    loss, dx = _run_xent(case, reduction, dtype, use_numba=True)
    want_loss, want_dx = _run_xent(case, reduction, dtype, use_numba=False)
    assert loss.dtype == dtype and dx.dtype == dtype
    np.testing.assert_allclose(loss, want_loss, **tolerance)
    np.testing.assert_allclose(dx, want_dx, **{**tolerance, "atol": tolerance.get("atol", 1e-16)})


@pytest.mark.parametrize("forward_numba", [True, False], ids=["numba_then_generic", "reverse"])
def test_numba_and_generic_share_what_forward_saves(forward_numba):
    case = NUMBA_CASES[-1]
    loss, dx = _run_xent(case, "mean", np.float64, forward_numba, backward_numba=not forward_numba)
    want_loss, want_dx = _run_xent(case, "mean", np.float64, use_numba=False)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-13)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-13, atol=1e-16)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numba_softmax_over_the_whole_exp_range(dtype):
    # rows spanning exp's whole range below the max, where the numba kernel's own exp must agree
    # with numpy's where the probabilities are normal numbers (to |v| / 2 ulps at exp(v), what
    # rounding v itself costs), and be 0 or nearly below
    bottom = -100.0 if dtype == np.float32 else -745.0
    logits = mt.tensor(np.tile(np.linspace(bottom, 0.0, 301), (4, 1)).astype(dtype))
    target = np.array([300, 299, 150, 0])
    runs = {}
    for use_numba in (True, False):
        previous = backend.set_numba(use_numba)
        try:
            out = ops.cross_entropy(logits.requires_grad_(), target, reduction="none")
            runs[use_numba] = out.data, out.grad_fn.saved_arrays()["probs"]
        finally:
            backend.set_numba(previous)
    (loss, probs), (want_loss, want_probs) = runs[True], runs[False]
    rtol = 1e-6 if dtype == np.float32 else 1e-13
    normal = want_probs > 4 * np.finfo(dtype).tiny
    np.testing.assert_allclose(probs[normal], want_probs[normal], rtol=rtol)
    assert np.all(probs[~normal] <= 4 * np.finfo(dtype).tiny)
    np.testing.assert_allclose(loss, want_loss, rtol=rtol)


def test_numba_kernels_run_when_enabled(record_builds):
    from minitrain.ops import loss

    used = record_builds(loss, "_numba_kernels")
    x = mt.tensor(np.zeros((3, 4), np.float32), requires_grad=True)
    previous = backend.set_numba(True)
    try:
        ops.cross_entropy(x, np.array([0, 1, 2])).backward()
        assert used == [False, False]  # forward, backward: serial builds for 12 logits
        backend.set_numba(False)
        ops.cross_entropy(x, np.array([0, 1, 2])).backward()
        assert len(used) == 2
    finally:
        backend.set_numba(previous)


# --- stability ---------------------------------------------------------------------------------


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
        grads = _grads(out, [x, t] if case.probabilities else [x], _upstream(out))
        assert np.all(np.isfinite(out.data))
        assert all(np.all(np.isfinite(g)) for g in grads)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize(
    "dtype, offset",
    [
        (np.float32, 1e4),
        (np.float32, 1e6),
        (np.float32, 1e8),
        (np.float64, 1e8),
        (np.float64, 1e16),
    ],
    ids=lambda v: getattr(v, "__name__", v),
)
def test_numba_cross_entropy_of_logits_near_a_large_offset_matches_torch(
    record_builds, dtype, offset, smoothing
):
    # x - max is exact near a large offset, so the loss is as accurate as near 0; the kernel's
    # fastmath "reassoc" once regrouped log(sum) - (x - max) into (log(sum) + max) - x, which
    # rounds to max's spacing (3.28186 for 3.28174 at 1e4 in float32)
    torch = pytest.importorskip("torch")
    from minitrain.ops import loss

    rng = np.random.default_rng(11)
    logits = (offset + 3.0 * rng.standard_normal((8, 200))).astype(dtype)
    target = rng.integers(0, 200, 8)
    upstream = rng.standard_normal(8).astype(dtype)
    builds = record_builds(loss, "_numba_kernels")
    x = mt.tensor(logits, requires_grad=True)
    with backend.use_numba(True):
        out = ops.cross_entropy(x, target, reduction="none", label_smoothing=smoothing)
        (dx,) = _grads(out, [x], upstream)
    assert builds == [False, False]  # the numba kernels ran, forward and backward
    # the reference: PyTorch in float64 on the same (rounded) logits
    x_want = torch.tensor(logits.astype(np.float64), requires_grad=True)
    want = torch.nn.functional.cross_entropy(
        x_want, torch.tensor(target), reduction="none", label_smoothing=smoothing
    )
    want.backward(torch.tensor(upstream.astype(np.float64)))
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-13, "atol": 1e-13}
    np.testing.assert_allclose(out.data, want.detach().numpy(), **tol)
    np.testing.assert_allclose(dx, x_want.grad.numpy(), **tol)


def test_cross_entropy_of_huge_logits_by_hand(numba):
    # the target's logit 1e4 below the max: the loss is 1e4 (to rounding), the gradient one-hot
    x = mt.tensor(np.array([[1e4, 0.0], [0.0, -1e4]]), requires_grad=True)
    out = ops.cross_entropy(x, np.array([1, 1]), reduction="none")
    np.testing.assert_allclose(out.data, [1e4, 1e4])
    (dx,) = _grads(out, [x], np.ones(2))
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
    np.testing.assert_allclose(out.data, want)
    (dx,) = _grads(out, [x], np.ones(2))
    assert dx[0, 1] == 0 and dx[0, 3] == 0 and dx[1, 0] == 0
    np.testing.assert_allclose(dx.sum(axis=1), [0.0, 0.0], atol=1e-15)


def test_nan_logits_give_nan_in_their_row_only(numba):
    logits = np.array([[0.0, np.nan, 1.0], [0.0, 1.0, 2.0]])
    out = ops.cross_entropy(mt.tensor(logits), np.array([0, 2]), reduction="none")
    assert np.isnan(out.data[0]) and np.isfinite(out.data[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bce_with_logits_of_magnitude_1e4(dtype):
    x = mt.tensor(np.array([1e4, -1e4, 1e4, -1e4], dtype), requires_grad=True)
    t = mt.tensor(np.array([1.0, 1.0, 0.0, 0.0], dtype), requires_grad=True)
    pos_weight = np.array(3.0, dtype)
    out = ops.binary_cross_entropy_with_logits(x, t, reduction="none", pos_weight=pos_weight)
    # confident and right: 0; confident and wrong: |x|, times pos_weight for a missed positive
    np.testing.assert_allclose(out.data, [0.0, 3e4, 1e4, 0.0])
    dx, dt = _grads(out, [x, t], np.ones(4, dtype))
    np.testing.assert_allclose(dx, [0.0, -3.0, 1.0, 0.0])
    assert np.all(np.isfinite(dt))


# --- ignore_index and the mean over nothing ----------------------------------------------------


def test_ignored_positions_have_no_loss_and_no_gradient(numba):
    x = mt.tensor(np.random.default_rng(0).standard_normal((4, 3, 2)), requires_grad=True)
    target = np.array([[0, -100], [2, 1], [-100, -100], [1, 0]])
    w = mt.tensor(np.array([1.0, 2.0, 0.5]))
    out = ops.cross_entropy(x, target, w, reduction="none", label_smoothing=0.2)
    ignored = target == -100
    assert np.all(out.data[ignored] == 0) and np.all(out.data[~ignored] > 0)
    (dx,) = _grads(out, [x], np.ones(out.shape))
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
    np.testing.assert_array_equal(x.grad.data, np.zeros((2, 3)))
    np.testing.assert_array_equal(fn(x, target, reduction="none").data, [0.0, 0.0])


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


# --- the other losses --------------------------------------------------------------------------


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
    np.testing.assert_allclose(out.data, expected.detach().numpy(), rtol=1e-13)
    upstream = _upstream(out)
    want = torch.autograd.grad(expected, [ta, tb], torch.tensor(upstream))
    for got, theirs in zip(_grads(out, inputs, upstream), want, strict=True):
        np.testing.assert_allclose(got, theirs.numpy(), rtol=1e-13, atol=1e-15)


def test_huber_is_delta_times_smooth_l1():
    rng = np.random.default_rng(0)
    a, b = mt.tensor(rng.standard_normal(20)), mt.tensor(rng.standard_normal(20))
    np.testing.assert_allclose(
        ops.huber_loss(a, b, delta=0.4).data, 0.4 * ops.smooth_l1_loss(a, b, beta=0.4).data
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
    np.testing.assert_allclose(out.data, expected.detach().numpy(), rtol=1e-13)
    upstream = _upstream(out)
    want = torch.autograd.grad(expected, [tx, tt], torch.tensor(upstream))
    for got, theirs in zip(_grads(out, inputs, upstream), want, strict=True):
        np.testing.assert_allclose(got, theirs.numpy(), rtol=1e-12, atol=1e-15)


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
    np.testing.assert_allclose(out.data, expected.detach().numpy(), rtol=1e-13)
    upstream = _upstream(out)
    (want,) = torch.autograd.grad(expected, [tx], torch.tensor(upstream))
    np.testing.assert_allclose(_grads(out, [x], upstream)[0], want.numpy(), rtol=1e-13)


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


# --- errors ------------------------------------------------------------------------------------


def _message(exc_type, fn):
    with pytest.raises(exc_type) as info:
        fn()
    return str(info.value)


@pytest.mark.parametrize("bad", [5, -1, 7])
def test_target_out_of_range_names_op_value_and_classes(bad, numba):
    x = mt.tensor(np.zeros((3, 5)), requires_grad=True)
    target = np.array([0, bad, 1])
    message = _message(IndexError, lambda: ops.cross_entropy(x, target))
    assert "cross_entropy" in message and f"target {bad}" in message and "5 classes" in message
    message = _message(IndexError, lambda: ops.nll_loss(x, target))
    assert "nll_loss" in message and f"target {bad}" in message and "5 classes" in message


def test_ignore_index_out_of_range_is_fine():
    x = mt.tensor(np.zeros((2, 3)))
    out = ops.cross_entropy(x, np.array([7, 1]), ignore_index=7)
    assert out.item() == pytest.approx(math.log(3))


@pytest.mark.parametrize(
    "target_shape", [(4,), (2, 3), (2, 4, 3)], ids=["too_few_dims", "wrong_size", "class_axis"]
)
def test_class_target_shape_mismatch_names_both_shapes(target_shape):
    x = mt.tensor(np.zeros((2, 3, 4)))
    target = np.zeros(target_shape, np.int64)
    message = _message(ShapeError, lambda: ops.cross_entropy(x, target))
    assert str((2, 3, 4)) in message and str(target_shape) in message and "(2, 4)" in message


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("target_shape", [(), (1,)], ids=["0d", "1"])
@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
def test_single_sample_takes_a_0d_or_1_target_as_torch(loss, target_shape, reduction, numba):
    # cross_entropy of (C,) logits and a (1,) target raised a ShapeError about (1, 1)
    torch = pytest.importorskip("torch")
    logits = np.array([0.5, -1.0, 2.0, 0.1])
    upstream = np.array(0.7)  # every reduction gives a 0-d loss here, as in PyTorch

    def call(lib, x, target):
        inputs = x if loss == "cross_entropy" else lib.log_softmax(x, 0)
        fn = getattr(ops, loss) if lib is ops else getattr(torch.nn.functional, loss)
        return fn(inputs, target, reduction=reduction)

    x = mt.tensor(logits, requires_grad=True)
    out = call(ops, x, np.full(target_shape, 2))
    (dx,) = _grads(out, [x], upstream)
    # PyTorch's forward takes both shapes, but its backward only the 0-d target
    forward_only = call(torch, torch.tensor(logits), torch.full(target_shape, 2))
    x_want = torch.tensor(logits, requires_grad=True)
    want = call(torch, x_want, torch.tensor(2))
    want.backward(torch.tensor(upstream))
    assert out.shape == tuple(forward_only.shape) == tuple(want.shape) == ()
    np.testing.assert_allclose(out.data, forward_only.numpy(), rtol=1e-12)
    np.testing.assert_allclose(out.data, want.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(dx, x_want.grad.numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(
    "loss, target",
    [
        ("cross_entropy", np.array([2, 1])),
        ("cross_entropy", np.array([[2]])),
        ("cross_entropy", np.zeros(0, np.int64)),
        ("cross_entropy", np.full((1, 4), 0.25)),
        ("cross_entropy", np.full(3, 1 / 3)),
        ("nll_loss", np.array([2, 1])),
        ("nll_loss", np.array([[2]])),  # PyTorch refuses it too; it used to be taken as (1,)
    ],
    ids=lambda v: v if isinstance(v, str) else f"{v.dtype}{v.shape}",
)
def test_single_sample_target_shape_errors_show_the_callers_shapes(loss, target):
    x = mt.tensor(np.zeros(4))
    message = _message(ShapeError, lambda: getattr(ops, loss)(x, target))
    assert message.startswith(f"{loss}: target {target.shape} does not fit input (4,)")
    kind = "probability targets (4,)" if target.dtype.kind == "f" else "targets () or (1,)"
    assert kind in message


def test_probability_target_of_the_wrong_shape():
    x = mt.tensor(np.zeros((2, 3)))
    message = _message(ShapeError, lambda: ops.cross_entropy(x, np.full((2, 4), 0.25)))
    assert "probability target (2, 4)" in message and "(2, 3)" in message


@pytest.mark.parametrize("dtype", [np.bool_, np.complex128], ids=["bool", "complex"])
def test_target_dtype_must_be_integer_or_floating(dtype):
    x = mt.tensor(np.zeros((2, 3)))
    message = _message(DTypeError, lambda: ops.cross_entropy(x, np.zeros(2, dtype)))
    assert "cross_entropy" in message and np.dtype(dtype).name in message


def test_nll_loss_needs_integer_targets():
    x = mt.tensor(np.zeros((2, 3)))
    message = _message(DTypeError, lambda: ops.nll_loss(x, np.zeros(2)))
    assert "nll_loss" in message and "integers" in message and "float64" in message


def test_integer_targets_of_any_integer_dtype(numba):
    x = mt.tensor(np.random.default_rng(0).standard_normal((3, 4)))
    want = ops.cross_entropy(x, np.array([0, 3, 1])).item()
    for dtype in (np.int32, np.uint8, np.int16):
        assert ops.cross_entropy(x, np.array([0, 3, 1], dtype)).item() == pytest.approx(want)


def test_weight_shape_and_gradient():
    x = mt.tensor(np.zeros((2, 3)), requires_grad=True)
    target = np.array([0, 1])
    message = _message(ShapeError, lambda: ops.cross_entropy(x, target, np.ones(4)))
    assert "weight (4,)" in message and "(3,)" in message
    w = mt.tensor(np.ones(3), requires_grad=True)
    message = _message(GraphError, lambda: ops.cross_entropy(x, target, w))
    assert "'weight' cannot require grad" in message
    message = _message(GraphError, lambda: ops.binary_cross_entropy_with_logits(x, x, w))
    assert "binary_cross_entropy_with_logits" in message


def test_option_values():
    x = mt.tensor(np.zeros((2, 3)))
    target = np.array([0, 1])
    with pytest.raises(ValueError, match="reduction must be 'none', 'mean' or 'sum'"):
        ops.cross_entropy(x, target, reduction="avg")
    with pytest.raises(ValueError, match=r"label_smoothing must be in \[0, 1\]"):
        ops.cross_entropy(x, target, label_smoothing=1.5)
    with pytest.raises(ValueError, match="ignore_index is not supported for probability"):
        ops.cross_entropy(x, np.full((2, 3), 1 / 3), ignore_index=0)
    with pytest.raises(ValueError, match="beta must be >= 0"):
        ops.smooth_l1_loss(x, x, beta=-1.0)
    with pytest.raises(ValueError, match="delta must be > 0"):
        ops.huber_loss(x, x, delta=0.0)
    with pytest.raises(ValueError, match="reduction"):
        ops.mse_loss(x, x, reduction=None)


@pytest.mark.parametrize("loss, option", [("smooth_l1_loss", "beta"), ("huber_loss", "delta")])
def test_smooth_l1_and_huber_refuse_a_nan_threshold(loss, option):
    # smooth_l1_loss(beta=nan) returned nan (beta < 0 is False for nan)
    x = mt.tensor(np.zeros(3))
    with pytest.raises(ValueError, match=f"{option} must be"):
        getattr(ops, loss)(x, x, **{option: float("nan")})
    layer = {"smooth_l1_loss": mt.nn.SmoothL1Loss, "huber_loss": mt.nn.HuberLoss}[loss]
    with pytest.raises(ValueError, match=f"{option} must be"):
        layer(**{option: float("nan")})(x, x)


def test_logits_need_a_class_axis():
    message = _message(ShapeError, lambda: ops.cross_entropy(mt.tensor(np.array(1.0)), 0))
    assert "class axis" in message
    message = _message(ShapeError, lambda: ops.cross_entropy(mt.tensor(np.zeros((2, 0))), [0, 0]))
    assert "(2, 0)" in message


@pytest.mark.parametrize(
    "name",
    ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy_with_logits"],
)
def test_pointwise_shape_mismatch_is_an_error_not_a_broadcast(name):
    # PyTorch broadcasts (N, 1) against (N,) into (N, N) with a warning: here it is an error
    x, t = mt.tensor(np.zeros((4, 1))), mt.tensor(np.zeros(4))
    message = _message(ShapeError, lambda: getattr(ops, name)(x, t))
    assert name in message and "(4, 1)" in message and "(4,)" in message


def test_bce_weights_must_broadcast_to_the_input():
    x = mt.tensor(np.zeros((2, 3)))
    for kw in ({"weight": np.ones((4, 2, 3))}, {"pos_weight": np.ones(2)}):
        message = _message(
            ShapeError, lambda kw=kw: ops.binary_cross_entropy_with_logits(x, x, **kw)
        )
        assert "does not broadcast to input (2, 3)" in message


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numba_serial_and_parallel_builds_agree_and_switch_at_the_threshold(
    monkeypatch, record_builds, dtype
):
    from minitrain.ops import loss

    rng = np.random.default_rng(8)
    logits = rng.standard_normal((2, 5, 3)).astype(dtype) * 4  # 6 rows of 5 classes
    target = rng.integers(0, 5, (2, 3))
    target[0, 1] = -100
    used = record_builds(loss, "_numba_kernels")
    results = {}
    # at the threshold (30 logits) the parallel builds run, one above it the serial ones
    for threshold, parallel in [(30, True), (31, False)]:
        monkeypatch.setattr(loss, "_PARALLEL_WORK", threshold)
        x = mt.tensor(logits, requires_grad=True)
        with backend.use_numba(True):
            out = ops.cross_entropy(x, target, label_smoothing=0.1)
            out.backward()
        assert used == [parallel, parallel]
        used.clear()
        results[parallel] = out.data, x.grad.data
    np.testing.assert_array_equal(results[True][0], results[False][0])
    np.testing.assert_array_equal(results[True][1], results[False][1])
    with backend.use_numba(False):
        x = mt.tensor(logits, requires_grad=True)
        out = ops.cross_entropy(x, target, label_smoothing=0.1)
        out.backward()
    rtol = 1e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(results[False][0], out.data, rtol=rtol)
    np.testing.assert_allclose(results[False][1], x.grad.data, rtol=rtol, atol=1e-7)
