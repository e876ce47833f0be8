"""Linear with zero-size feature dims, and embedding's padding_idx, against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)


@pytest.mark.parametrize(
    "x_shape, out_features",
    [((2, 4), 0), ((2, 3, 4), 0), ((2, 0), 3), ((2, 3, 0), 3), ((0, 4), 3)],
    ids=["out0", "batched_out0", "in0", "batched_in0", "no_rows"],
)
def test_linear_with_a_zero_size_dim_matches_torch(torch, x_shape, out_features):
    # grad.reshape(-1, 0) in the backward raised numpy's "cannot reshape" error
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape)
    weight = rng.standard_normal((out_features, x_shape[-1]))
    bias = rng.standard_normal(out_features)
    upstream = rng.standard_normal(x_shape[:-1] + (out_features,))
    leaves = [mt.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    out = F.linear(*leaves)
    out.backward(upstream)
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    want = torch.nn.functional.linear(*theirs)
    want.backward(torch.tensor(upstream))
    np.testing.assert_allclose(out.array, want.detach().numpy(), rtol=1e-12)
    for ours, reference in zip(leaves, theirs, strict=True):
        assert ours.grad.shape == tuple(reference.grad.shape)
        np.testing.assert_allclose(ours.grad.array, reference.grad.numpy(), rtol=1e-12)


def test_linear_layer_with_no_outputs_gives_zero_input_gradients():
    layer = mt.nn.Linear(4, 0)
    x = mt.tensor(np.ones((2, 4), np.float32), requires_grad=True)
    layer(x).backward(np.ones((2, 0), np.float32))
    np.testing.assert_array_equal(x.grad.array, np.zeros((2, 4), np.float32))
    assert layer.weight.grad.shape == (0, 4) and layer.bias.grad.shape == (0,)


@pytest.mark.parametrize("padding_idx", [5, 7, -6, 100])
def test_embedding_padding_idx_out_of_range_raises(padding_idx):
    # padding_idx=7 with 5 rows used to act as row 2
    weight = mt.tensor(np.ones((5, 3)), requires_grad=True)
    with pytest.raises(ValueError, match=f"embedding: padding_idx {padding_idx} is out of range"):
        F.embedding(np.array([0, 2]), weight, padding_idx=padding_idx)
    with pytest.raises(ValueError, match=f"Embedding: padding_idx {padding_idx} is out of range"):
        mt.nn.Embedding(5, 3, padding_idx=padding_idx)


@pytest.mark.parametrize("padding_idx", [None, 0, 2, 4, -1, -5])
def test_embedding_padding_idx_matches_torch(torch, padding_idx):
    rng = np.random.default_rng(1)
    weight = rng.standard_normal((5, 3))
    indices = np.array([[0, 2, 4], [4, 1, 2]])
    upstream = rng.standard_normal(indices.shape + (3,))
    ours = mt.tensor(weight, requires_grad=True)
    out = F.embedding(indices, ours, padding_idx=padding_idx)
    out.backward(upstream)
    theirs = torch.tensor(weight, requires_grad=True)
    want = torch.nn.functional.embedding(torch.tensor(indices), theirs, padding_idx)
    want.backward(torch.tensor(upstream))
    np.testing.assert_array_equal(out.array, want.detach().numpy())
    np.testing.assert_allclose(ours.grad.array, theirs.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("index", [-1, -5, 5, 7])
def test_embedding_refuses_an_index_outside_its_rows_as_pytorch(index, torch):
    weight = np.arange(10, dtype=np.float32).reshape(5, 2)
    with pytest.raises(IndexError, match="index out of range"):
        torch.nn.functional.embedding(torch.tensor([0, index]), torch.from_numpy(weight))
    with pytest.raises(IndexError, match=r"embedding: index out of range.*\[0, 5\)"):
        mt.nn.functional.embedding(mt.tensor([0, index]), mt.tensor(weight))
    with pytest.raises(IndexError, match="embedding: index out of range"):
        mt.nn.Embedding(5, 2)(mt.tensor([[index]]))
