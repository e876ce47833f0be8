"""The losses' errors: targets out of range or of the wrong shape or dtype, weights and
options refused, and the single-sample forms, each message naming the loss and the values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from loss_cases import REDUCTIONS, grads_of

import minitrain as mt
from minitrain import ops
from minitrain.errors import DTypeError, GraphError, ShapeError


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
    (dx,) = grads_of(out, [x], upstream)
    # PyTorch's forward takes both shapes, but its backward only the 0-d target
    forward_only = call(torch, torch.tensor(logits), torch.full(target_shape, 2))
    x_want = torch.tensor(logits, requires_grad=True)
    want = call(torch, x_want, torch.tensor(2))
    want.backward(torch.tensor(upstream))
    assert out.shape == tuple(forward_only.shape) == tuple(want.shape) == ()
    np.testing.assert_allclose(out.array, forward_only.numpy(), rtol=1e-12)
    np.testing.assert_allclose(out.array, want.detach().numpy(), rtol=1e-12)
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
