"""The everyday PyTorch Tensor methods and creation functions beyond the core ones, each against
PyTorch (values, dtypes, gradients), with the hand-derived edge cases and the argument errors."""

import math

import numpy as np
import pytest
from reference import torch

import minitrain as mt
from minitrain.errors import ArgumentError, DTypeError, ShapeError

X = np.random.default_rng(0).standard_normal((3, 4))
MASK = np.random.default_rng(1).random((3, 4)) < 0.5


def _torch_dtype_name(tensor) -> str:
    return str(tensor.dtype).removeprefix("torch.")


def _assert_like_torch(fn, values=X, rtol=1e-12):
    """fn(x, lib) on a minitrain and a torch float64 leaf (lib: the module, to build further
    tensors) agree in shape, dtype and value of every output, and in x's gradient."""
    ours_x = mt.tensor(values, requires_grad=True)
    theirs_x = torch.tensor(values, requires_grad=True)
    ours, theirs = fn(ours_x, mt), fn(theirs_x, torch)
    single = not isinstance(ours, tuple)
    ours, theirs = ((ours,), (theirs,)) if single else (ours, theirs)
    assert len(ours) == len(theirs)
    rng = np.random.default_rng(2)
    our_loss, their_loss = 0.0, 0.0
    for out, ref in zip(ours, theirs, strict=True):
        assert out.shape == tuple(ref.shape)
        assert str(out.dtype) == _torch_dtype_name(ref)
        np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=rtol, atol=1e-14)
        weights = rng.standard_normal(out.shape)
        our_loss = our_loss + (out * mt.tensor(weights)).sum()
        their_loss = their_loss + (ref * torch.tensor(weights)).sum()
    our_loss.backward()
    their_loss.backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=rtol, atol=1e-14)
    assert ours_x.grad.dtype == np.float64


# methods against PyTorch

