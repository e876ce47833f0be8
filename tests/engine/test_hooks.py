"""Tensor hooks and retain_grad: what hooks see, replace and may return; their handles."""

import numpy as np
import pytest

import minitrain
from minitrain.errors import GraphError, ShapeError


def leaf(values, dtype=np.float64):
    return minitrain.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


def test_leaf_hook_sees_total_gradient_once_and_replaces_it():
    x = leaf([1.0, 2.0])
    calls = []

    def hook(g):
        calls.append(g.numpy().copy())
        return g * 10.0

    x.register_hook(hook)
    (x * 2.0 + x * 3.0).sum().backward()
    assert len(calls) == 1
    np.testing.assert_array_equal(calls[0], [5.0, 5.0])
    np.testing.assert_array_equal(x.grad.numpy(), [50.0, 50.0])


def test_leaf_hook_returning_none_keeps_gradient():
    x = leaf([1.0, 2.0])
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()))
    (x * x).sum().backward()
    np.testing.assert_array_equal(seen[0], [2.0, 4.0])
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


def test_non_leaf_hook_modifies_what_flows_upstream():
    torch = pytest.importorskip("torch")
    values = np.array([1.0, -2.0, 0.5])
    x = leaf(values)
    h = x * 3.0
    seen = []

    def hook(g):
        seen.append(g.numpy().copy())
        return g * 2.0

    h.register_hook(hook)
    (h * h).sum().backward()
    # dloss/dh = 2h = 6x, doubled by the hook, times dh/dx = 3
    np.testing.assert_allclose(seen[0], 6 * values)
    np.testing.assert_allclose(x.grad.numpy(), 36 * values)

    tx = torch.tensor(values, requires_grad=True)
    th = tx * 3.0
    th.register_hook(lambda g: g * 2.0)
    (th * th).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_hook_handle_remove():
    x = leaf([1.0, 2.0])
    calls = []
    handle = x.register_hook(lambda g: calls.append(1) or g * 100.0)
    handle.remove()
    (x * 2.0).sum().backward()
    assert calls == []
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])

    h = x * 1.0
    handle2 = h.register_hook(lambda g: calls.append(2) or g * 100.0)
    handle2.remove()
    handle2.remove()  # a second remove is harmless
    x.grad = None
    (h * 2.0).sum().backward()
    assert calls == []
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_retain_grad_on_non_leaf_fills_its_grad():
    torch = pytest.importorskip("torch")
    values = np.array([1.0, 2.0, -3.0])
    x = leaf(values)
    h = x * 2.0
    other = x + 1.0
    h.retain_grad()
    assert h.retains_grad
    (h * h).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), 4 * values)  # 2h = 4x
    assert other.grad is None

    tx = torch.tensor(values, requires_grad=True)
    th = tx * 2.0
    th.retain_grad()
    (th * th).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), th.grad.numpy())


def test_hook_returning_wrong_shape_raises_shape_error():
    x = leaf([1.0, 2.0, 3.0])
    x.register_hook(lambda g: np.ones(2))
    with pytest.raises(ShapeError):
        (x * 2.0).sum().backward()

    y = leaf([1.0, 2.0, 3.0])
    h = y * 2.0
    h.register_hook(lambda g: minitrain.ones(3, 1, dtype=minitrain.float64))
    with pytest.raises(ShapeError):
        (h * 1.0).sum().backward()
    assert y.grad is None


def test_register_hook_on_tensor_without_grad_raises():
    with pytest.raises(GraphError):
        minitrain.tensor([1.0]).register_hook(lambda g: g)


def test_retain_grad_sees_the_gradient_after_hooks_like_torch():
    torch = pytest.importorskip("torch")
    values = np.array([1.0, 2.0])
    x = leaf(values)
    h = x * 3.0
    h.retain_grad()
    h.register_hook(lambda g: g * 2.0)
    (h * h).sum().backward()

    tx = torch.tensor(values, requires_grad=True)
    th = tx * 3.0
    th.retain_grad()
    th.register_hook(lambda g: g * 2.0)
    (th * th).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), th.grad.numpy())
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
