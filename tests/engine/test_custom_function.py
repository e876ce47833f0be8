"""`minitrain.autograd.Function`, PyTorch's custom op with its own backward: values, first and
second derivatives against PyTorch (the same Function class body written once, subclassing
either library's Function), against finite differences in float64 (gradcheck,
gradgradcheck), and each error. `lib` is `minitrain` or `torch`, whose names the bodies share."""

from types import SimpleNamespace

import numpy as np
import pytest

import minitrain as mt
from minitrain.errors import DTypeError, GraphError, ShapeError

X = np.array([0.3, -1.2, 2.0])
Y = np.array([0.7, 1.1, -0.4])


# torch warns that backward(create_graph=True) makes a reference cycle through .grad
pytestmark = pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")


def leaf(lib, values, dtype=np.float64):
    return lib.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


def value(tensor):
    return np.array(tensor.detach().numpy())


def assert_same(mine, theirs, rtol=1e-12, atol=1e-12):
    np.testing.assert_allclose(value(mine), value(theirs), rtol=rtol, atol=atol)


def functions(lib):
    """The Functions under test, as subclasses of `lib.autograd.Function`."""

    class Cube(lib.autograd.Function):
        """x^3 * scale, scale a number: backward returns None for it."""

        @staticmethod
        def forward(ctx, x, scale):
            ctx.save_for_backward(x)
            ctx.scale = scale
            return x * x * x * scale

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x * x * ctx.scale, None

    class SinCos(lib.autograd.Function):
        """Two outputs, sin(x) * y and cos(x) + y; saves an input and an output."""

        @staticmethod
        def forward(ctx, x, y):
            first = x.sin() * y
            second = x.cos() + y
            ctx.save_for_backward(x, y, second)
            return first, second

        @staticmethod
        def backward(ctx, grad_first, grad_second):
            x, y, second = ctx.saved_tensors
            # d second / dx = -sin(x) = -(second - y) * tan(x), written through the saved output
            dx = grad_first * x.cos() * y - grad_second * x.sin() * (second - y) / x.cos()
            dy = grad_first * x.sin() + grad_second
            return dx, dy

    class ExpNew(lib.autograd.Function):
        """PyTorch 2's form: forward without ctx, setup_context."""

        @staticmethod
        def forward(x):
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx, grad):
            (out,) = ctx.saved_tensors
            return grad * out

    return SimpleNamespace(cube=Cube, sin_cos=SinCos, exp_new=ExpNew)


@pytest.fixture(params=["minitrain", "torch"])
def lib(request):
    return mt if request.param == "minitrain" else pytest.importorskip("torch")


def test_the_names_pytorch_has():
    from minitrain.autograd import Function
    from minitrain.autograd.function import once_differentiable

    assert mt.autograd.Function is Function
    assert "Function" in mt.autograd.__all__
    assert callable(once_differentiable)


def test_one_output_values_grads_and_grad_fn_as_torch(torch):
    results = {}
    for lib in (mt, torch):
        fns = functions(lib)
        x = leaf(lib, X)
        y = fns.cube.apply(x, 2.5)
        (y * leaf(lib, Y)).sum().backward()
        results[lib] = y, x.grad
        assert y.requires_grad
    assert_same(results[mt][0], results[torch][0])
    assert_same(results[mt][1], results[torch][1])
    assert results[mt][0].grad_fn.name == type(results[torch][0].grad_fn).__name__
    assert "grad_fn=<CubeBackward>" in repr(results[mt][0])


def test_several_outputs_as_torch(torch):
    results = {}
    for lib in (mt, torch):
        fns = functions(lib)
        x, y = leaf(lib, X), leaf(lib, Y)
        first, second = fns.sin_cos.apply(x * 1.5, y)  # a non-leaf input too
        (first * 2 + second * second).sum().backward()
        results[lib] = first, second, x.grad, y.grad
        assert first.grad_fn is not None and second.grad_fn is not None
    for mine, theirs in zip(results[mt], results[torch], strict=True):
        assert_same(mine, theirs)
    assert results[mt][0].grad_fn.name == "SinCosBackward"
    assert results[mt][1].grad_fn.name == "SinCosBackward"


def test_one_of_several_outputs_used_gets_zeros_for_the_other(torch):
    for index in (0, 1):
        results = {}
        for lib in (mt, torch):
            fns = functions(lib)
            x, y = leaf(lib, X), leaf(lib, Y)
            fns.sin_cos.apply(x, y)[index].sum().backward()
            results[lib] = x.grad, y.grad
        assert_same(results[mt][0], results[torch][0])
        assert_same(results[mt][1], results[torch][1])


