"""The autograd engine: backward walk, grad modes, the Tape, hooks, grad(), graph lifetime."""

import gc
import itertools
import threading
import weakref

import numpy as np
import pytest

import minitrain
from minitrain.errors import DTypeError, GraphError, ShapeError
from minitrain.ops import Op
from minitrain.ops.elementwise import Add


def leaf(values, dtype=np.float64):
    return minitrain.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


# --- basic gradients ------------------------------------------------------------------------


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


# --- grad modes -----------------------------------------------------------------------------


def test_no_grad_records_nothing():
    x = leaf([1.0, 2.0])
    with minitrain.no_grad():
        assert not minitrain.is_grad_enabled()
        out = (x * x).sum()
    assert minitrain.is_grad_enabled()
    assert out.requires_grad is False
    assert out.node is None
    np.testing.assert_allclose(out.item(), 5.0)
    with pytest.raises(GraphError):
        out.backward()


def test_no_grad_as_decorator():
    x = leaf([1.0, 2.0])

    @minitrain.no_grad()
    def f(t):
        assert not minitrain.is_grad_enabled()
        return t * 3.0

    out = f(x)
    assert out.node is None and not out.requires_grad
    assert minitrain.is_grad_enabled()
    assert f.__name__ == "f"
    # still recording outside the decorated function
    assert (x * 3.0).node is not None


def test_no_grad_restores_state_after_an_exception():
    with pytest.raises(KeyError):
        with minitrain.no_grad():
            raise KeyError("boom")
    assert minitrain.is_grad_enabled()


def test_enable_grad_inside_no_grad_records_again():
    x = leaf([1.0, 2.0])
    with minitrain.no_grad():
        with minitrain.enable_grad():
            assert minitrain.is_grad_enabled()
            inner = x * 2.0
        assert not minitrain.is_grad_enabled()
        outer = x * 2.0
    assert inner.requires_grad and inner.node is not None
    assert not outer.requires_grad and outer.node is None
    inner.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_enable_grad_as_decorator_inside_no_grad():
    x = leaf([1.0])

    @minitrain.enable_grad()
    def f(t):
        return t * 2.0

    with minitrain.no_grad():
        out = f(x)
    assert out.node is not None


def test_set_grad_enabled_context_and_decorator():
    x = leaf([1.0, 2.0])
    with minitrain.set_grad_enabled(False):
        assert not minitrain.is_grad_enabled()
        off = x * 2.0
        with minitrain.set_grad_enabled(True):
            on = x * 2.0
    assert minitrain.is_grad_enabled()
    assert off.node is None and not off.requires_grad
    assert on.node is not None

    @minitrain.set_grad_enabled(False)
    def f(t):
        return t * 2.0

    assert f(x).node is None
    assert (x * 2.0).node is not None


def test_set_grad_enabled_called_as_a_function_like_torch():
    # torch.set_grad_enabled(False) called as a plain function switches recording off at once.
    x = leaf([1.0, 2.0])
    try:
        minitrain.set_grad_enabled(False)
        enabled_after_call = minitrain.is_grad_enabled()
        recorded = (x * 2.0).node is not None
    finally:
        minitrain.set_grad_enabled(True)
    assert enabled_after_call is False
    assert recorded is False


def test_no_grad_is_thread_local():
    x = leaf([1.0, 2.0])
    entered, release = threading.Event(), threading.Event()
    seen = {}

    def worker():
        with minitrain.no_grad():
            seen["enabled"] = minitrain.is_grad_enabled()
            seen["recorded"] = (x * 2.0).node is not None
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        assert entered.wait(10)
        # the worker sits inside no_grad right now; this thread still records
        assert minitrain.is_grad_enabled()
        out = x * 2.0
        assert out.requires_grad and out.node is not None
    finally:
        release.set()
        thread.join(10)
    assert seen == {"enabled": False, "recorded": False}


def test_new_thread_records_while_main_thread_is_in_no_grad():
    x = leaf([1.0, 2.0])
    seen = {}

    def worker():
        seen["enabled"] = minitrain.is_grad_enabled()
        seen["recorded"] = (x * 2.0).node is not None

    with minitrain.no_grad():
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join(10)
        assert (x * 2.0).node is None
    assert seen == {"enabled": True, "recorded": True}