METHODS = {
    "view_as": lambda x, lib: x.view_as(lib.zeros(2, 6)),
    "reshape_as": lambda x, lib: x.reshape_as(lib.zeros(4, 3)),
    "expand_as": lambda x, lib: x[:1].expand_as(lib.zeros(2, 3, 4)),
    "view": lambda x, lib: x.view(2, -1, 2),
    "clamp_min": lambda x, lib: x.clamp_min(0.25),
    "clamp_max": lambda x, lib: x.clamp_max(-0.25),
    "square": lambda x, lib: x.square(),
    "rsqrt": lambda x, lib: (x.abs() + 0.5).rsqrt(),
    "reciprocal": lambda x, lib: (x.abs() + 0.5).reciprocal(),
    "sin": lambda x, lib: x.sin(),
    "cos": lambda x, lib: x.cos(),
    "sign": lambda x, lib: x.sign(),
    "floor": lambda x, lib: (x * 3).floor(),
    "ceil": lambda x, lib: (x * 3).ceil(),
    "trunc": lambda x, lib: (x * 3).trunc(),
    "round": lambda x, lib: (x * 3).round(),
    "round_decimals": lambda x, lib: x.round(decimals=1),
    "masked_fill_number": lambda x, lib: x.masked_fill(lib.tensor(MASK), -1.5),
    "masked_fill_row_mask": lambda x, lib: x.masked_fill(lib.tensor(MASK[0]), 0.0),
    "masked_fill_broadcasts_x": lambda x, lib: x[0].masked_fill(lib.tensor(MASK), 2.0),
    "where_method": lambda x, lib: x.where(lib.tensor(MASK), lib.tensor(np.ones((3, 4)))),
    "where_method_number": lambda x, lib: x.where(lib.tensor(MASK), 0.0),
    "chunk": lambda x, lib: x.chunk(2, 1),
    "chunk_uneven": lambda x, lib: x.chunk(2),
    "chunk_fewer_pieces": lambda x, lib: x.chunk(4, dim=0),
    "chunk_more_than_size": lambda x, lib: x.chunk(6, -1),
    "split_size": lambda x, lib: x.split(3, dim=1),
    "split_sections": lambda x, lib: x.split([1, 0, 2], 0),
    "unbind": lambda x, lib: x.unbind(),
    "unbind_dim1": lambda x, lib: x.unbind(1),
    "flip_varargs": lambda x, lib: x.flip(0, 1),
    "flip_list": lambda x, lib: x.flip([-1]),
    "cumsum_dim0": lambda x, lib: x.cumsum(0),
    "cumsum_dim_minus1": lambda x, lib: x.cumsum(dim=-1),
    "prod_all": lambda x, lib: x.prod(),
    "prod_dim": lambda x, lib: x.prod(1),
    "prod_keepdim": lambda x, lib: x.prod(0, keepdim=True),
    "gather_dim1": lambda x, lib: x.gather(1, lib.tensor(np.array([[3, 3], [0, 1], [2, 2]]))),
    "gather_dim0": lambda x, lib: x.gather(0, lib.tensor(np.array([[2, 0, 0, 1]]))),
    "tril": lambda x, lib: x.tril(),
    "tril_diagonal": lambda x, lib: x.tril(1),
    "triu": lambda x, lib: x.triu(),
    "triu_negative_diagonal": lambda x, lib: x.triu(diagonal=-1),
    "tril_batched": lambda x, lib: x.reshape(2, 2, 3).tril(),
    "norm_default": lambda x, lib: x.norm(),
    "norm_fro": lambda x, lib: x.norm("fro"),
    "norm_p1_dim": lambda x, lib: x.norm(1, 1),
    "norm_p3_keepdim": lambda x, lib: x.norm(3, dim=0, keepdim=True),
    "norm_inf": lambda x, lib: x.norm(math.inf, 1),
    "norm_minus_inf": lambda x, lib: x.norm(-math.inf),
    "repeat": lambda x, lib: x.repeat(2, 3),
    "repeat_new_dims": lambda x, lib: x.repeat(2, 1, 2),
    "repeat_tuple": lambda x, lib: x[0].repeat((3,)),
    "repeat_zero": lambda x, lib: x.repeat(0, 2),
    "tile_fewer": lambda x, lib: x.tile(2),
    "tile_more": lambda x, lib: x.tile((2, 1, 1)),
    "t": lambda x, lib: x.t(),
    "t_of_a_vector": lambda x, lib: x[0].t(),
    "type_as_float32": lambda x, lib: x.type_as(lib.zeros(1)) * 1.0,
}


@pytest.mark.parametrize("fn", METHODS.values(), ids=METHODS.keys())
def test_method_matches_torch_with_gradients(fn):
    _assert_like_torch(fn)


def test_float32_results_need_only_float32_tolerance():
    _assert_like_torch(lambda x, lib: x.float().rsqrt().double(), np.abs(X) + 0.5, rtol=1e-6)


def test_view_of_a_transposed_tensor_is_refused_as_in_torch():
    # a view shares memory, so in-place writes through it reach the original; this layout
    # would need a copy, which both refuse (reshape copies)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        torch.tensor(X).t().view(-1)
    with pytest.raises(ShapeError, match="view: .* without a copy; use reshape"):
        mt.tensor(X).t().view(-1)
    np.testing.assert_array_equal(mt.tensor(X).t().reshape(-1).numpy(), X.T.reshape(-1))
    viewed = mt.tensor(X.copy())
    viewed.view(-1).mul_(2)
    np.testing.assert_array_equal(viewed.numpy(), 2 * X)


def test_masked_fill_with_a_0d_tensor_value_sends_it_the_filled_places_gradient():
    x = mt.tensor(X, requires_grad=True)
    value = mt.tensor(np.array(2.0), requires_grad=True)
    out = x.masked_fill(mt.tensor(MASK), value)
    np.testing.assert_array_equal(out.numpy(), np.where(MASK, 2.0, X))
    out.sum().backward()
    assert value.grad.item() == MASK.sum()  # one per filled place
    np.testing.assert_array_equal(x.grad.numpy(), (~MASK).astype(float))