def test_set_materialize_grads_false_gives_none(lib):
    received = []

    class Two(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            received.append((g1 is None, g2 is None))
            return g1 * 2 if g1 is not None else g2 * 3

    x = leaf(lib, X)
    Two.apply(x)[1].sum().backward()
    x.grad = None
    Two.apply(x)[0].sum().backward()
    assert received == [(True, False), (False, True)]
    np.testing.assert_allclose(value(x.grad), 2.0)


def test_setup_context_form_as_torch(torch):
    results = {}
    for lib in (mt, torch):
        fns = functions(lib)
        x = leaf(lib, X)
        y = fns.exp_new.apply(x)
        (g,) = lib.autograd.grad(y.sum(), [x], create_graph=True)
        (h,) = lib.autograd.grad((g * leaf(lib, Y)).sum(), [x])
        results[lib] = y, g, h
    for mine, theirs in zip(results[mt], results[torch], strict=True):
        assert_same(mine, theirs)
    np.testing.assert_allclose(value(results[mt][2]), np.exp(X) * Y)


def test_second_derivatives_through_the_backward_as_torch(torch):
    results = {}
    for lib in (mt, torch):
        fns = functions(lib)
        x, y = leaf(lib, X), leaf(lib, Y)
        first, second = fns.sin_cos.apply(fns.cube.apply(x, 0.5), y)
        loss = (first * second).sum()
        gx, gy = lib.autograd.grad(loss, [x, y], create_graph=True)
        v = lib.tensor(np.array([1.0, -2.0, 0.5]))
        hx, hy = lib.autograd.grad((gx * v).sum() + (gy * gy).sum(), [x, y])
        results[lib] = gx, gy, hx, hy
    for mine, theirs in zip(results[mt], results[torch], strict=True):
        assert_same(mine, theirs, rtol=1e-10, atol=1e-12)


def test_backward_create_graph_accumulates_a_differentiable_grad(torch):
    results = {}
    for lib in (mt, torch):
        fns = functions(lib)
        x = leaf(lib, X)
        fns.cube.apply(x, 2.0).sum().backward(create_graph=True)
        first = x.grad
        (h,) = lib.autograd.grad(first.sum(), [x])
        results[lib] = first, h
    assert_same(results[mt][0], results[torch][0])
    assert_same(results[mt][1], results[torch][1])
    np.testing.assert_allclose(value(results[mt][1]), 12.0 * X)


def test_gradcheck_and_gradgradcheck_in_float64():
    fns = functions(mt)
    x, y = leaf(mt, X), leaf(mt, Y)
    assert mt.gradcheck(lambda a: fns.cube.apply(a, 1.5), [x])
    assert mt.gradgradcheck(lambda a: fns.cube.apply(a, 1.5), [x])
    assert mt.gradcheck(lambda a, b: fns.sin_cos.apply(a, b), [x, y])
    assert mt.gradgradcheck(lambda a, b: fns.sin_cos.apply(a, b), [x, y])
    assert mt.gradcheck(fns.exp_new.apply, [x])
    assert mt.gradgradcheck(fns.exp_new.apply, [x])


def test_gradcheck_finds_a_wrong_backward():
    class Wrong(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, grad):
            return grad * 3

    with pytest.raises(mt.errors.GradcheckError):
        mt.gradcheck(Wrong.apply, [leaf(mt, X)])


def test_forward_runs_without_recording(lib):
    seen = []

    class Look(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, k):
            seen.append((x.requires_grad, x.grad_fn is None, lib.is_grad_enabled()))
            seen.append(ctx.needs_input_grad)
            return x * y * k

        @staticmethod
        def backward(ctx, grad):
            return grad, None, None

    x = leaf(lib, X) * 2  # not a leaf: forward sees it as it is (PyTorch does not detach it)
    y = lib.tensor(Y)
    out = Look.apply(x, y, 3)
    assert out.requires_grad
    assert seen == [(True, False, False), (True, False, False)]
    with lib.no_grad():
        assert not Look.apply(x, y, 3).requires_grad


def test_mark_non_differentiable_as_torch(torch):
    results = {}
    for lib in (mt, torch):
        received = []

        class Split(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                doubled, flags = x * 2, (x > 0) * 1.0
                ctx.mark_non_differentiable(flags)
                return doubled, flags

            @staticmethod
            def backward(ctx, grad, grad_flags, received=received):
                received.append(value(grad_flags))
                return grad * 2

        x = leaf(lib, X)
        doubled, flags = Split.apply(x)
        assert doubled.requires_grad and not flags.requires_grad
        doubled.sum().backward()
        results[lib] = x.grad, received[0]
    assert_same(results[mt][0], results[torch][0])
    np.testing.assert_array_equal(results[mt][1], results[torch][1])


def test_none_gradient_and_inputs_without_grad(torch):
    results = {}
    for lib in (mt, torch):

        class Mul(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                ctx.save_for_backward(x, y)
                return x * y

            @staticmethod
            def backward(ctx, grad):
                x, y = ctx.saved_tensors
                dx = grad * y if ctx.needs_input_grad[0] else None
                return dx, None  # None for y, though it requires grad: it gets none

        x, y = leaf(lib, X), leaf(lib, Y)
        Mul.apply(x, y).sum().backward()
        results[lib] = x.grad, y.grad
    assert_same(results[mt][0], results[torch][0])
    assert results[mt][1] is None and results[torch][1] is None


def test_a_gradient_that_sums_down_to_its_input_as_torch(torch):
    results = {}
    for lib in (mt, torch):

        class Spread(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return (grad * 2).expand(4, 3)  # summed back to (3,)

        x = leaf(lib, X)
        Spread.apply(x).sum().backward()
        results[lib] = x.grad
    assert_same(results[mt], results[torch])
    np.testing.assert_allclose(value(results[mt]), 8.0)


def test_retain_graph_and_a_second_backward(lib):
    fns = functions(lib)
    x = leaf(lib, X)
    y = fns.cube.apply(x, 1.0).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(value(x.grad), 6 * X**2)
    with pytest.raises(GraphError if lib is mt else RuntimeError, match="second time"):
        y.backward()


def test_a_tape_keeps_the_functions_node():
    fns = functions(mt)
    x = leaf(mt, X)
    with mt.Tape() as tape:
        fns.cube.apply(x, 1.0)
    assert [node.name for node in tape.nodes] == ["CubeBackward"]


# once_differentiable


def test_once_differentiable_first_order_and_its_double_backward_error(torch):
    grads = {}
    for lib in (mt, torch):
        decorator = (
            mt.autograd.function.once_differentiable
            if lib is mt
            else torch.autograd.function.once_differentiable
        )

        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            @decorator
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return grad * 2 * x

        x = leaf(lib, X)
        Square.apply(x).sum().backward()
        grads[lib] = x.grad
        x.grad = None
        (g,) = lib.autograd.grad((Square.apply(x) * leaf(lib, Y)).sum(), [x], create_graph=True)
        error = GraphError if lib is mt else RuntimeError
        with pytest.raises(error, match="differentiate twice") as caught:
            g.sum().backward()
        if lib is mt:
            assert "SquareBackward" in str(caught.value)
            assert x.grad is None  # an error leaves every .grad as it was
    assert_same(grads[mt], grads[torch])


# the errors


def _fn(backward, forward=None):
    class Bad(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y if forward is None else forward(ctx, x, y)

    Bad.backward = staticmethod(backward)
    return Bad


def test_too_few_gradients_names_the_function():
    bad = _fn(lambda ctx, grad: grad)
    out = bad.apply(leaf(mt, X), leaf(mt, Y))
    with pytest.raises(GraphError, match=r"Bad\.backward returned 1 gradient.*took 2 argument"):
        out.sum().backward()


def test_too_many_gradients_names_the_function():
    bad = _fn(lambda ctx, grad: (grad, grad, grad))
    with pytest.raises(GraphError, match=r"Bad\.backward returned 3 gradient.*took 2 argument"):
        bad.apply(leaf(mt, X), leaf(mt, Y)).sum().backward()
    # extra Nones are allowed, as PyTorch allows them
    fine = _fn(lambda ctx, grad: (grad, grad, None))
    x = leaf(mt, X)
    fine.apply(x, leaf(mt, Y)).sum().backward()
    np.testing.assert_allclose(value(x.grad), 1.0)


def test_a_gradient_of_the_wrong_shape_names_the_function_input_and_shapes():
    bad = _fn(lambda ctx, grad: (grad, grad[:2]))
    with pytest.raises(
        ShapeError, match=r"Bad\.backward .* shape \(2,\) for input 1, of shape \(3,\)"
    ):
        bad.apply(leaf(mt, X), leaf(mt, Y)).sum().backward()


def test_a_gradient_that_is_no_tensor_names_the_function_and_input():
    bad = _fn(lambda ctx, grad: (grad, grad.numpy()))
    with pytest.raises(DTypeError, match=r"Bad\.backward returned a ndarray .* input 1"):
        bad.apply(leaf(mt, X), leaf(mt, Y)).sum().backward()


def test_a_saved_tensor_changed_in_place_raises_at_backward(torch):
    for lib in (mt, torch):
        fns = functions(lib)
        x = leaf(lib, X)
        y = fns.cube.apply(x, 1.0)
        with lib.no_grad():
            x.mul_(2)
        error = GraphError if lib is mt else RuntimeError
        with pytest.raises(error, match="modified by an inplace operation|in-place operation"):
            y.sum().backward()
    # a saved output, changed in place through the graph
    fns = functions(mt)
    x = leaf(mt, X)
    out = fns.exp_new.apply(x)
    out.mul_(2)
    with pytest.raises(
        GraphError, match="ExpNewBackward: saved tensor 0 .* version 0, now at version 1"
    ):
        out.sum().backward()


def test_mark_dirty_is_refused_clearly():
    def dirty(ctx, x, y):
        ctx.mark_dirty(x)
        return x

    bad = _fn(lambda ctx, grad: (grad, None), forward=dirty)
    with pytest.raises(GraphError, match="Bad: ctx.mark_dirty .* not supported"):
        bad.apply(leaf(mt, X) * 1, leaf(mt, Y))


def test_save_for_backward_takes_tensors_only():
    def saves(ctx, x, y):
        ctx.save_for_backward(x, 3.0)
        return x * y

    bad = _fn(lambda ctx, grad: (grad, None), forward=saves)
    with pytest.raises(DTypeError, match="Bad: save_for_backward takes Tensors .* position 1"):
        bad.apply(leaf(mt, X), leaf(mt, Y))


def test_forward_returning_no_tensor_and_instantiating_are_refused():
    bad = _fn(lambda ctx, grad: (grad, None), forward=lambda ctx, x, y: 3.0)
    with pytest.raises(DTypeError, match=r"Bad\.forward returned a float"):
        bad.apply(leaf(mt, X), leaf(mt, Y))
    with pytest.raises(GraphError, match=r"call Bad\.apply"):
        bad()


def test_jvp_and_vmap_are_refused_clearly():
    fns = functions(mt)
    with pytest.raises(GraphError, match="forward-mode AD is not supported"):
        fns.cube.jvp(None, None)
    with pytest.raises(GraphError, match="vmap is not supported"):
        fns.cube.vmap(None, None)


def test_grad_for_one_argument_of_several_as_torch(torch):
    results = {}
    for lib in (mt, torch):
        fns = functions(lib)
        x, y = leaf(lib, X), leaf(lib, Y)
        first, second = fns.sin_cos.apply(x, y)
        (gy,) = lib.autograd.grad((first * second).sum(), [y])
        results[lib] = gy, x.grad, y.grad
    assert_same(results[mt][0], results[torch][0])
    assert results[mt][1] is None and results[mt][2] is None


def test_outputs_of_other_dtypes_and_integer_outputs_as_torch(torch):
    results = {}
    for lib in (mt, torch):
        received = []

        class Mixed(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, (x * 3).float(), (x > 0).long()

            @staticmethod
            def backward(ctx, g64, g32, g_int, received=received):
                received.append((str(g64.dtype), str(g32.dtype), value(g_int).tolist()))
                return g64 * 2 + g32.double() * 3

        x = leaf(lib, X)
        a, b, c = Mixed.apply(x)
        assert a.requires_grad and b.requires_grad and not c.requires_grad
        (a * leaf(lib, Y)).sum().backward(retain_graph=True)
        (b * b).sum().backward()
        results[lib] = a, b, c, x.grad, [r[2] for r in received]
        assert [r[:2] for r in received] == [(str(a.dtype), str(b.dtype))] * 2
    for mine, theirs in zip(results[mt][:4], results[torch][:4], strict=True):
        assert_same(mine, theirs, rtol=1e-6)
    assert str(results[mt][1].dtype).endswith("float32")
    assert results[mt][4] == results[torch][4] == [[0, 0, 0]] * 2


def test_a_hook_on_an_output_sees_its_gradient(lib):
    fns = functions(lib)
    x = leaf(lib, X)
    first, second = fns.sin_cos.apply(x, lib.tensor(Y))
    seen = []
    second.register_hook(lambda grad: seen.append(value(grad)) or grad * 0)
    (first + second).sum().backward()
    np.testing.assert_allclose(seen[0], 1.0)
    np.testing.assert_allclose(value(x.grad), np.cos(X) * Y)  # second's gradient was zeroed
