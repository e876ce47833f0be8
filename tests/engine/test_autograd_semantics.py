"""Autograd semantics against torch.autograd: grad()'s pruned walk, hook results, grad modes as
decorators, .grad assignment, seed gradients, and errors that leave every .grad as it was."""

import numpy as np
import pytest

import minitrain
from minitrain.errors import ArgumentError, DTypeError, GraphError, ShapeError

VALUES = np.array([0.5, -1.0, 2.0])


def leaf(values=VALUES, dtype=np.float64):
    return minitrain.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


# grad() walks only what leads to its inputs.
def test_grad_wrt_an_intermediate_leaves_the_graph_below_it_intact_like_torch():
    torch = pytest.importorskip("torch")
    x = leaf()
    h = x.exp()
    (gh,) = minitrain.grad((h * h).sum(), h)
    assert x.grad is None
    h.sum().backward()  # exp's saved output is still there: grad() never ran ExpGrad

    tx = torch.tensor(VALUES, requires_grad=True)
    th = tx.exp()
    (tgh,) = torch.autograd.grad((th * th).sum(), th)
    th.sum().backward()
    np.testing.assert_allclose(gh.numpy(), tgh.numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_grad_runs_no_hooks_outside_the_part_of_the_graph_it_needs_like_torch():
    torch = pytest.importorskip("torch")

    def calls_of(lib, grad_fn):
        calls = []
        x = lib.tensor(VALUES, requires_grad=True)
        w = lib.tensor(VALUES, requires_grad=True)
        w.register_hook(lambda g: calls.append("w"))
        below = x * w
        below.register_hook(lambda g: calls.append("below"))
        target = below * 2.0
        target.register_hook(lambda g: calls.append("target"))
        above = target * 3.0
        above.register_hook(lambda g: calls.append("above"))
        (g,) = grad_fn(above.sum(), target)
        return calls, g.numpy()

    ours, ours_grad = calls_of(minitrain, minitrain.grad)
    theirs, theirs_grad = calls_of(torch, torch.autograd.grad)
    assert ours == theirs
    np.testing.assert_allclose(ours_grad, theirs_grad, rtol=1e-12)


def test_grad_wrt_a_leaf_and_an_intermediate_matches_torch():
    torch = pytest.importorskip("torch")

    def grads(lib, grad_fn):
        x = lib.tensor(VALUES, requires_grad=True)
        w = lib.tensor(VALUES[::-1].copy(), requires_grad=True)
        h = (x * w).exp()
        out = (h * x + w).sum()
        return [g.numpy() for g in grad_fn(out, [h, x])]

    for ours, theirs in zip(
        grads(minitrain, minitrain.grad), grads(torch, torch.autograd.grad), strict=True
    ):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_grad_with_no_inputs_raises_and_frees_nothing_like_torch():
    torch = pytest.importorskip("torch")
    x = leaf()
    out = (x * x).sum()
    with pytest.raises(GraphError, match="grad: `inputs` is empty"):
        minitrain.grad(out, [])
    out.backward()  # the failed call walked nothing and freed nothing

    tx = torch.tensor(VALUES, requires_grad=True)
    tout = (tx * tx).sum()
    with pytest.raises(RuntimeError):
        torch.autograd.grad(tout, [])
    tout.backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


# What hooks may return.
@pytest.mark.parametrize("returned", [[1.0, 1.0, 1.0], 5.0, "grad"])
def test_hook_returning_a_non_tensor_raises_dtype_error_like_torch(returned):
    torch = pytest.importorskip("torch")
    x = leaf()
    x.register_hook(lambda g: returned)
    with pytest.raises(
        DTypeError, match=f"register_hook: hook '<lambda>' returned a {type(returned).__name__}"
    ):
        (x * 2.0).sum().backward()
    assert x.grad is None

    tx = torch.tensor(VALUES, requires_grad=True)
    tx.register_hook(lambda g: returned)
    with pytest.raises(TypeError):
        (tx * 2.0).sum().backward()


def test_hook_changing_the_dtype_raises_like_torch():
    torch = pytest.importorskip("torch")
    x = leaf()
    x.register_hook(lambda g: g.float())
    with pytest.raises(DTypeError, match="dtype float32 for a leaf tensor of dtype float64"):
        (x * x).sum().backward()
    assert x.grad is None

    y = leaf()
    h = y * 2.0
    h.register_hook(lambda g: g.float())
    with pytest.raises(DTypeError, match="dtype float32 for the output of mul of dtype float64"):
        (h * h).sum().backward()
    assert y.grad is None

    tx = torch.tensor(VALUES, requires_grad=True)
    tx.register_hook(lambda g: g.float())
    with pytest.raises(RuntimeError, match="changed the type"):
        (tx * tx).sum().backward()
    ty = torch.tensor(VALUES, requires_grad=True)
    th = ty * 2.0
    th.register_hook(lambda g: g.float())
    with pytest.raises(RuntimeError, match="changed the type"):
        (th * th).sum().backward()


def test_hook_removing_itself_while_running_skips_no_other_hook_like_torch():
    torch = pytest.importorskip("torch")

    def calls_of(lib):
        calls, handles = [], []
        x = lib.tensor(VALUES, requires_grad=True)
        h = x * 2.0

        def first(g):
            calls.append("first")
            handles[0].remove()

        handles.append(h.register_hook(first))
        h.register_hook(lambda g: calls.append("second"))
        h.register_hook(lambda g: calls.append("third"))
        out = (h * h).sum()
        out.backward(retain_graph=True)
        out.backward()
        return calls

    assert calls_of(minitrain) == calls_of(torch)


def test_register_hook_refuses_what_cannot_be_called():
    x = leaf()
    with pytest.raises(DTypeError, match="register_hook: hook must be callable, got int"):
        x.register_hook(3)
    (x * 2.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


# Grad modes as decorators.
def test_no_grad_and_enable_grad_as_bare_decorators_like_torch():
    torch = pytest.importorskip("torch")

    def modes(lib):
        @lib.no_grad
        def off(t):
            return (t * 2.0).requires_grad

        @lib.enable_grad
        def on(t):
            return (t * 2.0).requires_grad

        t = lib.tensor(VALUES, requires_grad=True)
        with lib.no_grad():
            inside = on(t)
        return off(t), inside, off.__name__, on.__name__

    assert modes(minitrain) == modes(torch) == (False, True, "off", "on")


@pytest.mark.parametrize("mode", ["no_grad", "set_grad_enabled"])
def test_a_decorated_generator_runs_its_body_in_the_mode_like_torch(mode):
    torch = pytest.importorskip("torch")

    def steps(lib):
        decorator = lib.no_grad() if mode == "no_grad" else lib.set_grad_enabled(False)

        @decorator
        def generate(t):
            received = yield (t * 2.0).requires_grad
            yield (t * received).requires_grad, lib.is_grad_enabled()

        t = lib.tensor(VALUES, requires_grad=True)
        gen = generate(t)
        first = next(gen)
        between = lib.is_grad_enabled()  # the caller's mode between steps
        second = gen.send(3.0)
        return first, between, second, lib.is_grad_enabled()

    assert steps(minitrain) == steps(torch) == (False, True, (False, False), True)


# Assigning .grad.
def test_assigning_a_grad_that_is_not_a_tensor_raises_like_torch():
    torch = pytest.importorskip("torch")
    x = leaf()
    x.grad = minitrain.tensor(np.ones(3))
    with pytest.raises(DTypeError, match="grad: must be a Tensor or None, got ndarray"):
        x.grad = np.zeros(3)
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(3))

    tx = torch.tensor(VALUES, requires_grad=True)
    with pytest.raises(TypeError):
        tx.grad = np.zeros(3)


def test_backward_into_an_assigned_grad_of_another_shape_raises_and_changes_nothing():
    # PyTorch refuses the assignment itself; minitrain lets an optimizer check it (test_optim)
    # but never broadcasts a gradient into it
    x, other = leaf(), leaf()
    x.grad = minitrain.tensor(np.ones((3, 1)))
    with pytest.raises(ShapeError, match=r"shape \(3,\): its .grad .* has shape \(3, 1\)"):
        (x * other).sum().backward()
    assert x.grad.shape == (3, 1) and other.grad is None

    h = other * 2.0
    h.retain_grad()
    h.grad = minitrain.tensor(np.ones(1))
    with pytest.raises(ShapeError, match=r"its .grad .* has shape \(1,\)"):
        (h * h).sum().backward()
    assert h.grad.shape == (1,) and other.grad is None


def test_assigned_grad_then_backward_accumulates_into_it_like_torch():
    torch = pytest.importorskip("torch")
    start = np.array([1.0, -1.0, 0.25])
    x = leaf()
    x.grad = minitrain.tensor(start)
    (x * x).sum().backward()
    x.grad = None
    (x * 3.0).sum().backward()
    tx = torch.tensor(VALUES, requires_grad=True)
    tx.grad = torch.tensor(start)
    (tx * tx).sum().backward()
    tx.grad = None
    (tx * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


# Seed gradients.
def test_backward_with_a_complex_or_non_numeric_gradient_raises_like_torch():
    torch = pytest.importorskip("torch")
    x = leaf()
    y = x * 2.0
    with pytest.raises(
        DTypeError, match=r"backward: gradient for outputs\[0\] has dtype complex128"
    ):
        y.backward(np.ones(3, np.complex128))
    with pytest.raises(DTypeError, match="has dtype <U"):
        y.backward(np.array(["a", "b", "c"]))
    assert x.grad is None
    y.backward(np.ones(3, np.int64))  # integers are cast, as PyTorch does
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])
    assert x.grad.dtype == np.float64

    tx = torch.tensor(VALUES, requires_grad=True)
    with pytest.raises(RuntimeError, match="dtype"):
        (tx * 2.0).backward(torch.ones(3, dtype=torch.complex128))
    (tx * 2.0).backward(torch.ones(3, dtype=torch.int64))
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_backward_takes_torchs_gradient_keyword():
    torch = pytest.importorskip("torch")
    upstream = np.array([1.0, -2.0, 0.5])
    x = leaf()
    (x * x).backward(gradient=minitrain.tensor(upstream))
    tx = torch.tensor(VALUES, requires_grad=True)
    (tx * tx).backward(gradient=torch.tensor(upstream))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    with pytest.raises(ArgumentError, match="backward: give `gradient` or `grad`, not both"):
        (x * x).backward(np.ones(3), grad=np.ones(3))


