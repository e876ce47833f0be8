"""Tensor: creation and dtype rules, array facts, operators, reductions, shape methods, casts."""

import numpy as np
import pytest

import minitrain
from minitrain.errors import DTypeError, GraphError, MinitrainError, ShapeError


def _torch():
    return pytest.importorskip("torch")


def leaf(values, dtype=np.float64):
    return minitrain.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


# --- creation and dtype rules ---------------------------------------------------------------


@pytest.mark.parametrize(
    "data, dtype",
    [
        (1.5, np.float32),
        ([1.0, 2.0], np.float32),
        ([[1.5], [2.5]], np.float32),
        (3, np.int64),
        ([1, 2, 3], np.int64),
        (True, np.bool_),
        ([True, False], np.bool_),
        (np.array([1.0, 2.0], dtype=np.float64), np.float64),
        (np.array([1.0, 2.0], dtype=np.float16), np.float16),
        (np.array([1, 2], dtype=np.int32), np.int32),
        (np.float64(2.0), np.float64),
    ],
)
def test_creation_dtype_rules(data, dtype):
    assert minitrain.tensor(data).dtype == dtype
    assert minitrain.Tensor(data).dtype == dtype


def test_python_float_dtype_matches_torch_default():
    torch = _torch()
    assert str(minitrain.tensor([1.0, 2.0]).dtype) == str(torch.tensor([1.0, 2.0]).dtype)[6:]
    assert str(minitrain.tensor([1, 2]).dtype) == str(torch.tensor([1, 2]).dtype)[6:]
    assert str(minitrain.tensor([True]).dtype) == str(torch.tensor([True]).dtype)[6:]


def test_dtype_argument_overrides():
    assert minitrain.tensor([1, 2], dtype=minitrain.float32).dtype == np.float32
    assert minitrain.tensor([1.5], dtype=np.float16).dtype == np.float16
    assert minitrain.tensor(np.ones(2, dtype=np.float32), dtype=np.float64).dtype == np.float64
    # a Python float asked for as float64 is not rounded through float32 on the way
    assert minitrain.tensor(0.1, dtype=minitrain.float64).item() == 0.1
    assert minitrain.Tensor([1.0], dtype=np.int32).dtype == np.int32


def test_tensor_copies_while_Tensor_shares():  # noqa: N802
    array = np.array([1.0, 2.0, 3.0])
    shared = minitrain.Tensor(array)
    copied = minitrain.tensor(array)
    assert np.shares_memory(shared.data, array)
    assert not np.shares_memory(copied.data, array)
    array[0] = 42.0
    assert shared.data[0] == 42.0
    assert copied.data[0] == 1.0
    again = minitrain.tensor(shared)
    assert not np.shares_memory(again.data, array)
    np.testing.assert_array_equal(again.numpy(), [42.0, 2.0, 3.0])


def test_creation_from_strings_or_objects_raises():
    with pytest.raises(DTypeError):
        minitrain.tensor(["a", "b"])
    with pytest.raises(DTypeError):
        minitrain.tensor([object()])


@pytest.mark.parametrize("make", [minitrain.zeros, minitrain.ones])
def test_zeros_ones_shapes_and_dtypes(make):
    fill = 0.0 if make is minitrain.zeros else 1.0
    for t in (make(2, 3), make((2, 3)), make([2, 3])):
        assert t.shape == (2, 3)
        assert t.dtype == np.float32
        np.testing.assert_array_equal(t.numpy(), np.full((2, 3), fill))
        assert not t.requires_grad
    assert make(4).shape == (4,)
    assert make(2, dtype=minitrain.int64).dtype == np.int64
    assert make(2, requires_grad=True).requires_grad


def test_full():
    t = minitrain.full((2, 3), 7.0)
    assert t.shape == (2, 3) and t.dtype == np.float32
    np.testing.assert_array_equal(t.numpy(), np.full((2, 3), 7.0))
    assert minitrain.full(3, 1.5).shape == (3,)
    assert minitrain.full((2,), 4, dtype=minitrain.int64).dtype == np.int64


def test_randn_rand():
    minitrain.manual_seed(5)
    n = minitrain.randn(200, 50)
    u = minitrain.rand((200, 50))
    assert n.shape == (200, 50) and u.shape == (200, 50)
    assert n.dtype == np.float32 and u.dtype == np.float32
    assert abs(float(n.numpy().mean())) < 0.05
    assert abs(float(n.numpy().std()) - 1.0) < 0.05
    assert u.numpy().min() >= 0.0 and u.numpy().max() < 1.0
    assert abs(float(u.numpy().mean()) - 0.5) < 0.02
    assert minitrain.randn(3, dtype=minitrain.float64).dtype == np.float64
    assert minitrain.rand(2, 2, requires_grad=True).requires_grad


