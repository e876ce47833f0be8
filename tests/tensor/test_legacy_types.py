"""PyTorch's legacy tensor types (FloatTensor, LongTensor, ...): construction from a shape or
values, casts with Tensor.type, and isinstance by dtype, against torch where installed."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain.errors import DTypeError

TYPES = {
    "FloatTensor": np.float32, "DoubleTensor": np.float64, "HalfTensor": np.float16,
    "LongTensor": np.int64, "IntTensor": np.int32, "ShortTensor": np.int16,
    "CharTensor": np.int8, "ByteTensor": np.uint8, "BoolTensor": np.bool_,
}  # fmt: skip


@pytest.mark.parametrize("name", TYPES)
def test_a_shape_makes_a_tensor_of_the_types_dtype(name):
    legacy = getattr(mt, name)
    made = legacy(2, 3)
    assert type(made) is mt.Tensor and made.shape == (2, 3) and made.dtype == TYPES[name]
    assert legacy().shape == (0,)
    assert isinstance(made, legacy) and isinstance(made, mt.Tensor)


def test_values_are_copied_and_converted():
    values = np.array([1.7, -2.2])
    made = mt.LongTensor(values)
    assert made.dtype == np.int64 and made.tolist() == [1, -2]
    values[0] = 9.0
    assert made.tolist() == [1, -2]  # a copy
    assert mt.FloatTensor([[1, 2], [3, 4]]).dtype == np.float32
    assert mt.FloatTensor(mt.tensor([1, 2])).tolist() == [1.0, 2.0]


def test_isinstance_asks_the_dtype():
    x = mt.zeros(3, dtype=np.float32)
    assert isinstance(x, mt.FloatTensor)
    assert not isinstance(x, mt.DoubleTensor) and not isinstance(x, mt.LongTensor)
    assert not isinstance(np.zeros(3, np.float32), mt.FloatTensor)


def test_type_casts_to_a_legacy_type():
    x = mt.tensor([1, 2, 3])
    cast = x.type(mt.FloatTensor)
    assert cast.dtype == np.float32 and cast.type() == "torch.FloatTensor"
    assert x.type(mt.LongTensor) is x  # already that type: itself, as PyTorch


def test_bad_arguments_are_refused():
    with pytest.raises(DTypeError, match="FloatTensor: expected a shape"):
        mt.FloatTensor([1.0], 2)
    with pytest.raises(DTypeError, match="FloatTensor: the legacy types make CPU tensors"):
        mt.FloatTensor(2, device="cuda")


@pytest.mark.parametrize("name", TYPES)
def test_as_torch(name, torch):
    ours, theirs = getattr(mt, name), getattr(torch, name)
    values = [[0, 1, 2], [3, 4, 5]]
    np.testing.assert_array_equal(ours(values).numpy(), theirs(values).numpy())
    assert ours(values).dtype == theirs(values).numpy().dtype
    assert ours(4, 2).shape == tuple(theirs(4, 2).shape)
    assert mt.tensor([1.5]).type(ours).tolist() == torch.tensor([1.5]).type(theirs).tolist()
    assert isinstance(ours(values), ours) == isinstance(theirs(values), theirs)
