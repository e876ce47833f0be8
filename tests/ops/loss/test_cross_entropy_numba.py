"""cross_entropy's numba row kernels against the generic ones and PyTorch: every option in both
dtypes, the whole range of exp, logits near a large offset, and the serial and parallel builds."""

from __future__ import annotations

import numpy as np
import pytest
from loss_cases import Case, case_params, grads_of, minitrain_xent, random_upstream

import minitrain as mt
from minitrain import backend, ops
from minitrain.ops.losses import class_loss

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
        out, inputs = minitrain_xent(case, reduction, dtype, scale=scale)
        if backward_numba is not None:
            backend.set_numba(backward_numba)
        return out.array, grads_of(out, inputs[:1], random_upstream(out))[0]
    finally:
        backend.set_numba(previous)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case, reduction", case_params(NUMBA_CASES))
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
            runs[use_numba] = out.array, out.grad_fn.saved_arrays()["probs"]
        finally:
            backend.set_numba(previous)
    (loss, probs), (want_loss, want_probs) = runs[True], runs[False]
    rtol = 1e-6 if dtype == np.float32 else 1e-13
    normal = want_probs > 4 * np.finfo(dtype).tiny
    np.testing.assert_allclose(probs[normal], want_probs[normal], rtol=rtol)
    assert np.all(probs[~normal] <= 4 * np.finfo(dtype).tiny)
    np.testing.assert_allclose(loss, want_loss, rtol=rtol)


def test_numba_kernels_run_when_enabled(record_builds):
    used = record_builds(class_loss, "_softmax_cross_entropy_kernels")
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
    rng = np.random.default_rng(11)
    logits = (offset + 3.0 * rng.standard_normal((8, 200))).astype(dtype)
    target = rng.integers(0, 200, 8)
    upstream = rng.standard_normal(8).astype(dtype)
    builds = record_builds(class_loss, "_softmax_cross_entropy_kernels")
    x = mt.tensor(logits, requires_grad=True)
    with backend.use_numba(True):
        out = ops.cross_entropy(x, target, reduction="none", label_smoothing=smoothing)
        (dx,) = grads_of(out, [x], upstream)
    assert builds == [False, False]  # the numba kernels ran, forward and backward
    # the reference: PyTorch in float64 on the same (rounded) logits
    x_want = torch.tensor(logits.astype(np.float64), requires_grad=True)
    want = torch.nn.functional.cross_entropy(
        x_want, torch.tensor(target), reduction="none", label_smoothing=smoothing
    )
    want.backward(torch.tensor(upstream.astype(np.float64)))
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-13, "atol": 1e-13}
    np.testing.assert_allclose(out.array, want.detach().numpy(), **tol)
    np.testing.assert_allclose(dx, x_want.grad.numpy(), **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numba_serial_and_parallel_builds_agree_and_switch_at_the_threshold(
    monkeypatch, record_builds, dtype
):
    rng = np.random.default_rng(8)
    logits = rng.standard_normal((2, 5, 3)).astype(dtype) * 4  # 6 rows of 5 classes
    target = rng.integers(0, 5, (2, 3))
    target[0, 1] = -100
    used = record_builds(class_loss, "_softmax_cross_entropy_kernels")
    results = {}
    # at the threshold (30 logits) the parallel builds run, one above it the serial ones
    for threshold, parallel in [(30, True), (31, False)]:
        monkeypatch.setattr(class_loss, "_PARALLEL_WORK", threshold)
        x = mt.tensor(logits, requires_grad=True)
        with backend.use_numba(True):
            out = ops.cross_entropy(x, target, label_smoothing=0.1)
            out.backward()
        assert used == [parallel, parallel]
        used.clear()
        results[parallel] = out.array, x.grad.array
    np.testing.assert_array_equal(results[True][0], results[False][0])
    np.testing.assert_array_equal(results[True][1], results[False][1])
    with backend.use_numba(False):
        x = mt.tensor(logits, requires_grad=True)
        out = ops.cross_entropy(x, target, label_smoothing=0.1)
        out.backward()
    rtol = 1e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(results[False][0], out.array, rtol=rtol)
    np.testing.assert_allclose(results[False][1], x.grad.array, rtol=rtol, atol=1e-7)