# An error in the walk leaves every .grad as it was.
def test_a_failed_backward_leaves_retained_grads_unchanged():
    x = leaf()
    h = x.exp()
    kept = h * 2.0
    kept.retain_grad()
    (h * 1.0).sum().backward()  # frees exp's saved output
    with pytest.raises(GraphError, match="ExpGrad: trying to backward through the graph a second"):
        (kept * kept).sum().backward()
    assert kept.grad is None
    np.testing.assert_allclose(x.grad.numpy(), np.exp(VALUES), rtol=1e-12)


def test_a_freed_node_raises_before_its_hooks_run():
    x = leaf()
    h = x.exp()
    (h * 1.0).sum().backward()
    calls = []
    h.register_hook(lambda g: calls.append("h"))
    with pytest.raises(GraphError, match="ExpGrad"):
        (h * h).sum().backward()
    assert calls == []


def test_a_leaf_hook_error_leaves_every_leaf_grad_unchanged():
    first, second = leaf(), leaf()
    second.register_hook(lambda g: np.ones(2))
    with pytest.raises(
        ShapeError, match=r"returned a gradient of shape \(2,\) for a leaf tensor of shape \(3,\)"
    ):
        (first * second).sum().backward()
    assert first.grad is None and second.grad is None


def test_a_hook_on_a_0_d_tensor_may_return_numpys_scalar():
    # numpy arithmetic on a 0-d array gives a numpy scalar: the hook's array, as PyTorch's would
    x = leaf()
    loss = (x * 2.0).sum()
    loss.register_hook(lambda g: g.array * 3)
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(x.shape, 6.0))
