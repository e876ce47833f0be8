"""The Tensor behaviour real PyTorch programs hit (issue 33), each against torch: the comparisons
as methods, functions and in-place twins; mm, bmm, mv, dot, outer, addmm, addmv (values,
dtypes, gradients against torch and finite differences, and the shape errors); the new_*
factories; `__index__`, `__format__`, `stride`, `type` and the is_* properties."""

from __future__ import annotations

import numpy as np
import pytest
from reference import torch

import minitrain as mt
from minitrain.errors import DTypeError, GraphError, ShapeError


def _values(shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _torch_dtype(dtype):
    return torch.from_numpy(np.empty(0, dtype)).dtype


# The comparisons: name -> PyTorch's other names for it

COMPARISONS = {
    "eq": (),
    "ne": ("not_equal",),
    "lt": ("less",),
    "le": ("less_equal",),
    "gt": ("greater",),
    "ge": ("greater_equal",),
}
ALL_COMPARISONS = sorted(
    [name for name in COMPARISONS] + [alias for a in COMPARISONS.values() for alias in a]
)


def _compared_pairs():
    """(ours, theirs) operand pairs: equal elements included, broadcasting, a number, ints."""
    a = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    b = np.array([2.0, 2.0, 1.0])
    ints = np.array([[0, 5, 2], [2, 2, 7]])
    return [
        (a, b),
        (a, a.copy()),
        (a, 2.0),
        (ints, 2),
        (ints, np.array([[2], [5]])),
        (a.astype(np.float32), b),  # float32 against float64: promoted, as in torch
    ]


@pytest.mark.parametrize("name", ALL_COMPARISONS)
def test_comparison_function_and_method_match_torch(torch, name):
    for x, y in _compared_pairs():
        ours_y = mt.tensor(y) if isinstance(y, np.ndarray) else y
        theirs_y = torch.tensor(y) if isinstance(y, np.ndarray) else y
        expected = getattr(torch, name)(torch.tensor(x), theirs_y).numpy()
        for result in (
            getattr(mt, name)(mt.tensor(x), ours_y),
            getattr(mt.tensor(x), name)(ours_y),
            getattr(mt, name)(input=mt.tensor(x), other=ours_y),
        ):
            assert result.dtype == np.bool_ and not result.requires_grad
            np.testing.assert_array_equal(result.numpy(), expected)


def test_aliases_and_operators_are_the_same_comparison():
    for name, aliases in COMPARISONS.items():
        for alias in aliases:
            assert getattr(mt.Tensor, alias) is getattr(mt.Tensor, name)
    x, y = mt.tensor([1.0, 2.0, 3.0]), mt.tensor([2.0, 2.0, 2.0])
    for op, name in [("==", "eq"), ("!=", "ne"), ("<", "lt"), ("<=", "le"), (">", "gt")]:
        np.testing.assert_array_equal(eval(f"x {op} y").numpy(), getattr(x, name)(y).numpy())


@pytest.mark.parametrize("name", ALL_COMPARISONS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_comparison_in_place_writes_one_and_zero_in_the_tensors_dtype(torch, name, dtype):
    values = np.array([[1, 2, 3], [3, 2, 1]]).astype(dtype)
    other = np.array([2, 2, 1]).astype(dtype)
    x, tx = mt.tensor(values), torch.tensor(values)
    before = x.array
    assert getattr(x, f"{name}_")(mt.tensor(other)) is x
    getattr(tx, f"{name}_")(torch.tensor(other))
    assert x.array is before and x.dtype == np.dtype(dtype)
    assert tx.dtype == _torch_dtype(dtype)
    np.testing.assert_array_equal(x.numpy(), tx.numpy())
    assert x.numpy().sum() > 0 and (x.numpy() == 0).any()  # both values are written


def test_comparison_in_place_on_a_tensor_in_the_graph_sends_zero_gradient(torch):
    values = np.array([1.0, 2.0, 3.0])
    leaf, t_leaf = mt.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    y, ty = leaf * 2, t_leaf * 2
    y.ge_(4.0)
    ty.ge_(4.0)
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    (y * mt.tensor([1.0, 2.0, 3.0])).sum().backward()
    (ty * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), t_leaf.grad.numpy())
    np.testing.assert_array_equal(leaf.grad.numpy(), np.zeros(3))


def test_comparison_errors():
    x = mt.tensor([1.0, 2.0, 3.0])
    with pytest.raises(ShapeError, match=r"^lt: shapes do not broadcast: input \(3,\) and other"):
        x.lt(mt.ones(4))
    with pytest.raises(ShapeError, match=r"eq_: the result has shape \(2, 3\)"):
        x.eq_(mt.ones(2, 3))  # an in-place result cannot broadcast its tensor, as in torch
    leaf = mt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(GraphError, match="gt_: a leaf tensor that requires grad"):
        leaf.gt_(1.0)
    with pytest.raises(DTypeError, match=r"minitrain\.ne: input must be a Tensor, got list"):
        mt.ne([1.0], x)


def test_equal_stays_one_bool_as_torch_equal(torch):
    a, b = np.array([1.0, 2.0]), np.array([1.0, 3.0])
    assert mt.equal(mt.tensor(a), mt.tensor(a)) is True
    assert mt.equal(mt.tensor(a), mt.tensor(b)) is torch.equal(torch.tensor(a), torch.tensor(b))
    assert mt.tensor(a).equal(mt.tensor(b)) is False
    np.testing.assert_array_equal(mt.eq(mt.tensor(a), mt.tensor(b)).numpy(), [True, False])


# The matrix products: (name, operand shapes, keywords)

PRODUCTS = [
    ("mm", [(3, 4), (4, 5)], {}),
    ("bmm", [(2, 3, 4), (2, 4, 5)], {}),
    ("mv", [(3, 4), (4,)], {}),
    ("dot", [(4,), (4,)], {}),
    ("outer", [(3,), (4,)], {}),
    ("ger", [(3,), (4,)], {}),
    ("addmm", [(3, 5), (3, 4), (4, 5)], {}),
    ("addmm", [(5,), (3, 4), (4, 5)], {"beta": 0.5, "alpha": -2.0}),
    ("addmm", [(1, 5), (3, 4), (4, 5)], {"beta": 0, "alpha": 3}),
    ("addmv", [(3,), (3, 4), (4,)], {}),
    ("addmv", [(1,), (3, 4), (4,)], {"beta": -1.5, "alpha": 0.25}),
]
IDS = [f"{name}-{'-'.join(map(str, shapes))}-{'-'.join(kw)}" for name, shapes, kw in PRODUCTS]


@pytest.mark.parametrize("name, shapes, keywords", PRODUCTS, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_product_matches_torch_in_values_and_gradients(torch, name, shapes, keywords, dtype):
    arrays = [_values(shape, seed) for seed, shape in enumerate(shapes)]
    ours = [mt.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    expected = getattr(torch, name)(*theirs, **keywords)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    for result in (
        getattr(mt, name)(*ours, **keywords),
        getattr(ours[0], name)(*ours[1:], **keywords),
    ):
        assert result.dtype == np.dtype(dtype) and expected.dtype == _torch_dtype(dtype)
        assert result.shape == tuple(expected.shape)
        np.testing.assert_allclose(
            result.detach().numpy(), expected.detach().numpy(), rtol=rtol, atol=rtol
        )
    upstream = _values(tuple(expected.shape), 9)
    result.backward(mt.tensor(upstream.astype(dtype)))
    expected.backward(torch.tensor(upstream.astype(dtype)))
    for x, tx in zip(ours, theirs, strict=True):
        assert x.grad.dtype == np.dtype(dtype)
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("name, shapes, keywords", PRODUCTS, ids=IDS)
def test_product_gradients_match_finite_differences(name, shapes, keywords):
    inputs = [
        mt.tensor(_values(shape, seed), requires_grad=True) for seed, shape in enumerate(shapes)
    ]
    assert mt.gradcheck(lambda *xs: getattr(mt, name)(*xs, **keywords), inputs, mode="full")


def test_addmm_with_beta_zero_reads_no_nan_and_sends_zero_gradient(torch):
    values = np.full(3, np.nan)
    x, tx = mt.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    m1, m2 = _values((2, 4)), _values((4, 3), 1)
    y = mt.addmm(x, mt.tensor(m1), mt.tensor(m2), beta=0)
    ty = torch.addmm(tx, torch.tensor(m1), torch.tensor(m2), beta=0)
    assert not np.isnan(y.detach().numpy()).any()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))


def test_integer_products_match_torch(torch):
    a = np.arange(6).reshape(2, 3)
    b = np.arange(12).reshape(3, 4) - 5
    for name, args in [("mm", (a, b)), ("addmm", (np.ones(4, np.int64), a, b))]:
        result = (
            getattr(mt, name)(*map(mt.tensor, args), alpha=2)
            if name == "addmm"
            else (getattr(mt, name)(*map(mt.tensor, args)))
        )
        expected = (
            getattr(torch, name)(*map(torch.tensor, args), alpha=2)
            if name == "addmm"
            else getattr(torch, name)(*map(torch.tensor, args))
        )
        assert result.dtype == np.int64 and expected.dtype == torch.int64
        np.testing.assert_array_equal(result.numpy(), expected.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_addmm_and_addmv_in_place_match_torch(torch, dtype):
    for name, shapes, keywords in [
        ("addmm_", [(3, 5), (3, 4), (4, 5)], {"beta": 0.5, "alpha": 2.0}),
        ("addmv_", [(3,), (3, 4), (4,)], {"alpha": -1.0}),
    ]:
        arrays = [_values(shape, seed).astype(dtype) for seed, shape in enumerate(shapes)]
        x, tx = mt.tensor(arrays[0]), torch.tensor(arrays[0])
        before = x.array
        assert getattr(x, name)(*map(mt.tensor, arrays[1:]), **keywords) is x
        getattr(tx, name)(*map(torch.tensor, arrays[1:]), **keywords)
        assert x.array is before and x.dtype == np.dtype(dtype)
        np.testing.assert_allclose(x.numpy(), tx.numpy(), rtol=1e-5)
    # in the graph: the gradients flow to the old values (times beta) and to the matrices
    arrays = [_values(shape, seed) for seed, shape in enumerate([(3, 5), (3, 4), (4, 5)])]
    ours = [mt.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, ty = ours[0] * 1.0, theirs[0] * 1.0
    y.addmm_(ours[1], ours[2], beta=0.5, alpha=2.0)
    ty.addmm_(theirs[1], theirs[2], beta=0.5, alpha=2.0)
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    for x, tx in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_addmm_in_place_refuses_a_tensor_of_another_shape(torch):
    with pytest.raises(RuntimeError, match="Bad in-place call"):
        torch.zeros(5).addmm_(torch.ones(3, 4), torch.ones(4, 5))
    with pytest.raises(ShapeError, match=r"addmm_: the result has shape \(3, 5\)"):
        mt.zeros(5).addmm_(mt.ones(3, 4), mt.ones(4, 5))


# each refused call, in torch too, and minitrain's message naming the op and the shapes
PRODUCT_ERRORS = [
    (
        "mm",
        [(2, 3), (4, 5)],
        {},
        r"^mm: input and mat2 shapes cannot be multiplied \(2x3 and 4x5\)",
    ),
    ("mm", [(2, 3, 3), (3, 5)], {}, r"^mm: input must be a matrix \(2-D\), got shape \(2, 3, 3\)"),
    ("mm", [(2, 3), (3,)], {}, r"^mm: mat2 must be a matrix \(2-D\), got shape \(3,\)"),
    ("bmm", [(2, 3), (3, 5)], {}, r"^bmm: input must be a batch of matrices \(3-D\), got shape"),
    ("bmm", [(2, 2, 3), (3, 3, 5)], {}, r"^bmm: input \(2x2x3\) and mat2 \(3x3x5\) do not fit"),
    ("bmm", [(2, 2, 3), (2, 4, 5)], {}, r"^bmm: input \(2x2x3\) and mat2 \(2x4x5\) do not fit"),
    ("mv", [(2, 3), (4,)], {}, r"^mv: input \(2x3\) and vec \(4\) cannot be multiplied"),
    ("mv", [(2, 3), (3, 1)], {}, r"^mv: vec must be a vector \(1-D\), got shape \(3, 1\)"),
    ("dot", [(2,), (3,)], {}, r"^dot: input and tensor must have the same number of elements"),
    ("dot", [(2, 2), (2, 2)], {}, r"^dot: input must be a vector \(1-D\), got shape \(2, 2\)"),
    ("outer", [(2, 2), (3,)], {}, r"^outer: input must be a vector \(1-D\), got shape \(2, 2\)"),
    ("addmm", [(4,), (2, 3), (3, 3)], {}, r"^addmm: input \(4,\) does not broadcast to the"),
    ("addmm", [(1, 1, 3), (2, 3), (3, 3)], {}, r"^addmm: input \(1, 1, 3\) does not broadcast"),
    ("addmm", [(3,), (2, 3), (4, 3)], {}, r"^addmm: mat1 and mat2 shapes cannot be multiplied"),
    ("addmv", [(4,), (2, 3), (3,)], {}, r"^addmv: input \(4,\) does not broadcast to the"),
    ("addmv", [(2,), (2, 3), (3, 1)], {}, r"^addmv: vec must be a vector \(1-D\)"),
]


@pytest.mark.parametrize(
    "name, shapes, keywords, message",
    PRODUCT_ERRORS,
    ids=[f"{e[0]}-{i}" for i, e in enumerate(PRODUCT_ERRORS)],
)
def test_product_refuses_what_torch_refuses(torch, name, shapes, keywords, message):
    arrays = [_values(shape, seed) for seed, shape in enumerate(shapes)]
    with pytest.raises(RuntimeError):
        getattr(torch, name)(*map(torch.tensor, arrays), **keywords)
    with pytest.raises(ShapeError, match=message):
        getattr(mt, name)(*map(mt.tensor, arrays), **keywords)


def test_products_refuse_mixed_dtypes_as_torch(torch):
    a32, a64 = np.ones((2, 3), np.float32), np.ones((3, 2))
    for name, args in [
        ("mm", (a32, a64)),
        ("bmm", (a32[None], a64[None])),
        ("dot", (a32[0], a64[:, 0])),
        ("mv", (a32, a64[:, 0])),
        ("addmm", (np.ones(2), a32, a32.T)),
    ]:
        with pytest.raises(RuntimeError):
            getattr(torch, name)(*map(torch.tensor, args))
        with pytest.raises(DTypeError, match=rf"^{name}: operands must share one dtype, got"):
            getattr(mt, name)(*map(mt.tensor, args))
    # outer promotes, as torch's does
    y = mt.outer(mt.tensor(a32[0]), mt.tensor(a64[:, 0]))
    assert y.dtype == np.float64
    assert torch.outer(torch.tensor(a32[0]), torch.tensor(a64[:, 0])).dtype == torch.float64


def test_addmm_scalars_are_checked():
    a, b, c = mt.ones(2, 2), mt.ones(2, 2), mt.ones(2, 2)
    with pytest.raises(DTypeError, match="addmm: beta must be a number, got str"):
        mt.addmm(a, b, c, beta="1")
    ints = mt.ones(2, 2, dtype=np.int64)
    with pytest.raises(DTypeError, match="addmm: alpha must be an integer for int64 operands"):
        mt.addmm(ints, ints, ints, alpha=0.5)  # (torch truncates it to 0 silently)
    assert mt.addmm(ints, ints, ints, alpha=2.0).dtype == np.int64


# new_zeros, new_ones, new_empty, new_full, new_tensor

NEW = [
    ("new_zeros", ((2, 3),), {}),
    ("new_zeros", (2, 3), {"dtype": np.int64}),
    ("new_ones", ([4],), {}),
    ("new_ones", (3,), {"dtype": np.float64, "requires_grad": True}),
    ("new_empty", (2, 2), {}),
    ("new_full", ((2, 3), 7), {}),
    ("new_full", ((1,), 2.5), {"dtype": np.float64}),
    ("new_tensor", ([[1, 2], [3, 4]],), {}),
    ("new_tensor", ([1.5, 2.5],), {"dtype": np.int32}),
    ("new_tensor", ([1.5, 2.5],), {"requires_grad": True}),
]


@pytest.mark.parametrize(
    "name, args, keywords", NEW, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(NEW)]
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_new_factories_match_torch(torch, name, args, keywords, dtype):
    source, t_source = mt.ones(2, dtype=dtype), torch.ones(2, dtype=_torch_dtype(dtype))
    t_keywords = {k: _torch_dtype(v) if k == "dtype" else v for k, v in keywords.items()}
    if keywords.get("requires_grad") and np.dtype(keywords.get("dtype", dtype)).kind != "f":
        with pytest.raises(RuntimeError):
            getattr(t_source, name)(*args, **t_keywords)
        with pytest.raises(DTypeError, match="only floating-point tensors can require grad"):
            getattr(source, name)(*args, **keywords)
        return
    result = getattr(source, name)(*args, **keywords)
    expected = getattr(t_source, name)(*args, **t_keywords)
    assert result.shape == tuple(expected.shape)
    assert _torch_dtype(result.dtype) == expected.dtype
    assert result.requires_grad == expected.requires_grad and result.is_leaf
    assert result.device == "cpu"
    if name != "new_empty":
        np.testing.assert_array_equal(result.detach().numpy(), expected.detach().numpy())


def test_new_tensor_copies_and_detaches(torch):
    source = mt.tensor([1.0, 2.0], requires_grad=True)
    copied = mt.zeros(1).new_tensor(source)
    assert not copied.requires_grad and copied.is_leaf
    copied.array[0] = 5.0
    assert source.array[0] == 1.0
    with pytest.raises(TypeError):
        torch.zeros(1).new_full(2, 1.0)
    with pytest.raises(DTypeError, match="new_full: size must be a tuple of ints, got int"):
        mt.zeros(1).new_full(2, 1.0)


# __index__, __format__, stride, type, the is_* properties


def test_index_makes_a_one_element_integer_tensor_an_index(torch):
    items = [10, 20, 30, 40]
    for value in (2, [3], True, -1):
        for dtype in (
            (np.int64, np.int32, np.uint8)
            if value != -1 and value is not True
            else ([np.bool_] if value is True else [np.int64])
        ):
            t, tt = mt.tensor(value, dtype=dtype), torch.tensor(value, dtype=_torch_dtype(dtype))
            assert items[t] == items[tt]
            assert items[:t] == items[:tt] and list(range(t)) == list(range(tt))
            assert t.__index__() == tt.__index__() and type(t.__index__()) is int
    assert [1, 2, 3][mt.tensor(1) : mt.tensor(3)] == [2, 3]
    assert f"{np.arange(5)[mt.tensor(4)]}" == "4"


def test_index_refuses_float_and_many_elements_as_torch(torch):
    message = "only integer tensors of a single element can be converted to an index"
    for value in (2.0, [1, 2], [[1.0]]):
        with pytest.raises(TypeError, match=message):
            [1, 2, 3][torch.tensor(value)]
        with pytest.raises(TypeError, match=f"^{message}$"):
            [1, 2, 3][mt.tensor(value)]
        with pytest.raises(TypeError, match=message):
            range(mt.tensor(value))


@pytest.mark.parametrize("spec", [".4f", "", ">10.2e", "+.1%", "g"])
@pytest.mark.parametrize("value", [1.2345678, -0.5])
def test_format_of_a_zero_d_tensor_formats_its_number(torch, spec, value):
    for dtype in (np.float32, np.float64):
        ours, theirs = mt.tensor(value, dtype=dtype), torch.tensor(value, dtype=_torch_dtype(dtype))
        assert format(ours, spec) == format(theirs, spec)
        assert f"{ours:{spec}}" == format(ours.item(), spec)
    assert f"{mt.tensor(7):05d}" == f"{torch.tensor(7):05d}" == "00007"
    assert f"{mt.tensor(True)}" == f"{torch.tensor(True)}" == "True"


def test_format_of_other_tensors_as_torch(torch):
    x = mt.tensor([1.0, 2.0])
    assert f"{x}" == str(x) and format(x, "") == repr(x)
    with pytest.raises(TypeError, match=r"unsupported format string passed to Tensor\.__format__"):
        f"{torch.tensor([1.0, 2.0]):.2f}"
    with pytest.raises(TypeError, match=r"^unsupported format string passed to Tensor\.__format__"):
        f"{x:.2f}"
    with pytest.raises(TypeError, match="unsupported format string passed to Parameter"):
        f"{torch.nn.Parameter(torch.tensor(1.0)):.2f}"
    with pytest.raises(TypeError, match="unsupported format string passed to Parameter"):
        f"{mt.nn.Parameter(mt.tensor(1.0)):.2f}"


def test_stride_counts_elements_as_torch(torch):
    base = np.arange(24.0).reshape(2, 3, 4)
    x, tx = mt.tensor(base), torch.tensor(base)
    cases = [
        (lambda t: t, lambda t: t),
        (lambda t: t.transpose(0, 2), lambda t: t.transpose(0, 2)),
        (lambda t: t[:, 1], lambda t: t[:, 1]),
        (lambda t: t[..., ::2], lambda t: t[..., ::2]),
        (lambda t: t[0, 0, 0], lambda t: t[0, 0, 0]),
        (lambda t: t[0, :1].expand(5, 4), lambda t: t[0, :1].expand(5, 4)),
    ]
    for ours, theirs in cases:
        view, t_view = ours(x), theirs(tx)
        assert view.stride() == t_view.stride()
        for dim in range(-view.ndim, view.ndim):
            assert view.stride(dim) == t_view.stride(dim)
    assert mt.tensor(1.0).stride() == torch.tensor(1.0).stride() == ()
    assert mt.zeros(3, dtype=np.int8).stride() == (1,)
    with pytest.raises(IndexError):
        tx.stride(3)
    with pytest.raises(ShapeError, match="stride"):
        x.stride(3)


@pytest.mark.parametrize(
    "dtype",
    [np.float32, np.float64, np.float16, np.int64, np.int32, np.int16, np.int8, np.uint8, np.bool_],
)
def test_type_names_the_type_as_torch(torch, dtype):
    expected = torch.zeros(2, dtype=_torch_dtype(dtype)).type()
    assert mt.zeros(2, dtype=dtype).type() == expected


def test_type_with_a_dtype_casts(torch):
    values = np.array([1.5, -2.5])
    x, tx = mt.tensor(values, dtype=np.float32), torch.tensor(values, dtype=torch.float32)
    assert x.type(np.float32) is x and tx.type(torch.float32) is tx
    for ours, theirs in [(np.float64, torch.float64), (np.int64, torch.int64),
                         ("torch.DoubleTensor", "torch.DoubleTensor"),
                         ("torch.IntTensor", "torch.IntTensor")]:  # fmt: skip
        result, expected = x.type(ours), tx.type(theirs)
        assert _torch_dtype(result.dtype) == expected.dtype
        np.testing.assert_array_equal(result.numpy(), expected.numpy())
    # recorded to a floating dtype: the gradient comes back in x's
    leaf = mt.tensor(values, dtype=np.float32, requires_grad=True)
    leaf.type(np.float64).sum().backward()
    assert leaf.grad.dtype == np.float32
    np.testing.assert_array_equal(leaf.grad.numpy(), [1.0, 1.0])
    with pytest.raises(DTypeError, match="type: invalid type 'torch.NoSuchTensor'"):
        x.type("torch.NoSuchTensor")


def test_is_properties_say_what_torch_says_of_a_cpu_tensor(torch):
    x, tx = mt.ones(2), torch.ones(2)
    for name in ("is_cpu", "is_cuda", "is_xpu", "is_mps", "is_sparse", "is_quantized", "is_meta"):
        assert isinstance(getattr(type(tx), name), type(type(tx).is_cuda))
        assert getattr(x, name) is getattr(tx, name), name