def test_masked_fill_keeps_the_tensors_dtype_like_torch():
    mask = np.array([True, False, True])
    for values, fill in [
        (np.array([1, 2, 3]), 2.7),  # a float fills an int tensor truncated
        (np.array([1.0, 2.0, 3.0], np.float16), 0.1),
        (np.array([1.0, 2.0, 3.0], np.float32), mt.tensor(np.array(5.0))),
        (np.array([True, False, False]), 1),
    ]:
        ours = mt.tensor(values).masked_fill(mt.tensor(mask), fill)
        their_fill = torch.tensor(fill.numpy()) if isinstance(fill, mt.Tensor) else fill
        theirs = torch.tensor(values).masked_fill(torch.tensor(mask), their_fill)
        assert str(ours.dtype) == _torch_dtype_name(theirs)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# dtypes of integer inputs

INTEGER_METHODS = {
    "floor": lambda t, lib: t.floor(),
    "ceil": lambda t, lib: t.ceil(),
    "trunc": lambda t, lib: t.trunc(),
    "round": lambda t, lib: t.round(),
    "sign": lambda t, lib: t.sign(),
    "sin": lambda t, lib: t.sin(),
    "cos": lambda t, lib: t.cos(),
    "square": lambda t, lib: t.square(),
    "reciprocal": lambda t, lib: t[[0, 3]].reciprocal(),  # 3 and 5 (True, True)
    "rsqrt": lambda t, lib: t[[0, 3]].rsqrt(),
    "cumsum": lambda t, lib: t.cumsum(0),
    "prod": lambda t, lib: t.prod(),
    "tril": lambda t, lib: t.reshape(2, 2).tril(),
    "triu": lambda t, lib: t.reshape(2, 2).triu(1),
    "flip": lambda t, lib: t.flip(0),
    "repeat": lambda t, lib: t.repeat(2),
    "gather": lambda t, lib: t.gather(0, lib.tensor(np.array([3, 0]))),
    "masked_fill": lambda t, lib: t.masked_fill(lib.tensor(np.array([True, False] * 2)), 1),
}


# torch has no floor, ceil, trunc or round of a bool tensor ("not implemented for 'Bool'")
_NO_BOOL_IN_TORCH = {"floor", "ceil", "trunc", "round"}
INTEGER_CASES = [
    (name, dtype)
    for name in INTEGER_METHODS
    for dtype in (np.int64, np.int32, np.bool_)
    if not (dtype is np.bool_ and name in _NO_BOOL_IN_TORCH)
]


@pytest.mark.parametrize("name, dtype", INTEGER_CASES)
def test_integer_and_bool_inputs_give_torchs_dtype(name, dtype):
    fn = INTEGER_METHODS[name]
    values = np.array([3, -2, 0, 5]).astype(dtype)
    theirs = fn(torch.tensor(values), torch)
    ours = fn(mt.tensor(values), mt)
    assert str(ours.dtype) == _torch_dtype_name(theirs)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("method, dtype", [("long", np.int64), ("int", np.int32), ("bool", bool)])
def test_integer_casts_leave_the_graph_like_torch(method, dtype):
    values = np.array([1.5, -0.5, 0.0])
    ours = getattr(mt.tensor(values, requires_grad=True), method)()
    theirs = getattr(torch.tensor(values, requires_grad=True), method)()
    assert ours.dtype == dtype and str(ours.dtype) == _torch_dtype_name(theirs)
    assert not ours.requires_grad and not theirs.requires_grad
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_type_as_an_integer_tensor_leaves_the_graph_and_to_a_float_records():
    x = mt.tensor([1.5, 2.5], requires_grad=True)
    as_int = x.type_as(mt.tensor([1, 2]))
    assert as_int.dtype == np.int64 and not as_int.requires_grad
    as_double = x.type_as(mt.zeros(1, dtype=np.float64))
    assert as_double.dtype == np.float64 and as_double.requires_grad
    (as_double * 3.0).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


