"""The backward walk: gradients of small graphs, long chains without recursion, visit order."""

import weakref

import numpy as np
import pytest

import minitrain
from minitrain.errors import GraphError, ShapeError


def leaf(values, dtype=np.float64):
    return minitrain.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


def test_diamond_graph_matches_hand_derivation_and_torch():
    torch = pytest.importorskip("torch")
    values = np.array([-1.0, 0.5, 2.0])
    x = leaf(values)
    a = x.exp()
    b = x * 2.0
    out = (a * b + a).sum()
    out.backward()
    # d/dx [e^x * 2x + e^x] = e^x * 2x + 2 e^x + e^x = e^x (2x + 3)
    np.testing.assert_allclose(x.grad.numpy(), np.exp(values) * (2 * values + 3), rtol=1e-12)

    tx = torch.tensor(values, requires_grad=True)
    ta = tx.exp()
    (ta * (tx * 2.0) + ta).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(out.item(), (ta * (tx * 2.0) + ta).sum().item(), rtol=1e-12)


def test_one_tensor_used_many_times():
    values = np.array([1.0, -2.0, 3.0])
    x = leaf(values)
    (x * x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * values**2)


def test_two_backwards_accumulate_into_grad():
    values = np.array([1.0, 2.0])
    x = leaf(values)
    (x * x).sum().backward()
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * values + 3.0)


def test_retain_graph_allows_a_second_backward_and_doubles_grad():
    values = np.array([1.0, -4.0])
    x = leaf(values)
    loss = (x * x).sum()
    loss.backward(retain_graph=True)
    np.testing.assert_allclose(x.grad.numpy(), 2 * values)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * values)


def test_second_backward_without_retain_graph_raises():
    x = leaf([1.0, 2.0])
    loss = (x * x).sum()
    loss.backward()
    first = x.grad.numpy().copy()
    with pytest.raises(GraphError, match="retain_graph"):
        loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), first)


def test_graph_of_ops_that_saved_nothing_can_be_walked_twice_like_torch():
    torch = pytest.importorskip("torch")
    x = leaf([1.0, 2.0, 3.0])
    y = leaf([4.0, 5.0, 6.0])
    loss = (x + y).sum()
    loss.backward()
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(y.grad.numpy(), [2.0, 2.0, 2.0])

    tx = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    ty = torch.tensor([4.0, 5.0, 6.0], dtype=torch.float64, requires_grad=True)
    tloss = (tx + ty).sum()
    tloss.backward()
    tloss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_backward_on_non_scalar_without_grad_raises():
    x = leaf([1.0, 2.0])
    with pytest.raises(GraphError):
        (x * 2.0).backward()
    assert x.grad is None


def test_backward_on_tensor_not_requiring_grad_raises():
    plain = minitrain.tensor([1.0, 2.0])
    with pytest.raises(GraphError):
        plain.sum().backward()
    with pytest.raises(GraphError):
        minitrain.tensor(3.0).backward()


def test_backward_with_explicit_upstream_gradient():
    values = np.array([1.0, 2.0, 3.0])
    upstream = np.array([0.5, -1.0, 2.0])
    x = leaf(values)
    y = x * x
    y.backward(upstream)
    np.testing.assert_allclose(x.grad.numpy(), 2 * values * upstream)

    z = leaf(values)
    (z * 3.0).backward(minitrain.tensor(upstream))
    np.testing.assert_allclose(z.grad.numpy(), 3.0 * upstream)


def test_backward_with_wrong_shaped_upstream_gradient_raises():
    x = leaf([1.0, 2.0, 3.0])
    y = x * x
    with pytest.raises(ShapeError):
        y.backward(np.ones((2,)))
    with pytest.raises(ShapeError):
        y.backward(np.ones((3, 1)))
    assert x.grad is None


CHAIN = 100_000


def test_long_add_chain_backward_without_recursion():
    x = leaf([1.0, -2.0], dtype=np.float32)
    y = x
    for _ in range(CHAIN):
        y = y + 1.0
    np.testing.assert_array_equal(y.numpy(), [1.0 + CHAIN, -2.0 + CHAIN])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])
    assert x.grad.dtype == np.float32


def test_long_mul_chain_backward_and_deletion_without_recursion():
    x = leaf([1.0, 2.0])
    y = x
    for _ in range(CHAIN):
        y = y * 1.0000001
    expected = 1.0000001**CHAIN
    np.testing.assert_allclose(y.numpy(), [expected, 2 * expected], rtol=1e-9)
    loss = y.sum()
    loss.backward(retain_graph=True)
    np.testing.assert_allclose(x.grad.numpy(), [expected, expected], rtol=1e-9)
    ref = weakref.ref(y.node)
    del y, loss  # freeing 100 000 nested nodes must not recurse in deallocation
    assert ref() is None


def test_sequence_numbers_increase_in_recording_order():
    x = leaf([1.0, 2.0])
    with minitrain.Tape() as tape:
        a = x * 2.0
        b = x + 1.0
        c = a * b
        d = (c - a).sum()
    seqs = [n.seq for n in tape.nodes]
    assert all(s1 < s2 for s1, s2 in zip(seqs, seqs[1:], strict=False))
    assert a.node.seq < b.node.seq < c.node.seq < d.node.seq


def test_backward_visits_nodes_in_decreasing_sequence():
    x = leaf([1.0, 2.0])
    a = x * 2.0
    b = x + 1.0
    c = a * b
    d = c - a
    e = d * b
    order = []
    for name, t in [("a", a), ("b", b), ("c", c), ("d", d), ("e", e)]:
        t.register_hook(lambda g, name=name, t=t: order.append((name, t.node.seq)))
    e.sum().backward()
    assert [name for name, _ in order] == ["e", "d", "c", "b", "a"]
    seqs = [s for _, s in order]
    assert seqs == sorted(seqs, reverse=True)
    # e = (2x(x+1) - 2x)(x+1) = 2x^3 + 2x^2; de/dx = 6x^2 + 4x
    np.testing.assert_allclose(x.grad.numpy(), [10.0, 32.0])
