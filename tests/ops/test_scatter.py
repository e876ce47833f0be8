"""Selection and scatter by index (minitrain/ops/shapes/scattering.py) against PyTorch: the composed
selections (values, gradients, second derivatives, float32), the index-output functions, ties
and zeros in scatter_reduce, repeated indices, integer dtypes, the in-place forms, and the
errors (out-of-range indices, dtypes, shapes), raised before anything changes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import minitrain as mt
from minitrain import backend, ops
from minitrain.errors import (
    ArgumentError,
    DimensionError,
    DTypeError,
    GraphError,
    IndexOutOfRangeError,
    MinitrainError,
    ShapeError,
)

RNG = np.random.default_rng(7)
X34 = RNG.standard_normal((3, 4))
INDEX = np.array([[0, 1, 2, 0], [2, 2, 1, 0]])  # a repeat in column 3
UNIQUE_INDEX = np.array([[0, 1, 2, 0], [2, 2, 1, 1]])
MASK = np.array([[True, False, True, True], [False, False, True, False], [True, True, False, True]])


def _pair(values, requires_grad=True):
    import torch

    values = np.asarray(values)
    grad = requires_grad and values.dtype.kind == "f"
    return mt.tensor(values, requires_grad=grad), torch.tensor(values, requires_grad=grad)


# The selections composed of getitem, gather and setitem: (inputs, minitrain call, torch call).
# Floating inputs require grad; the rest (indices, masks) are passed as tensors.
COMPOSED = {
    "index_select_repeats": (
        (X34, np.array([3, 0, 3])),
        lambda x, i: ops.index_select(x, 1, i),
        lambda x, i: x.index_select(1, i),
    ),
    "index_select_dim0_int32": (
        (X34, np.array([2, 2], np.int32)),
        lambda x, i: mt.index_select(x, 0, i),
        lambda x, i: x.index_select(0, i),
    ),
    "index_select_zero_d_index": (
        (X34, np.array(1)),
        lambda x, i: x.index_select(-1, i),
        lambda x, i: x.index_select(-1, i),
    ),
    "index_select_zero_d_input": (
        (np.array(1.5), np.array([0])),
        lambda x, i: x.index_select(0, i),
        lambda x, i: x.index_select(0, i),
    ),
    "masked_select": (
        (X34, MASK),
        lambda x, m: mt.masked_select(x, m),
        lambda x, m: x.masked_select(m),
    ),
    "masked_select_broadcast": (
        (RNG.standard_normal((3, 1)), MASK),
        lambda x, m: x.masked_select(m),
        lambda x, m: x.masked_select(m),
    ),
    "masked_select_zero_d": (
        (np.array(0.5), np.array(True)),
        lambda x, m: x.masked_select(m),
        lambda x, m: x.masked_select(m),
    ),
    "take_along_dim_flat": (
        (X34, np.array([[11, 0, 0], [5, 5, 2]])),
        lambda x, i: mt.take_along_dim(x, i),
        lambda x, i: x.take_along_dim(i),
    ),
    "take_along_dim_broadcast": (
        (RNG.standard_normal((1, 4)), np.array([[3, 0], [1, 1], [2, 3]])),
        lambda x, i: x.take_along_dim(i, dim=1),
        lambda x, i: x.take_along_dim(i, dim=1),
    ),
    "take_along_dim_argsort_like": (
        (X34, np.argsort(X34, axis=0)[:2]),
        lambda x, i: mt.take_along_dim(x, i, 0),
        lambda x, i: x.take_along_dim(i, 0),
    ),
    "scatter_src": (
        (X34, UNIQUE_INDEX, RNG.standard_normal((2, 4))),
        lambda x, i, s: mt.scatter(x, 0, i, s),
        lambda x, i, s: x.scatter(0, i, s),
    ),
    # a place written twice keeps the last value (PyTorch's CPU kernel too); every src element
    # written gets its gradient, as PyTorch's scatter gives it
    "scatter_repeats_dim1": (
        (X34, np.array([[1, 1, 1], [0, 3, 0], [2, 2, 2]]), RNG.standard_normal((3, 3))),
        lambda x, i, s: x.scatter(1, i, s),
        lambda x, i, s: x.scatter(1, i, s),
    ),
    "scatter_src_larger": (
        (X34, np.array([[0, 2], [1, 0]]), RNG.standard_normal((3, 4))),
        lambda x, i, s: x.scatter(1, i, s),
        lambda x, i, s: x.scatter(1, i, s[:2, :2]),  # (torch's gradient of a larger src fails)
    ),
    "scatter_value": (
        (X34, INDEX),
        lambda x, i: x.scatter(0, i, 2.5),
        lambda x, i: x.scatter(0, i, 2.5),
    ),
    "scatter_value_keyword": (
        (X34, INDEX),
        lambda x, i: mt.scatter(x, 0, i, value=-1),
        lambda x, i: x.scatter(0, i, value=-1),
    ),
    "scatter_value_add": (
        (X34, INDEX),
        lambda x, i: x.scatter(0, i, 2.0, reduce="add"),
        lambda x, i: x.scatter_add(0, i, torch_full(i.shape, 2.0)),
    ),
    "scatter_zero_d": (
        (np.array(1.0), np.array(0), np.array(3.0)),
        lambda x, i, s: x.scatter(0, i, s),
        lambda x, i, s: x.scatter(0, i, s),
    ),
    "masked_scatter": (
        (X34, MASK, RNG.standard_normal(9)),
        lambda x, m, s: x.masked_scatter(m, s),
        lambda x, m, s: x.masked_scatter(m, s),
    ),
    "masked_scatter_broadcast_2d_source": (
        (RNG.standard_normal(4), MASK, RNG.standard_normal((2, 5))),
        lambda x, m, s: mt.masked_scatter(x, m, s),
        lambda x, m, s: x.masked_scatter(m, s),
    ),
}


def torch_full(shape, value):
    import torch

    return torch.full(tuple(shape), value, dtype=torch.float64)


def _ours(values, dtype=np.float64):
    """minitrain inputs: floating arrays in dtype, requiring grad."""
    return [
        mt.tensor(v.astype(dtype) if v.dtype.kind == "f" else v, requires_grad=v.dtype.kind == "f")
        for v in map(np.asarray, values)
    ]


def _theirs(torch, values):
    """The same inputs as torch tensors (float64)."""
    return [
        torch.tensor(np.asarray(v), requires_grad=np.asarray(v).dtype.kind == "f") for v in values
    ]


@pytest.mark.parametrize("name", sorted(COMPOSED))
def test_composed_selection_matches_torch(torch, name):
    values, call, ref = COMPOSED[name]
    ours, theirs = _ours(values), _theirs(torch, values)
    out, expected = call(*ours), ref(*theirs)
    assert out.shape == tuple(expected.shape) and out.dtype == np.float64
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    upstream = RNG.standard_normal(out.shape)
    out.backward(upstream)
    wrt = [(o, t) for o, t in zip(ours, theirs, strict=True) if t.requires_grad]
    grads = torch.autograd.grad(expected, [t for _, t in wrt], torch.tensor(upstream))
    for (o, _), want in zip(wrt, grads, strict=True):
        np.testing.assert_allclose(o.grad.array, want.numpy(), rtol=1e-12, atol=1e-12)


# where scatter writes one place twice, PyTorch's gradient (which this follows) gives every
# src element written grad at its place: the overwritten one's derivative is 0, not that
NOT_THE_DERIVATIVE = {"scatter_repeats_dim1"}


@pytest.mark.parametrize("name", sorted(COMPOSED.keys() - NOT_THE_DERIVATIVE))
def test_composed_selection_gradchecks_to_second_order(name):
    values, call, _ = COMPOSED[name]
    ours = _ours(values)
    assert mt.gradcheck(call, ours)
    assert mt.gradgradcheck(call, ours)


@pytest.mark.parametrize("name", sorted(COMPOSED))
def test_composed_selection_keeps_float32(name):
    values, call, _ = COMPOSED[name]
    ours = _ours(values, np.float32)
    out = call(*ours)
    assert out.dtype == np.float32
    out.backward(np.ones(out.shape, np.float32))
    assert all(x.grad.dtype == np.float32 for x in ours if x.requires_grad)


# index outputs, outside the graph


@pytest.mark.parametrize(
    "values",
    [
        [[0.0, 1.5, 0.0], [2.0, 0.0, 3.0]],
        [np.nan, 0.0, -1.0],
        [[True, False], [False, True]],
        np.zeros((0, 3)),
        np.arange(24).reshape(2, 3, 4) % 5,
        3.0,
        0.0,
    ],
)
def test_nonzero_and_argwhere_match_torch(torch, values):
    x, tx = mt.tensor(np.asarray(values)), torch.tensor(np.asarray(values))
    for ours, theirs in [
        (mt.nonzero(x), torch.nonzero(tx)),
        (x.argwhere(), tx.argwhere()),
        (x.nonzero(), tx.nonzero()),
    ]:
        assert ours.dtype == np.int64 and not ours.requires_grad
        assert ours.shape == tuple(theirs.shape)
        np.testing.assert_array_equal(ours.array, theirs.numpy())
    pieces, expected = x.nonzero(as_tuple=True), torch.nonzero(tx, as_tuple=True)
    assert len(pieces) == len(expected)
    for ours, theirs in zip(pieces, expected, strict=True):
        assert ours.dtype == np.int64
        np.testing.assert_array_equal(ours.array, theirs.numpy())


def test_nonzero_of_a_tensor_that_requires_grad_is_outside_the_graph():
    x = mt.tensor([0.0, 2.0, 0.5], requires_grad=True)
    assert x.nonzero().grad_fn is None
    np.testing.assert_array_equal(mt.nonzero(x, as_tuple=True)[0].array, [1, 2])


# scatter_reduce: ties, zeros, integers


def _scatter_reduce_both(torch, x, index, src, reduce, include_self, upstream):
    (a, ta), (b, tb) = _pair(x), _pair(src)
    out = a.scatter_reduce(0, mt.tensor(index), b, reduce, include_self=include_self)
    expected = ta.scatter_reduce(0, torch.tensor(index), tb, reduce, include_self=include_self)
    np.testing.assert_array_equal(out.array, expected.detach().numpy())
    out.backward(np.asarray(upstream, np.float64))
    theirs = torch.autograd.grad(expected, [ta, tb], torch.tensor(upstream, dtype=torch.float64))
    return (a.grad.array, b.grad.array), tuple(t.numpy() for t in theirs)


@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_amax_amin_split_the_gradient_evenly_among_ties_as_torch(torch, reduce):
    # element 0: x ties with a src value; element 1: two src values tie; element 2: x wins alone
    # (amax) or a src value does (amin); element 3: nothing reaches it
    x = [3.0, 5.0, 1.0 if reduce == "amax" else 9.0, 4.0]
    src = [3.0, 1.0 if reduce == "amax" else 7.0, 5.0, 5.0, 0.5 if reduce == "amax" else 2.0]
    index = np.array([0, 0, 1, 1, 2])
    ours, theirs = _scatter_reduce_both(torch, x, index, src, reduce, True, [1, 10, 100, 1000])
    for got, want in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-15)
    np.testing.assert_allclose(ours[0], [0.5, 10 / 3, 100.0 if reduce == "amax" else 0.0, 1000])


@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_amax_amin_without_self_do_not_count_the_left_out_value_among_ties(torch, reduce):
    # x[0] equals the result, but include_self=False leaves it out: src[0] alone makes the
    # result and gets the whole gradient. PyTorch counts x[0] among the ties and gives src[0]
    # half (a known PyTorch bug); elsewhere both agree
    x, src, index = [3.0, 5.0], [3.0, 1.0 if reduce == "amax" else 4.0], np.array([0, 0])
    ours, theirs = _scatter_reduce_both(torch, x, index, src, reduce, False, [1.0, 10.0])
    np.testing.assert_allclose(ours[0], [0.0, 10.0])
    np.testing.assert_allclose(ours[1], [1.0, 0.0])
    np.testing.assert_allclose(theirs[1], [0.5, 0.0])  # PyTorch's, for the record
    np.testing.assert_allclose(ours[0], theirs[0])


@pytest.mark.parametrize("include_self", [True, False])
def test_prod_gradient_with_zeros_matches_torch(torch, include_self):
    # element 0: x is 0; element 1: one src zero; element 2: two src zeros; element 3: none
    x = [0.0, 2.0, 3.0, 1.5]
    src = [4.0, 0.0, 5.0, 0.0, 0.0, 7.0, 6.0]
    index = np.array([0, 1, 1, 2, 2, 3, 3])
    ours, theirs = _scatter_reduce_both(torch, x, index, src, "prod", include_self, [1, 2, 3, 4])
    for got, want in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-15)


def test_prod_second_derivative_is_refused_where_two_zeros_meet_as_in_torch(torch):
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    src = mt.tensor([0.0, 0.0, 3.0], requires_grad=True)
    out = x.scatter_reduce(0, mt.tensor([0, 0, 1]), src, "prod")
    with pytest.raises(GraphError, match="two or more zeros"):
        mt.grad(out.sum(), [src], create_graph=True)
    (g,) = mt.grad(x.scatter_reduce(0, mt.tensor([0, 0, 1]), src, "prod").sum(), [src])
    np.testing.assert_array_equal(g.array, [0.0, 0.0, 2.0])  # first derivatives still fine


@pytest.mark.parametrize(
    "dtype, reduce, include_self",
    [
        (np.int64, "mean", True),  # PyTorch floors an integer mean: -3 / 2 is -2
        (np.int64, "mean", False),
        (np.int32, "sum", True),
        (np.int64, "amax", False),  # a reached element forgets x, even above every src value
        (np.int64, "amin", False),
        (np.int16, "prod", True),
        (np.uint8, "sum", True),  # wraps around, as in PyTorch
        (np.bool_, "sum", True),  # a logical or
        (np.bool_, "prod", False),  # a logical and
        (np.bool_, "amax", True),
    ],
)
def test_integer_and_bool_scatter_reduce_match_torch(torch, dtype, reduce, include_self):
    x = np.array([1, 0, 250, 7]).astype(dtype)
    src = np.array([1, 1, 2, 9, 200, 100]).astype(dtype)
    if dtype == np.int64:
        src = np.array([1, -3, 2, -5, 4, 6])
    index = np.array([0, 1, 0, 1, 2, 2])
    out = mt.tensor(x).scatter_reduce(
        0, mt.tensor(index), mt.tensor(src), reduce, include_self=include_self
    )
    expected = torch.tensor(x).scatter_reduce(
        0, torch.tensor(index), torch.tensor(src), reduce, include_self=include_self
    )
    assert out.dtype == expected.numpy().dtype
    np.testing.assert_array_equal(out.array, expected.numpy())


@pytest.mark.parametrize("dtype", [np.int64, np.bool_, np.float32])
def test_scatter_add_and_index_add_keep_the_dtype(torch, dtype):
    x, src = np.zeros((2, 3), dtype), np.ones((2, 3), dtype)
    index = np.array([[0, 0, 2], [1, 1, 1]])
    out = mt.scatter_add(mt.tensor(x), 1, mt.tensor(index), mt.tensor(src))
    expected = torch.scatter_add(torch.tensor(x), 1, torch.tensor(index), torch.tensor(src))
    assert out.dtype == expected.numpy().dtype
    np.testing.assert_array_equal(out.array, expected.numpy())
    added = mt.index_add(mt.tensor(x), 1, mt.tensor([2, 2]), mt.tensor(src[:, :2]), alpha=3)
    expected = torch.index_add(
        torch.tensor(x), 1, torch.tensor([2, 2]), torch.tensor(src[:, :2]), alpha=3
    )
    assert added.dtype == expected.numpy().dtype
    np.testing.assert_array_equal(added.array, expected.numpy())


def test_an_empty_index_scatters_nothing(torch):
    x, tx = _pair(X34)
    empty = np.zeros(0, np.int64)
    out = x.scatter(0, mt.tensor(empty), mt.tensor(np.ones((2, 4))))
    expected = tx.scatter(0, torch.tensor(empty), torch.ones(2, 4, dtype=torch.float64))
    np.testing.assert_array_equal(out.array, expected.detach().numpy())
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.array, np.ones((3, 4)))


# functions and methods by torch's keywords


def test_functions_take_torchs_keywords(torch):
    x, tx = _pair(X34)
    i, ti = mt.tensor(INDEX), torch.tensor(INDEX)
    s, ts = _pair(RNG.standard_normal((2, 4)))
    pairs = [
        (
            mt.scatter(input=x, dim=0, index=i, src=s),
            torch.scatter(input=tx, dim=0, index=ti, src=ts),
        ),
        (
            mt.scatter_add(input=x, dim=0, index=i, src=s),
            torch.scatter_add(input=tx, dim=0, index=ti, src=ts),
        ),
        (
            mt.scatter_reduce(input=x, dim=0, index=i, src=s, reduce="mean", include_self=False),
            torch.scatter_reduce(
                input=tx, dim=0, index=ti, src=ts, reduce="mean", include_self=False
            ),
        ),
        (
            mt.index_add(input=x, dim=0, index=mt.tensor([2, 0]), source=s, alpha=2),
            torch.index_add(input=tx, dim=0, index=torch.tensor([2, 0]), source=ts, alpha=2),
        ),
        (
            mt.index_select(input=x, dim=1, index=mt.tensor([1])),
            torch.index_select(input=tx, dim=1, index=torch.tensor([1])),
        ),
        (
            mt.take_along_dim(input=x, indices=i, dim=0),
            torch.take_along_dim(input=tx, indices=ti, dim=0),
        ),
        (
            mt.masked_select(input=x, mask=mt.tensor(MASK)),
            torch.masked_select(input=tx, mask=torch.tensor(MASK)),
        ),
        (
            mt.masked_scatter(input=x, mask=mt.tensor(MASK), source=s.reshape(-1)),
            torch.masked_scatter(input=tx, mask=torch.tensor(MASK), source=ts.reshape(-1)),
        ),
    ]
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours.array, theirs.detach().numpy(), rtol=1e-12)


# in-place forms

IN_PLACE = {
    "scatter_": lambda x, lib: x.scatter_(0, lib.tensor(INDEX), lib.tensor(X34[:2] * 2)),
    "scatter_value": lambda x, lib: x.scatter_(1, lib.tensor(INDEX), value=4.0),
    "scatter_add_": lambda x, lib: x.scatter_add_(0, lib.tensor(INDEX), lib.tensor(X34[1:])),
    "scatter_reduce_": lambda x, lib: x.scatter_reduce_(
        0, lib.tensor(INDEX), lib.tensor(X34[1:] + 0.1), "amax", include_self=False
    ),
    "index_add_": lambda x, lib: x.index_add_(
        1, lib.tensor([3, 3]), lib.tensor(X34[:, :2]), alpha=0.5
    ),
    "masked_scatter_": lambda x, lib: x.masked_scatter_(lib.tensor(MASK), lib.tensor(X34 * 3)),
}


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_in_place_forms_match_torch(torch, name):
    x, tx = mt.tensor(X34), torch.tensor(X34)
    version = x._version
    assert IN_PLACE[name](x, mt) is x
    IN_PLACE[name](tx, torch)
    np.testing.assert_array_equal(x.array, tx.numpy())
    assert x._version == version + 1


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_in_place_forms_in_the_graph_pass_gradients_as_torch(torch, name):
    leaf, tleaf = _pair(X34)
    x, tx = leaf * 1.0, tleaf * 1.0
    IN_PLACE[name](x, mt)
    IN_PLACE[name](tx, torch)
    upstream = RNG.standard_normal(x.shape)
    (x * x).backward(upstream)
    (tx * tx).backward(torch.tensor(upstream))
    np.testing.assert_allclose(leaf.grad.array, tleaf.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_in_place_forms_refuse_a_leaf_that_requires_grad(torch, name):
    x, tx = _pair(X34)
    with pytest.raises(RuntimeError):
        IN_PLACE[name](tx, torch)
    with pytest.raises(GraphError, match=name.replace("scatter_value", "scatter_")):
        IN_PLACE[name](x, mt)
    with mt.no_grad():
        IN_PLACE[name](x, mt)
    with torch.no_grad():
        IN_PLACE[name](tx, torch)
    np.testing.assert_array_equal(x.array, tx.detach().numpy())


def test_in_place_scatter_into_a_src_that_requires_grad_passes_it_its_gradient(torch):
    src, tsrc = _pair(X34[:2] * 2)
    x, tx = mt.tensor(X34), torch.tensor(X34)
    x.scatter_(0, mt.tensor(INDEX), src)
    tx.scatter_(0, torch.tensor(INDEX), tsrc)
    assert x.requires_grad
    x.sum().backward()
    tx.sum().backward()
    np.testing.assert_array_equal(src.grad.array, tsrc.grad.numpy())


def test_in_place_errors_leave_the_tensor_as_it_was():
    x = mt.tensor(X34.copy())
    with pytest.raises(IndexOutOfRangeError):
        x.scatter_(0, mt.tensor(INDEX + 1), mt.tensor(X34))
    with pytest.raises(DTypeError):
        x.index_add_(0, mt.tensor([0]), mt.tensor(X34[:1].astype(np.float32)))
    with pytest.raises(ShapeError):
        x.masked_scatter_(mt.tensor(MASK), mt.tensor(np.ones(3)))
    with pytest.raises(ShapeError):  # the mask would broadcast x to a larger shape
        mt.tensor(np.zeros(4)).masked_scatter_(mt.tensor(MASK), mt.tensor(np.ones(12)))
    np.testing.assert_array_equal(x.array, X34)
    assert x._version == 0


# errors: out of range, naming the op, the dim, the index and the size

OUT_OF_RANGE = {
    "index_select": (lambda x, i: x.index_select(1, i), 1),
    "index_add": (lambda x, i: x.index_add(1, i, x[:, :1]), 1),
    "take_along_dim": (lambda x, i: x.take_along_dim(i.reshape(3, 1), 1), 1),
    "scatter": (lambda x, i: x.scatter(1, i.reshape(1, 1), x[:1, :1]), 1),
    "scatter_add": (lambda x, i: x.scatter_add(1, i.reshape(1, 1), x[:1, :1]), 1),
    "scatter_reduce": (lambda x, i: x.scatter_reduce(1, i.reshape(1, 1), x[:1, :1], "sum"), 1),
}


def _index_for(name, lib, value):
    if name == "take_along_dim":
        return lib.tensor([value, 0, 1])
    return lib.tensor([value])


@pytest.mark.parametrize("value", [4, 7, -1])
@pytest.mark.parametrize("name", sorted(OUT_OF_RANGE))
def test_an_index_out_of_range_is_an_index_out_of_range_error_naming_it(torch, name, value):
    call, dim = OUT_OF_RANGE[name]
    if name != "take_along_dim":  # (PyTorch reads memory outside x along a dim)
        with pytest.raises((IndexError, RuntimeError)):
            call(torch.tensor(X34), _index_for(name, torch, value))
    with pytest.raises(IndexOutOfRangeError) as raised:
        call(mt.tensor(X34), _index_for(name, mt, value))
    assert isinstance(raised.value, MinitrainError) and isinstance(raised.value, IndexError)
    message = str(raised.value)
    assert message.startswith(f"{name}: index {value} is out of range for dim {dim} of size 4")


def test_take_along_dim_without_dim_counts_the_flattened_size(torch):
    with pytest.raises(RuntimeError, match="out of bounds"):
        torch.take_along_dim(torch.tensor(X34), torch.tensor([12]))
    with pytest.raises(IndexOutOfRangeError, match="index 12 is out of range for dim 0 of size 12"):
        mt.take_along_dim(mt.tensor(X34), mt.tensor([12]))


# errors: dtypes and shapes, as PyTorch refuses them

ERRORS = {
    "scatter_src_dtype": (
        lambda lib, x: x.scatter(0, lib.tensor(INDEX), lib.tensor(X34[:2].astype(np.float32))),
        DTypeError,
        "scatter: src has dtype float32, but input has float64",
    ),
    "scatter_add_src_dtype": (
        lambda lib, x: x.scatter_add(0, lib.tensor(INDEX), lib.tensor(INDEX)),
        DTypeError,
        "scatter_add: src has dtype int64",
    ),
    "scatter_reduce_src_dtype": (
        lambda lib, x: x.scatter_reduce(
            0, lib.tensor(INDEX), lib.tensor(X34[:2].astype(np.float32)), "sum"
        ),
        DTypeError,
        "scatter_reduce: src has dtype float32",
    ),
    "index_add_source_dtype": (
        lambda lib, x: x.index_add(0, lib.tensor([0]), lib.tensor(X34[:1].astype(np.float32))),
        DTypeError,
        "index_add: source has dtype float32",
    ),
    "masked_scatter_source_dtype": (
        lambda lib, x: x.masked_scatter(lib.tensor(MASK), lib.tensor(X34.astype(np.float32))),
        DTypeError,
        "masked_scatter: source has dtype float32",
    ),
    "scatter_index_float": (
        lambda lib, x: x.scatter(0, lib.tensor(INDEX.astype(np.float32)), 1.0),
        DTypeError,
        "scatter: index must be an int64 or int32 tensor, got dtype float32",
    ),
    "index_select_index_int16": (
        lambda lib, x: x.index_select(0, lib.tensor(np.array([0], np.int16))),
        DTypeError,
        "index_select: index must be an int64 or int32 tensor, got dtype int16",
    ),
    "take_along_dim_indices_int32": (
        lambda lib, x: x.take_along_dim(lib.tensor(INDEX.astype(np.int32)), 0),
        DTypeError,
        "take_along_dim: indices must be an int64 tensor, got dtype int32",
    ),
    "masked_select_mask_uint8": (
        lambda lib, x: x.masked_select(lib.tensor(MASK.astype(np.uint8))),
        DTypeError,
        "masked_select: mask must be boolean, got dtype uint8",
    ),
    "masked_scatter_mask_int": (
        lambda lib, x: x.masked_scatter(lib.tensor(MASK.astype(np.int32)), lib.tensor(X34)),
        DTypeError,
        "masked_scatter: mask must be boolean",
    ),
    "masked_select_shapes": (
        lambda lib, x: x.masked_select(lib.tensor([True, False])),
        ShapeError,
        "masked_select: mask of shape (2,) does not broadcast with input of shape (3, 4)",
    ),
    "masked_scatter_too_few": (
        lambda lib, x: x.masked_scatter(lib.tensor(MASK), lib.tensor(X34[0])),
        ShapeError,
        "masked_scatter: source has 4 elements, fewer than the 7 places",
    ),
    "scatter_index_larger_than_src": (
        lambda lib, x: x.scatter(0, lib.tensor(INDEX), lib.tensor(X34[:1])),
        ShapeError,
        "scatter: index (2, 4) must be no larger than src (1, 4)",
    ),
    "scatter_index_wider_than_input": (
        lambda lib, x: x.scatter(0, lib.tensor(np.zeros((1, 5), np.int64)), 1.0),
        ShapeError,
        "scatter: index (1, 5) must be no larger than src None in any dim, nor than input",
    ),
    "scatter_index_dims": (
        lambda lib, x: x.scatter_add(0, lib.tensor(INDEX[0]), lib.tensor(X34)),
        ShapeError,
        "scatter_add: index and src must have as many dims as input",
    ),
    "index_select_index_2d": (
        lambda lib, x: x.index_select(0, lib.tensor([[0]])),
        (ShapeError, IndexError),
        "index_select: index must be 1-d (or 0-d), got shape (1, 1)",
    ),
    "index_add_source_shape": (
        lambda lib, x: x.index_add(1, lib.tensor([0, 0, 3]), lib.tensor(X34[:2, :3])),
        ShapeError,
        "index_add: source must have input's shape (3, 4) but 3 (the number of indices) along "
        "dim 1, that is (3, 3); got (2, 3)",
    ),
    "take_along_dim_dims": (
        lambda lib, x: x.take_along_dim(lib.tensor([0, 1]), 1),
        ShapeError,
        "take_along_dim: input and indices must have the same number of dims",
    ),
    "scatter_reduce_unknown": (
        lambda lib, x: x.scatter_reduce(0, lib.tensor(INDEX), x[:2], "median"),
        (ArgumentError, RuntimeError),
        "scatter_reduce: reduce must be one of 'sum', 'prod', 'mean', 'amax', 'amin', got 'median'",
    ),
    "scatter_add_number": (
        lambda lib, x: x.scatter_add(0, lib.tensor(INDEX), 2.0),
        DTypeError,
        "scatter_add: src must be a tensor, got float",
    ),
    "scatter_dim": (
        lambda lib, x: x.scatter(2, lib.tensor(INDEX), 1.0),
        DimensionError,
        "scatter",
    ),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_arguments_are_refused_as_torch_refuses_them(torch, name):
    call, error, message = ERRORS[name]
    with warnings.catch_warnings(), pytest.raises((RuntimeError, TypeError, IndexError)):
        warnings.simplefilter("ignore")
        call(torch, torch.tensor(X34))
    with pytest.raises(error) as raised:
        call(mt, mt.tensor(X34))
    assert isinstance(raised.value, MinitrainError)
    assert str(raised.value).startswith(message), str(raised.value)


def test_scatter_reduce_mean_refuses_bool_as_torch(torch):
    args = (0, np.array([0, 1]), np.array([False, True]))
    with pytest.raises(NotImplementedError):
        torch.tensor([True, False]).scatter_reduce(
            args[0], torch.tensor(args[1]), torch.tensor(args[2]), "mean"
        )
    with pytest.raises(DTypeError, match="mean"):
        mt.tensor([True, False]).scatter_reduce(
            args[0], mt.tensor(args[1]), mt.tensor(args[2]), "mean"
        )


def test_scatter_takes_src_or_value_and_index_add_a_whole_alpha_for_integers():
    x = mt.tensor(X34)
    with pytest.raises(ArgumentError, match="src or value, not both"):
        x.scatter(0, mt.tensor(INDEX), x[:2], value=1.0)
    with pytest.raises(ArgumentError, match="needs src"):
        x.scatter(0, mt.tensor(INDEX))
    with pytest.raises(ArgumentError, match="'add' or 'multiply'"):
        x.scatter(0, mt.tensor(INDEX), x[:2], reduce="sum")
    with pytest.raises(DTypeError, match="whole number"):
        integers = mt.zeros(2, dtype=np.int64)
        integers.index_add(0, mt.tensor([0]), mt.ones(1, dtype=np.int64), alpha=0.5)


def test_index_add_out_of_range_raises_as_numpy_instead_of_wrapping():
    """The CPU's bincount path takes negative indices from the end, as numpy does, and refuses
    out-of-range ones, as np.add.at does (its flat positions would otherwise wrap around)."""
    from minitrain import backend

    target = np.zeros((3, 4))
    rows, columns = np.array([0, 2]), np.array([1, 4])
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 1 with size 4"):
        backend.scatter_add(np, target, (rows, columns), np.ones(2))
    assert not target.any()
    backend.scatter_add(np, target, (np.array([-1, -1]), np.array([-4, 0])), np.ones(2))
    expected = np.zeros((3, 4))
    np.add.at(expected, (np.array([-1, -1]), np.array([-4, 0])), 1.0)
    np.testing.assert_array_equal(target, expected)


def test_scatter_add_into_rows_sums_as_add_at():
    # backend.scatter_add with integer arrays in the leading dims only (an embedding's
    # gradient) sums each row's values once sorted, not by np.add.at: the same sums
    rng = np.random.default_rng(3)
    for _ in range(300):
        shape = tuple(int(s) for s in rng.integers(1, 6, rng.integers(2, 4)))
        indexed = int(rng.integers(1, len(shape)))
        index_shape = tuple(int(s) for s in rng.integers(0, 4, rng.integers(1, 3)))
        index = tuple(rng.integers(-shape[d], shape[d], index_shape) for d in range(indexed))
        dtype = rng.choice([np.float32, np.float64])
        target = rng.standard_normal(shape).astype(dtype)
        if rng.random() < 0.3:  # a table whose rows are not a copy-free reshape
            target = np.asfortranarray(target)
        values = rng.standard_normal(index_shape + shape[indexed:]).astype(dtype)
        expected, got = target.copy(), target.copy(order="K")
        np.add.at(expected, index, values)
        backend.scatter_add(np, got, index, values)
        tolerance = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)


def test_scatter_add_into_rows_refuses_an_index_out_of_range_as_numpy():
    table = np.zeros((3, 4))
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 3"):
        backend.scatter_add(np, table, (np.array([0, 5]),), np.ones((2, 4)))
    assert not table.any()  # nothing added before the refusal