# hand-derived edge cases


def _grad_of(fn, values, upstream=None):
    x = mt.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)
    out = fn(x)
    out.backward(np.ones(out.shape) if upstream is None else np.asarray(upstream, np.float64))
    return out.numpy(), x.grad.numpy()


def test_prod_gradient_with_one_zero_goes_to_the_zero_only():
    # d/dx1 (2 * x1 * 3) = 6 at x1 = 0; the others' products hold the zero
    out, grad = _grad_of(lambda x: x.prod(), [2.0, 0.0, 3.0])
    assert out == 0.0
    np.testing.assert_array_equal(grad, [0.0, 6.0, 0.0])


def test_prod_gradient_with_two_zeros_is_zero():
    out, grad = _grad_of(lambda x: x.prod(), [0.0, 2.0, 0.0, 4.0])
    assert out == 0.0
    np.testing.assert_array_equal(grad, [0.0, 0.0, 0.0, 0.0])


def test_prod_gradient_per_row_with_zeros():
    rows = [[2.0, 3.0, 4.0], [5.0, 0.0, 2.0], [0.0, 7.0, 0.0]]
    out, grad = _grad_of(lambda x: x.prod(1), rows, upstream=[1.0, 2.0, 3.0])
    np.testing.assert_array_equal(out, [24.0, 0.0, 0.0])
    # row 0: products of the others 12, 8, 6; row 1: only the zero, 2 * (5 * 2); row 2: nothing
    np.testing.assert_array_equal(grad, [[12.0, 8.0, 6.0], [0.0, 20.0, 0.0], [0.0, 0.0, 0.0]])


def test_cumsum_gradient_is_the_reversed_running_sum():
    out, grad = _grad_of(lambda x: x.cumsum(0), [1.0, 2.0, 3.0], upstream=[1.0, 10.0, 100.0])
    np.testing.assert_array_equal(out, [1.0, 3.0, 6.0])
    # x0 feeds all three outputs, x1 the last two, x2 the last
    np.testing.assert_array_equal(grad, [111.0, 110.0, 100.0])


def test_cumsum_along_each_dim_of_a_matrix():
    values = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(mt.tensor(values).cumsum(0).numpy(), [[0, 1, 2], [3, 5, 7]])
    np.testing.assert_array_equal(mt.tensor(values).cumsum(1).numpy(), [[0, 1, 3], [3, 7, 12]])


def test_gather_with_repeated_indices_adds_their_gradients():
    index = np.array([[0, 0, 2], [1, 1, 1]])
    out, grad = _grad_of(
        lambda x: x.gather(1, index),
        [[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]],
        [[1, 2, 3], [4, 5, 6]],
    )
    np.testing.assert_array_equal(out, [[10.0, 10.0, 30.0], [50.0, 50.0, 50.0]])
    np.testing.assert_array_equal(grad, [[3.0, 0.0, 3.0], [0.0, 15.0, 0.0]])


def test_norm_of_zeros_has_a_zero_gradient_like_torch():
    for p in (2, 1, 3, 0.5, math.inf):
        out, grad = _grad_of(lambda x, p=p: x.norm(p), np.zeros(3))
        theirs = torch.zeros(3, dtype=torch.float64, requires_grad=True)
        torch.linalg.vector_norm(theirs, p).backward()
        assert out == 0.0
        np.testing.assert_array_equal(grad, theirs.grad.numpy())
        np.testing.assert_array_equal(grad, [0.0, 0.0, 0.0])