def test_nothing_recorded_or_saved_when_no_input_requires_grad():
    a = minitrain.tensor(np.arange(6.0).reshape(2, 3))
    b = minitrain.tensor(np.ones((2, 3)))
    with minitrain.Tape() as tape:
        out = ((a * b).exp() / (b + 1.0)).sum()
        out2 = (a @ b.T).sum(dim=0).mean()
    assert len(tape.nodes) == 0
    assert tape.saved_bytes() == 0
    assert out.node is None and out2.node is None
    assert not out.requires_grad


def test_nothing_recorded_or_saved_under_no_grad_in_a_tape():
    x = leaf(np.ones(100))
    with minitrain.Tape() as tape, minitrain.no_grad():
        (x * x).exp().sum()
    assert len(tape.nodes) == 0
    assert tape.saved_bytes() == 0


# --- the Tape -------------------------------------------------------------------------------


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


# --- hooks ----------------------------------------------------------------------------------


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


# --- minitrain.grad -------------------------------------------------------------------------


def test_grad_wrt_leaves_matches_torch_and_leaves_grad_alone():
    torch = pytest.importorskip("torch")
    av = np.array([[0.5, -1.0], [2.0, 3.0]])
    bv = np.array([1.5, -0.5])
    a, b = leaf(av), leaf(bv)
    out = ((a @ b).exp() * b.sum()).sum()
    ga, gb = minitrain.grad(out, [a, b])
    assert a.grad is None and b.grad is None

    ta = torch.tensor(av, requires_grad=True)
    tb = torch.tensor(bv, requires_grad=True)
    tout = ((ta @ tb).exp() * tb.sum()).sum()
    tga, tgb = torch.autograd.grad(tout, [ta, tb])
    np.testing.assert_allclose(ga.numpy(), tga.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), tgb.numpy(), rtol=1e-12)


def test_grad_wrt_intermediate_tensor():
    torch = pytest.importorskip("torch")
    values = np.array([0.1, 0.2, 0.3])
    x = leaf(values)
    h = x.exp()
    out = (h * h * 3.0).sum()
    (gh,) = minitrain.grad(out, [h])
    np.testing.assert_allclose(gh.numpy(), 6 * np.exp(values), rtol=1e-12)
    assert x.grad is None and h.grad is None

    tx = torch.tensor(values, requires_grad=True)
    th = tx.exp()
    (tgh,) = torch.autograd.grad((th * th * 3.0).sum(), [th])
    np.testing.assert_allclose(gh.numpy(), tgh.numpy(), rtol=1e-12)


def test_grad_with_grad_outputs_and_retain_graph():
    torch = pytest.importorskip("torch")
    values = np.array([1.0, 2.0, 3.0])
    cot = np.array([1.0, -1.0, 0.5])
    x = leaf(values)
    y = x * x
    (g1,) = minitrain.grad(y, x, grad_outputs=minitrain.tensor(cot), retain_graph=True)
    (g2,) = minitrain.grad([y], [x], grad_outputs=[minitrain.tensor(cot)])
    np.testing.assert_allclose(g1.numpy(), 2 * values * cot)
    np.testing.assert_allclose(g2.numpy(), g1.numpy())
    with pytest.raises(GraphError, match="retain_graph"):
        minitrain.grad(y, x, grad_outputs=minitrain.tensor(cot))

    tx = torch.tensor(values, requires_grad=True)
    (tg,) = torch.autograd.grad(tx * tx, tx, grad_outputs=torch.tensor(cot))
    np.testing.assert_allclose(g1.numpy(), tg.numpy())


def test_grad_unused_input_raises_or_returns_none():
    torch = pytest.importorskip("torch")
    x = leaf([1.0, 2.0])
    unused = leaf([5.0])
    out = (x * x).sum()
    with pytest.raises(GraphError):
        minitrain.grad(out, [x, unused], retain_graph=True)
    gx, gu = minitrain.grad(out, [x, unused], allow_unused=True)
    assert gu is None
    np.testing.assert_array_equal(gx.numpy(), [2.0, 4.0])
    assert unused.grad is None and x.grad is None

    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    tu = torch.tensor([5.0], requires_grad=True)
    tgx, tgu = torch.autograd.grad((tx * tx).sum(), [tx, tu], allow_unused=True)
    assert tgu is None
    np.testing.assert_allclose(gx.numpy(), tgx.numpy())


