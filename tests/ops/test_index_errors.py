"""Errors of the builtin kind PyTorch raises, kept as minitrain errors: a dim out of range is a
DimensionError (a ShapeError) that is also an IndexError; a class index out of range in
cross_entropy / nll_loss an IndexOutOfRangeError (a MinitrainError) that is also one."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain.errors import DimensionError, IndexOutOfRangeError, MinitrainError, ShapeError

# each call reaches a dim past the (2, 3) tensor's rank
DIM_CALLS = {
    "sum": lambda t: t.sum(2),
    "mean": lambda t: t.mean(-3),
    "var": lambda t: t.var(2),
    "max": lambda t: t.max(3),
    "argmax": lambda t: t.argmax(3),
    "cumsum": lambda t: t.cumsum(3),
    "logsumexp": lambda t: t.logsumexp(2),
    "softmax": lambda t: t.softmax(5),
    "transpose": lambda t: t.transpose(0, 3),
    "permute": lambda t: t.permute(0, 2),
    "flatten": lambda t: t.flatten(3),
    "unsqueeze": lambda t: t.unsqueeze(4),
    "squeeze": lambda t: t.squeeze(3),
    "flip": lambda t: t.flip(3),
    "split": lambda t: t.split(1, 2),
    "unbind": lambda t: t.unbind(2),
}


@pytest.mark.parametrize("name", sorted(DIM_CALLS))
def test_a_dim_out_of_range_is_an_index_error_as_in_torch(torch, name):
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    with pytest.raises(IndexError):
        DIM_CALLS[name](torch.from_numpy(values))
    with pytest.raises(DimensionError) as raised:
        DIM_CALLS[name](mt.tensor(values))
    assert isinstance(raised.value, ShapeError) and isinstance(raised.value, IndexError)
    assert "out of range" in str(raised.value)


def test_a_permutation_of_the_wrong_length_stays_a_shape_error():
    with pytest.raises(ShapeError) as raised:
        mt.zeros(2, 3).permute(0, 1, 2)
    assert not isinstance(raised.value, IndexError)


@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("target", [[0, 3], [-2, 1]])
def test_a_class_index_out_of_range_is_an_index_error_as_in_torch(torch, loss, target):
    scores = np.zeros((2, 3), np.float32)
    with pytest.raises(IndexError):
        getattr(torch.nn.functional, loss)(torch.from_numpy(scores), torch.tensor(target))
    with pytest.raises(IndexOutOfRangeError) as raised:
        getattr(mt.nn.functional, loss)(mt.tensor(scores), mt.tensor(target))
    assert isinstance(raised.value, MinitrainError) and isinstance(raised.value, IndexError)
    assert f"target {min(target) if min(target) < 0 else max(target)} is out of range" in str(
        raised.value
    )