def test_inf_norm_ties_share_the_gradient_like_torch():
    values = [3.0, -3.0, 1.0]
    out, grad = _grad_of(lambda x: x.norm(math.inf), values)
    assert out == 3.0
    np.testing.assert_array_equal(grad, [0.5, -0.5, 0.0])  # the sign of each tied element
    theirs = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    theirs.norm(math.inf).backward()
    np.testing.assert_array_equal(grad, theirs.grad.numpy())


def test_step_functions_have_zero_gradients_like_torch():
    for name in ("sign", "floor", "ceil", "trunc", "round"):
        out, grad = _grad_of(lambda x, name=name: getattr(x, name)(), [-1.5, -0.5, 0.0, 0.5, 2.5])
        np.testing.assert_array_equal(grad, np.zeros(5))
        theirs = getattr(torch.tensor([-1.5, -0.5, 0.0, 0.5, 2.5]), name)()
        np.testing.assert_array_equal(out, theirs.numpy())  # round: halves to even, as torch


def test_chunk_and_split_sizes_like_torch():
    values = np.arange(10.0)
    for cut in [
        lambda t: t.chunk(3),  # pieces of 4: 4, 4, 2
        lambda t: t.chunk(4),  # pieces of 3: 3, 3, 3, 1
        lambda t: t.chunk(6),  # pieces of 2: five of them, not six
        lambda t: t.chunk(20),
        lambda t: t.split(4),
        lambda t: t.split(10),
        lambda t: t.split([5, 0, 5]),
    ]:
        pieces, expected = cut(mt.tensor(values)), cut(torch.tensor(values))
        assert [p.shape for p in pieces] == [tuple(p.shape) for p in expected]
    assert [len(p) for p in mt.tensor(values).chunk(6)] == [2, 2, 2, 2, 2]
    empty = torch.zeros(0)
    assert len(mt.zeros(0).chunk(3)) == len(empty.chunk(3)) == 3
    assert len(mt.zeros(0).split(2)) == len(empty.split(2)) == 1


def test_flip_of_a_0d_tensor_is_the_tensor_like_torch():
    out, grad = _grad_of(lambda x: x.flip(0), 2.5)
    assert out == torch.tensor(2.5).flip(0).item() == 2.5
    assert grad == 1.0


def test_cumsum_of_a_0d_tensor_like_torch():
    out, grad = _grad_of(lambda x: x.cumsum(0), 2.5, upstream=3.0)
    assert out.shape == tuple(torch.tensor(2.5).cumsum(0).shape) == ()
    assert out == 2.5 and grad == 3.0


def test_array_facts_like_torch():
    ours, theirs = mt.zeros(2, 3, 4), torch.zeros(2, 3, 4)
    assert ours.nelement() == ours.numel() == theirs.nelement() == 24
    assert ours.dim() == theirs.dim() == 3
    assert ours.size() == tuple(theirs.size())
    assert ours.size(1) == theirs.size(1) == 3 and ours.size(-1) == theirs.size(-1) == 4
    assert mt.tensor([2.5]).item() == torch.tensor([2.5]).item() == 2.5
    assert mt.tensor([[1, 2]]).tolist() == torch.tensor([[1, 2]]).tolist()


# creation functions


@pytest.mark.parametrize("args", [(3,), (2, 4), (4, 2), (0,)])
def test_eye_like_torch(args):
    ours, theirs = mt.eye(*args), torch.eye(*args)
    assert ours.dtype == np.float32 and _torch_dtype_name(theirs) == "float32"
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert mt.eye(*args, dtype=np.float64).dtype == np.float64
    assert mt.eye(2, requires_grad=True).requires_grad


@pytest.mark.parametrize("args", [(0.0, 1.0, 5), (-2, 3, 11), (1.0, -1.0, 4), (0, 1, 1), (0, 1, 0)])
def test_linspace_like_torch(args):
    ours, theirs = mt.linspace(*args), torch.linspace(*args)
    assert ours.dtype == np.float32 and _torch_dtype_name(theirs) == "float32"
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-7)
    assert mt.linspace(*args, dtype=np.float64).dtype == np.float64


