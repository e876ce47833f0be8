"""minitrain.autograd.functional (vjp, jvp, jacobian, hessian, vhp, hvp): against
torch.autograd.functional in float64 on small functions and a small MLP loss, against central
differences, and every refusal."""

import numpy as np
import pytest

import minitrain
from minitrain import ops
from minitrain.autograd import functional as af
from minitrain.errors import ArgumentError, DTypeError, GraphError, ShapeError

TOL = {"rtol": 1e-10, "atol": 1e-10}


def values(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def mine(array, requires_grad=False):
    return minitrain.tensor(np.asarray(array, dtype=np.float64), requires_grad=requires_grad)


def assert_same(ours, theirs):
    """Same structure (a Tensor or nested tuples of them), shapes and values, to 1e-10."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs, strict=True):
            assert_same(o, t)
        return
    assert isinstance(ours, minitrain.Tensor), type(ours)
    assert ours.shape == tuple(theirs.shape)
    assert ours.dtype == np.float64
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), **TOL)


def as_both(torch, arrays):
    """The arrays as minitrain and torch tensors: one Tensor each, or a tuple each for a tuple."""
    if isinstance(arrays, tuple):
        return tuple(mine(a) for a in arrays), tuple(torch.tensor(a) for a in arrays)
    return mine(arrays), torch.tensor(arrays)


def assert_no_graph(result):
    if isinstance(result, tuple):
        for r in result:
            assert_no_graph(r)
    else:
        assert not result.requires_grad and result.grad_fn is None


# The small functions: each works on minitrain and torch tensors alike.


def cubic(x):
    return x * x * x - x / (x * x + 2.0)


def two_to_two(x, y):
    return x * y * x, (x / y).exp() - y


def scalar_of_two(x, y):
    return (x * x * y).sum() + (x.tanh() * y * y).sum() + (x * y).exp().mean()


def scalar_cubic(x):
    return (x * x * x).sum() + (x.sin() * x).sum()


CASES = [  # (func, inputs, cotangent v for its outputs)
    (cubic, values(4), values(4, seed=1)),
    (cubic, values(2, 3), values(2, 3, seed=1)),
    (two_to_two, (values(3), values(3, seed=1) + 3.0), (values(3, seed=2), values(3, seed=3))),
    (lambda x: (x * x).sum(), values(3), np.array(0.7)),
    (lambda x: (x.exp() * x,), values(2), (values(2, seed=1),)),
]
SCALAR_CASES = [  # (func, inputs, v for the inputs)
    (scalar_cubic, values(4), values(4, seed=1)),
    (scalar_cubic, values(2, 2), values(2, 2, seed=1)),
    (scalar_of_two, (values(3), values(3, seed=1)), (values(3, seed=2), values(3, seed=3))),
    (scalar_cubic, np.array(0.3), np.array(1.5)),
]


def tangents_for(inputs, seed=5):
    if isinstance(inputs, tuple):
        return tuple(values(*a.shape, seed=seed + i) for i, a in enumerate(inputs))
    return values(*inputs.shape, seed=seed)


@pytest.mark.parametrize("func, inputs, v", CASES)
def test_vjp_matches_torch(torch, func, inputs, v):
    (x, tx), (mv, tv) = as_both(torch, inputs), as_both(torch, v)
    ours = af.vjp(func, x, mv)
    assert_same(ours, torch.autograd.functional.vjp(func, tx, tv))
    assert_no_graph(ours)


@pytest.mark.parametrize("func, inputs, v", CASES)
def test_jvp_matches_torch(torch, func, inputs, v):
    (x, tx), (mv, tv) = as_both(torch, inputs), as_both(torch, tangents_for(inputs))
    ours = af.jvp(func, x, mv)
    assert_same(ours, torch.autograd.functional.jvp(func, tx, tv))
    assert_no_graph(ours)


@pytest.mark.parametrize("func, inputs, v", CASES)
def test_jacobian_matches_torch(torch, func, inputs, v):
    x, tx = as_both(torch, inputs)
    ours = af.jacobian(func, x)
    assert_same(ours, torch.autograd.functional.jacobian(func, tx))
    assert_no_graph(ours)


@pytest.mark.parametrize("func, inputs, v", SCALAR_CASES)
def test_hessian_matches_torch(torch, func, inputs, v):
    x, tx = as_both(torch, inputs)
    ours = af.hessian(func, x)
    assert_same(ours, torch.autograd.functional.hessian(func, tx))
    assert_no_graph(ours)


@pytest.mark.parametrize("product", ["vhp", "hvp"])
@pytest.mark.parametrize("func, inputs, v", SCALAR_CASES)
def test_vhp_and_hvp_match_torch(torch, product, func, inputs, v):
    (x, tx), (mv, tv) = as_both(torch, inputs), as_both(torch, v)
    ours = getattr(af, product)(func, x, mv)
    assert_same(ours, getattr(torch.autograd.functional, product)(func, tx, tv))
    assert_no_graph(ours)


def test_v_may_be_omitted_for_one_element(torch):
    x, tx = as_both(torch, np.array([0.4]))
    for name in ("vjp", "jvp", "vhp", "hvp"):
        func = cubic if name in ("vjp", "jvp") else scalar_cubic
        ours = getattr(af, name)(func, x)
        assert_same(ours, getattr(torch.autograd.functional, name)(func, tx))


# A small MLP's loss, its weights as the inputs: linear, tanh, linear, mean squared error.

FEATURES, HIDDEN, TARGETS, BATCH = 3, 4, 2, 5
DATA = values(BATCH, FEATURES, seed=10)
TARGET = values(BATCH, TARGETS, seed=11)
WEIGHTS = (
    values(HIDDEN, FEATURES, seed=12) * 0.7,
    values(HIDDEN, seed=13) * 0.1,
    values(TARGETS, HIDDEN, seed=14) * 0.7,
    values(TARGETS, seed=15) * 0.1,
)


def mlp(data, w1, b1, w2, b2, linear):
    return linear((linear(data, w1, b1)).tanh(), w2, b2)


def mlp_both(torch):
    """(predictions, loss) functions of the weights, for minitrain and for torch."""
    data, tdata = mine(DATA), torch.tensor(DATA)
    target, ttarget = mine(TARGET), torch.tensor(TARGET)
    tlinear = torch.nn.functional.linear

    def predict(*weights):
        return mlp(data, *weights, ops.linear)

    def tpredict(*weights):
        return mlp(tdata, *weights, tlinear)

    def loss(*weights):
        return ((predict(*weights) - target) ** 2).mean()

    def tloss(*weights):
        return ((tpredict(*weights) - ttarget) ** 2).mean()

    return (predict, tpredict), (loss, tloss)


def test_mlp_loss_hessian_matches_torch(torch):
    _, (loss, tloss) = mlp_both(torch)
    weights, tweights = as_both(torch, WEIGHTS)
    ours = af.hessian(loss, weights)
    assert_same(ours, torch.autograd.functional.hessian(tloss, tweights))
    for i in range(4):  # the blocks of a symmetric Hessian: H[i][j] is H[j][i] transposed
        for j in range(4):
            size_i, size_j = WEIGHTS[i].size, WEIGHTS[j].size
            block_ij = ours[i][j].numpy().reshape(size_i, size_j)
            block_ji = ours[j][i].numpy().reshape(size_j, size_i)
            np.testing.assert_allclose(block_ij, block_ji.T, **TOL)


@pytest.mark.parametrize("product", ["hvp", "vhp"])
def test_mlp_loss_hessian_products_match_torch(torch, product):
    _, (loss, tloss) = mlp_both(torch)
    weights, tweights = as_both(torch, WEIGHTS)
    v, tv = as_both(torch, tangents_for(WEIGHTS))
    ours = getattr(af, product)(loss, weights, v)
    assert_same(ours, getattr(torch.autograd.functional, product)(tloss, tweights, tv))


def test_mlp_predictions_jacobian_vjp_jvp_match_torch(torch):
    (predict, tpredict), _ = mlp_both(torch)
    weights, tweights = as_both(torch, WEIGHTS)
    cotangent, tcotangent = as_both(torch, values(BATCH, TARGETS, seed=20))
    tangent, ttangent = as_both(torch, tangents_for(WEIGHTS))
    functional = torch.autograd.functional
    assert_same(af.jacobian(predict, weights), functional.jacobian(tpredict, tweights))
    assert_same(af.vjp(predict, weights, cotangent), functional.vjp(tpredict, tweights, tcotangent))
    assert_same(af.jvp(predict, weights, tangent), functional.jvp(tpredict, tweights, ttangent))


def test_mlp_hvp_with_create_graph_differentiates_again(torch):
    # a third derivative: d/dw (v^T H(w) v), through hvp's graph back to weights that require grad
    _, (loss, tloss) = mlp_both(torch)
    weights = tuple(mine(w, requires_grad=True) for w in WEIGHTS)
    tweights = tuple(torch.tensor(w, requires_grad=True) for w in WEIGHTS)
    v, tv = as_both(torch, tangents_for(WEIGHTS))
    _, products = af.hvp(loss, weights, v, create_graph=True)
    _, tproducts = torch.autograd.functional.hvp(tloss, tweights, tv, create_graph=True)
    assert all(p.requires_grad for p in products)
    quadratic = sum(((p * u).sum() for p, u in zip(products, v, strict=True)), mine(0.0))
    tquadratic = sum((p * u).sum() for p, u in zip(tproducts, tv, strict=True))
    assert_same(minitrain.grad(quadratic, weights), torch.autograd.grad(tquadratic, tweights))


# create_graph: results stay in the graph of inputs that require grad.


@pytest.mark.parametrize("name", ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"])
def test_create_graph_results_differentiate_again_like_torch(torch, name):
    scalar = name in ("hessian", "vhp", "hvp")
    func = scalar_of_two if scalar else two_to_two
    xv, yv = values(3), values(3, seed=1) + 3.0
    x, y = mine(xv, requires_grad=True), mine(yv, requires_grad=True)
    tx, ty = (torch.tensor(a, requires_grad=True) for a in (xv, yv))
    args, targs = (), ()
    if name != "jacobian" and name != "hessian":
        like = (x, y) if name in ("jvp", "vhp", "hvp") else two_to_two(x, y)
        v, tv = as_both(torch, tuple(values(*t.shape, seed=7 + i) for i, t in enumerate(like)))
        args, targs = (v,), (tv,)
    ours = getattr(af, name)(func, (x, y), *args, create_graph=True)
    theirs = getattr(torch.autograd.functional, name)(func, (tx, ty), *targs, create_graph=True)
    assert_same(ours, theirs)
    flat = [t for t in _leaves(ours)]
    tflat = [t for t in _leaves(theirs)]
    total = sum(((t * t).sum() for t in flat), mine(0.0))
    ttotal = sum((t * t).sum() for t in tflat)
    assert_same(minitrain.grad(total, (x, y)), torch.autograd.grad(ttotal, (tx, ty)))
    assert x.grad is None and y.grad is None


def _leaves(nested):
    if isinstance(nested, tuple):
        for element in nested:
            yield from _leaves(element)
    else:
        yield nested


def test_inputs_are_fresh_copies_and_left_alone(torch):
    # func also reads the input it was given through a closure: only the argument counts
    xv = values(3)
    x, tx = mine(xv), torch.tensor(xv)
    ours = af.jacobian(lambda z: z * x, x)
    assert_same(ours, torch.autograd.functional.jacobian(lambda z: z * tx, tx))
    np.testing.assert_allclose(ours.numpy(), np.diag(xv))
    assert not x.requires_grad and x.grad is None


def test_works_under_no_grad(torch):
    x, tx = as_both(torch, values(3))
    with minitrain.no_grad():
        ours = af.hessian(scalar_cubic, x)
    with torch.no_grad():
        theirs = torch.autograd.functional.hessian(scalar_cubic, tx)
    assert_same(ours, theirs)
    assert minitrain.is_grad_enabled()


def test_identity_and_unused_inputs_match_torch(torch):
    (x, y), (tx, ty) = as_both(torch, (values(3), values(2)))
    functional = torch.autograd.functional
    assert_same(af.jacobian(lambda a: a, x), functional.jacobian(lambda a: a, tx))
    v, tv = as_both(torch, values(3, seed=1))
    assert_same(af.jvp(lambda a: a, x, v), functional.jvp(lambda a: a, tx, tv))
    # y unused: zeros where strict=False
    ours = af.jacobian(lambda a, b: a * a, (x, y))
    assert_same(ours, functional.jacobian(lambda a, b: a * a, (tx, ty)))
    assert not ours[1].numpy().any()
    ours = af.hessian(lambda a, b: (a * a * a).sum(), (x, y))
    assert_same(ours, functional.hessian(lambda a, b: (a * a * a).sum(), (tx, ty)))


def test_output_that_does_not_require_grad_gives_zeros(torch):
    x, tx = as_both(torch, values(3))
    constant, tconstant = as_both(torch, values(2, seed=1))
    ours = af.jacobian(lambda a: constant, x)
    assert_same(ours, torch.autograd.functional.jacobian(lambda a: tconstant, tx))
    assert not ours.numpy().any()
    output, product = af.vjp(lambda a: constant, x, mine(np.ones(2)))
    np.testing.assert_array_equal(output.numpy(), constant.numpy())
    assert not product.numpy().any()


# Central differences: no torch needed.


def central_jacobian(func, point, eps=1e-6):
    """d func / d point by central differences, shaped func's output shape + point's shape."""
    columns = []
    for k in range(point.size):
        step = np.zeros(point.size)
        step[k] = eps
        step = step.reshape(point.shape)
        plus = func(mine(point + step)).numpy()
        minus = func(mine(point - step)).numpy()
        columns.append((plus - minus) / (2 * eps))
    out_shape = columns[0].shape
    return np.stack(columns, axis=-1).reshape(out_shape + point.shape)


def test_jacobian_and_jvp_against_central_differences():
    point = values(2, 3)
    jac = af.jacobian(cubic, mine(point))
    expected = central_jacobian(cubic, point)
    np.testing.assert_allclose(jac.numpy(), expected, rtol=1e-7, atol=1e-8)
    tangent = values(2, 3, seed=1)
    _, product = af.jvp(cubic, mine(point), mine(tangent))
    np.testing.assert_allclose(
        product.numpy(), np.tensordot(expected, tangent, axes=2), rtol=1e-7, atol=1e-8
    )
    cotangent = values(2, 3, seed=2)
    _, product = af.vjp(cubic, mine(point), mine(cotangent))
    np.testing.assert_allclose(
        product.numpy(),
        np.tensordot(cotangent, expected, axes=([0, 1], [0, 1])),
        rtol=1e-7,
        atol=1e-8,
    )


def test_jacobian_of_tuple_outputs_against_central_differences():
    xv, yv = values(3), values(3, seed=1) + 3.0
    jac = af.jacobian(two_to_two, (mine(xv), mine(yv)))
    for i in range(2):
        np.testing.assert_allclose(
            jac[i][0].numpy(),
            central_jacobian(lambda x, i=i: two_to_two(x, mine(yv))[i], xv),
            rtol=1e-7,
            atol=1e-8,
        )
        np.testing.assert_allclose(
            jac[i][1].numpy(),
            central_jacobian(lambda y, i=i: two_to_two(mine(xv), y)[i], yv),
            rtol=1e-7,
            atol=1e-8,
        )


def test_hessian_is_symmetric_and_the_difference_of_the_gradient():
    point = values(2, 2)

    def gradient(x):
        x = mine(x.numpy(), requires_grad=True)
        return minitrain.grad(scalar_cubic(x), x)[0]

    hess = af.hessian(scalar_cubic, mine(point))
    assert hess.shape == (2, 2, 2, 2)
    matrix = hess.numpy().reshape(4, 4)
    np.testing.assert_allclose(matrix, matrix.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        hess.numpy(), central_jacobian(gradient, point), rtol=1e-7, atol=1e-8
    )
    v = values(2, 2, seed=1)
    _, hvp = af.hvp(scalar_cubic, mine(point), mine(v))
    _, vhp = af.vhp(scalar_cubic, mine(point), mine(v))
    np.testing.assert_allclose(hvp.numpy(), (matrix @ v.ravel()).reshape(2, 2), **TOL)
    np.testing.assert_allclose(vhp.numpy(), hvp.numpy(), **TOL)


def test_return_structures_mirror_inputs_and_outputs():
    x, y = mine(values(3)), mine(values(2))
    assert isinstance(af.jacobian(cubic, x), minitrain.Tensor)
    assert af.jacobian(cubic, x).shape == (3, 3)
    single_in = af.jacobian(lambda a: (a, a * 2.0), x)
    assert isinstance(single_in, tuple) and len(single_in) == 2
    assert isinstance(single_in[0], minitrain.Tensor)
    single_out = af.jacobian(lambda a, b: a.sum() * b, (x, y))
    assert [t.shape for t in single_out] == [(2, 3), (2, 2)]
    both = af.jacobian(lambda a, b: (a.sum() * b, a), (x, y))
    assert [[t.shape for t in row] for row in both] == [[(2, 3), (2, 2)], [(3, 3), (3, 2)]]
    one_element = af.jacobian(lambda a: (a * a).sum(), (x,))
    assert isinstance(one_element, tuple) and one_element[0].shape == (3,)
    hess = af.hessian(lambda a, b: (a * a).sum() * b.sum(), (x, y))
    assert [[t.shape for t in row] for row in hess] == [[(3, 3), (3, 2)], [(2, 3), (2, 2)]]
    output, product = af.vjp(lambda a: (a, a * 2.0), x, (x, x))
    assert isinstance(output, tuple) and isinstance(product, minitrain.Tensor)
    output, product = af.jvp(lambda a: (a, a * 2.0), (x,), (x,))
    assert isinstance(output, tuple) and isinstance(product, tuple) and len(product) == 2


# strict=True, as torch: both refuse the same cases.


def strict_cases():
    def unused(a, b):
        return a * 2.0

    def linear(a, b):
        return (a * 2.0).sum() + (b * 3.0).sum()

    return [
        ("vjp", unused, (np.ones(2),), {}),
        ("jvp", unused, (np.ones(2), np.ones(2)), {}),
        ("jacobian", unused, (), {}),
        ("jacobian", linear, (), {"create_graph": True}),
        ("hessian", linear, (), {}),
        ("hessian", unused, (), {}),
        ("vhp", linear, (np.ones(2), np.ones(2)), {}),
        ("hvp", linear, (np.ones(2), np.ones(2)), {}),
    ]


@pytest.mark.parametrize("name, func, v, options", strict_cases())
def test_strict_refuses_what_torch_refuses(torch, name, func, v, options):
    inputs, tinputs = as_both(torch, (values(2), values(2, seed=1)))
    args, targs = (), ()
    if v:
        v_both = as_both(torch, tuple(v) if len(v) > 1 else v[0])
        args, targs = (v_both[0],), (v_both[1],)
    if name in ("hessian", "vhp", "hvp") and func.__name__ == "unused":
        func = (lambda f: lambda a, b: f(a, b).sum())(func)
    with pytest.raises(GraphError, match=name):
        getattr(af, name)(func, inputs, *args, strict=True, **options)
    with pytest.raises(RuntimeError):
        getattr(torch.autograd.functional, name)(func, tinputs, *targs, strict=True, **options)
    # and without strict, both give the (zero) mathematical value
    ours = getattr(af, name)(func, inputs, *args, **options)
    assert_same(ours, getattr(torch.autograd.functional, name)(func, tinputs, *targs, **options))


@pytest.mark.parametrize("name", ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"])
def test_strict_refuses_an_output_that_does_not_require_grad(name):
    x = mine(values(2))
    constant = mine(np.array(1.5))
    v = (mine(np.ones(2)),) if name in ("jvp", "vhp", "hvp") else ()
    with pytest.raises(GraphError, match=f"{name}: output 0 of func .* does not require grad"):
        getattr(af, name)(lambda a: constant, x, *v, strict=True)


# Refusals: unsupported options and bad input, each named.


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda x: af.jacobian(cubic, x, vectorize=True), "vectorize"),
        (lambda x: af.jacobian(cubic, x, strategy="forward-mode"), "strategy"),
        (lambda x: af.jacobian(cubic, x, strategy="sideways"), "strategy"),
        (lambda x: af.hessian(scalar_cubic, x, vectorize=True), "vectorize"),
        (
            lambda x: af.hessian(scalar_cubic, x, outer_jacobian_strategy="forward-mode"),
            "outer_jacobian_strategy",
        ),
    ],
)
def test_unsupported_options_are_refused(call, argument):
    with pytest.raises(ArgumentError, match=argument) as error:
        call(mine(values(3)))
    assert str(error.value).startswith(("jacobian:", "hessian:"))


@pytest.mark.parametrize(
    "name, func, v, shapes",
    [
        ("vjp", cubic, np.ones(4), ("(4,)", "(3,)")),
        ("jvp", cubic, np.ones((3, 1)), ("(3, 1)", "(3,)")),
        ("vhp", scalar_cubic, np.ones(2), ("(2,)", "(3,)")),
        ("hvp", scalar_cubic, np.ones(()), ("()", "(3,)")),
    ],
)
def test_v_of_the_wrong_shape_is_refused(name, func, v, shapes):
    with pytest.raises(ShapeError, match=rf"{name}: v has shape") as error:
        getattr(af, name)(func, mine(values(3)), mine(v))
    assert all(shape in str(error.value) for shape in shapes)


def test_v_of_the_wrong_count_or_missing_is_refused():
    x, y = mine(values(3)), mine(values(3, seed=1) + 3.0)
    with pytest.raises(ShapeError, match="jvp: v has 1 tensor but inputs has 2"):
        af.jvp(two_to_two, (x, y), (x,))
    with pytest.raises(ShapeError, match=r"vjp: v has 2 tensors but the output of func"):
        af.vjp(cubic, x, (x, x))
    with pytest.raises(ShapeError, match=r"v\[1\] has shape \(2,\), but inputs\[1\] has"):
        af.hvp(scalar_of_two, (x, y), (x, mine(values(2))))
    with pytest.raises(ShapeError, match=r"vjp: v may be omitted .* shape \(3,\)"):
        af.vjp(cubic, x)
    with pytest.raises(ShapeError, match=r"hvp: v may be omitted .* shapes \[\(3,\), \(3,\)\]"):
        af.hvp(scalar_of_two, (x, y))


@pytest.mark.parametrize("name", ["hessian", "vhp", "hvp"])
def test_second_derivatives_of_a_non_scalar_are_refused(name):
    x = mine(values(3))
    v = (x,) if name != "hessian" else ()
    with pytest.raises(ShapeError, match=rf"{name}: func must return a Tensor of one element.*"):
        getattr(af, name)(cubic, x, *v)
    with pytest.raises(DTypeError, match=rf"{name}: func must return a single Tensor.*tuple"):
        getattr(af, name)(lambda a: (a.sum(),), x, *v)


@pytest.mark.parametrize("name", ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"])
def test_bad_functions_and_inputs_are_refused(name):
    x = mine(values(1))
    with pytest.raises(DTypeError, match=f"{name}: .*must (be|return) a .*Tensor.*, got float"):
        getattr(af, name)(lambda a: 1.0, x)
    with pytest.raises(DTypeError, match=rf"{name}: inputs\[1\] must be a Tensor.*got list"):
        getattr(af, name)(scalar_of_two, (x, [1.0]))
    with pytest.raises(DTypeError, match=f"{name}: inputs has dtype int64"):
        getattr(af, name)(scalar_cubic, minitrain.tensor(np.array([1])))
    with pytest.raises(ArgumentError, match=f"{name}: `inputs` is an empty tuple"):
        getattr(af, name)(lambda: mine(1.0), ())


def test_func_returning_a_list_is_refused_as_torch_does():
    with pytest.raises(DTypeError, match=r"jacobian: the output of func must be a Tensor"):
        af.jacobian(lambda a: [a, a], mine(values(2)))
