"""create_graph: gradients that carry graphs (`grad`, `Tensor.backward`, `autograd.backward`), their
second and third derivatives, and what hooks, dtypes, in-place writes, anomaly mode and tapes do
under it; checked against closed forms, finite differences and PyTorch. Where a test runs the same
code on both libraries, `lib` is `minitrain` or `torch`, whose names it shares."""

import inspect
import warnings
from collections import Counter

import numpy as np
import pytest

import minitrain as mt
from minitrain.errors import GraphError
from minitrain.ops.core.op import Op

# torch warns that backward(create_graph=True) makes a reference cycle through .grad
pytestmark = pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")

X = np.array([0.3, -1.2, 2.0])
W = np.array([0.7, 1.1, -0.4])
V = np.array([1.0, -0.5, 0.25])


def leaf(lib, values, dtype=np.float64):
    return lib.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


def value(tensor):
    return np.array(tensor.detach().numpy())


def assert_same(mine, theirs, rtol=1e-12, atol=1e-12):
    np.testing.assert_allclose(value(mine), value(theirs), rtol=rtol, atol=atol)


def central_difference(fn, x, direction, eps=1e-6):
    """(fn(x + eps d) - fn(x - eps d)) / 2 eps, fn taking and returning float64 arrays."""
    return (fn(x + eps * direction) - fn(x - eps * direction)) / (2 * eps)


def here() -> str:
    """'this file:the caller's next line', where the call under test runs."""
    caller = inspect.currentframe().f_back
    return f"{__file__}:{caller.f_lineno + 1}"


# Derivatives up to the third, by grad(create_graph=True) applied three times.

# (id, f on tensors, f', f'', f''' on arrays)
FUNCTIONS = [
    (
        "polynomial",
        lambda x: x**4 - 3 * x**3 + 2 * x,
        lambda x: 4 * x**3 - 9 * x**2 + 2,
        lambda x: 12 * x**2 - 18 * x,
        lambda x: 24 * x - 18,
    ),
    (
        "exp_times_sin",
        lambda x: x.exp() * x.sin(),
        lambda x: np.exp(x) * (np.sin(x) + np.cos(x)),
        lambda x: 2 * np.exp(x) * np.cos(x),
        lambda x: 2 * np.exp(x) * (np.cos(x) - np.sin(x)),
    ),
    (
        # f' = cos e^sin; f'' = (cos^2 - sin) e^sin; f''' = (cos^3 - 3 sin cos - cos) e^sin
        "exp_of_sin",
        lambda x: x.sin().exp(),
        lambda x: np.cos(x) * np.exp(np.sin(x)),
        lambda x: (np.cos(x) ** 2 - np.sin(x)) * np.exp(np.sin(x)),
        lambda x: (np.cos(x) ** 3 - 3 * np.sin(x) * np.cos(x) - np.cos(x)) * np.exp(np.sin(x)),
    ),
    (
        # f' = 2x cos x^2; f'' = 2 cos x^2 - 4x^2 sin x^2; f''' = -12x sin x^2 - 8x^3 cos x^2
        "sin_of_square",
        lambda x: (x * x).sin(),
        lambda x: 2 * x * np.cos(x**2),
        lambda x: 2 * np.cos(x**2) - 4 * x**2 * np.sin(x**2),
        lambda x: -12 * x * np.sin(x**2) - 8 * x**3 * np.cos(x**2),
    ),
]


@pytest.mark.parametrize(
    "f, first, second, third", [case[1:] for case in FUNCTIONS], ids=[c[0] for c in FUNCTIONS]
)
def test_first_second_and_third_derivatives_match_closed_forms(f, first, second, third):
    x = leaf(mt, X)
    (g1,) = mt.grad(f(x).sum(), x, create_graph=True)
    assert g1.requires_grad and g1.grad_fn is not None
    (g2,) = mt.grad(g1.sum(), x, create_graph=True)
    assert g2.requires_grad and g2.grad_fn is not None
    (g3,) = mt.grad(g2.sum(), x)
    assert not g3.requires_grad  # the last call did not create a graph
    np.testing.assert_allclose(g1.numpy(), first(X), rtol=1e-12)
    np.testing.assert_allclose(g2.numpy(), second(X), rtol=1e-12)
    np.testing.assert_allclose(g3.numpy(), third(X), rtol=1e-12)
    assert x.grad is None


