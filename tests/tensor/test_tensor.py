"""Tensor's array facts, operators and casts, against torch."""

import numpy as np
import pytest

import minitrain
from minitrain.errors import DTypeError, MinitrainError, ShapeError


def _torch():
    return pytest.importorskip("torch")


def leaf(values, dtype=np.float64):
    return minitrain.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


def test_numpy_item_tolist():
    t = minitrain.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert isinstance(t.numpy(), np.ndarray)
    assert np.shares_memory(t.numpy(), t.array)
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


def test_item_assignment_writes_in_place_and_counts_a_version():
    # as PyTorch: x[index] = value changes x's own memory, seen through its views
    t = minitrain.tensor([1.0, 2.0, 3.0])
    view = t.reshape(3, 1)
    t[0] = 5.0
    t[1:] = minitrain.tensor([7.0, 8.0])
    np.testing.assert_array_equal(t.numpy(), [5.0, 7.0, 8.0])
    np.testing.assert_array_equal(view.numpy(), [[5.0], [7.0], [8.0]])
    assert t._version == view._version == 2


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
    assert out.dtype == dtype and out.requires_grad
    if dtype == source:  # as PyTorch: nothing to cast, the tensor itself
        assert out is x
    else:
        assert out.node is not None and out.node.name == "CastGrad"
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


def test_int_tensor_with_python_float_gives_float32_like_torch():
    # "Python floats become float32 by default": torch gives its default float dtype here
    torch = _torch()
    for fn in (lambda t: t * 0.5, lambda t: t + 1.5, lambda t: t / 2, lambda t: 1.0 / (t + 1)):
        ours, theirs = fn(minitrain.arange(3)), fn(torch.arange(3))
        assert str(theirs.dtype) == "torch.float32"
        assert ours.dtype == np.float32
        np.testing.assert_allclose(ours.numpy(), theirs.numpy())


def test_clone_copies_the_data_and_passes_the_gradient():
    x = minitrain.tensor([1.0, 2.0], requires_grad=True)
    y = x.clone()
    assert y.dtype == x.dtype and not np.shares_memory(y.array, x.array)
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
        (lambda x: x.sum(dim=1.5), "sum: dim must be an int or a tuple of ints"),
        (lambda x: x.all(dim=1.5), "all: dim must be an int or a tuple of ints"),
    ],
)
def test_a_dtype_or_dim_that_is_none_is_a_dtype_error_naming_the_method(call, words):
    with pytest.raises(DTypeError, match=words):
        call(minitrain.ones(2, 3))
