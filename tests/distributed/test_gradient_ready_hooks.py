"""The engine's hooks DistributedDataParallel stands on: a leaf's gradient-ready hook fires
during the walk as soon as that leaf's gradient is final (before the nodes below it run), with
the gradient .grad then receives; queue_callback's callbacks run after every .grad changed."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain.autograd.hooks import queue_callback, register_gradient_ready_hook
from minitrain.errors import DTypeError, GraphError


def chain():
    """Three layers: w3 is used last in forward, so its gradient is final first in backward."""
    rng = np.random.default_rng(0)
    ws = [mt.tensor(rng.standard_normal((3, 3)), requires_grad=True) for _ in range(3)]
    x = mt.tensor(rng.standard_normal((2, 3)))
    return ws, x


def test_each_leaf_fires_once_when_its_gradient_is_final_before_the_nodes_below_run():
    (w1, w2, w3), x = chain()
    events = []
    handles = [
        register_gradient_ready_hook(w, lambda leaf, grad, n=n: events.append((n, grad.numpy())))
        for n, w in (("w1", w1), ("w2", w2), ("w3", w3))
    ]
    h1 = (x @ w1).tanh()
    h1.register_hook(lambda grad: events.append(("h1", None)))  # runs when h1's grad is made
    h2 = (h1 @ w2).tanh()
    h2.register_hook(lambda grad: events.append(("h2", None)))
    loss = (h2 @ w3 + h1 @ w1).sum()  # w1 used twice: final only after both uses
    loss.backward()
    order = [name for name, _ in events]
    assert order == ["w3", "h2", "w2", "h1", "w1"]
    for name, grad in events:
        if grad is not None:  # the gradient the hook saw is what .grad got
            np.testing.assert_array_equal(grad, {"w1": w1, "w2": w2, "w3": w3}[name].grad.numpy())
    for handle in handles:
        handle.remove()
    events.clear()
    (x @ w1).sum().backward()
    assert events == []


def test_gradient_before_the_ready_hook_has_been_through_the_leafs_own_hooks():
    (w1, _, _), x = chain()
    w1.register_hook(lambda grad: grad * 2)
    seen = []
    handle = register_gradient_ready_hook(w1, lambda leaf, grad: seen.append(grad.numpy()))
    (x @ w1).sum().backward()
    handle.remove()
    np.testing.assert_array_equal(seen[0], w1.grad.numpy())
    np.testing.assert_allclose(seen[0], 2 * np.repeat(x.numpy().sum(0)[:, None], 3, 1))


def test_grad_changes_only_at_the_end_and_a_later_error_leaves_it():
    (w1, w2, _), x = chain()
    grads_seen = []
    handle = register_gradient_ready_hook(w2, lambda leaf, grad: grads_seen.append(leaf.grad))
    h = x @ w1
    h.register_hook(lambda grad: (_ for _ in ()).throw(ValueError("late failure")))
    with pytest.raises(ValueError, match="late failure"):
        (h @ w2).sum().backward()
    handle.remove()
    assert grads_seen == [None]  # it fired, before the failure
    assert w1.grad is None and w2.grad is None


def test_queued_callbacks_run_after_every_grad_changed_in_order():
    (w1, w2, _), x = chain()
    seen = []

    def ready(leaf, grad):
        queue_callback(lambda: seen.append(("first", w1.grad is not None, w2.grad is not None)))
        queue_callback(lambda: (seen.append(("second",)), queue_callback(lambda: seen.append(3))))

    handle = register_gradient_ready_hook(w2, ready)
    ((x @ w1) @ w2).sum().backward()
    handle.remove()
    assert seen == [("first", True, True), ("second",), 3]


def test_queue_callback_outside_a_backward_and_bad_hooks_are_refused():
    (w1, _, _), _ = chain()
    with pytest.raises(GraphError, match="no backward is running"):
        queue_callback(lambda: None)
    with pytest.raises(GraphError, match="leaf that requires grad"):
        register_gradient_ready_hook(w1 * 2, lambda leaf, grad: None)
    with pytest.raises(GraphError, match="leaf that requires grad"):
        register_gradient_ready_hook(mt.ones(2), lambda leaf, grad: None)
    with pytest.raises(DTypeError, match="hook must be callable"):
        register_gradient_ready_hook(w1, 3)


def test_ready_hooks_do_not_fire_in_grad():
    (w1, _, _), x = chain()
    seen = []
    handle = register_gradient_ready_hook(w1, lambda leaf, grad: seen.append(1))
    mt.grad((x @ w1).sum(), [w1])
    handle.remove()
    assert seen == []


def test_ready_hooks_fire_in_backward_with_inputs_for_the_inputs_only():
    (w1, w2, w3), x = chain()
    seen = []
    handles = [
        register_gradient_ready_hook(w, lambda leaf, grad, n=n: seen.append((n, grad.numpy())))
        for n, w in (("w1", w1), ("w2", w2), ("w3", w3))
    ]
    (((x @ w1) @ w2) @ w3).sum().backward(inputs=[w3, w1])
    for handle in handles:
        handle.remove()
    assert [name for name, _ in seen] == ["w3", "w1"]  # in the order they became final
    np.testing.assert_array_equal(seen[0][1], w3.grad.numpy())
    np.testing.assert_array_equal(seen[1][1], w1.grad.numpy())
    assert w2.grad is None