def test_mixed_second_partials_match_closed_forms():
    # f = x^2 y^3 + sin(xy): f_xx = 2y^3 - y^2 sin(xy), f_xy = 6xy^2 + cos(xy) - xy sin(xy),
    # f_yy = 6x^2 y - x^2 sin(xy)
    x, y = leaf(mt, X), leaf(mt, W)
    f = (x**2 * y**3 + (x * y).sin()).sum()
    gx, gy = mt.grad(f, [x, y], create_graph=True)
    hxx, hxy = mt.grad(gx.sum(), [x, y], retain_graph=True)
    hyx, hyy = mt.grad(gy.sum(), [x, y])
    xy = X * W
    np.testing.assert_allclose(hxx.numpy(), 2 * W**3 - W**2 * np.sin(xy), rtol=1e-12)
    np.testing.assert_allclose(hxy.numpy(), 6 * X * W**2 + np.cos(xy) - xy * np.sin(xy))
    np.testing.assert_allclose(hyx.numpy(), hxy.numpy(), rtol=1e-12)
    np.testing.assert_allclose(hyy.numpy(), 6 * X**2 * W - X**2 * np.sin(xy), rtol=1e-12)


LINEAR = [
    ("times_number_plus_number", lambda lib, x: (x * 3.0 + 1.0).sum()),
    ("times_constant_tensor", lambda lib, x: (x * lib.tensor(W)).sum()),
    ("minus_constant_tensor", lambda lib, x: (x - lib.tensor(W)).sum() * 2.0),
    ("reshape_and_scale", lambda lib, x: x.reshape(3, 1).sum() / 4.0),
]


@pytest.mark.parametrize("f", [c[1] for c in LINEAR], ids=[c[0] for c in LINEAR])
def test_the_derivative_of_a_linear_function_does_not_require_grad(torch, f):
    results = []
    for lib in (mt, torch):
        x = leaf(lib, X)
        (g,) = lib.autograd.grad(f(lib, x), x, create_graph=True)
        results.append(g)
    ours, theirs = results
    assert not ours.requires_grad and not theirs.requires_grad
    assert_same(ours, theirs)


def test_second_derivatives_through_broadcasting_match_torch(torch):
    results = []
    for lib in (mt, torch):
        x, w = leaf(lib, X), leaf(lib, W[:2].reshape(2, 1))
        y = ((x * w).sin() ** 2).sum()
        gx, gw = lib.autograd.grad(y, [x, w], create_graph=True)
        assert tuple(gx.shape) == (3,) and tuple(gw.shape) == (2, 1)  # summed back, in the graph
        results.append(lib.autograd.grad((gx * gx).sum() + gw.sum(), [x, w]))
    for ours, theirs in zip(*results, strict=True):
        assert_same(ours, theirs)


# Tensor.backward(create_graph=True): .grad carries a graph.


def test_backward_create_graph_gives_a_grad_whose_derivative_is_the_hessian_vector_product(torch):
    # f = a b with a = sum e^x, b = sum x^2: grad f = e^x b + 2 a x, and
    # H v = e^x v b + e^x (2 x.v) + 2 x (e^x.v) + 2 a v
    def gradient(x):
        return np.exp(x) * (x**2).sum() + 2 * np.exp(x).sum() * x

    results = []
    for lib in (mt, torch):
        x = leaf(lib, X)
        f = x.exp().sum() * (x**2).sum()
        f.backward(create_graph=True)
        assert x.grad.requires_grad and x.grad.grad_fn is not None
        assert_same(x.grad, lib.tensor(gradient(X)))
        (hv,) = lib.autograd.grad(x.grad, x, grad_outputs=lib.tensor(V), retain_graph=True)
        results.append(hv)
        (x.grad * lib.tensor(V)).sum().backward()  # into x.grad too: g + H v
        np.testing.assert_allclose(value(x.grad), gradient(X) + value(hv), rtol=1e-12)
    ours, theirs = results
    a, b = np.exp(X).sum(), (X**2).sum()
    closed = np.exp(X) * V * b + np.exp(X) * 2 * (X @ V) + 2 * X * (np.exp(X) @ V) + 2 * a * V
    np.testing.assert_allclose(ours.numpy(), closed, rtol=1e-12)
    np.testing.assert_allclose(ours.numpy(), central_difference(gradient, X, V), rtol=1e-7)
    assert_same(ours, theirs)


