"""Batch norm's running statistics as PyTorch updates them, and evaluation with them."""

from __future__ import annotations

import numpy as np
import pytest
from normalization_cases import Case, assert_all_close, run

import minitrain as mt
from minitrain import ops
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's spelling)


@pytest.mark.parametrize("momentum", [0.1, 0.6])
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 2, 5)], ids=["2d", "4d"])
def test_running_statistics_match_torch(torch, shape, momentum, numba):
    rng = np.random.default_rng(7)
    channels = shape[1]
    ours = [mt.tensor(np.zeros(channels)), np.ones(channels)]  # a Tensor and an array
    theirs = [torch.zeros(channels, dtype=torch.float64), torch.ones(channels, dtype=torch.float64)]
    weight, bias = rng.standard_normal(channels), rng.standard_normal(channels)
    for step in range(4):
        x = 3.0 * rng.standard_normal(shape) + step
        F.batch_norm(x, *ours, weight, bias, training=True, momentum=momentum)
        torch.nn.functional.batch_norm(
            torch.tensor(x), *theirs, torch.tensor(weight), torch.tensor(bias), True, momentum
        )
        np.testing.assert_allclose(ours[0].array, theirs[0].numpy(), rtol=1e-12)
        np.testing.assert_allclose(ours[1], theirs[1].numpy(), rtol=1e-12)
    # evaluation uses them: values and gradients as PyTorch's, through ordinary ops
    case = Case("batch_norm", shape)
    x, _, _, dy = case.make(seed=8)
    y, grads, out, _ = run(
        case, x, weight, bias, dy, running_mean=ours[0], running_var=ours[1], training=False
    )
    assert out.grad_fn.name == "AddGrad"
    leaves = [torch.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    want = torch.nn.functional.batch_norm(leaves[0], *theirs, *leaves[1:], training=False)
    want.backward(torch.tensor(dy))
    np.testing.assert_allclose(y, want.detach().numpy(), rtol=1e-12, atol=1e-12)
    assert_all_close(grads, [t.grad.numpy() for t in leaves], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours[1], theirs[1].numpy(), rtol=1e-12)  # eval updates nothing


def test_evaluation_records_ordinary_ops_and_needs_no_second_value():
    # (1, 3): one value per channel is fine with running statistics
    x = mt.tensor(np.array([[1.0, 2.0, 3.0]]), requires_grad=True)
    w = mt.tensor(np.array([2.0, 1.0, 0.5]), requires_grad=True)
    mean, var = np.array([0.0, 1.0, 2.0]), np.array([4.0, 1.0, 0.25])
    with mt.Tape() as tape:
        y = ops.batch_norm(x, w, None, 0.0, running_mean=mean, running_var=var, training=False)
    assert "BatchNormalizationGrad" not in {node.name for node in tape.nodes}
    # (x - mean) / sqrt(var) * w = (1/2 * 2, 1/1 * 1, 1/0.5 * 0.5)
    np.testing.assert_allclose(y.array, [[1.0, 1.0, 1.0]])
    y.sum().backward()
    np.testing.assert_allclose(x.grad.array, [[1.0, 1.0, 1.0]])  # w / sqrt(var)
    np.testing.assert_allclose(w.grad.array, [0.5, 1.0, 2.0])  # (x - mean) / sqrt(var)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_evaluation_without_affine_parameters_matches_torch(torch, dtype):
    rng = np.random.default_rng(10)
    x = rng.standard_normal((4, 3, 5)).astype(dtype)
    mean, var = rng.standard_normal(3).astype(dtype), rng.uniform(0.5, 2, 3).astype(dtype)
    leaf = mt.tensor(x, requires_grad=True)
    y = ops.batch_norm(leaf, running_mean=mean, running_var=var, training=False)
    y.sum().backward()
    t = torch.tensor(x, requires_grad=True)
    want = torch.nn.functional.batch_norm(t, torch.tensor(mean), torch.tensor(var))
    want.sum().backward()
    assert y.dtype == dtype and leaf.grad.dtype == dtype
    tol = {"rtol": 1e-6} if dtype == np.float32 else {"rtol": 1e-12}
    np.testing.assert_allclose(y.array, want.detach().numpy(), atol=1e-6, **tol)
    np.testing.assert_allclose(leaf.grad.array, t.grad.numpy(), **tol)


def test_without_running_statistics_batch_statistics_always():
    x, weight, bias, _ = Case("batch_norm", (5, 3, 4)).make()
    train = ops.batch_norm(x, weight, bias, training=True).array
    evaluate = F.batch_norm(x, None, None, weight, bias, training=False).array
    np.testing.assert_array_equal(evaluate, train)
