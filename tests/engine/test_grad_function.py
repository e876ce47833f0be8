"""minitrain.grad: gradients of leaves and intermediates, like torch.autograd.grad."""

import numpy as np
import pytest

import minitrain
from minitrain.errors import GraphError
from minitrain.ops.core.op import Op


def leaf(values, dtype=np.float64):
    return minitrain.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


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


class _SeesNeeds(Op, register=False):
    """x * y, its backward noting which gradients it was asked for."""

    name = "sees_needs"
    inputs = ("x", "y")
    saved = ("x", "y")
    asked: list = []

    @staticmethod
    def forward(ctx, x, y):
        ctx.save(x=x, y=y)
        return x * y

    @staticmethod
    def backward(ctx, grad):
        _SeesNeeds.asked.append(ctx.needs_grad)
        return (
            grad * ctx.y if ctx.needs_grad[0] else None,
            grad * ctx.x if ctx.needs_grad[1] else None,
        )


def test_grad_computes_only_the_gradients_that_lead_to_its_inputs():
    # as PyTorch's: a node between the outputs and the inputs skips the gradients of its other
    # inputs (a gradient penalty's weights), and a later backward still gets them all
    x, w = leaf([1.0, 2.0]), leaf([3.0, -1.0])
    out = _SeesNeeds.apply(x, w).sum()
    _SeesNeeds.asked.clear()
    (gx,) = minitrain.grad(out, x, retain_graph=True)
    assert _SeesNeeds.asked == [(True, False)]
    np.testing.assert_array_equal(gx.numpy(), [3.0, -1.0])
    out.backward()
    assert _SeesNeeds.asked == [(True, False), (True, True)]
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 2.0])
