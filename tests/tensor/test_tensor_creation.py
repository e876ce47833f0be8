"""Creating tensors: the creation functions, the dtype rules of data, requires_grad and leaves."""

import numpy as np
import pytest

import minitrain
from minitrain.errors import DTypeError, GraphError


def _torch():
    return pytest.importorskip("torch")


def leaf(values, dtype=np.float64):
    return minitrain.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


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
    if isinstance(data, (np.ndarray, np.generic)):  # an array is wrapped as it is
        assert minitrain.Tensor(data).dtype == dtype


def test_the_Tensor_class_reads_its_arguments_as_torch_Tensor():  # noqa: N802
    # sizes give an uninitialised tensor of that shape, Python data a copy in the default dtype
    made = minitrain.Tensor(16, 7)
    assert made.shape == (16, 7) and made.dtype == np.float32
    assert minitrain.Tensor(4).shape == (4,)
    assert minitrain.Tensor().shape == (0,) and minitrain.Tensor().dtype == np.float32
    values = minitrain.Tensor([1, 2, 3])
    assert values.dtype == np.float32 and values.tolist() == [1.0, 2.0, 3.0]
    assert minitrain.Tensor([[True], [False]]).dtype == np.float32
    assert minitrain.Tensor([1, 2], dtype=np.int64).dtype == np.int64
    minitrain.set_default_dtype(minitrain.float64)
    try:
        assert minitrain.Tensor(2, 2).dtype == minitrain.Tensor([1]).dtype == np.float64
    finally:
        minitrain.set_default_dtype(minitrain.float32)
    with pytest.raises(DTypeError, match="Tensor: expected sizes"):
        minitrain.Tensor([1.0], 2)
    assert minitrain.nn.Parameter(minitrain.Tensor(3, 4)).shape == (3, 4)


def test_the_Tensor_class_matches_torch():  # noqa: N802
    torch = _torch()
    for args in [(2, 3), ([1, 2, 3],), ([[1.5, 2], [3, 4]],), ((1, 0),)]:
        ours, theirs = minitrain.Tensor(*args), torch.Tensor(*args)
        assert ours.shape == tuple(theirs.shape)
        assert str(ours.dtype) == str(theirs.dtype)[6:]
        if not isinstance(args[0], int):
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


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
    assert np.shares_memory(shared.array, array)
    assert not np.shares_memory(copied.array, array)
    array[0] = 42.0
    assert shared.array[0] == 42.0
    assert copied.array[0] == 1.0
    again = minitrain.tensor(shared)
    assert not np.shares_memory(again.array, array)
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
    assert np.shares_memory(d.array, y.array)
    np.testing.assert_array_equal(d.numpy(), [3.0, 6.0])
    assert y.node is not None and y.requires_grad
    assert (d * 2.0).node is None


def test_as_tensor_shares_negatively_strided_memory_that_torch_refuses(torch):
    data = np.flip(np.arange(6.0))
    ours = minitrain.as_tensor(data)
    assert ours.array.strides == (-8,) and _memory_shared(ours.array, data)
    np.testing.assert_array_equal(ours.numpy(), [5, 4, 3, 2, 1, 0])
    with pytest.raises(ValueError, match="negative"):
        torch.as_tensor(data)


def _memory_shared(a, b) -> bool:
    return np.shares_memory(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize(
    "make, dtype, shared",
    [
        (lambda: np.arange(12.0).reshape(3, 4), None, True),
        (lambda: np.arange(12.0).reshape(3, 4)[:, ::2], None, True),
        (lambda: np.arange(6, dtype=np.int32), None, True),
        (lambda: np.arange(6.0), "float32", False),
        (lambda: [1.0, 2.5], None, False),
        (lambda: 3, None, False),
    ],
)
def test_as_tensor_shares_memory_where_torch_does(make, dtype, shared, torch):
    data = make()
    ours = minitrain.as_tensor(data, dtype=None if dtype is None else getattr(minitrain, dtype))
    theirs = torch.as_tensor(data, dtype=None if dtype is None else getattr(torch, dtype))
    assert ours.dtype == np.dtype(str(theirs.dtype).removeprefix("torch."))
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    if isinstance(data, np.ndarray):
        assert _memory_shared(ours.array, data) is shared
        assert _memory_shared(theirs.numpy(), data) is shared
        if shared:  # a write shows through, both ways
            data[(0,) * data.ndim] += 1
            assert ours.array[(0,) * data.ndim] == data[(0,) * data.ndim]


def test_as_tensor_of_a_tensor_is_itself_or_its_cast_in_the_graph():
    x = minitrain.tensor([1.0, 2.0], requires_grad=True)
    assert minitrain.as_tensor(x) is x
    assert minitrain.as_tensor(x, dtype=minitrain.float32, device="cpu") is x
    cast = minitrain.as_tensor(x, dtype=minitrain.float64)
    assert cast.dtype == np.float64 and cast.requires_grad
    cast.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])


def test_asarray_copies_or_refuses_as_torch_does(torch):
    data = np.arange(4.0)
    assert _memory_shared(minitrain.asarray(data).array, data)
    assert not _memory_shared(minitrain.asarray(data, copy=True).array, data)
    with pytest.raises(minitrain.errors.ArgumentError, match="asarray: copy=False, but ndarray"):
        minitrain.asarray(data, dtype=minitrain.float32, copy=False)
    with pytest.raises(ValueError):  # PyTorch refuses the same call
        torch.asarray(data, dtype=torch.float32, copy=False)
    leaf = minitrain.asarray([2.0, 4.0], requires_grad=True)
    assert leaf.requires_grad and leaf.grad_fn is None
    np.testing.assert_array_equal(leaf.detach().numpy(), [2.0, 4.0])


@pytest.mark.parametrize(
    "like", ["zeros_like", "ones_like", "empty_like", "rand_like", "randn_like", "full_like"]
)
def test_like_constructors_refuse_what_is_not_a_tensor(like):
    args = (None, 1.0) if like == "full_like" else (None,)
    with pytest.raises(
        DTypeError, match=f"{like}: argument 'input' must be a Tensor, got NoneType"
    ):
        getattr(minitrain, like)(*args)


def test_asarray_keeps_the_graph_of_a_tensor_asked_to_require_grad(torch):
    x = minitrain.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    assert minitrain.asarray(y, requires_grad=True) is y  # PyTorch's returns y itself too
    assert torch.asarray(torch.ones(2, requires_grad=True) * 2, requires_grad=True).grad_fn
    plain = minitrain.tensor([1.0, 2.0])
    assert minitrain.asarray(plain, requires_grad=True) is plain and plain.requires_grad


def test_asarray_without_copy_across_devices_says_it_needs_one(cuda_device):
    with pytest.raises(minitrain.errors.ArgumentError, match="asarray: copy=False"):
        minitrain.asarray(np.ones(2), device="cuda", copy=False)
    with pytest.raises(minitrain.errors.ArgumentError, match="asarray: copy=False"):
        minitrain.asarray(minitrain.ones(2, device="cuda"), device="cpu", copy=False)