def test_randint_draws_in_range_with_torchs_signatures():
    mt.manual_seed(0)
    first = mt.randint(3, 7, (1000,))
    assert first.dtype == np.int64 and first.shape == (1000,)
    assert set(np.unique(first.numpy())) == {3, 4, 5, 6}
    assert mt.randint(5, (2, 3)).shape == tuple(torch.randint(5, (2, 3)).shape)
    assert 0 <= mt.randint(5, (50,)).numpy().min() and mt.randint(5, (50,)).numpy().max() < 5
    assert mt.randint(2, 4, 3).shape == (3,)
    assert mt.randint(0, 2, (2,), dtype=np.float32).dtype == np.float32
    mt.manual_seed(0)
    np.testing.assert_array_equal(mt.randint(3, 7, (1000,)).numpy(), first.numpy())


def test_randperm_is_a_seeded_permutation():
    mt.manual_seed(1)
    first = mt.randperm(20)
    assert first.dtype == np.int64 and _torch_dtype_name(torch.randperm(20)) == "int64"
    np.testing.assert_array_equal(np.sort(first.numpy()), np.arange(20))
    mt.manual_seed(1)
    np.testing.assert_array_equal(mt.randperm(20).numpy(), first.numpy())
    assert mt.randperm(0).shape == (0,)


# argument errors: raised before anything is recorded

INDEX = np.array([[0, 1], [1, 0], [2, 3]])
INPUTS = {
    "x": lambda: mt.tensor(X, requires_grad=True),
    "row": lambda: mt.tensor(X[0], requires_grad=True),
    "0-d": lambda: mt.tensor(X[0, 0], requires_grad=True),
    "3-d": lambda: mt.tensor(X[None], requires_grad=True),
    "int": lambda: mt.tensor(INDEX),
}
ERRORS = [
    ("x", lambda x: x.gather(1, INDEX.astype(float)), DTypeError,
     r"gather: index must be an integer tensor, got dtype float64"),
    ("x", lambda x: x.gather(1, INDEX[0]), ShapeError,
     r"gather: index must have as many dims as input.*\(3, 4\), index \(2,\)"),
    ("x", lambda x: x.gather(1, np.zeros((4, 2), np.int64)), ShapeError,
     r"gather: index of shape \(4, 2\) is larger than input of shape \(3, 4\) in dim 0"),
    ("x", lambda x: x.gather(1, INDEX + 2), IndexError,
     r"gather: index 5 is out of range for dim 1 of size 4"),
    ("x", lambda x: x.gather(0, INDEX - 1), IndexError,
     r"gather: index -1 is out of range for dim 0 of size 3"),
    ("x", lambda x: x.gather(2, INDEX), ShapeError, r"gather: dim 2 is out of range"),
    ("x", lambda x: x.masked_fill(mt.tensor(MASK.astype(int)), 0.0), DTypeError,
     r"masked_fill: mask must be boolean, got int64"),
    ("x", lambda x: x.masked_fill(mt.tensor(MASK), mt.zeros(2)), ShapeError,
     r"masked_fill: value must be a number or a 0-d tensor, got shape \(2,\)"),
    ("x", lambda x: x.masked_fill(mt.tensor(MASK), "0"), DTypeError,
     r"masked_fill: value must be a number or a 0-d tensor, got str"),
    ("x", lambda x: x.masked_fill(mt.tensor(MASK[:2]), 0.0), ShapeError,
     r"masked_fill: mask of shape \(2, 4\) does not broadcast with x of shape \(3, 4\)"),
    ("row", lambda x: x.tril(), ShapeError, r"tril: needs a tensor with at least 2 dims.*\(4,\)"),
    ("x", lambda x: x.triu(0.5), DTypeError, r"triu: diagonal must be an int, got 0.5"),
    ("x", lambda x: x.split([2, 2]), ShapeError,
     r"split: sections \[2, 2\] must be non-negative and sum to 3, the size of dim 0"),
    ("x", lambda x: x.split(0), ArgumentError, r"split: split_size must be positive, got 0"),
    ("x", lambda x: x.split(1.5), DTypeError, r"split: split_size_or_sections must be an int"),
    ("x", lambda x: x.chunk(0), ArgumentError, r"chunk: chunks must be positive, got 0"),
    ("x", lambda x: x.chunk(2.0), DTypeError, r"chunk: chunks must be an int, got 2.0"),
    ("0-d", lambda x: x.unbind(), ShapeError, r"unbind: cannot unbind a 0-d tensor"),
    ("x", lambda x: x.unbind(2), ShapeError, r"unbind: dim 2 is out of range"),
    ("x", lambda x: x.flip(0, -2), ShapeError, r"flip: dim \(0, -2\) repeats a dim"),
    ("x", lambda x: x.repeat(2), ShapeError,
     r"repeat: needs a size for each of the 2 dims of shape \(3, 4\), got \(2,\)"),
    ("x", lambda x: x.repeat(2, -1), ArgumentError,
     r"repeat: reps must be non-negative, got \(2, -1\)"),
    ("x", lambda x: x.cumsum(), DTypeError, r"cumsum: takes one int dim, got None"),
    ("x", lambda x: x.cumsum((0, 1)), DTypeError, r"cumsum: takes one int dim, got \(0, 1\)"),
    ("x", lambda x: x.prod(3), ShapeError, r"prod: dim 3 is out of range"),
    ("x", lambda x: x.norm("nuc"), ArgumentError, r"norm: p='nuc' is not supported"),
    ("x", lambda x: x.norm(0), ArgumentError, r"norm: p must be a number > 0, inf or -inf, got 0"),
    ("int", lambda x: x.norm(), DTypeError, r"norm: input must be a floating-point tensor"),
    ("x", lambda x: x.round(decimals=0.5), DTypeError, r"round: decimals must be an int, got 0.5"),
    ("x", lambda x: x.view("a"), DTypeError, r"view: takes ints or one dtype"),
    ("3-d", lambda x: x.t(), ShapeError,
     r"t: takes a tensor of at most 2 dims, got shape \(1, 3, 4\)"),
]  # fmt: skip


