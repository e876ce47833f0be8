"""AdaptiveMaxPool1d/2d/3d and F.adaptive_max_pool1d/2d/3d (with indices) against PyTorch:
values, indices, input gradients (the argmax alone gets each window's gradient), finite
differences in float64, printouts and errors."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn
from minitrain.errors import DTypeError, ShapeError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)

CASES = [
    (1, (2, 3, 7), 3), (1, (3, 10), 4), (1, (2, 3, 5), 5), (1, (2, 3, 4), 6),
    (2, (2, 3, 7, 5), (3, 2)), (2, (2, 3, 6, 6), 1), (2, (3, 5, 4), (None, 3)),
    (2, (1, 2, 4, 4), 7), (3, (1, 2, 5, 4, 3), (2, 3, 2)), (3, (2, 4, 3, 3), 2),
]  # fmt: skip


@pytest.mark.parametrize(("dims", "shape", "output_size"), CASES)
def test_values_indices_and_gradients_match_torch(dims, shape, output_size):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal(shape)
    ours_layer = getattr(nn, f"AdaptiveMaxPool{dims}d")(output_size, return_indices=True)
    theirs_layer = getattr(torch.nn, f"AdaptiveMaxPool{dims}d")(output_size, return_indices=True)
    x_ours, x_theirs = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (out, indices), (expected, expected_indices) = ours_layer(x_ours), theirs_layer(x_theirs)
    assert np.array_equal(out.numpy(), expected.detach().numpy())
    assert np.array_equal(indices.numpy(), expected_indices.numpy())
    assert indices.dtype == np.int64
    upstream = np.random.default_rng(1).standard_normal(expected.shape)
    (out * mt.tensor(upstream)).sum().backward()
    (expected * torch.tensor(upstream)).sum().backward()
    assert np.allclose(x_ours.grad.numpy(), x_theirs.grad.numpy())
    assert repr(ours_layer) == repr(theirs_layer)


def test_ties_send_the_gradient_to_the_first_max_as_torch():
    torch = pytest.importorskip("torch")
    x = np.zeros((1, 1, 4, 4))  # every window a tie, as after a ReLU
    x[0, 0, 3, 3] = -1.0
    x_ours, x_theirs = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    F.adaptive_max_pool2d(x_ours, 2).sum().backward()
    torch.nn.functional.adaptive_max_pool2d(x_theirs, 2).sum().backward()
    assert np.array_equal(x_ours.grad.numpy(), x_theirs.grad.numpy())


def test_global_max_pooling_by_hand_and_gradcheck():
    x = np.arange(24.0).reshape(2, 3, 4)[:, :, ::-1].copy()
    out, indices = F.adaptive_max_pool1d(mt.tensor(x), 1, return_indices=True)
    assert np.array_equal(out.numpy()[..., 0], x.max(axis=-1))
    assert (indices.numpy() == 0).all()
    x = mt.tensor(np.random.default_rng(2).standard_normal((2, 2, 5, 4)), requires_grad=True)
    assert mt.gradcheck(nn.AdaptiveMaxPool2d((3, 2)), [x], mode="full")


def test_with_indices_forms_and_unpooling():
    x = mt.tensor(np.random.default_rng(3).standard_normal((1, 2, 6)))
    values, indices = F.adaptive_max_pool1d_with_indices(x, 3)
    assert values.shape == indices.shape == (1, 2, 3)
    restored = F.max_unpool1d(values, indices, 2, output_size=(6,))
    assert np.allclose(restored.numpy().max(axis=-1), x.numpy().max(axis=-1))


def test_errors():
    with pytest.raises(ShapeError, match="adaptive_max_pool2d"):
        F.adaptive_max_pool2d(mt.ones(2, 3), 1)
    with pytest.raises(DTypeError, match="adaptive_max_pool1d: input must be a floating"):
        F.adaptive_max_pool1d(mt.tensor(np.ones((1, 2, 3), np.int64)), 1)
    with pytest.raises((ShapeError, DTypeError), match="output_size"):
        F.adaptive_max_pool2d(mt.ones(1, 1, 4, 4), (1, 2, 3))
