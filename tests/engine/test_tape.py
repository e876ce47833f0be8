"""The Tape: the nodes it records, the bytes they save, what it keeps alive, its gradient()."""

import threading
import weakref

import numpy as np

import minitrain


def leaf(values, dtype=np.float64):
    return minitrain.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


def test_tape_records_nodes_in_order_with_their_names():
    x = minitrain.tensor(np.arange(3.0))
    w = leaf([1.0, 2.0, 3.0])
    b = leaf([0.5])
    with minitrain.Tape() as tape:
        loss = (x * w + b).sum()
    assert [node.name for node in tape.nodes] == ["MulGrad", "AddGrad", "SumGrad"]
    assert len(tape) == 3
    assert tape.nodes[-1] is loss.node
    assert list(tape) == tape.nodes


def test_tape_gradient_matches_backward_and_leaves_grad_alone():
    xv = np.array([[1.0, 2.0], [3.0, 4.0], [-1.0, 0.5]])
    wv = np.array([0.3, -0.7])
    x = minitrain.tensor(xv)
    w = leaf(wv)
    b = leaf([0.25])
    with minitrain.Tape() as tape:
        loss = ((x @ w + b) ** 2).mean()
    gw, gb = tape.gradient(loss, [w, b])
    assert w.grad is None and b.grad is None
    assert isinstance(gw, minitrain.Tensor) and isinstance(gb, minitrain.Tensor)

    # hand derivation: r = x w + b; loss = mean(r^2); dloss/dw = 2/n x^T r; dloss/db = 2/n sum r
    r = xv @ wv + 0.25
    np.testing.assert_allclose(gw.numpy(), 2 / 3 * xv.T @ r, rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), [2 / 3 * r.sum()], rtol=1e-12)

    loss2 = ((x @ w + b) ** 2).mean()
    loss2.backward()
    np.testing.assert_allclose(gw.numpy(), w.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), b.grad.numpy(), rtol=1e-12)


def test_tape_gradient_of_single_tensor_returns_one_tensor():
    w = leaf([1.0, -2.0])
    with minitrain.Tape() as tape:
        loss = (w * w).sum()
    g = tape.gradient(loss, w)
    assert isinstance(g, minitrain.Tensor)
    np.testing.assert_array_equal(g.numpy(), [2.0, -4.0])
    assert w.grad is None


def test_tape_saved_bytes_counts_saved_arrays():
    x = leaf(np.ones(100), dtype=np.float32)
    y = leaf(np.full(100, 2.0), dtype=np.float32)
    with minitrain.Tape() as tape:
        prod = x * y  # mul saves both float32 (100,) inputs: 2 * 400 bytes
    assert tape.saved_bytes() == 800
    with minitrain.Tape() as tape2:
        loss = prod.sum()  # sum saves no array
    assert tape2.saved_bytes() == 0
    assert tape.saved_bytes() == 800
    loss.backward()
    assert tape.saved_bytes() == 0


def test_ops_save_only_what_a_needed_gradient_reads():
    data = np.ones((8, 100), np.float32)  # no gradient: like a batch of inputs
    w = leaf(np.ones((100, 10)), dtype=np.float32)
    with minitrain.Tape() as tape:
        h = minitrain.Tensor(data) @ w  # dw = data^T @ grad reads data; w is not kept
        scaled = h * 2.0  # d/dh reads only the 2.0
        ratio = scaled / 3.0  # d/dscaled reads only the 3.0
    assert [sorted(k for k, v in n.saved_arrays().items() if v is not None) for n in tape] == [
        ["a"],
        ["b"],
        ["b"],
    ]
    assert tape.saved_bytes() == data.nbytes
    ratio.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.full((100, 10), 8 * 2 / 3), rtol=1e-6)
    x = leaf(np.ones((8, 100)), dtype=np.float32)
    with minitrain.Tape() as tape:
        minitrain.nn.functional.linear(x, minitrain.Tensor(np.ones((10, 100), np.float32)))
    assert tape.saved_bytes() == 10 * 100 * 4  # only the weight, which dx reads


def test_tape_saved_bytes_counts_a_shared_array_once():
    x = leaf(np.ones(100), dtype=np.float32)
    y = leaf(np.full(100, 2.0), dtype=np.float32)
    z = leaf(np.full(100, 3.0), dtype=np.float32)
    with minitrain.Tape() as tape:
        p = x * y
        q = x * y  # the same two arrays again
    assert tape.saved_bytes() == 800
    with minitrain.Tape() as tape3:
        r = x * z  # x shared with the first, z new
        s = x * y
    assert tape3.saved_bytes() == 1200
    (p + q + r + s).sum().backward()
    assert tape.saved_bytes() == 0
    assert tape3.saved_bytes() == 0


def test_tape_saved_bytes_float64():
    x = leaf(np.ones((4, 5)))
    with minitrain.Tape() as tape:
        x.exp()  # exp saves its float64 (4, 5) output: 160 bytes
    assert tape.saved_bytes() == 4 * 5 * 8


def test_nested_tapes_both_record_inner_ops():
    x = leaf([1.0, 2.0])
    with minitrain.Tape() as outer:
        a = x * 2.0
        with minitrain.Tape() as inner:
            b = a + 1.0
            c = b.exp()
        d = c.sum()
    assert [n.name for n in inner.nodes] == ["AddGrad", "ExpGrad"]
    assert [n.name for n in outer.nodes] == ["MulGrad", "AddGrad", "ExpGrad", "SumGrad"]
    assert inner.nodes[0] is b.node and outer.nodes[1] is b.node
    assert outer.nodes[0] is a.node and outer.nodes[3] is d.node


def test_tape_does_not_record_ops_of_other_threads():
    x = leaf([1.0, 2.0])

    def worker():
        (x * 2.0).sum()

    with minitrain.Tape() as tape:
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join(10)
        x + 1.0
    assert [n.name for n in tape.nodes] == ["AddGrad"]


def test_tape_keeps_its_nodes_alive():
    x = leaf(np.ones(100), dtype=np.float32)
    with minitrain.Tape() as tape:
        out = x * x  # saves the same (100,) float32 array twice: 400 distinct bytes
    node_ref = weakref.ref(out.node)
    del out
    assert node_ref() is not None
    assert tape.saved_bytes() == 400
    del tape
    assert node_ref() is None