def test_grad_with_the_same_input_twice_like_torch():
    torch = pytest.importorskip("torch")
    x = leaf([1.0, 2.0])
    out = (x * x).sum()
    g1, g2 = minitrain.grad(out, [x, x])
    tx = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    t1, t2 = torch.autograd.grad((tx * tx).sum(), [tx, tx])
    np.testing.assert_allclose(g1.numpy(), t1.numpy())
    np.testing.assert_allclose(g2.numpy(), t2.numpy())


def test_grad_with_the_same_intermediate_twice_like_torch():
    x = leaf([1.0, 2.0])
    h = x * 3.0
    out = (h * h).sum()
    g1, g2 = minitrain.grad(out, [h, h])
    np.testing.assert_allclose(g1.numpy(), [6.0, 12.0])
    np.testing.assert_allclose(g2.numpy(), [6.0, 12.0])


def test_grad_input_not_requiring_grad_raises():
    x = leaf([1.0])
    plain = minitrain.tensor([2.0])
    with pytest.raises(GraphError):
        minitrain.grad((x * plain).sum(), [plain])


# --- broadcasting and dtypes ----------------------------------------------------------------


def test_broadcast_gradients_are_summed_back_to_each_shape():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    xv, yv, wv = rng.standard_normal((3, 1)), rng.standard_normal(4), rng.standard_normal((3, 4))
    x, y = leaf(xv), leaf(yv)
    out = x + y
    assert out.shape == (3, 4)
    (out * minitrain.tensor(wv)).sum().backward()
    assert x.grad.shape == (3, 1) and y.grad.shape == (4,)
    np.testing.assert_allclose(x.grad.numpy(), wv.sum(axis=1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), wv.sum(axis=0), rtol=1e-12)

    tx = torch.tensor(xv, requires_grad=True)
    ty = torch.tensor(yv, requires_grad=True)
    ((tx + ty) * torch.tensor(wv)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-12)


def test_broadcast_mul_against_scalar_shaped_tensor():
    torch = pytest.importorskip("torch")
    xv, sv = np.arange(6.0).reshape(2, 3), np.array(1.5)
    x, s = leaf(xv), leaf(sv)
    (x * s).sum().backward()
    assert s.grad.shape == ()
    np.testing.assert_allclose(s.grad.numpy(), xv.sum())
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 3), 1.5))
    tx = torch.tensor(xv, requires_grad=True)
    ts = torch.tensor(sv, requires_grad=True)
    (tx * ts).sum().backward()
    np.testing.assert_allclose(s.grad.numpy(), ts.grad.numpy())


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_gradient_dtype_equals_tensor_dtype(dtype):
    x = leaf([1.0, 2.0, 3.0], dtype=dtype)
    y = leaf([[1.0], [2.0]], dtype=dtype)
    ((x * y).exp() * 0.5 + x).sum().backward()
    assert x.grad.dtype == dtype
    assert y.grad.dtype == dtype


def test_gradient_dtype_of_a_float32_leaf_mixed_with_float64():
    x = leaf([1.0, 2.0], dtype=np.float32)
    y = leaf([3.0, 4.0], dtype=np.float64)
    out = x * y
    assert out.dtype == np.float64
    out.sum().backward()
    assert x.grad.dtype == np.float32
    assert y.grad.dtype == np.float64
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])


@pytest.mark.parametrize(
    "other", [np.array(["a", "b", "c"]), np.str_("a")], ids=["string_array", "numpy_string"]
)
def test_promotion_leaves_non_numeric_operands_to_numpy(other):
    # no KeyError from the promotion's dtype categories: numpy's own refusal, as before
    with pytest.raises(TypeError):
        minitrain.tensor(np.ones(3, np.float32)) + other