def test_manual_seed_reproducibility():
    minitrain.manual_seed(123)
    a, b = minitrain.randn(5), minitrain.rand(3)
    minitrain.manual_seed(123)
    a2, b2 = minitrain.randn(5), minitrain.rand(3)
    np.testing.assert_array_equal(a.numpy(), a2.numpy())
    np.testing.assert_array_equal(b.numpy(), b2.numpy())
    minitrain.manual_seed(124)
    assert not np.array_equal(minitrain.randn(5).numpy(), a.numpy())
    minitrain.manual_seed(123)
    minitrain.randn(5)
    assert not np.array_equal(minitrain.randn(5).numpy(), a.numpy())  # the stream moves on


def test_arange_dtypes_match_torch():
    torch = _torch()
    cases = [(5,), (2, 8, 2), (0, 1, 0.25), (3.0,), (1.0, 4)]
    for args in cases:
        ours, theirs = minitrain.arange(*args), torch.arange(*args)
        assert str(ours.dtype) == str(theirs.dtype)[6:], args
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert minitrain.arange(5).dtype == np.int64
    assert minitrain.arange(0, 1, 0.25).dtype == np.float32
    np.testing.assert_array_equal(minitrain.arange(0, 1, 0.25).numpy(), [0.0, 0.25, 0.5, 0.75])
    assert minitrain.arange(3, dtype=minitrain.float64).dtype == np.float64


def test_like_constructors():
    base = minitrain.tensor(np.ones((2, 3), dtype=np.float64))
    likes = (minitrain.zeros_like, minitrain.ones_like, minitrain.randn_like, minitrain.rand_like)
    for fn in likes:
        t = fn(base)
        assert t.shape == (2, 3) and t.dtype == np.float64
        assert fn(base, dtype=minitrain.float32).dtype == np.float32
    np.testing.assert_array_equal(minitrain.zeros_like(base).numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(minitrain.ones_like(base).numpy(), np.ones((2, 3)))
    full = minitrain.full_like(base, 2.5)
    assert full.dtype == np.float64
    np.testing.assert_array_equal(full.numpy(), np.full((2, 3), 2.5))
    ints = minitrain.arange(4)
    assert minitrain.zeros_like(ints).dtype == np.int64


def test_requires_grad_only_for_float_dtypes():
    for dtype in (np.float16, np.float32, np.float64):
        assert minitrain.tensor(np.ones(2, dtype=dtype), requires_grad=True).requires_grad
    with pytest.raises(DTypeError):
        minitrain.tensor([1, 2], requires_grad=True)
    with pytest.raises(DTypeError):
        minitrain.Tensor(np.array([True]), requires_grad=True)
    with pytest.raises(DTypeError):
        minitrain.zeros(3, dtype=minitrain.int64, requires_grad=True)
    t = minitrain.tensor([1, 2])
    with pytest.raises(DTypeError):
        t.requires_grad = True
    assert not t.requires_grad
    with pytest.raises(TypeError):  # DTypeError is a TypeError, as torch raises
        minitrain.arange(3).requires_grad_()


def test_requires_grad_setter_and_leaf_facts():
    t = minitrain.tensor([1.0, 2.0])
    assert t.is_leaf and t.grad_fn is None
    t.requires_grad_()
    assert t.requires_grad
    out = t * 2.0
    assert not out.is_leaf and out.grad_fn is out.node
    with pytest.raises(GraphError):
        out.requires_grad = False


def test_detach_shares_data_and_has_no_node():
    x = leaf([1.0, 2.0])
    y = x * 3.0
    d = y.detach()
    assert d.node is None and not d.requires_grad
    assert np.shares_memory(d.data, y.data)
    np.testing.assert_array_equal(d.numpy(), [3.0, 6.0])
    assert y.node is not None and y.requires_grad
    assert (d * 2.0).node is None


# --- array facts ----------------------------------------------------------------------------


def test_numpy_item_tolist():
    t = minitrain.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert isinstance(t.numpy(), np.ndarray)
    assert np.shares_memory(t.numpy(), t.data)
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert minitrain.tensor(2.5).item() == 2.5
    assert minitrain.tensor([[7]]).item() == 7
    assert isinstance(minitrain.tensor([[7]]).item(), int)
    assert isinstance(minitrain.tensor([1.5]).item(), float)
    with pytest.raises(ShapeError):
        t.item()


def test_shape_ndim_dtype_device():
    t = minitrain.zeros(2, 3, 4)
    assert t.shape == (2, 3, 4)
    assert t.ndim == 3 and t.dim() == 3
    assert t.dtype == np.float32
    assert t.numel() == 24
    assert t.size() == (2, 3, 4) and t.size(1) == 3
    assert t.device == minitrain.device("cpu")
    assert str(t.device) == "cpu"
    assert minitrain.device("cpu") == "cpu"


def test_len_and_iteration():
    t = minitrain.tensor([[1, 2], [3, 4], [5, 6]])
    assert len(t) == 3
    rows = list(t)
    assert len(rows) == 3
    assert all(isinstance(r, minitrain.Tensor) for r in rows)
    assert [r.tolist() for r in rows] == [[1, 2], [3, 4], [5, 6]]


def test_iteration_records_for_gradient():
    x = leaf([1.0, 2.0, 3.0])
    total = None
    for i, row in enumerate(x):
        term = row * float(i + 1)
        total = term if total is None else total + term
    total.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 2.0, 3.0])