def test_two_create_graph_backwards_accumulate_as_torch(torch):
    results = []
    for lib in (mt, torch):
        x = leaf(lib, X)
        (x**3).sum().backward(create_graph=True)
        first = x.grad
        first_values = value(first)
        (x.exp() * x).sum().backward(create_graph=True)
        assert x.grad is not first  # out of place: the first .grad and its graph stay as they were
        np.testing.assert_array_equal(value(first), first_values)
        assert x.grad.requires_grad
        # the accumulated .grad differentiates to the sum of both second derivatives
        (second,) = lib.autograd.grad(x.grad.sum(), x)
        results.append((x.grad, second))
    (ours, ours_second), (theirs, theirs_second) = results
    assert_same(ours, theirs)
    np.testing.assert_allclose(ours.numpy(), 3 * X**2 + np.exp(X) * (X + 1), rtol=1e-12)
    np.testing.assert_allclose(ours_second.numpy(), 6 * X + np.exp(X) * (X + 2), rtol=1e-12)
    assert_same(ours_second, theirs_second)


def test_a_plain_backward_after_a_create_graph_one_accumulates_the_values_torch_does(torch):
    results = []
    for lib in (mt, torch):
        x = leaf(lib, X)
        (x**3).sum().backward(create_graph=True)
        (x**2).sum().backward()
        results.append(x.grad)
    assert_same(*results)
    np.testing.assert_allclose(value(results[0]), 3 * X**2 + 2 * X, rtol=1e-12)


def test_create_graph_adds_to_a_hand_assigned_grad_out_of_place(torch):
    results = []
    for lib in (mt, torch):
        x = leaf(lib, X)
        assigned = lib.tensor(np.ones(3))
        x.grad = assigned
        (x**3).sum().backward(create_graph=True)
        assert x.grad is not assigned and x.grad.requires_grad
        np.testing.assert_array_equal(value(assigned), np.ones(3))
        results.append((x.grad, lib.autograd.grad(x.grad.sum(), x)[0]))
    for ours, theirs in zip(*results, strict=True):
        assert_same(ours, theirs)
    np.testing.assert_allclose(value(results[0][0]), 1 + 3 * X**2, rtol=1e-12)


@pytest.mark.parametrize(
    "root", [lambda x: x, lambda x: x.reshape(3)], ids=["leaf_itself", "reshape_of_it"]
)
def test_grad_is_not_the_users_gradient_tensor_and_writing_it_leaves_that_alone(torch, root):
    for lib in (mt, torch):
        x = leaf(lib, X)
        given = lib.tensor(V.copy())
        root(x).backward(given, create_graph=True)
        assert x.grad is not given
        np.testing.assert_array_equal(value(x.grad), V)
        with lib.no_grad():
            x.grad.mul_(10.0)
        np.testing.assert_array_equal(value(given), V)
        np.testing.assert_array_equal(value(x.grad), 10 * V)


def test_a_given_gradient_that_requires_grad_stays_in_the_grads_graph(torch):
    results = []
    for lib in (mt, torch):
        x, v = leaf(lib, X), leaf(lib, V)
        (x**2).backward(v, create_graph=True)  # x.grad = 2 x v
        assert x.grad is not v and x.grad.requires_grad
        results.append(lib.autograd.grad((x.grad * x.grad).sum(), [x, v]))
    for ours, theirs in zip(*results, strict=True):
        assert_same(ours, theirs)
    gx, gv = results[0]
    np.testing.assert_allclose(value(gx), 8 * X * V**2, rtol=1e-12)
    np.testing.assert_allclose(value(gv), 8 * X**2 * V, rtol=1e-12)


def test_retain_graph_defaults_to_create_graph(torch):
    for lib in (mt, torch):
        x = leaf(lib, X)
        y = (x.sin() * x).sum()
        y.backward(create_graph=True)
        y.backward(create_graph=True)  # the graph was kept: it runs again, and accumulates
        np.testing.assert_allclose(value(x.grad), 2 * (np.cos(X) * X + np.sin(X)), rtol=1e-12)

        x = leaf(lib, X)
        y = (x.sin() * x).sum()
        y.backward()
        error = GraphError if lib is mt else RuntimeError
        with pytest.raises(error, match="second time"):
            y.backward()


def test_create_graph_with_retain_graph_false_frees_what_the_second_derivative_needs(torch):
    for lib in (mt, torch):
        x = leaf(lib, X)
        a = x.sin()
        (g,) = lib.autograd.grad((a * a).sum(), x, create_graph=True, retain_graph=False)
        np.testing.assert_allclose(value(g), 2 * np.sin(X) * np.cos(X), rtol=1e-12)
        error = GraphError if lib is mt else RuntimeError
        with pytest.raises(error, match="second time"):
            lib.autograd.grad(g.sum(), x)  # through a's sin node, whose saved values are gone