@pytest.mark.parametrize(
    "subject, call, error, message",
    ERRORS,
    ids=[f"{message.split(':')[0]}-{i}" for i, (*_, message) in enumerate(ERRORS)],
)
def test_bad_arguments_raise_named_errors_before_recording(subject, call, error, message):
    x = INPUTS[subject]()
    with mt.Tape() as tape, pytest.raises(error, match=message):
        call(x)
    assert tape.nodes == []


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: mt.eye(-1), ArgumentError, r"eye: n must be non-negative, got -1"),
        (lambda: mt.eye(2, 1.5), DTypeError, r"eye: m must be an int, got 1.5"),
        (lambda: mt.linspace(0, 1, -1), ArgumentError, r"linspace: steps must be non-negative"),
        (lambda: mt.linspace(0, 1, 2.0), DTypeError, r"linspace: steps must be an int"),
        (lambda: mt.randint(5, 5, (2,)), ArgumentError,
         r"randint: low must be less than high, got low=5, high=5"),
        (lambda: mt.randint(5), ArgumentError, r"randint: size is required"),
        (lambda: mt.randint(0.5, (2,)), DTypeError, r"randint: high must be an int, got 0.5"),
        (lambda: mt.randperm(-2), ArgumentError, r"randperm: n must be non-negative, got -2"),
    ],
)  # fmt: skip
def test_creation_errors_name_the_function_and_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize(
    "cast", [lambda t: t.astype(int), lambda t: t.to("int64"), lambda t: t.to(dtype=np.bool_)]
)
def test_every_cast_to_an_integer_or_bool_leaves_the_graph_like_torch(cast):
    ours = cast(mt.tensor([1.5, -2.0], requires_grad=True))
    assert ours.dtype.kind in "ib" and not ours.requires_grad and ours.grad_fn is None
    assert not torch.tensor([1.5, -2.0], requires_grad=True).to(torch.int64).requires_grad