def test_bool_float_int():
    assert bool(minitrain.tensor([1.0])) is True
    assert bool(minitrain.tensor(0.0)) is False
    assert float(minitrain.tensor([2.5])) == 2.5
    assert int(minitrain.tensor(3.7)) == 3
    assert int(minitrain.tensor([-3.7])) == -3
    with pytest.raises(ShapeError):
        bool(minitrain.tensor([1.0, 2.0]))
    with pytest.raises(ShapeError):
        float(minitrain.tensor([1.0, 2.0]))


def test_repr():
    plain = minitrain.tensor([1.5, 2.25])
    text = repr(plain)
    assert "1.5" in text and "2.25" in text
    assert "requires_grad" not in text and "grad_fn" not in text
    x = leaf([1.5, 2.25], dtype=np.float32)
    assert "requires_grad=True" in repr(x)
    product = x * 2.0
    assert "grad_fn=<MulGrad>" in repr(product)
    assert "4.5" in repr(product)
    assert "float64" in repr(minitrain.tensor(np.ones(2)))


# --- operators ------------------------------------------------------------------------------

BINARY = [
    ("add", lambda a, b: a + b),
    ("sub", lambda a, b: a - b),
    ("mul", lambda a, b: a * b),
    ("div", lambda a, b: a / b),
    ("pow", lambda a, b: a**b),
]


@pytest.mark.parametrize("name, fn", BINARY)
def test_binary_operators_match_torch(name, fn):
    torch = _torch()
    rng = np.random.default_rng(1)
    av, bv = rng.uniform(0.5, 2.0, (2, 3)), rng.uniform(0.5, 2.0, (3,))
    a, b = leaf(av), leaf(bv)
    out = fn(a, b)
    out.sum().backward()
    ta = torch.tensor(av, requires_grad=True)
    tb = torch.tensor(bv, requires_grad=True)
    tout = fn(ta, tb)
    tout.sum().backward()
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name, fn", BINARY)
@pytest.mark.parametrize("number", [2, 1.5])
def test_operators_with_python_numbers_on_either_side_match_torch(name, fn, number):
    torch = _torch()
    values = np.array([0.5, 1.0, 2.0])
    for left in (True, False):
        x = leaf(values)
        tx = torch.tensor(values, requires_grad=True)
        out = fn(number, x) if left else fn(x, number)
        tout = fn(number, tx) if left else fn(tx, number)
        assert isinstance(out, minitrain.Tensor)
        assert out.node is not None
        out.sum().backward()
        tout.sum().backward()
        np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name, fn", BINARY)
def test_numpy_array_on_the_left_returns_a_recorded_tensor(name, fn):
    torch = _torch()
    values = np.array([0.5, 1.0, 2.0], dtype=np.float32)
    left = np.array([1.5, 2.0, 3.0], dtype=np.float32)
    t = leaf(values, dtype=np.float32)
    out = fn(left, t)
    assert isinstance(out, minitrain.Tensor)
    assert out.node is not None and out.requires_grad
    out.sum().backward()
    tt = torch.tensor(values, requires_grad=True)
    fn(torch.from_numpy(left), tt).sum().backward()
    np.testing.assert_allclose(out.numpy(), fn(left, values), rtol=1e-6)
    np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=1e-5)
    assert t.grad.dtype == np.float32


def test_numpy_float64_array_plus_float32_tensor():
    t = leaf([1.0, 2.0, 3.0], dtype=np.float32)
    out = np.ones(3) + t
    assert isinstance(out, minitrain.Tensor)
    assert out.node is not None and out.node.name == "AddGrad"
    np.testing.assert_array_equal(out.numpy(), [2.0, 3.0, 4.0])
    out.sum().backward()
    assert t.grad.dtype == np.float32
    np.testing.assert_array_equal(t.grad.numpy(), [1.0, 1.0, 1.0])