def test_a_retained_non_leaf_grad_carries_a_graph(torch):
    results = []
    for lib in (mt, torch):
        x = leaf(lib, X)
        h = x.sin()
        h.retain_grad()
        (h * h * x).sum().backward(create_graph=True)
        assert h.grad.requires_grad
        results.append((h.grad, lib.autograd.grad(h.grad.sum(), x)[0]))
    for ours, theirs in zip(*results, strict=True):
        assert_same(ours, theirs)
    np.testing.assert_allclose(value(results[0][0]), 2 * np.sin(X) * X, rtol=1e-12)


# autograd.backward(..., inputs=)


@pytest.mark.parametrize("entry", ["autograd_backward", "tensor_backward"])
def test_backward_inputs_accumulate_only_into_them_leaf_and_non_leaf(torch, entry):
    results = []
    for lib in (mt, torch):
        x, w = leaf(lib, X), leaf(lib, W)
        h = x.sin() * w
        y = (h * h * x).sum()
        if entry == "autograd_backward":
            lib.autograd.backward([y], create_graph=True, inputs=[h, w])
        else:
            y.backward(create_graph=True, inputs=[h, w])
        assert x.grad is None
        assert h.grad.requires_grad and w.grad.requires_grad
        grads = value(h.grad), value(w.grad)  # before torch's retain_grad on h changes h.grad
        (second,) = lib.autograd.grad((h.grad * w.grad).sum(), x)
        results.append((*grads, value(second)))
    for ours, theirs in zip(*results, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    h = np.sin(X) * W
    np.testing.assert_allclose(results[0][0], 2 * h * X, rtol=1e-12)
    np.testing.assert_allclose(results[0][1], 2 * h * X * np.sin(X), rtol=1e-12)


# grad(..., grad_outputs=v) with v that requires grad: the double-vjp trick.


def test_grad_outputs_that_require_grad_give_a_jvp_by_double_vjp(torch):
    def forward(x):  # F(x) = y * sum(y), y = sin(x) e^x, elementwise
        y = x.sin() * x.exp()
        return y * y.sum()

    results = []
    for lib in (mt, torch):
        x, v = leaf(lib, X), leaf(lib, V)
        (vjp,) = lib.autograd.grad(forward(x), x, grad_outputs=v, create_graph=True)  # J^T v
        assert vjp.requires_grad
        (jvp,) = lib.autograd.grad(vjp, v, grad_outputs=lib.tensor(W))  # d(J^T v)/dv^T u = J u
        results.append((vjp, jvp))
    for ours, theirs in zip(*results, strict=True):
        assert_same(ours, theirs)

    def forward_array(x):
        y = np.sin(x) * np.exp(x)
        return y * y.sum()

    np.testing.assert_allclose(value(results[0][1]), central_difference(forward_array, X, W))


# allow_unused, materialize_grads, is_grads_batched


def test_allow_unused_and_materialize_grads_under_create_graph(torch):
    for lib in (mt, torch):
        x, unused = leaf(lib, X), leaf(lib, W)
        y = (x * x).sum()
        error = GraphError if lib is mt else RuntimeError
        with pytest.raises(error, match="allow_unused"):
            lib.autograd.grad(y, [x, unused], create_graph=True)
        gx, none = lib.autograd.grad(y, [x, unused], create_graph=True, allow_unused=True)
        assert none is None and gx.requires_grad
        gx, zeros = lib.autograd.grad(y, [x, unused], create_graph=True, materialize_grads=True)
        np.testing.assert_array_equal(value(zeros), np.zeros(3))
        assert zeros.dtype == unused.dtype and tuple(zeros.shape) == (3,)
        np.testing.assert_allclose(value(gx), 2 * X, rtol=1e-12)
        with pytest.raises((GraphError, ValueError), match="allow_unused"):
            lib.autograd.grad(y, [x, unused], allow_unused=False, materialize_grads=True)


def test_materialized_zeros_require_grad_under_create_graph_as_torchs(torch):
    for lib in (mt, torch):
        x, unused = leaf(lib, X), leaf(lib, W)
        _, zeros = lib.autograd.grad(
            (x * x).sum(), [x, unused], create_graph=True, materialize_grads=True
        )
        assert zeros.requires_grad, lib.__name__


def test_is_grads_batched_is_refused_clearly():
    x = leaf(mt, X)
    y = x * x
    with pytest.raises(GraphError, match="is_grads_batched=True .* not supported"):
        mt.grad(y, x, grad_outputs=mt.tensor(np.ones((2, 3))), is_grads_batched=True)
    assert x.grad is None


# Dtypes: a promoted product, and a leaf whose data was rebound after the forward.


@pytest.mark.parametrize("operand", [lambda x: x, lambda x: x * 1.0], ids=["leaf", "non_leaf"])
def test_second_derivatives_of_a_float32_times_float64_product_match_torchs_dtypes(torch, operand):
    results = []
    for lib in (mt, torch):
        x, w = leaf(lib, X, np.float32), leaf(lib, W, np.float64)
        a = operand(x)
        z = a * w  # float64: forward saw a float64 cast of a
        with mt.Tape() as tape:
            gx, gw = lib.autograd.grad((z * z * a).sum(), [x, w], create_graph=True)
        if lib is mt:  # a's saved float64 cast joins a's graph through SavedInput
            assert "SavedInputGrad" in [node.name for node in tape.nodes]
        hxx, hxw = lib.autograd.grad(gx.sum(), [x, w], retain_graph=True)
        hwx, hww = lib.autograd.grad(gw.sum(), [x, w])
        results.append((gx, gw, hxx, hxw, hwx, hww))
    for ours, theirs in zip(*results, strict=True):
        assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
        assert_same(ours, theirs, rtol=1e-6)
    gx, gw, hxx, hxw, hwx, hww = results[0]
    assert [str(g.dtype) for g in results[0]] == ["float32", "float64"] * 3
    # y = x^3 w^2: y_x = 3x^2 w^2, y_w = 2x^3 w, y_xx = 6x w^2, y_xw = 6x^2 w, y_ww = 2x^3
    x32 = X.astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(value(hxx), 6 * x32 * W**2, rtol=1e-6)
    np.testing.assert_allclose(value(hxw), 6 * x32**2 * W, rtol=1e-6)
    np.testing.assert_allclose(value(hwx), 6 * x32**2 * W, rtol=1e-6)
    np.testing.assert_allclose(value(hww), 2 * x32**3, rtol=1e-6)


def test_a_leaf_rebound_after_the_forward_differentiates_at_the_forward_values():
    x = leaf(mt, X.copy())
    y = (x * x * x).sum()
    x.array = np.array([5.0, 6.0, 7.0])  # the forward's arrays were saved, not x
    (g,) = mt.grad(y, x, create_graph=True)
    np.testing.assert_allclose(g.numpy(), 3 * X**2, rtol=1e-12)
    (gg,) = mt.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 6 * X, rtol=1e-12)
    assert gg.dtype == np.float64


