"""`Tensor.data` as PyTorch's: a Tensor sharing memory, outside the graph (issue 33), where it
was the raw array; the raw array is `.array`. And the byte sizes: itemsize, element_size,
nbytes."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain.errors import DTypeError, GraphError


def test_data_is_a_detached_tensor_sharing_memory():
    w = mt.nn.Parameter(mt.tensor([1.0, 2.0, 3.0]))
    data = w.data
    assert type(data) is mt.Tensor  # not a Parameter, as in PyTorch
    assert not data.requires_grad and data.grad_fn is None and data.is_leaf
    assert np.shares_memory(data.array, w.array)
    data.add_(1.0)  # the everyday `p.data.add_(...)`: allowed on a leaf that requires grad
    np.testing.assert_array_equal(w.array, [2.0, 3.0, 4.0])
    w.data.mul_(2.0)
    np.testing.assert_array_equal(w.numpy(), [4.0, 6.0, 8.0])
    assert w.requires_grad


def test_data_of_a_computed_tensor_leaves_the_graph():
    x = mt.tensor([1.0, -2.0], requires_grad=True)
    y = x * 3.0
    d = y.data
    assert y.grad_fn is not None and d.grad_fn is None and not d.requires_grad
    np.testing.assert_array_equal(d.numpy(), [3.0, -6.0])


def test_an_update_through_data_is_the_manual_sgd_step():
    # the loop of PyTorch's tutorials: w.data -= lr * w.grad.data
    w = mt.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    w.data -= 0.1 * w.grad.data
    np.testing.assert_allclose(w.numpy(), [0.8, 1.6])
    assert w.requires_grad and w.is_leaf


def test_setting_data_rebinds_the_memory_any_shape():
    w = mt.nn.Parameter(mt.zeros(3))
    replacement = mt.ones(2, 2)
    w.data = replacement
    assert w.shape == (2, 2) and np.shares_memory(w.array, replacement.array)
    assert isinstance(w, mt.nn.Parameter) and w.requires_grad


def test_setting_data_refuses_what_is_not_a_tensor_before_changing_anything():
    w = mt.zeros(3)
    with pytest.raises(DTypeError, match="data: must be set to a Tensor, got ndarray"):
        w.data = np.ones(3)
    w_grad = mt.zeros(2, requires_grad=True)
    with pytest.raises(DTypeError, match="only floating-point"):
        w_grad.data = mt.tensor([1, 2])
    np.testing.assert_array_equal(w_grad.numpy(), [0.0, 0.0])  # unchanged


def test_a_write_through_data_to_a_saved_value_is_refused_at_backward():
    # the one difference from PyTorch (which silently uses the new values): versions belong to
    # memory, so the graph sees the write
    w = mt.tensor([1.0, 2.0], requires_grad=True)
    loss = (w * w).sum()
    w.data.add_(1.0)
    with pytest.raises(GraphError, match="in-place"):
        loss.backward()


def test_data_matches_torch(torch):
    values = np.arange(6.0).reshape(2, 3)
    ours, theirs = mt.nn.Parameter(mt.tensor(values)), torch.nn.Parameter(torch.tensor(values))
    for t in (ours, theirs):
        t.data.mul_(0.5).add_(1.0)
        t.data[0, 1] = 7.0
    np.testing.assert_array_equal(ours.numpy(), theirs.detach().numpy())
    assert type(theirs.data) is torch.Tensor and type(ours.data) is mt.Tensor
    assert ours.data.requires_grad == theirs.data.requires_grad


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int64, np.bool_])
def test_byte_sizes(dtype):
    t = mt.zeros(2, 5, dtype=dtype)
    size = np.dtype(dtype).itemsize
    assert t.itemsize == t.element_size() == size
    assert t.nbytes == 10 * size
    assert t[:, 1].nbytes == 2 * size  # a view counts its own elements


def test_byte_sizes_match_torch(torch):
    for dtype in (np.float32, np.float64, np.int16, np.uint8):
        ours, theirs = mt.zeros(3, 4, dtype=dtype), torch.from_numpy(np.zeros((3, 4), dtype))
        assert (ours.itemsize, ours.element_size(), ours.nbytes) == (
            theirs.itemsize,
            theirs.element_size(),
            theirs.nbytes,
        )
