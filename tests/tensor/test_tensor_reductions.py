"""Tensor reductions and shape methods against torch, on a (2, 3, 4) sample without ties."""

import numpy as np
import pytest

import minitrain
from minitrain.errors import MinitrainError, ShapeError


def _torch():
    return pytest.importorskip("torch")


def leaf(values, dtype=np.float64):
    return minitrain.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


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


# The shape methods, on the same sample.

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
