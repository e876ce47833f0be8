"""The padding layers (ConstantPad, ZeroPad, ReflectionPad, ReplicationPad, CircularPad in 1, 2
and 3 dims) and Unflatten against PyTorch: values, input gradients, finite differences in
float64, printouts and errors."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn
from minitrain.errors import ArgumentError, DTypeError, ShapeError

PADDINGS = {1: (2, 1), 2: (1, 2, 2, 0), 3: (1, 0, 2, 1, 0, 2)}
SHAPES = {1: (2, 3, 5), 2: (2, 3, 4, 5), 3: (2, 2, 3, 4, 5)}
KINDS = ("ZeroPad", "ReflectionPad", "ReplicationPad", "CircularPad", "ConstantPad")
CASES = [(kind, dims, padding) for kind in KINDS for dims in (1, 2, 3)
         for padding in (PADDINGS[dims], 1)]  # fmt: skip


def _build(library, kind: str, dims: int, padding):
    layer = getattr(library, f"{kind}{dims}d")
    return layer(padding, 2.5) if kind == "ConstantPad" else layer(padding)


@pytest.mark.parametrize(("kind", "dims", "padding"), CASES)
def test_values_and_gradients_match_torch(kind, dims, padding):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(dims).standard_normal(SHAPES[dims])
    ours = _build(nn, kind, dims, padding)
    theirs = _build(torch.nn, kind, dims, padding)
    x_ours = mt.tensor(x, requires_grad=True)
    x_theirs = torch.tensor(x, requires_grad=True)
    out_ours, out_theirs = ours(x_ours), theirs(x_theirs)
    assert np.allclose(out_ours.numpy(), out_theirs.detach().numpy())
    weights = np.random.default_rng(9).standard_normal(out_theirs.shape)
    (out_ours * mt.tensor(weights)).sum().backward()
    (out_theirs * torch.tensor(weights)).sum().backward()
    assert np.allclose(x_ours.grad.numpy(), x_theirs.grad.numpy())
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("kind", KINDS)
def test_gradcheck_in_float64(kind):
    layer = _build(nn, kind, 2, (1, 2, 2, 1))
    x = mt.tensor(np.random.default_rng(0).standard_normal((1, 2, 3, 4)), requires_grad=True)
    assert mt.gradcheck(layer, [x], mode="full")


def test_reflection_and_circular_values_by_hand():
    x = mt.tensor(np.arange(4.0)[None, None])
    assert nn.ReflectionPad1d((2, 1))(x).numpy().ravel().tolist() == [2, 1, 0, 1, 2, 3, 2]
    assert nn.ReplicationPad1d((2, 1))(x).numpy().ravel().tolist() == [0, 0, 0, 1, 2, 3, 3]
    assert nn.CircularPad1d((2, 1))(x).numpy().ravel().tolist() == [2, 3, 0, 1, 2, 3, 0]
    assert nn.ConstantPad1d(1, -1.0)(x).numpy().ravel().tolist() == [-1, 0, 1, 2, 3, -1]


def test_an_int_padding_pads_every_side_of_the_class_dims():
    assert nn.ZeroPad3d(2).padding == (2,) * 6
    assert nn.ReflectionPad2d(1).padding == (1, 1, 1, 1)
    assert repr(nn.ConstantPad2d(1, 0.5)) == "ConstantPad2d(padding=(1, 1, 1, 1), value=0.5)"
    assert repr(nn.ZeroPad1d(3)) == "ZeroPad1d((3, 3))"


def test_padding_errors():
    with pytest.raises(DTypeError, match="ZeroPad2d: padding"):
        nn.ZeroPad2d(1.5)
    with pytest.raises(DTypeError, match="ReflectionPad1d: padding"):
        nn.ReflectionPad1d(True)
    with pytest.raises((ArgumentError, ShapeError)):
        nn.ReflectionPad1d(5)(mt.ones(1, 1, 3))  # a reflection wider than the dim


def test_unflatten_matches_torch_and_has_gradients():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((2, 12, 3))
    for dim, sizes in ((1, (3, 4)), (1, [2, -1]), (-1, (3, 1)), (0, (1, 2))):
        ours, theirs = nn.Unflatten(dim, sizes), torch.nn.Unflatten(dim, sizes)
        assert np.array_equal(ours(mt.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy())
        assert repr(ours) == repr(theirs)
    x_ours = mt.tensor(x, requires_grad=True)
    assert mt.gradcheck(nn.Unflatten(1, (4, 3)), [x_ours])


def test_unflatten_errors():
    assert nn.Unflatten(1, (2, 3))(mt.ones(4, 6)).shape == (4, 2, 3)
    with pytest.raises(DTypeError, match="found element of type float at pos 1"):
        nn.Unflatten(1, (2, 3.0))
    with pytest.raises(DTypeError, match="unflattened_size"):
        nn.Unflatten(1, 6)
    with pytest.raises(ShapeError, match="unflatten"):
        nn.Unflatten(1, (4, 2))(mt.ones(4, 6))