# Hooks


def test_hooks_see_gradients_with_graphs_and_what_they_return_enters_the_second_derivative(torch):
    results = []
    for lib in (mt, torch):
        x = leaf(lib, X)
        seen = []

        def remember(grad, seen=seen):
            seen.append(grad.requires_grad and grad.grad_fn is not None)

        h = x * x
        h.register_hook(lambda g, remember=remember: remember(g) or g * 2)
        x.register_hook(lambda g, x=x, remember=remember: remember(g) or g * x)
        (g,) = lib.autograd.grad((h * x.sin()).sum(), x, create_graph=True)
        assert seen == [True, True]
        (gg,) = lib.autograd.grad(g.sum(), x)
        assert seen == [True, True, False, False]  # both fire again: no graph this time
        results.append((g, gg))
    for ours, theirs in zip(*results, strict=True):
        assert_same(ours, theirs)
    # s = sin x, h = x^2: dy/dh = s, hooked to 2s; g = x (2 * 2x s + h cos x), so with s and h
    # the nodes they are: g = 4x^2 s + x h cos x
    sin, cos = np.sin(X), np.cos(X)
    np.testing.assert_allclose(value(results[0][0]), 4 * X**2 * sin + X**3 * cos, rtol=1e-12)
    # d g / dx = 8x s + h cos x - x h sin x directly; through s: 4x^2 cos x; through h: x cos x,
    # hooked to 2x cos x, times 2x: 4x^2 cos x. Then x's hook multiplies the sum by x
    expected = X * (8 * X * sin + 9 * X**2 * cos - X**3 * sin)
    np.testing.assert_allclose(value(results[0][1]), expected, rtol=1e-12)