def test_matmul_operator_and_numpy_on_the_left_match_torch():
    torch = _torch()
    rng = np.random.default_rng(2)
    av, bv = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    a, b = leaf(av), leaf(bv)
    out = a @ b
    out.sum().backward()
    ta, tb = torch.tensor(av, requires_grad=True), torch.tensor(bv, requires_grad=True)
    (ta @ tb).sum().backward()
    np.testing.assert_allclose(out.numpy(), av @ bv, rtol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-12)

    b2 = leaf(bv)
    left = av @ np.eye(3)  # a plain ndarray on the left
    out2 = left @ b2
    assert isinstance(out2, minitrain.Tensor) and out2.node is not None
    out2.sum().backward()
    np.testing.assert_allclose(b2.grad.numpy(), tb.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(a.matmul(b).numpy(), av @ bv, rtol=1e-12)


def test_unary_minus_and_abs_match_torch():
    torch = _torch()
    values = np.array([-2.0, -0.5, 1.0, 3.0])
    x = leaf(values)
    neg, absolute = -x, abs(x)
    (neg * 2.0 + absolute * 3.0 + x.abs()).sum().backward()
    tx = torch.tensor(values, requires_grad=True)
    (-tx * 2.0 + abs(tx) * 3.0 + tx.abs()).sum().backward()
    np.testing.assert_array_equal(neg.numpy(), -values)
    np.testing.assert_array_equal(absolute.numpy(), np.abs(values))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    assert (+x) is x


@pytest.mark.parametrize(
    "name, fn",
    [
        ("eq", lambda a, b: a == b),
        ("ne", lambda a, b: a != b),
        ("lt", lambda a, b: a < b),
        ("le", lambda a, b: a <= b),
        ("gt", lambda a, b: a > b),
        ("ge", lambda a, b: a >= b),
    ],
)
def test_comparisons_return_bool_tensors_without_grad(name, fn):
    torch = _torch()
    av, bv = np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 2.0])
    a, b = leaf(av), leaf(bv)
    ta, tb = torch.tensor(av), torch.tensor(bv)
    for ours, theirs in [(fn(a, b), fn(ta, tb)), (fn(a, 2.0), fn(ta, 2.0)), (fn(2, a), fn(2, ta))]:
        assert isinstance(ours, minitrain.Tensor)
        assert ours.dtype == np.bool_
        assert not ours.requires_grad and ours.node is None
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_item_assignment_raises():
    t = minitrain.tensor([1.0, 2.0, 3.0])
    with pytest.raises(MinitrainError):
        t[0] = 5.0
    with pytest.raises(MinitrainError):
        t[...] = minitrain.tensor([0.0, 0.0, 0.0])
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0, 3.0])


# --- reductions -----------------------------------------------------------------------------

X = np.array(
    [
        [[0.1, 2.0, -1.0, 0.7], [3.0, -2.5, 0.3, 1.1], [0.9, 0.4, -0.2, 5.0]],
        [[1.3, -0.6, 2.2, 0.0], [-1.4, 0.8, 4.1, -3.3], [2.6, 1.9, -0.7, 0.5]],
    ]
)  # fmt: skip  (2, 3, 4), no ties within any reduced slice


@pytest.mark.parametrize("method", ["sum", "mean", "amax", "amin", "var", "std", "logsumexp"])
def test_reductions_accept_dim_axis_keepdim_keepdims(method):
    x = minitrain.tensor(X)
    fn = getattr(x, method)
    reference = fn(dim=1).numpy()
    np.testing.assert_array_equal(fn(axis=1).numpy(), reference)
    np.testing.assert_array_equal(fn(1).numpy(), reference)
    kept = fn(dim=1, keepdim=True).numpy()
    assert kept.shape == (2, 1, 4)
    np.testing.assert_array_equal(fn(axis=1, keepdims=True).numpy(), kept)
    np.testing.assert_array_equal(fn(dim=1, keepdims=True).numpy(), kept)
    np.testing.assert_array_equal(fn(axis=1, keepdim=True).numpy(), kept)
    np.testing.assert_array_equal(kept[:, 0, :], reference)
    with pytest.raises(TypeError):
        fn(dim=1, axis=1)


def test_reductions_match_torch():
    torch = _torch()
    tx = torch.tensor(X)
    x = minitrain.tensor(X)
    pairs = [
        (x.sum(), tx.sum()),
        (x.sum(dim=(0, 2)), tx.sum(dim=(0, 2))),
        (x.mean(dim=-1, keepdim=True), tx.mean(dim=-1, keepdim=True)),
        (x.amax(dim=(0, 1)), tx.amax(dim=(0, 1))),
        (x.amin(dim=2), tx.amin(dim=2)),
        (x.logsumexp(dim=1), tx.logsumexp(dim=1)),
    ]
    for ours, theirs in pairs:
        assert ours.shape == tuple(theirs.shape)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