def test_numpy_scalars_and_0d_tensors_do_not_widen_the_dtype_like_torch():
    torch = pytest.importorskip("torch")
    x, tx = minitrain.tensor(np.ones(3, np.float32)), torch.ones(3)
    cases = [
        (x * np.float64(2), tx * 2.0),
        (x / np.sqrt(64), tx / np.sqrt(64).item()),  # np.sqrt gives an np.float64
        (x + minitrain.tensor(np.float64(1)), tx + torch.tensor(1.0, dtype=torch.float64)),
        (
            minitrain.tensor(np.ones(3, np.int32)) + minitrain.tensor(np.int64(1)),
            torch.ones(3, dtype=torch.int32) + torch.tensor(1),
        ),
        (
            minitrain.tensor(np.ones(3, np.float16)) + minitrain.tensor(np.ones(3, np.int64)),
            torch.ones(3, dtype=torch.float16) + torch.ones(3, dtype=torch.int64),
        ),
        (
            minitrain.tensor(np.ones(3, np.int32)) + minitrain.tensor(np.float64(0.5)),
            torch.ones(3, dtype=torch.int32) + torch.tensor(0.5, dtype=torch.float64),
        ),
        (
            minitrain.tensor(np.ones(3, np.float16)).clip(np.float64(0.5), np.int64(2)),
            torch.ones(3, dtype=torch.float16).clip(0.5, 2),
        ),
    ]
    for out, reference in cases:
        assert str(out.dtype) == str(reference.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(out.numpy(), reference.numpy())
    assert [str(out.dtype) for out, _ in cases] == [
        "float32",
        "float32",
        "float32",
        "int32",
        "float16",
        "float64",
        "float16",
    ]


_PROMOTION_DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64]
_PROMOTION_DTYPES += [np.float16, np.float32, np.float64]
_BINARY_OPS = {
    "add": (minitrain.ops.add, lambda torch, a, b: a + b),
    "sub": (minitrain.ops.sub, lambda torch, a, b: a - b),
    "mul": (minitrain.ops.mul, lambda torch, a, b: a * b),
    "div": (minitrain.ops.div, lambda torch, a, b: a / b),
    "pow": (minitrain.ops.pow, lambda torch, a, b: a**b),
    "maximum": (minitrain.ops.maximum, lambda torch, a, b: torch.maximum(a, b)),
    "minimum": (minitrain.ops.minimum, lambda torch, a, b: torch.minimum(a, b)),
}
_WHERE_CONDITION = np.array([True, False, True])


def _promotion_operands(torch, position):
    """One operand of a binary op in every form: (label, minitrain value, torch value), for a
    tensor with dims and a 0-d tensor of each dtype, a numpy scalar of each dtype, and a Python
    bool, int and float. A numpy scalar goes to torch as the Python number of its kind (torch
    itself reads np.bool_ as a float)."""
    values, number = ([1, 2, 3], 3) if position == 0 else ([2, 1, 2], 2)
    operands = []
    for dtype in _PROMOTION_DTYPES:
        name = np.dtype(dtype).name
        boolean = dtype is np.bool_
        dims = np.array([True, position == 1, True] if boolean else values, dtype)
        zero_d = np.array(True if boolean else number, dtype)
        for label, array in ((f"{name}(3,)", dims), (f"{name}()", zero_d)):
            float_dtype = array.dtype.kind == "f"
            operands.append(
                (
                    label,
                    minitrain.tensor(array, requires_grad=float_dtype),
                    torch.tensor(array, requires_grad=float_dtype),
                )
            )
        scalar = dtype(True if boolean else number)
        operands.append((f"np.{name}", scalar, scalar.item()))
    for number_value in (True, number, number + 0.5):
        operands.append((type(number_value).__name__, number_value, number_value))
    return operands


def _apply_binary(op, a, b):
    if op == "where":
        return minitrain.ops.where(minitrain.tensor(_WHERE_CONDITION), a, b)
    return _BINARY_OPS[op][0](a, b)


