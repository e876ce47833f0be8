"""binary_cross_entropy against PyTorch: its floor at 0 and 1, weights of any shape and dtype,
float16, gradchecks in input and target, the BCELoss layer, and every bad argument."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn
from minitrain.errors import ArgumentError, DTypeError, GraphError, ShapeError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)


@pytest.mark.parametrize("name", ["binary_cross_entropy", "binary_cross_entropy_with_logits"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weight_dtype", [np.float32, np.float64, np.int64])
def test_binary_cross_entropy_takes_weights_of_any_dtype_as_torch(torch, name, dtype, weight_dtype):
    rng = np.random.default_rng(5)
    probs = rng.uniform(0.1, 0.9, (2, 3)).astype(dtype)
    target = rng.uniform(0, 1, (2, 3)).astype(dtype)
    weight = np.array([1, 2, 3]).astype(weight_dtype)
    kwargs = [{"weight": weight}]
    if name.endswith("logits"):
        kwargs.append({"pos_weight": weight})
    for given in kwargs:
        x = mt.tensor(probs, requires_grad=True)
        loss = getattr(F, name)(x, mt.tensor(target), **{k: mt.tensor(v) for k, v in given.items()})
        loss.backward()
        tx = torch.from_numpy(probs).requires_grad_()
        expected = getattr(torch.nn.functional, name)(
            tx, torch.from_numpy(target), **{k: torch.from_numpy(v) for k, v in given.items()}
        )
        expected.backward()
        assert loss.dtype == np.dtype(dtype) and x.grad.dtype == np.dtype(dtype)
        tolerance = 1e-6 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(loss.array, expected.detach().numpy(), rtol=tolerance)
        np.testing.assert_allclose(x.grad.array, tx.grad.numpy(), rtol=tolerance)


def _bce_pair(torch, x, t, weight=None, reduction="mean", dtype=np.float64):
    """(ours, theirs): each (loss, input grad, target grad) for F.binary_cross_entropy."""
    xs = mt.tensor(np.asarray(x, dtype), requires_grad=True)
    ts = mt.tensor(np.asarray(t, dtype), requires_grad=True)
    w = None if weight is None else mt.tensor(np.asarray(weight, dtype))
    loss = F.binary_cross_entropy(xs, ts, w, reduction=reduction)
    upstream = np.random.default_rng(9).uniform(0.5, 1.5, loss.shape).astype(dtype)
    loss.backward(upstream)
    xr = torch.tensor(np.asarray(x, dtype), requires_grad=True)
    tr = torch.tensor(np.asarray(t, dtype), requires_grad=True)
    wr = None if weight is None else torch.tensor(np.asarray(weight, dtype))
    expected = torch.nn.functional.binary_cross_entropy(xr, tr, wr, reduction=reduction)
    expected.backward(torch.from_numpy(upstream))
    assert loss.dtype == np.dtype(dtype) and loss.shape == tuple(expected.shape)
    ours = (loss.array, xs.grad.array, ts.grad.array)
    return ours, (expected.detach().numpy(), xr.grad.numpy(), tr.grad.numpy())


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_bce_at_0_and_1_takes_torchs_floor(torch, reduction):
    """log is floored at -100: a certain wrong answer costs 100; the input's gradient is
    floored by PyTorch's 1e-12 (as float32), the target's is not (inf where x is 0 or 1)."""
    x = [0.0, 1.0, 0.0, 1.0, 1e-50, 1 - 1e-17, 0.5, 1e-30, 0.3]
    t = [0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.3, 0.5, 0.5]
    ours, theirs = _bce_pair(torch, x, t, reduction=reduction)
    for got, want in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-13)
    if reduction == "none":
        np.testing.assert_array_equal(ours[0][:6], [0.0, 0.0, 100.0, 100.0, 100.0, 100.0])


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 1e-5)])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weight_shape", [None, (4,), (3, 1), (2, 3, 4)])
def test_bce_matches_torch(torch, weight_shape, reduction, dtype, rtol):
    rng = np.random.default_rng(13)
    x, t = rng.uniform(0.01, 0.99, (2, 3, 4)), rng.uniform(0.0, 1.0, (2, 3, 4))
    weight = None if weight_shape is None else rng.uniform(0.5, 2.0, weight_shape)
    ours, theirs = _bce_pair(torch, x, t, weight, reduction, dtype)
    for got, want in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-7 if dtype == np.float32 else 0)


def test_bce_gradcheck_in_input_and_target():
    rng = np.random.default_rng(14)
    x = mt.tensor(rng.uniform(0.05, 0.95, (3, 4)), requires_grad=True)
    t = mt.tensor(rng.uniform(0.05, 0.95, (3, 4)), requires_grad=True)
    weight = mt.tensor(rng.uniform(0.5, 2.0, (4,)))
    for reduction in ("none", "mean", "sum"):
        assert mt.gradcheck(
            lambda a, b, r=reduction: F.binary_cross_entropy(a, b, weight, reduction=r),
            [x, t],
            mode="full",
        )


def test_bce_float16(torch):
    x, t = np.array([0.1, 0.5, 0.9, 0.999]), np.array([0.0, 1.0, 0.3, 1.0])
    ours, theirs = _bce_pair(torch, x, t, dtype=np.float16)
    for got, want in zip(ours, theirs, strict=True):
        assert got.dtype == np.float16
        np.testing.assert_allclose(got, want, rtol=2e-2, atol=1e-3)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_bce_layer_matches_torch_with_its_weight_buffer(torch, reduction):
    weight = np.array([1.0, 2.0, 0.5])
    ours = nn.BCELoss(mt.tensor(weight), reduction=reduction)
    theirs = torch.nn.BCELoss(torch.tensor(weight), reduction=reduction)
    assert repr(ours) == repr(theirs) or reduction != "mean"
    assert [name for name, _ in ours.named_buffers()] == ["weight"]
    rng = np.random.default_rng(15)
    x, t = rng.uniform(0.01, 0.99, (4, 3)), rng.uniform(0.0, 1.0, (4, 3))
    xs, xr = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    loss, expected = ours(xs, mt.tensor(t)), theirs(xr, torch.tensor(t))
    np.testing.assert_allclose(loss.array, expected.detach().numpy(), rtol=1e-13)
    loss.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(xs.grad.array, xr.grad.numpy(), rtol=1e-13)


probs = mt.tensor(np.full((2, 3), 0.5))
BCE_BAD = [
    (lambda: F.binary_cross_entropy(mt.tensor(np.array([0.5, 1.2])), mt.tensor(np.ones(2))),
     ArgumentError, r"^binary_cross_entropy: every element of input must lie in \[0, 1\], got 1.2"),
    (lambda: F.binary_cross_entropy(mt.tensor(np.array([-0.1, 0.5])), mt.tensor(np.ones(2))),
     ArgumentError, r"^binary_cross_entropy: every element of input .*got -0\.1 \(for logits"),
    (lambda: F.binary_cross_entropy(mt.tensor(np.array([np.nan, 0.5])), mt.tensor(np.ones(2))),
     ArgumentError, r"^binary_cross_entropy: every element of input .*got nan"),
    (lambda: F.binary_cross_entropy(probs, mt.tensor(np.full((2, 3), 1.5))),
     ArgumentError, r"^binary_cross_entropy: every element of target must lie in .*, got 1\.5"),
    (lambda: F.binary_cross_entropy(probs, mt.tensor(np.full(3, 0.5))),
     ShapeError, r"^binary_cross_entropy: input \(2, 3\) and target \(3,\) must have the same"),
    (lambda: F.binary_cross_entropy(probs, mt.tensor(np.full((2, 3), 0.5, np.float32))),
     DTypeError, r"^binary_cross_entropy: inputs must share one dtype, got input float64, target"),
    (lambda: F.binary_cross_entropy(probs, mt.tensor(np.ones((2, 3), np.int64))),
     DTypeError, r"^binary_cross_entropy: inputs must share one dtype, .*target int64"),
    (lambda: F.binary_cross_entropy(mt.tensor(np.ones((2, 3), np.int64)), probs),
     DTypeError, r"^binary_cross_entropy: 'input' must be floating point, got int64"),
    (lambda: F.binary_cross_entropy(probs, probs, mt.tensor(np.ones(2))),
     ShapeError, r"^binary_cross_entropy: weight \(2,\) does not broadcast to input \(2, 3\)"),
    (lambda: F.binary_cross_entropy(probs, probs, mt.tensor(np.ones((2, 2, 3)))),
     ShapeError, r"^binary_cross_entropy: weight \(2, 2, 3\) does not broadcast"),
    (lambda: F.binary_cross_entropy(probs, probs, mt.tensor(np.ones(3), requires_grad=True)),
     GraphError, r"^binary_cross_entropy: 'weight' cannot require grad"),
    (lambda: F.binary_cross_entropy(probs, probs, reduction="avg"),
     ArgumentError, r"^binary_cross_entropy: reduction must be 'none', 'mean' or 'sum', got 'avg'"),
    (lambda: F.binary_cross_entropy(mt.tensor(np.ones(0)), mt.tensor(np.ones(0))),
     ArgumentError, r"^binary_cross_entropy: reduction='mean' over an empty input"),
    (lambda: nn.BCELoss(reduction="avg"),
     ArgumentError, r"^BCELoss: reduction must be 'none', 'mean' or 'sum', got 'avg'"),
]  # fmt: skip


@pytest.mark.parametrize("call, error, message", BCE_BAD)
def test_bce_bad_arguments_raise_a_minitrain_error_naming_them(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_bce_of_an_empty_input_without_mean():
    empty = mt.tensor(np.ones(0), requires_grad=True)
    assert F.binary_cross_entropy(empty, mt.tensor(np.ones(0)), reduction="sum").item() == 0.0