@pytest.mark.parametrize("method", ["max", "min"])
def test_max_min_with_dim_return_values_and_indices_like_torch(method):
    torch = _torch()
    x = leaf(X)
    tx = torch.tensor(X, requires_grad=True)
    result = getattr(x, method)(dim=1)
    tresult = getattr(tx, method)(dim=1)
    values, indices = result
    assert result.values is values and result.indices is indices
    np.testing.assert_array_equal(values.numpy(), tresult.values.detach().numpy())
    np.testing.assert_array_equal(indices.numpy(), tresult.indices.numpy())
    assert indices.dtype == np.int64
    assert not indices.requires_grad
    kept = getattr(x, method)(dim=1, keepdim=True)
    assert kept.values.shape == (2, 1, 4) and kept.indices.shape == (2, 1, 4)
    (values * minitrain.tensor(np.arange(8.0).reshape(2, 4))).sum().backward()
    (tresult.values * torch.arange(8.0, dtype=torch.float64).reshape(2, 4)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_max_without_dim_is_a_scalar_like_torch():
    torch = _torch()
    x = leaf(X)
    tx = torch.tensor(X, requires_grad=True)
    m = x.max()
    assert isinstance(m, minitrain.Tensor) and m.shape == ()
    assert m.item() == 5.0 and x.min().item() == -3.3
    m.backward()
    tx.max().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_amax_over_several_dims_with_gradient_like_torch():
    torch = _torch()
    x = leaf(X)
    tx = torch.tensor(X, requires_grad=True)
    out = x.amax(dim=(0, 1))
    tout = tx.amax(dim=(0, 1))
    np.testing.assert_array_equal(out.numpy(), tout.detach().numpy())
    weights = np.array([1.0, 2.0, 3.0, 4.0])
    (out * minitrain.tensor(weights)).sum().backward()
    (tout * torch.tensor(weights)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_max_with_several_dims_raises():
    with pytest.raises(TypeError):
        minitrain.tensor(X).max(dim=(0, 1))


def test_argmax_argmin_match_torch():
    torch = _torch()
    x, tx = minitrain.tensor(X), torch.tensor(X)
    np.testing.assert_array_equal(x.argmax(dim=2).numpy(), tx.argmax(dim=2).numpy())
    np.testing.assert_array_equal(x.argmin(axis=0).numpy(), tx.argmin(dim=0).numpy())
    assert x.argmax().item() == int(tx.argmax())


@pytest.mark.parametrize("dim", [None, 1, (0, 2)])
def test_var_std_default_correction_is_one_like_torch_and_numpy_ddof1(dim):
    torch = _torch()
    x = leaf(X)
    tx = torch.tensor(X, requires_grad=True)
    axis = dim
    np.testing.assert_allclose(x.var(dim=dim).numpy(), np.var(X, axis=axis, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(x.std(dim=dim).numpy(), np.std(X, axis=axis, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(x.var(dim=dim).numpy(), tx.var(dim=dim).detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.std(dim=dim).numpy(), tx.std(dim=dim).detach().numpy(), rtol=1e-12)
    (x.var(dim=dim).sum() + x.std(dim=dim).sum()).backward()
    (tx.var(dim=dim).sum() + tx.std(dim=dim).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10)


def test_var_std_correction_zero():
    torch = _torch()
    x = leaf(X)
    tx = torch.tensor(X, requires_grad=True)
    np.testing.assert_allclose(x.var(dim=2, correction=0).numpy(), np.var(X, axis=2), rtol=1e-12)
    np.testing.assert_allclose(x.std(axis=2, correction=0).numpy(), np.std(X, axis=2), rtol=1e-12)
    np.testing.assert_allclose(
        x.var(dim=2, correction=0).numpy(), tx.var(dim=2, correction=0).detach().numpy()
    )
    x.std(dim=0, correction=0, keepdim=True).sum().backward()
    tx.std(dim=0, correction=0, keepdim=True).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10)


def test_std_gradient_is_zero_where_the_std_is_zero_like_torch():
    torch = _torch()
    rows = np.array([[3.0, 3.0, 3.0], [1.0, 2.0, 4.0]])  # row 0 constant: its std is exactly 0
    for dim in (None, 1):
        values = rows[0] if dim is None else rows
        x, tx = leaf(values), torch.tensor(values, requires_grad=True)
        x.std(dim).sum().backward()
        tx.std(dim).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    # the std has a kink at a constant row (|h| along any direction): central differences give 0
    assert minitrain.gradcheck(lambda t: t.std(1), [leaf(rows)])
    assert minitrain.gradcheck(lambda t: t.std(0, correction=0), [leaf(rows.T)])


NAN = float("nan")


@pytest.mark.parametrize("method", ["max", "min"])
@pytest.mark.parametrize("dim", [None, 1])
def test_max_min_with_nan_send_the_gradient_to_the_nan_like_torch(method, dim):
    torch = _torch()
    # all elements: the two NaNs share the gradient (torch splits it evenly there); along dim 1
    # one NaN per row (with two, torch gives all to the first, minitrain splits as for ties)
    values = np.array([[1.0, NAN, 2.0, NAN], [4.0, -1.0, 5.0, 0.0]])
    if dim is not None:
        values = np.array([[1.0, NAN, 2.0, 0.0], [4.0, -1.0, 5.0, NAN], [4.0, -1.0, 5.0, 0.0]])
    x, tx = leaf(values), torch.tensor(values, requires_grad=True)
    args = () if dim is None else (dim,)
    out, tout = getattr(x, method)(*args), getattr(tx, method)(*args)
    if dim is not None:
        np.testing.assert_array_equal(out.indices.numpy(), tout.indices.numpy())
        out, tout = out.values, tout.values
    np.testing.assert_array_equal(out.numpy(), tout.detach().numpy())
    weights = np.arange(1.0, 1.0 + out.numel()).reshape(out.shape)
    (out * minitrain.tensor(weights)).sum().backward()
    (tout * torch.tensor(weights)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    assert not np.isnan(x.grad.numpy()).any()


@pytest.mark.parametrize("method", ["amax", "amin"])
def test_amax_amin_with_nan_give_the_nan_slice_a_nan_gradient_like_torch(method):
    torch = _torch()
    values = np.array([[1.0, NAN, 2.0], [4.0, -1.0, 5.0]])
    x, tx = leaf(values), torch.tensor(values, requires_grad=True)
    getattr(x, method)(1).sum().backward()
    getattr(tx, method)(1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    assert np.isnan(x.grad.numpy()[0]).all() and not np.isnan(x.grad.numpy()[1]).any()


@pytest.mark.parametrize("method, arg", [("max", "argmax"), ("min", "argmin")])
@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_argmax_argmin_along_the_dim_of_a_0d_tensor_like_torch(method, arg, dim, keepdim):
    torch = _torch()
    x, tx = leaf(2.5), torch.tensor(2.5, dtype=torch.float64, requires_grad=True)
    values, indices = getattr(x, method)(dim, keepdim)
    tvalues, tindices = getattr(tx, method)(dim, keepdim)
    assert values.shape == indices.shape == tuple(tvalues.shape) == ()
    assert values.item() == tvalues.item() and indices.item() == tindices.item()
    index = getattr(x, arg)(dim, keepdim)
    assert index.shape == tuple(getattr(tx, arg)(dim, keepdim).shape)
    assert index.item() == getattr(tx, arg)(dim, keepdim).item()
    values.backward()
    tvalues.backward()
    assert x.grad.item() == tx.grad.item()


@pytest.mark.parametrize("method, arg", [("max", "argmax"), ("min", "argmin")])
def test_max_min_over_a_nonempty_dim_of_an_empty_tensor_like_torch(method, arg):
    torch = _torch()
    x, tx = leaf(np.zeros((0, 3))), torch.zeros(0, 3, dtype=torch.float64, requires_grad=True)
    for keepdim in (False, True):
        values, indices = getattr(x, method)(1, keepdim)
        tvalues, tindices = getattr(tx, method)(1, keepdim)
        assert values.shape == indices.shape == tuple(tvalues.shape) == tuple(tindices.shape)
        assert getattr(x, arg)(1, keepdim).shape == tuple(getattr(tx, arg)(1, keepdim).shape)
    values.sum().backward()
    assert x.grad.shape == (0, 3)
    # over the empty dim there is nothing to pick: an error, as in torch
    for reduce in (lambda t: getattr(t, method)(0), lambda t: getattr(t, arg)()):
        with pytest.raises((IndexError, RuntimeError)):
            reduce(tx)
        with pytest.raises(ShapeError):
            reduce(x)


# --- shape methods --------------------------------------------------------------------------

SHAPE_CASES = [
    ("reshape -1", lambda t: t.reshape(3, -1), (3, 8)),
    ("reshape tuple", lambda t: t.reshape((4, 6)), (4, 6)),
    ("view -1", lambda t: t.view(-1), (24,)),
    ("view -1 middle", lambda t: t.view(2, -1, 3), (2, 4, 3)),
    ("transpose", lambda t: t.transpose(0, 2), (4, 3, 2)),
    ("transpose negative", lambda t: t.transpose(-1, 1), (2, 4, 3)),
    ("permute varargs", lambda t: t.permute(2, 0, 1), (4, 2, 3)),
    ("permute tuple", lambda t: t.permute((1, 2, 0)), (3, 4, 2)),
    ("flatten", lambda t: t.flatten(), (24,)),
    ("flatten from 1", lambda t: t.flatten(1), (2, 12)),
    ("flatten 0..1", lambda t: t.flatten(0, 1), (6, 4)),
    ("unsqueeze 0", lambda t: t.unsqueeze(0), (1, 2, 3, 4)),
    ("unsqueeze -1", lambda t: t.unsqueeze(-1), (2, 3, 4, 1)),
    ("unsqueeze 1", lambda t: t.unsqueeze(1), (2, 1, 3, 4)),
    ("squeeze all", lambda t: t.reshape(2, 1, 3, 1, 4).squeeze(), (2, 3, 4)),
    ("squeeze dim", lambda t: t.reshape(2, 1, 3, 1, 4).squeeze(1), (2, 3, 1, 4)),
    ("squeeze non-1 dim", lambda t: t.squeeze(0), (2, 3, 4)),
    ("expand -1", lambda t: t[:, :1, :].expand(-1, 5, -1), (2, 5, 4)),
    ("expand new dim", lambda t: t[:, :1, :].expand(3, 2, 2, 4), (3, 2, 2, 4)),
]


@pytest.mark.parametrize("name, fn, shape", SHAPE_CASES, ids=[c[0] for c in SHAPE_CASES])
def test_shape_methods_match_torch_with_gradients(name, fn, shape):
    torch = _torch()
    x = leaf(X)
    tx = torch.tensor(X, requires_grad=True)
    out, tout = fn(x), fn(tx)
    assert out.shape == shape == tuple(tout.shape)
    np.testing.assert_array_equal(out.numpy(), tout.detach().numpy())
    weights = np.random.default_rng(3).standard_normal(shape)
    (out * minitrain.tensor(weights)).sum().backward()
    (tout * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_T_property():  # noqa: N802
    torch = _torch()
    m = leaf(X[0])
    tm = torch.tensor(X[0], requires_grad=True)
    np.testing.assert_array_equal(m.T.numpy(), tm.T.detach().numpy())
    (m.T * minitrain.tensor(np.arange(12.0).reshape(4, 3))).sum().backward()
    (tm.T * torch.arange(12.0, dtype=torch.float64).reshape(4, 3)).sum().backward()
    np.testing.assert_array_equal(m.grad.numpy(), tm.grad.numpy())
    # on more dims .T reverses them all, as numpy's
    assert minitrain.tensor(X).T.shape == (4, 3, 2)
    np.testing.assert_array_equal(minitrain.tensor(X).T.numpy(), X.T)


@pytest.mark.parametrize("dims", [(0, -1), (0, 0), (-1, -1)])
def test_transpose_of_a_0d_tensor_is_the_tensor_like_torch(dims):
    torch = _torch()
    x, tx = leaf(2.5), torch.tensor(2.5, dtype=torch.float64, requires_grad=True)
    out, tout = x.transpose(*dims), tx.transpose(*dims)
    assert out.shape == tuple(tout.shape) == () and out.item() == tout.item()
    (out * 3.0).backward()
    (tout * 3.0).backward()
    assert x.grad.item() == tx.grad.item()
    with pytest.raises(IndexError):
        tx.transpose(0, 1)
    with pytest.raises(ShapeError):
        x.transpose(0, 1)


@pytest.mark.parametrize(
    "shape, start, end",
    [((0, 3, 4), 1, -1), ((2, 0, 4), 0, 1), ((3, 4, 0), 0, 1), ((0, 3, 4), 0, -1), ((0,), 0, 0)],
)
def test_flatten_of_a_zero_size_tensor_like_torch(shape, start, end):
    torch = _torch()
    x = leaf(np.zeros(shape))
    out, tout = x.flatten(start, end), torch.zeros(shape).flatten(start, end)
    assert out.shape == tuple(tout.shape)
    out.sum().backward()
    assert x.grad.shape == shape


# --- dtype conversion -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "convert, dtype",
    [
        (lambda t: t.to(minitrain.float64), np.float64),
        (lambda t: t.to("float64"), np.float64),
        (lambda t: t.to(np.float16), np.float16),
        (lambda t: t.double(), np.float64),
        (lambda t: t.half(), np.float16),
        (lambda t: t.float(), np.float32),
    ],
)
@pytest.mark.parametrize("source", [np.float32, np.float64])
def test_casts_record_and_gradients_come_back_in_original_dtype(convert, dtype, source):
    x = leaf([1.0, 2.0, 3.0], dtype=source)
    out = convert(x)
    assert out.dtype == dtype
    assert out.node is not None and out.requires_grad
    if dtype != source:
        assert out.node.name == "CastGrad"
    (out * 3.0).sum().backward()
    assert x.grad.dtype == source
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0, 3.0])


def test_cast_of_int_tensor():
    t = minitrain.arange(3)
    f = t.float()
    assert f.dtype == np.float32 and not f.requires_grad
    np.testing.assert_array_equal(f.numpy(), [0.0, 1.0, 2.0])
    assert t.to(minitrain.float64).dtype == np.float64


def test_to_cpu_keeps_values():
    x = leaf([1.0, 2.0])
    moved = x.to("cpu")
    assert moved.device == minitrain.device("cpu")
    np.testing.assert_array_equal(moved.numpy(), [1.0, 2.0])
    (moved * 2.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_float16_arithmetic_stays_float16_like_torch():
    torch = _torch()
    values = np.array([0.5, 1.0, 2.0], dtype=np.float16)
    x = leaf(values, dtype=np.float16)
    tx = torch.tensor(values)
    cases = [
        lambda t: t + 1.0,
        lambda t: t + 1,
        lambda t: t * 2.5,
        lambda t: 3.0 - t,
        lambda t: t / 2,
        lambda t: 2.0 / t,
        lambda t: t**2,
        lambda t: -t,
        lambda t: (t * t).sum(),
        lambda t: t.mean(),
    ]
    for fn in cases:
        out = fn(x)
        assert out.dtype == np.float16
        assert str(fn(tx).dtype) == "torch.float16"
        np.testing.assert_allclose(out.numpy(), fn(tx).numpy(), rtol=1e-3)
    ((x * 2.5 + 1.0) / 2).sum().backward()
    assert x.grad.dtype == np.float16
    np.testing.assert_allclose(x.grad.numpy(), [1.25, 1.25, 1.25])


def test_float16_with_float32_tensor_promotes_like_torch():
    torch = _torch()
    a = minitrain.tensor(np.ones(2, dtype=np.float16))
    b = minitrain.tensor(np.ones(2, dtype=np.float32))
    ta, tb = torch.ones(2, dtype=torch.float16), torch.ones(2, dtype=torch.float32)
    assert (a + b).dtype == np.float32
    assert str((ta + tb).dtype) == "torch.float32"


def test_squeeze_of_a_0d_tensor_like_torch():
    torch = _torch()
    t = minitrain.tensor(2.5)
    for dim in (0, -1):
        out = t.squeeze(dim)
        assert out.shape == tuple(torch.tensor(2.5).squeeze(dim).shape) == ()
        assert out.item() == 2.5


@pytest.mark.parametrize(
    "name, fn",
    [
        ("unsqueeze past the end", lambda t: t.unsqueeze(3)),
        ("unsqueeze before the start", lambda t: t.unsqueeze(-4)),
        ("squeeze past the end", lambda t: t.squeeze(5)),
        ("squeeze before the start", lambda t: t.squeeze(-3)),
    ],
    ids=[
        "unsqueeze-past-end",
        "unsqueeze-before-start",
        "squeeze-past-end",
        "squeeze-before-start",
    ],
)
def test_unsqueeze_squeeze_dim_out_of_range_raises_like_torch(name, fn):
    torch = _torch()
    with pytest.raises(IndexError):
        fn(torch.zeros(2, 3))
    with pytest.raises((ShapeError, IndexError)):
        fn(minitrain.zeros(2, 3))


def test_expand_minus_one_in_a_new_leading_dim_raises_like_torch():
    torch = _torch()
    with pytest.raises(RuntimeError):
        torch.zeros(2).expand(-1, 2)
    with pytest.raises(MinitrainError):
        minitrain.zeros(2).expand(-1, 2)


def test_int_tensor_with_python_float_gives_float32_like_torch():
    # "Python floats become float32 by default": torch gives its default float dtype here
    torch = _torch()
    for fn in (lambda t: t * 0.5, lambda t: t + 1.5, lambda t: t / 2, lambda t: 1.0 / (t + 1)):
        ours, theirs = fn(minitrain.arange(3)), fn(torch.arange(3))
        assert str(theirs.dtype) == "torch.float32"
        assert ours.dtype == np.float32
        np.testing.assert_allclose(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("name", ["all", "any"])
@pytest.mark.parametrize(
    "shape, dim, keepdim",
    [((2, 3), None, False), ((2, 3), 1, False), ((2, 3), 0, True), ((2, 3, 4), (0, 2), False)]
    + [((0, 3), None, False), ((0, 3), 0, False), ((3,), -1, True), ((), None, False)],
)
def test_all_and_any_match_torch(name, shape, dim, keepdim):
    torch = _torch()
    values = np.random.default_rng(0).integers(0, 3, shape).astype(np.float32)
    kwargs = {} if dim is None else {"dim": dim, "keepdim": keepdim}
    ours = getattr(minitrain.tensor(values, requires_grad=True), name)(**kwargs)
    theirs = getattr(torch.tensor(values), name)(**kwargs)
    assert ours.dtype == np.bool_ and not ours.requires_grad
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_all_of_a_comparison_reads_like_torch():
    a = minitrain.tensor([1.0, 2.0])
    assert bool((a == a).all()) and not bool((a == a + 1).any())


def test_clone_copies_the_data_and_passes_the_gradient():
    x = minitrain.tensor([1.0, 2.0], requires_grad=True)
    y = x.clone()
    assert y.dtype == x.dtype and not np.shares_memory(y.data, x.data)
    (y * np.array([3.0, 4.0], np.float32)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])


def test_to_takes_torchs_keyword_form_and_refuses_a_dtype_given_twice():
    x = minitrain.tensor([1.0, 2.0], requires_grad=True)
    assert x.to(dtype="float64").dtype == np.float64
    assert x.to("cpu", dtype=np.float64).dtype == np.float64
    assert x.to(device="cpu").dtype == np.float32
    with pytest.raises(MinitrainError, match="Tensor.to: dtype given twice"):
        x.to("float64", dtype="float32")


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda x: x.to(dtype=5), "Tensor.to: dtype must be a numpy dtype"),
        (lambda x: x.astype("bogus"), "cast: dtype must be a numpy dtype"),
        (lambda x: x.sum(dim=1.5), "sum: axis must be an int or a tuple of ints"),
        (lambda x: x.all(dim=1.5), "all: axis must be an int or a tuple of ints"),
    ],
)
def test_a_dtype_or_dim_that_is_none_is_a_dtype_error_naming_the_method(call, words):
    with pytest.raises(DTypeError, match=words):
        call(minitrain.ones(2, 3))