def _apply_binary_in_torch(torch, op, a, b):
    """torch's result, or None where torch has no such op (bool - bool, torch.maximum of a
    number, ...)."""
    try:
        if op == "where":
            return torch.where(torch.tensor(_WHERE_CONDITION), a, b)
        return _BINARY_OPS[op][1](torch, a, b)
    except (RuntimeError, TypeError, NotImplementedError):
        return None


def _binary_case_failures(torch, op, operand_a, operand_b) -> list[str]:
    """How minitrain's `op` of one pair of operands differs from torch's: the output dtype
    (torch.result_type, float32 for an integer division), the values, and the dtype (each input's
    own) and values of each input's gradient."""
    (label_a, a, torch_a), (label_b, b, torch_b) = operand_a, operand_b
    case = f"{op}({label_a}, {label_b})"
    tensors = [v for v in (a, b) if isinstance(v, minitrain.Tensor)]
    torch_tensors = [v for v in (torch_a, torch_b) if isinstance(v, torch.Tensor)]
    theirs = _apply_binary_in_torch(torch, op, torch_a, torch_b)
    if theirs is None and (len(torch_tensors) == 2 or op == "where"):
        return []  # an op torch does not define
    expected = str(
        theirs.dtype if theirs is not None else torch.result_type(torch_a, torch_b)
    ).removeprefix("torch.")
    if op in ("sub", "pow") and expected == "bool":
        # torch defines bool - bool and bool ** bool only with a number (not two tensors), numpy
        # not at all (an error, an int8 power): not a question of promotion
        return []
    try:
        ours = _apply_binary(op, a, b)
    except Exception as error:  # noqa: BLE001 (reported with its case)
        return [f"{case}: raised {error!r}, torch gives {expected}"]
    if str(ours.dtype) != expected:
        return [f"{case}: {ours.dtype}, torch {expected}"]
    if theirs is not None:
        np.testing.assert_allclose(
            ours.numpy().astype(np.float64),
            theirs.detach().numpy().astype(np.float64),
            rtol=1e-3,
            err_msg=case,
        )
    if not ours.requires_grad:
        return []
    ours.sum().backward()
    try:
        theirs.sum().backward()
    except (AttributeError, RuntimeError):  # no torch op, or torch fails (f16 - True)
        theirs = None
    failures = []
    for tensor, torch_tensor in zip(tensors, torch_tensors, strict=True):
        if not tensor.requires_grad:
            continue
        if tensor.grad.dtype != tensor.dtype:
            failures.append(f"{case}: a {tensor.dtype} input got a {tensor.grad.dtype} gradient")
        elif theirs is not None:
            np.testing.assert_allclose(
                tensor.grad.numpy().astype(np.float64),
                torch_tensor.grad.numpy().astype(np.float64),
                rtol=1e-2,
                err_msg=case,
            )
        tensor.grad = torch_tensor.grad = None
    return failures


@pytest.mark.parametrize("op", [*_BINARY_OPS, "where"])
def test_binary_op_dtypes_and_gradient_dtypes_match_torch_result_type(op):
    """Every pair of operand forms (tensor with dims, 0-d tensor, numpy scalar or Python
    number, of every dtype), as _binary_case_failures compares them with torch."""
    torch = pytest.importorskip("torch")
    failures, cases = [], 0
    for operand_a in _promotion_operands(torch, 0):
        for operand_b in _promotion_operands(torch, 1):
            both_numbers = not any(
                isinstance(v[1], minitrain.Tensor) for v in (operand_a, operand_b)
            )
            if both_numbers and op != "where":
                continue  # torch has no op on two numbers
            cases += 1
            failures += _binary_case_failures(torch, op, operand_a, operand_b)
    assert not failures, f"{len(failures)} of {cases} cases differ from torch:\n" + "\n".join(
        failures[:30]
    )
    assert cases > 700


def test_a_numpy_float_alone_keeps_its_dtype_and_beside_a_tensor_is_a_number():
    # alone it is the data (float64 stays float64); as an operand of a float32 tensor it is a
    # number to PyTorch, which leaves the tensor's dtype
    assert minitrain.ops.exp(np.float64(1.0)).dtype == np.float64
    assert (minitrain.ones(3) * np.float64(2.0)).dtype == np.float32


