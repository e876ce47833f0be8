"""Accumulation into .grad without aliasing, and the release of the graph and its saved arrays.

A fresh gradient's buffer is taken over as the leaf's .grad; one anybody else holds is copied."""

import contextlib
import gc
import weakref

import numpy as np

import minitrain


def leaf(values, dtype=np.float64):
    return minitrain.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


def test_leaf_grads_do_not_alias_each_other():
    x = leaf([1.0, 2.0, 3.0])
    y = leaf([4.0, 5.0, 6.0])
    (x + y).sum().backward()
    assert not np.shares_memory(x.grad.array, y.grad.array)
    x.grad.array[0] = 100.0
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 1.0, 1.0])
    assert x.grad.array.flags.writeable


def test_leaf_grad_does_not_alias_user_provided_root_grad():
    x = leaf([1.0, 2.0, 3.0])
    y = leaf([4.0, 5.0, 6.0])
    upstream = np.array([1.0, 2.0, 3.0])
    (x + y).backward(upstream)
    assert not np.shares_memory(x.grad.array, upstream)
    assert not np.shares_memory(y.grad.array, upstream)
    upstream[:] = -7.0
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 2.0, 3.0])

    z = leaf([1.0, 2.0])
    seed = np.array([3.0, 4.0])
    z.backward(seed)  # a leaf as its own root
    np.testing.assert_array_equal(z.grad.numpy(), [3.0, 4.0])
    assert not np.shares_memory(z.grad.array, seed)


def test_leaf_grad_does_not_alias_input_data():
    x = leaf([1.0, 2.0])
    y = leaf([3.0, 4.0])
    (x * y).sum().backward()  # dx = y, dy = x
    assert not np.shares_memory(x.grad.array, y.array)
    assert not np.shares_memory(y.grad.array, x.array)
    x.grad.array[:] = 0.0
    np.testing.assert_array_equal(y.array, [3.0, 4.0])


def _owned_flags(monkeypatch):
    """Record, per first accumulation into a leaf, whether the engine handed its array over."""
    from minitrain.tensor import Tensor

    flags = []
    original = Tensor._accumulate_grad

    def spy(self, grad, owned=False):
        flags.append(owned)
        return original(self, grad, owned)

    monkeypatch.setattr(Tensor, "_accumulate_grad", spy)
    return flags


def test_a_fresh_gradient_becomes_the_leafs_grad_without_a_copy(monkeypatch):
    flags = _owned_flags(monkeypatch)
    x = minitrain.randn(1000, requires_grad=True)
    (x * 2.0).sum().backward()
    assert flags == [True]
    np.testing.assert_array_equal(x.grad.array, np.full(1000, 2.0, np.float32))


def test_a_gradient_sent_to_two_leaves_is_copied_for_each(monkeypatch):
    flags = _owned_flags(monkeypatch)
    a, b = minitrain.randn(3, requires_grad=True), minitrain.randn(3, requires_grad=True)
    (a + b).sum().backward()
    assert flags == [False, False]
    assert not np.shares_memory(a.grad.array, b.grad.array)


def test_gradients_never_alias_user_arrays_hooks_or_retained_grads():
    x = minitrain.randn(3, requires_grad=True)
    upstream = np.ones(3, np.float32)
    x.backward(upstream)
    assert not np.shares_memory(x.grad.array, upstream)

    kept = []
    y = minitrain.randn(3, requires_grad=True)
    y.register_hook(lambda g: kept.append(g * 1.0) or kept[-1])
    (y * 3.0).sum().backward()
    assert not np.shares_memory(y.grad.array, kept[0].array)

    z = minitrain.randn(3, requires_grad=True)
    h = z * 1.0
    h.retain_grad()
    (h * 2.0).sum().backward()
    assert not np.shares_memory(h.grad.array, z.grad.array)
    z.grad.array[...] = 0.0  # writing one .grad leaves the other alone
    np.testing.assert_array_equal(h.grad.array, np.full(3, 2.0, np.float32))


@contextlib.contextmanager
def gc_disabled():
    """No cyclic garbage collection inside: what is freed, is freed by reference counts alone."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def test_graph_is_freed_by_refcount_alone():
    x = leaf(np.ones(3))
    with gc_disabled():
        a = x * 2.0
        b = a.exp()
        out = (b * a).sum()
        out_ref, inner_ref, b_ref = weakref.ref(out.node), weakref.ref(a.node), weakref.ref(b)
        del out, a, b
        alive_before_gc = (out_ref() is not None, inner_ref() is not None, b_ref() is not None)
        gc.collect()
        alive_after_gc = (out_ref() is not None, inner_ref() is not None, b_ref() is not None)
    assert alive_before_gc == (False, False, False)
    assert alive_after_gc == (False, False, False)
    assert x.node is None and x.grad is None


def test_graph_with_hook_and_retain_grad_is_freed_by_refcount():
    x = leaf(np.ones(3))
    with gc_disabled():
        h = x * 2.0
        h.retain_grad()
        h.register_hook(lambda g: g)
        out = (h * h).sum()
        refs = [weakref.ref(out.node), weakref.ref(h.node), weakref.ref(h)]
        del h, out
        alive = [r() is not None for r in refs]
    assert alive == [False, False, False]


def test_backward_releases_saved_arrays():
    x = leaf([1.0, 2.0])
    y = leaf([3.0, 4.0])
    prod = x * y
    loss = prod.exp().sum()
    node, exp_node = prod.node, loss.node.parents[0]
    assert set(node.saved_arrays()) == {"a", "b"}
    assert set(exp_node.saved_arrays()) == {"out"}
    loss.backward()
    assert node.saved_arrays() == {}
    assert exp_node.saved_arrays() == {}


def test_backward_with_retain_graph_keeps_saved_arrays():
    x = leaf([1.0, 2.0])
    prod = x * x
    prod.sum().backward(retain_graph=True)
    saved = prod.node.saved_arrays()
    assert set(saved) == {"a", "b"}
    np.testing.assert_array_equal(saved["a"], [1.0, 2.0])