# from the review of the methods above


def test_masked_fill_of_an_integer_tensor_leaves_the_graph():
    # torch refuses a value that requires grad here; minitrain's cast to int leaves the graph
    value = mt.tensor(np.array(2.5), requires_grad=True)
    out = mt.tensor([1, 2, 3]).masked_fill(mt.tensor([True, False, True]), value)
    assert out.dtype == np.int64 and not out.requires_grad
    np.testing.assert_array_equal(out.numpy(), [2, 2, 2])


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: t.norm(),
        lambda t: t.norm(p=3),
        lambda t: t.cumsum(0),
        lambda t: t.round(decimals=2),
    ],
    ids=["norm", "norm_p3", "cumsum", "round_decimals"],
)
def test_float16_accumulates_in_float32_like_torch(fn):
    # squares of 300 overflow float16, a running sum of 0.1s stops at 256, 1234.5 * 100 overflows
    values = np.concatenate([[300.0, 400.0, 1234.5678], np.full(3000, 0.1)]).astype(np.float16)
    ours, theirs = fn(mt.tensor(values)), fn(torch.tensor(values))
    assert ours.dtype == np.float16
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-3)


def test_sign_of_nan_is_zero_like_torch():
    values = np.array([np.nan, -2.0, 0.0, 3.0])
    np.testing.assert_array_equal(
        mt.tensor(values).sign().numpy(), torch.tensor(values).sign().numpy()
    )


def test_randint_takes_torchs_call_forms_and_checks_before_drawing():
    for call in (
        lambda lib: lib.randint(10, (3,)),
        lambda lib: lib.randint(10, size=(3,)),
        lambda lib: lib.randint(high=10, size=(3,)),
        lambda lib: lib.randint(2, 5, (3,)),
    ):
        assert tuple(call(mt).shape) == tuple(call(torch).shape) == (3,)
    state = mt.backend.generator().bit_generator.state
    for call, error, words in (
        (lambda: mt.randint(10, (-1,)), ArgumentError, "size must not be negative"),
        (lambda: mt.randint(10, (2.0,)), DTypeError, "size must be a tuple of ints"),
        (lambda: mt.randint(0, 300, (8,), dtype=np.uint8), ArgumentError, "uint8 holds 0 to 255"),
        (lambda: mt.randperm(300, dtype=np.uint8), ArgumentError, "uint8 holds 0 to 255"),
        (lambda: mt.randint(10, (3,), dtype="foo"), DTypeError, "randint: dtype must be"),
    ):
        with pytest.raises(error, match=words):
            call()
    assert mt.backend.generator().bit_generator.state == state  # nothing drawn


def test_repeat_tile_and_flip_take_torchs_dims_keyword_and_name_themselves():
    x = mt.tensor(np.arange(6.0).reshape(2, 3))
    t = torch.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(x.flip(dims=(0,)).numpy(), t.flip(dims=(0,)).numpy())
    np.testing.assert_array_equal(x.tile(dims=(2,)).numpy(), t.tile(dims=(2,)).numpy())
    with pytest.raises(ArgumentError, match="repeat: reps must be non-negative"):
        x.repeat(2, -1)
    with pytest.raises(ArgumentError, match="flip: needs the dims"):
        x.flip()
    with pytest.raises(ArgumentError, match="tile: needs at least one"):
        x.tile()


def test_clamp_with_a_tensor_bound_is_refused_by_name():
    with pytest.raises(DTypeError, match="clip: min must be a number or None, got Tensor"):
        mt.randn(3).clamp_min(mt.zeros(3))