@pytest.mark.parametrize("join", ["concat", "stack"])
def test_concat_and_stack_promote_like_torch(join):
    """Every pair of dtypes: the result's dtype and values are torch.cat's / torch.stack's
    (int64 with float32 gives float32, where numpy widens to float64), and each floating input's
    gradient keeps its own dtype."""
    torch = pytest.importorskip("torch")
    ours_join, torch_join = (
        getattr(minitrain.ops, join),
        getattr(torch, join.replace("concat", "cat")),
    )
    failures = []
    for first, second in itertools.product(_PROMOTION_DTYPES, repeat=2):
        arrays = [np.array([1, 0, 1], first), np.array([0, 1, 1], second)]
        tensors = [minitrain.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
        ours, theirs = ours_join(tensors), torch_join([torch.tensor(a) for a in arrays])
        if str(ours.dtype) != str(theirs.dtype).removeprefix("torch."):
            failures.append(f"{first.__name__}, {second.__name__}: {ours.dtype}, {theirs.dtype}")
            continue
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        if ours.requires_grad:
            ours.sum().backward()
            for tensor in tensors:
                if tensor.requires_grad:
                    assert tensor.grad.dtype == tensor.dtype
                    np.testing.assert_array_equal(tensor.grad.numpy(), 1)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(
    "dtypes",
    [(np.float32, np.float64), (np.float64, np.float32), (np.float32, np.int64)],
    ids=lambda dtypes: f"{dtypes[0].__name__}-{dtypes[1].__name__}",
)
def test_matmul_and_linear_refuse_mixed_dtypes_as_torch_does(dtypes):
    """Unlike the elementwise ops, torch's matmul and linear (and conv) do not promote: a
    float64 input would turn a float32 model float64 without a word. minitrain refuses alike,
    naming the op and the dtypes, before anything is recorded."""
    torch = pytest.importorskip("torch")
    first, second = (np.ones((2, 2), dtype) for dtype in dtypes)
    with pytest.raises(RuntimeError):
        torch.tensor(first) @ torch.tensor(second)
    with pytest.raises(RuntimeError):
        torch.nn.functional.linear(torch.tensor(first), torch.tensor(second))
    a = minitrain.tensor(first, requires_grad=first.dtype.kind == "f")
    names = f"{np.dtype(dtypes[0]).name}, b {np.dtype(dtypes[1]).name}"
    with pytest.raises(DTypeError, match=f"matmul: inputs must share one dtype, got a {names}"):
        a @ minitrain.tensor(second)
    with pytest.raises(DTypeError, match="linear: .* got x .*, weight .*"):
        minitrain.ops.linear(a, minitrain.tensor(second))
    with pytest.raises(DTypeError, match="linear: .*, bias float16"):
        minitrain.ops.linear(a, a, minitrain.tensor(np.zeros(2, np.float16)))
    assert a.grad_fn is None and a.grad is None
    # a list of Python floats is float32, as minitrain.tensor makes it: no mismatch there
    weight = minitrain.tensor(np.ones((2, 2), np.float32))
    assert minitrain.ops.linear([[1.0, 2.0]], weight).dtype == np.float32


# --- accumulation without aliasing ----------------------------------------------------------


def test_leaf_grads_do_not_alias_each_other():
    x = leaf([1.0, 2.0, 3.0])
    y = leaf([4.0, 5.0, 6.0])
    (x + y).sum().backward()
    assert not np.shares_memory(x.grad.data, y.grad.data)
    x.grad.data[0] = 100.0
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 1.0, 1.0])
    assert x.grad.data.flags.writeable


def test_leaf_grad_does_not_alias_user_provided_root_grad():
    x = leaf([1.0, 2.0, 3.0])
    y = leaf([4.0, 5.0, 6.0])
    upstream = np.array([1.0, 2.0, 3.0])
    (x + y).backward(upstream)
    assert not np.shares_memory(x.grad.data, upstream)
    assert not np.shares_memory(y.grad.data, upstream)
    upstream[:] = -7.0
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 2.0, 3.0])

    z = leaf([1.0, 2.0])
    seed = np.array([3.0, 4.0])
    z.backward(seed)  # a leaf as its own root
    np.testing.assert_array_equal(z.grad.numpy(), [3.0, 4.0])
    assert not np.shares_memory(z.grad.data, seed)