def test_a_leaf_hook_under_backward_create_graph_shapes_the_differentiable_grad(torch):
    results = []
    for lib in (mt, torch):
        x = leaf(lib, X)
        x.register_hook(lambda g: g * 2)
        (x**3).sum().backward(create_graph=True)
        assert x.grad.requires_grad
        results.append((x.grad, lib.autograd.grad(x.grad.sum(), x)[0]))
    for ours, theirs in zip(*results, strict=True):
        assert_same(ours, theirs)
    np.testing.assert_allclose(value(results[0][0]), 6 * X**2, rtol=1e-12)
    # x's hook runs in the second grad too (x is among its inputs): 2 * 12x
    np.testing.assert_allclose(value(results[0][1]), 24 * X, rtol=1e-12)


# Errors leave every .grad as it was.


class ArrayOnlyCube(Op, register=False):
    """x^3 with an array backward and no tensor_backward."""

    name = "array_only_cube"
    inputs = ("x",)
    saved = ("x",)
    no_double_backward = "a test op with an array backward only"

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return x**3

    @staticmethod
    def backward(ctx, grad):
        return 3 * ctx.x**2 * grad


def _backward(y, inputs):
    y.backward(create_graph=True)


def _autograd_backward(y, inputs):
    mt.autograd.backward(y, create_graph=True, inputs=inputs)


def _grad(y, inputs):
    mt.grad(y, inputs, create_graph=True)


@pytest.mark.parametrize("call", [_backward, _autograd_backward, _grad])
def test_create_graph_through_an_op_without_tensor_backward_fails_before_any_grad_changes(call):
    x, w = leaf(mt, X), leaf(mt, W)
    previous = mt.tensor(np.full(3, 5.0))
    w.grad = previous
    h = x.exp()
    h.retain_grad()
    y = (ArrayOnlyCube.apply(h) * w).sum()  # w's gradient arrives before the cube's fails
    with pytest.raises(GraphError) as raised:
        call(y, [x, w, h])
    message = str(raised.value)
    assert message.startswith("ArrayOnlyCubeGrad: ")
    assert "array_only_cube" in message and "a test op with an array backward only" in message
    assert "create_graph" in message
    assert x.grad is None and h.grad is None
    assert w.grad is previous
    np.testing.assert_array_equal(w.grad.numpy(), np.full(3, 5.0))


def test_an_op_without_tensor_backward_is_fine_where_no_higher_derivative_flows_through_it():
    x = leaf(mt, X)
    h = ArrayOnlyCube.apply(x)
    y = (h * h).sum()
    (gh,) = mt.grad(y, h, create_graph=True)  # only the nodes above h run
    np.testing.assert_allclose(gh.numpy(), 2 * X**3, rtol=1e-12)
    (ghh,) = mt.grad(gh.sum(), h)
    np.testing.assert_allclose(ghh.numpy(), np.full(3, 2.0))
    y.backward()  # and the first-order path is the array backward's
    np.testing.assert_allclose(x.grad.numpy(), 6 * X**5, rtol=1e-12)


# In-place writes


@pytest.mark.parametrize("create_graph", [False, True])
def test_a_saved_input_written_in_place_raises_the_version_error_on_either_path(create_graph):
    x = leaf(mt, X)
    a = x * 1.0
    y = (a * a).sum()
    a.mul_(2.0)
    with pytest.raises(GraphError, match="'a', a value mul saved .* modified by an in-place"):
        y.backward(create_graph=create_graph)
    assert x.grad is None


def test_a_leaf_written_under_no_grad_raises_the_version_error_under_create_graph():
    x = leaf(mt, X.copy())
    y = (x * x).sum()
    with mt.no_grad():
        x.mul_(2.0)
    with pytest.raises(GraphError, match="modified by an in-place operation"):
        mt.grad(y, x, create_graph=True)


# (id, f, whether its second derivative reads the input a), for a written after the first grad
WRITTEN_AFTER = [
    ("cube_by_products", lambda a: (a * a * a).sum(), True),
    ("cube_by_pow", lambda a: (a**3).sum(), True),
    ("sin", lambda a: a.sin().sum(), True),
    ("exp", lambda a: a.exp().sum(), False),  # reads exp's output, not a
    ("square", lambda a: (a * a).sum(), False),  # 2, whatever a is
]


