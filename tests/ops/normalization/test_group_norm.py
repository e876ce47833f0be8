"""Group norm (F.group_norm, nn.GroupNorm): finite differences and PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn
from minitrain.errors import ArgumentError, DTypeError, ShapeError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)

CASES = [  # (x shape, num_groups)
    ((2, 6, 3, 4), 3),
    ((3, 4), 2),  # no positions: each group is its channels
    ((2, 6, 5), 6),  # a group per channel, as instance norm
    ((2, 4, 2, 3, 2), 1),  # one group: a layer norm over (C, *)
]


def _inputs(shape, affine: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 3 + 1
    weight = rng.standard_normal(shape[1]) if affine in ("weight", "both") else None
    bias = rng.standard_normal(shape[1]) if affine == "both" else None
    return x, weight, bias


@pytest.mark.parametrize("shape, groups", CASES)
@pytest.mark.parametrize("affine", ["none", "weight", "both"])
def test_group_norm_passes_gradcheck(shape, groups, affine):
    arrays = _inputs(shape, affine)
    inputs = [None if a is None else mt.tensor(a, requires_grad=True) for a in arrays]
    x, weight, bias = inputs
    assert mt.gradcheck(lambda x, w, b: F.group_norm(x, groups, w, b), [x, weight, bias])


@pytest.mark.parametrize("shape, groups", CASES)
@pytest.mark.parametrize("dtype, tolerance", [(np.float64, 1e-10), (np.float32, 2e-5)])
def test_group_norm_matches_torch(shape, groups, dtype, tolerance):
    torch = pytest.importorskip("torch")
    arrays = [a.astype(dtype) for a in _inputs(shape, "both", seed=1)]
    ours = [mt.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = F.group_norm(ours[0], groups, ours[1], ours[2], 1e-3)
    expected = torch.nn.functional.group_norm(theirs[0], groups, theirs[1], theirs[2], 1e-3)
    assert y.dtype == dtype
    np.testing.assert_allclose(y.numpy(), expected.detach().numpy(), rtol=tolerance, atol=tolerance)
    upstream = np.random.default_rng(2).standard_normal(shape).astype(dtype)
    y.backward(upstream)
    expected.backward(torch.tensor(upstream))
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(
            mine.grad.numpy(), reference.grad.numpy(), rtol=tolerance, atol=tolerance
        )


def test_group_norm_layer_matches_torch_layer():
    torch = pytest.importorskip("torch")
    for options in ({}, {"affine": False}, {"bias": False}, {"eps": 1e-2}):
        ours = nn.GroupNorm(2, 6, dtype=np.float64, **options)
        theirs = torch.nn.GroupNorm(2, 6, **options).double()
        assert repr(ours) == repr(theirs)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        rng = np.random.default_rng(3)
        for p, q in zip(ours.parameters(), theirs.parameters(), strict=True):
            p.array[...] = rng.standard_normal(p.shape)
            with torch.no_grad():
                q.copy_(torch.from_numpy(p.array))
        x = rng.standard_normal((4, 6, 5, 5))
        x_ours, x_theirs = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        y, expected = ours(x_ours), theirs(x_theirs)
        np.testing.assert_allclose(y.numpy(), expected.detach().numpy(), rtol=1e-10)
        upstream = rng.standard_normal(x.shape)
        y.backward(upstream)
        expected.backward(torch.tensor(upstream))
        pairs = [(x_ours, x_theirs), *zip(ours.parameters(), theirs.parameters(), strict=True)]
        for p, q in pairs:
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_group_norm_of_no_positions_is_empty_as_in_torch():
    x = mt.zeros(2, 4, 0, requires_grad=True)
    y = F.group_norm(x, 2)
    assert y.shape == (2, 4, 0)
    y.sum().backward()
    assert x.grad.shape == (2, 4, 0)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda x: F.group_norm(x, 4),
            ArgumentError,
            r"group_norm: num_groups \(4\) .* divide .* \(6\)",
        ),
        (lambda x: F.group_norm(x, 0), ArgumentError, r"group_norm: num_groups \(0\) must be >= 1"),
        (
            lambda x: F.group_norm(x, 2.0),
            DTypeError,
            "group_norm: num_groups must be an int, got 2.0",
        ),
        (
            lambda x: F.group_norm(x[0, 0, 0], 1),
            ShapeError,
            r"group_norm: x must be \(N, C, \*\), got shape \(3,\)",
        ),
        (
            lambda x: F.group_norm(x, 2, mt.ones(3)),
            ShapeError,
            r"group_norm: weight \(3,\) must have shape \(6,\)",
        ),
        (
            lambda x: F.group_norm(x, 2, eps=-1.0),
            ArgumentError,
            "group_norm: eps must be finite and >= 0",
        ),
        (lambda x: nn.GroupNorm(4, 6), ArgumentError, r"GroupNorm: num_groups \(4\)"),
        (lambda x: nn.GroupNorm(2, 6.0), DTypeError, "GroupNorm: num_channels must be an int"),
    ],
)
def test_group_norm_refuses_bad_arguments_by_name(call, error, message):
    x = mt.randn(2, 6, 2, 3, requires_grad=True)
    with pytest.raises(error, match=message):
        call(x)