def test_leaf_grad_does_not_alias_input_data():
    x = leaf([1.0, 2.0])
    y = leaf([3.0, 4.0])
    (x * y).sum().backward()  # dx = y, dy = x
    assert not np.shares_memory(x.grad.data, y.data)
    assert not np.shares_memory(y.grad.data, x.data)
    x.grad.data[:] = 0.0
    np.testing.assert_array_equal(y.data, [3.0, 4.0])


# --- long chains, graph lifetime ------------------------------------------------------------

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


def test_graph_is_freed_by_refcount_alone():
    x = leaf(np.ones(3))
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        a = x * 2.0
        b = a.exp()
        out = (b * a).sum()
        out_ref, inner_ref, b_ref = weakref.ref(out.node), weakref.ref(a.node), weakref.ref(b)
        del out, a, b
        alive_before_gc = (out_ref() is not None, inner_ref() is not None, b_ref() is not None)
        gc.collect()
        alive_after_gc = (out_ref() is not None, inner_ref() is not None, b_ref() is not None)
    finally:
        if was_enabled:
            gc.enable()
    assert alive_before_gc == (False, False, False)
    assert alive_after_gc == (False, False, False)
    assert x.node is None and x.grad is None


def test_graph_with_hook_and_retain_grad_is_freed_by_refcount():
    x = leaf(np.ones(3))
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        h = x * 2.0
        h.retain_grad()
        h.register_hook(lambda g: g)
        out = (h * h).sum()
        refs = [weakref.ref(out.node), weakref.ref(h.node), weakref.ref(h)]
        del h, out
        alive = [r() is not None for r in refs]
    finally:
        if was_enabled:
            gc.enable()
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


# --- sequence numbers and visit order -------------------------------------------------------


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


# --- the engine validates ops ---------------------------------------------------------------


class _SavesNothing(Op, register=False):
    name = "saves_nothing"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class _SavesOtherName(Op, register=False):
    name = "saves_other_name"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(y=x)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class _WrongGradShape(Op, register=False):
    name = "wrong_grad_shape"
    inputs = ("x",)

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad[:1]


class _Float64Grad(Op, register=False):
    name = "float64_grad"
    inputs = ("x",)

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return (grad * 2).astype(np.float64)


def test_op_that_declares_saved_but_saves_nothing_raises_when_recorded():
    x = leaf([1.0, 2.0])
    with minitrain.Tape() as tape:
        with pytest.raises(GraphError, match="saves_nothing"):
            _SavesNothing.apply(x)
    assert tape.nodes == []
    # not recorded: nothing needs saving, so it runs
    out = _SavesNothing.apply(minitrain.tensor([1.0, 2.0]))
    np.testing.assert_array_equal(out.numpy(), [2.0, 4.0])


def test_op_that_saves_another_name_raises_when_recorded():
    x = leaf([1.0, 2.0])
    with pytest.raises(GraphError, match="saves_other_name"):
        _SavesOtherName.apply(x)
    with minitrain.no_grad():
        out = _SavesOtherName.apply(x)
    np.testing.assert_array_equal(out.numpy(), [2.0, 4.0])


def test_backward_returning_wrong_shape_raises_naming_the_op():
    x = leaf([1.0, 2.0, 3.0])
    out = _WrongGradShape.apply(x)
    assert out.node.name == "_WrongGradShapeGrad"
    with pytest.raises(GraphError, match="_WrongGradShape"):
        out.sum().backward()
    assert x.grad is None


def test_backward_returning_another_dtype_is_cast_back():
    x = leaf([1.0, 2.0], dtype=np.float32)
    _Float64Grad.apply(x).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


@pytest.mark.parametrize("names", [("a", "c"), ("a",), ("a", "a"), ["a", "b"]])
def test_op_whose_promoted_is_not_a_pair_of_its_inputs_is_refused(names):
    with pytest.raises(GraphError, match="`promoted` must name two of its inputs"):

        class _BadPromotion(Op):  # add's rules, with a bad `promoted`
            name = "bad_promotion"
            inputs = ("a", "b")
            promoted = names
            forward = staticmethod(Add.forward)
            backward = staticmethod(Add.backward)

    assert "bad_promotion" not in minitrain.ops.registry()


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