@pytest.mark.parametrize(
    "f, reads_a", [c[1:] for c in WRITTEN_AFTER], ids=[c[0] for c in WRITTEN_AFTER]
)
def test_a_write_after_a_create_graph_backward_raises_where_torch_does(torch, f, reads_a):
    results = []
    for lib in (mt, torch):
        x = leaf(lib, X)
        a = x * 1.0
        (g,) = lib.autograd.grad(f(a), x, create_graph=True)
        a.mul_(2.0)
        if reads_a:
            error = GraphError if lib is mt else RuntimeError
            with pytest.raises(error, match="modified by an in-?place operation"):
                lib.autograd.grad(g.sum(), x)
        else:
            results.append(lib.autograd.grad(g.sum(), x)[0])
    if results:
        assert_same(*results)


# Anomaly mode


def test_anomaly_names_the_kernel_that_makes_a_nan_in_the_second_backward(torch):
    x = leaf(mt, [0.0, 1.0])
    with np.errstate(all="ignore"), mt.autograd.detect_anomaly():
        line = here()
        (g,) = mt.grad((x**1.5).sum(), x, create_graph=True)  # 1.5 x^0.5: finite
        np.testing.assert_allclose(g.numpy(), [0.0, 1.5])
        with pytest.raises(GraphError) as raised:  # 0 * 0.75 x^-0.5 at 0: 0 * inf
            mt.grad(g, x, grad_outputs=mt.tensor([0.0, 1.0]))
    message = str(raised.value)
    assert message.startswith("PowGrad: anomaly in backward")  # the x^0.5 the first grad made
    assert "1 nan" in message
    assert line in message  # where that pow was recorded: the create_graph call

    tx = leaf(torch, [0.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's notes on anomaly mode and its tracebacks
        with torch.autograd.detect_anomaly():
            (tg,) = torch.autograd.grad((tx**1.5).sum(), tx, create_graph=True)
            with pytest.raises(RuntimeError, match="PowBackward0' returned nan"):
                torch.autograd.grad(tg, tx, grad_outputs=torch.tensor([0.0, 1.0], dtype=tx.dtype))


def test_anomaly_checks_the_gradients_a_create_graph_backward_sends():
    x = leaf(mt, [0.0, 1.0])
    with np.errstate(all="ignore"), mt.autograd.detect_anomaly():
        y = x * 3.0
        with pytest.raises(GraphError) as raised:
            mt.grad(y, x, grad_outputs=mt.tensor([np.inf, 1.0]), create_graph=True)
    message = str(raised.value)
    assert message.startswith("MulGrad: anomaly in backward")
    assert "1 inf" in message


def test_anomaly_reports_a_nan_that_an_op_of_a_create_graph_backward_makes():
    x = leaf(mt, [0.0, 1.0])
    with np.errstate(all="ignore"), mt.autograd.detect_anomaly():
        y = (x.sqrt() * x).sum()  # sqrt's backward at 0 gets 0 / 0
        with pytest.raises(GraphError) as raised:
            line = here()
            mt.grad(y, x, create_graph=True)
    message = str(raised.value)
    assert "anomaly in" in message and "1 nan" in message
    assert line in message


# Tapes and grad modes


def test_a_tape_records_the_nodes_of_a_create_graph_backward():
    x, w = leaf(mt, X), leaf(mt, W)
    y = (x * w * x).sum()
    with mt.Tape() as tape:
        y.backward(create_graph=True)
    names = Counter(node.name for node in tape.nodes)
    # the backward of (x w) x: grad * x and grad * (x w), then of x w: grad * w and grad * x,
    # and x's two gradients summed
    assert names["MulGrad"] == 4 and names["AddGrad"] == 1
    assert all(node.seq > y.node.seq for node in tape.nodes)
    assert x.grad.node in tape.nodes and w.grad.node in tape.nodes

    y = (x * w).sum()
    with mt.Tape() as tape:
        gx = tape.gradient(y, x, create_graph=True)
    # only x's gradient, grad * w, as PyTorch's: w's (grad * x) nobody asked for is not built
    assert [node.name for node in tape.nodes] == ["MulGrad"]
    assert gx.node in tape.nodes
    np.testing.assert_allclose(gx.numpy(), W)


def test_no_graph_without_create_graph_even_under_enable_grad():
    x, w = leaf(mt, X), leaf(mt, W)
    y = (x.sin() * w * x).sum()
    with mt.Tape() as tape, mt.enable_grad():
        gx, gw = mt.grad(y, [x, w], retain_graph=True)
        mt.autograd.backward(y, inputs=[w], retain_graph=True)
        y.backward()
    assert len(tape) == 0
    for g in (gx, gw, x.grad, w.grad):
        assert not g.requires_grad and g.grad_fn is None
    np.testing.assert_allclose(x.grad.numpy(), gx.numpy())
    np.testing.assert_allclose(w.grad.numpy(), 2 * gw.numpy())


def test_create_graph_builds_a_graph_even_under_no_grad_as_torch(torch):
    for lib in (mt, torch):
        x = leaf(lib, X)
        y = (x**3).sum()
        with lib.no_grad():
            (g,) = lib.autograd.grad(y, x, create_graph=True)
        assert g.requires_grad
        (gg,) = lib.autograd.grad(g.sum(), x)
        np.testing.assert_allclose(value(gg), 6 * X, rtol=1e-12)


@pytest.mark.parametrize(
    "name",
    ["relu", "leaky_relu", "hardtanh", "relu6", "clamp", "maximum"],
)
def test_a_piecewise_linear_gradient_stays_in_the_graph_with_a_zero_derivative(name, torch):
    """relu's gradient under create_graph is a mask of the input's values times the incoming
    gradient, a constant: it stays joined to the input (as PyTorch's ThresholdBackwardBackward
    does), so the next derivative is zeros, not an error."""
    forms = {
        "relu": lambda m, v: m.relu(v),
        "leaky_relu": lambda m, v: m.nn.functional.leaky_relu(v, 0.1),
        "hardtanh": lambda m, v: m.nn.functional.hardtanh(v),
        "relu6": lambda m, v: m.nn.functional.relu6(v),
        "clamp": lambda m, v: m.clamp(v, -1.0, 1.0),
        "maximum": lambda m, v: m.maximum(v, m.tensor(0.7)),
    }
    values = [1.5, -2.0, 0.5, 3.0]
    x = mt.tensor(values, requires_grad=True)
    (g,) = mt.grad(forms[name](mt, x).sum(), x, create_graph=True)
    assert g.requires_grad
    (second,) = mt.grad(g.sum(), x)
    np.testing.assert_array_equal(second.numpy(), np.zeros(4, np.float32))
    t = torch.tensor(values, requires_grad=True)
    (expected,) = torch.autograd.grad(forms[name](torch, t).sum(), t, create_graph=True)
    np.testing.assert_allclose(g.numpy(), expected.detach().numpy())
    if expected.requires_grad:  # PyTorch's clamp and maximum leave it a constant
        (expected_second,) = torch.autograd.grad(expected.sum(), t)
        np.testing.assert_array_equal(second.numpy(), expected_second.clone().numpy())


@pytest.mark.parametrize("keepdim", [True, False])
def test_a_zero_dim_output_saved_as_a_numpy_scalar_keeps_its_dtype_under_create_graph(keepdim):
    """numpy's reductions of a 0-d array return numpy scalars; an op that saves one as its
    output (norm does) must still read it as a float64 0-d tensor in its create_graph backward.
    Read as a number, it promoted with the 1 of a `where` to float32, and the second derivative
    of |x| came out 2.4e-8 instead of 0 (found by the reductions' property tests)."""
    x = mt.tensor(0.5, dtype=mt.float64, requires_grad=True)
    out = mt.norm(x, p=2, dim=0, keepdim=keepdim)
    (first,) = mt.grad((out * 0.7).sum(), x, create_graph=True)
    (second,) = mt.grad((first * 1.3).sum(), x)
    assert first.dtype == mt.float64 and first.item() == 0.7
    assert second.item() == 0.0  # d/dx (0.7 * x / |x|) is exactly 0 for x = 0.5


@pytest.mark.parametrize("value", [1e-310, 3e-309, 1e-160, 1e160, -2.0])
def test_the_norm_of_one_element_has_abs_derivatives_at_every_magnitude(value, torch):
    """Its backward divided by |x| (inf below 5e-309) and its create_graph one squared it
    (underflowing below 1e-154): it is abs's, grad * sign(x), whose own derivative is 0."""
    x = mt.tensor([value], dtype=mt.float64, requires_grad=True)
    (first,) = mt.grad(mt.norm(x), x, create_graph=True)
    (second,) = mt.grad(first.sum(), x, allow_unused=True)
    t = torch.tensor([value], dtype=torch.float64, requires_grad=True)
    (expected,) = torch.autograd.grad(torch.norm(t), t)
    np.testing.assert_array_equal(first.detach().numpy(), expected.numpy())
    assert second is None or second.item() == 0.0
