"""EmbeddingBag and F.embedding_bag against PyTorch: each mode over 2-D input and 1-D input with
offsets (empty bags, include_last_offset, padding_idx, per_sample_weights), values and the
gradients of weight and per_sample_weights from the same table, finite differences in float64,
printouts and errors."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn
from minitrain.errors import ArgumentError, ShapeError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)

TABLE = np.random.default_rng(0).standard_normal((10, 4))
FLAT = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 0, 7], np.int64)
CASES = {
    "2d": (np.array([[1, 2, 4], [4, 3, 9], [0, 0, 7]], np.int64), None, {}),
    "offsets": (FLAT, np.array([0, 4, 4, 7], np.int64), {}),  # an empty bag
    "last_offset": (FLAT, np.array([0, 3, 8, 11], np.int64), {"include_last_offset": True}),
    "padding": (FLAT, np.array([0, 4, 9], np.int64), {"padding_idx": 0}),  # a bag of padding
    "padding_2d": (np.array([[1, 0, 4], [0, 0, 0]], np.int64), None, {"padding_idx": 0}),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_matches_torch(case, mode):
    torch = pytest.importorskip("torch")
    indices, offsets, options = CASES[case]
    ours = nn.EmbeddingBag(10, 4, mode=mode, dtype=np.float64, **options)
    theirs = torch.nn.EmbeddingBag(10, 4, mode=mode, dtype=torch.float64, **options)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(TABLE))
    ours.load_state_dict({"weight": TABLE}, strict=True)
    out = ours(mt.tensor(indices), None if offsets is None else mt.tensor(offsets))
    expected = theirs(torch.tensor(indices), None if offsets is None else torch.tensor(offsets))
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-12)
    upstream = np.random.default_rng(1).standard_normal(expected.shape)
    (out * mt.tensor(upstream)).sum().backward()
    (expected * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), atol=1e-12)
    assert repr(ours) == repr(theirs)


def test_per_sample_weights_match_torch():
    torch = pytest.importorskip("torch")
    indices, offsets = FLAT, np.array([0, 4, 4, 7], np.int64)
    weights = np.random.default_rng(2).standard_normal(FLAT.shape)
    table_ours, table_theirs = (
        mt.tensor(TABLE, requires_grad=True),
        torch.tensor(TABLE, requires_grad=True),
    )
    w_ours, w_theirs = (
        mt.tensor(weights, requires_grad=True),
        torch.tensor(weights, requires_grad=True),
    )
    out = F.embedding_bag(mt.tensor(indices), table_ours, mt.tensor(offsets), mode="sum",
                          per_sample_weights=w_ours)  # fmt: skip
    expected = torch.nn.functional.embedding_bag(
        torch.tensor(indices), table_theirs, torch.tensor(offsets), mode="sum",
        per_sample_weights=w_theirs,
    )  # fmt: skip
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-12)
    out.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(w_ours.grad.numpy(), w_theirs.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(table_ours.grad.numpy(), table_theirs.grad.numpy(), atol=1e-12)


def test_by_hand_and_gradcheck():
    table = mt.tensor(TABLE, requires_grad=True)
    bags = mt.tensor(np.array([[1, 2], [3, 3]], np.int64))
    mean = F.embedding_bag(bags, table).numpy()
    assert np.allclose(mean, [(TABLE[1] + TABLE[2]) / 2, TABLE[3]])
    empty = F.embedding_bag(mt.tensor(FLAT), table, mt.tensor(np.array([0, 0, 11])), mode="max")
    # bags 0 and 2 are empty and give zeros; bag 1 holds every index
    assert np.array_equal(empty.numpy()[[0, 2]], np.zeros((2, 4)))
    assert np.array_equal(empty.numpy()[1], TABLE[FLAT].max(axis=0))
    for mode in ("sum", "mean", "max"):
        assert mt.gradcheck(
            lambda t, mode=mode: F.embedding_bag(
                mt.tensor(FLAT), t, mt.tensor(np.array([0, 5])), mode=mode
            ),  # fmt: skip
            [table],
        )


def test_errors():
    table = mt.tensor(TABLE)
    with pytest.raises(ArgumentError, match="offsets must be None for a 2-D input"):
        F.embedding_bag(mt.tensor(np.zeros((2, 2), np.int64)), table, mt.tensor(np.array([0])))
    with pytest.raises(ArgumentError, match="needs offsets"):
        F.embedding_bag(mt.tensor(FLAT), table)
    with pytest.raises(ArgumentError, match="start at 0"):
        F.embedding_bag(mt.tensor(FLAT), table, mt.tensor(np.array([1, 3])))
    with pytest.raises(ArgumentError, match="only supported for mode='sum'"):
        F.embedding_bag(mt.tensor(FLAT), table, mt.tensor(np.array([0])),
                        per_sample_weights=mt.ones(11))  # fmt: skip
    with pytest.raises(ShapeError, match="per_sample_weights must have input's shape"):
        F.embedding_bag(mt.tensor(FLAT), table, mt.tensor(np.array([0])), mode="sum",
                        per_sample_weights=mt.ones(3))  # fmt: skip
    with pytest.raises(IndexError, match="indices must lie in"):
        F.embedding_bag(mt.tensor(np.array([[11]])), table)
    with pytest.raises(ArgumentError, match="mode must be"):
        nn.EmbeddingBag(3, 2, mode="median")