def test_grad_sees_hook_modified_gradients_like_torch():
    torch = pytest.importorskip("torch")
    values = np.array([1.0, 2.0])
    y = leaf(values)
    y.register_hook(lambda g: g * 10.0)
    (gy,) = minitrain.grad((y * y).sum(), y)
    x = leaf(values)
    h = x * 2.0
    h.register_hook(lambda g: g * 10.0)
    (gh,) = minitrain.grad((h * h).sum(), h)

    ty = torch.tensor(values, requires_grad=True)
    ty.register_hook(lambda g: g * 10.0)
    (tgy,) = torch.autograd.grad((ty * ty).sum(), ty)
    tx = torch.tensor(values, requires_grad=True)
    th = tx * 2.0
    th.register_hook(lambda g: g * 10.0)
    (tgh,) = torch.autograd.grad((th * th).sum(), th)
    np.testing.assert_allclose(gy.numpy(), tgy.numpy())
    np.testing.assert_allclose(gh.numpy(), tgh.numpy())


def test_grad_of_several_outputs_sums_them_like_torch():
    torch = pytest.importorskip("torch")
    values = np.array([1.0, 2.0])
    x = leaf(values)
    (g,) = minitrain.grad([(x * x).sum(), (x * 3.0).sum()], [x])
    np.testing.assert_array_equal(g.numpy(), 2 * values + 3.0)
    tx = torch.tensor(values, requires_grad=True)
    (tg,) = torch.autograd.grad([(tx * tx).sum(), (tx * 3.0).sum()], [tx])
    np.testing.assert_array_equal(g.numpy(), tg.numpy())


def test_one_no_grad_instance_can_be_reentered():
    guard = minitrain.no_grad()
    with guard:
        with guard:
            assert not minitrain.is_grad_enabled()
        assert not minitrain.is_grad_enabled()
    assert minitrain.is_grad_enabled()


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


class _TooFewGrads(Op, register=False):
    name = "too_few_grads"
    inputs = ("a", "b")

    @staticmethod
    def forward(ctx, a, b):
        return a * b

    @staticmethod
    def backward(ctx, grad):
        return (grad,)


def test_backward_returning_too_few_gradients_raises_naming_the_op():
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    with pytest.raises(GraphError, match=r"_TooFewGradsGrad: backward returned 1 gradients for 2"):
        _TooFewGrads.apply(a, b).sum().backward()
    assert a.grad is None and b.grad is None


# --- the leaf gradient's buffer: taken over when nobody else holds it, copied otherwise -------


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
    np.testing.assert_array_equal(x.grad.data, np.full(1000, 2.0, np.float32))


def test_a_gradient_sent_to_two_leaves_is_copied_for_each(monkeypatch):
    flags = _owned_flags(monkeypatch)
    a, b = minitrain.randn(3, requires_grad=True), minitrain.randn(3, requires_grad=True)
    (a + b).sum().backward()
    assert flags == [False, False]
    assert not np.shares_memory(a.grad.data, b.grad.data)


def test_gradients_never_alias_user_arrays_hooks_or_retained_grads():
    x = minitrain.randn(3, requires_grad=True)
    upstream = np.ones(3, np.float32)
    x.backward(upstream)
    assert not np.shares_memory(x.grad.data, upstream)

    kept = []
    y = minitrain.randn(3, requires_grad=True)
    y.register_hook(lambda g: kept.append(g * 1.0) or kept[-1])
    (y * 3.0).sum().backward()
    assert not np.shares_memory(y.grad.data, kept[0].data)

    z = minitrain.randn(3, requires_grad=True)
    h = z * 1.0
    h.retain_grad()
    (h * 2.0).sum().backward()
    assert not np.shares_memory(h.grad.data, z.grad.data)
    z.grad.data[...] = 0.0  # writing one .grad leaves the other alone
    np.testing.assert_array_equal(h.grad.data, np.full(3, 2.0, np.float32))
