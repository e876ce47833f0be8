"""PyTorch's spellings where ported code reaches for them: cat / stack's dim, dtype= on the
reductions' methods, the operators by name (alpha, rounding_mode), contiguous, empty, meshgrid,
a tuple inside an index, flip(()), and the refusals and nans PyTorch gives."""

from __future__ import annotations

import numpy as np
import pytest
from reference import torch

import minitrain as mt
from minitrain.errors import ArgumentError, DTypeError


def _pair(shape=(2, 3), seed=0, dtype=np.float64):
    values = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return mt.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)


@pytest.mark.parametrize("name", ["cat", "concat", "stack"])
@pytest.mark.parametrize("keywords", [{"dim": 1}, {"dim": -1}, {"axis": 0}, {}])
def test_cat_and_stack_take_dim_and_axis(name, keywords):
    (a, ta), (b, tb) = _pair(seed=1), _pair(seed=2)
    ours = getattr(mt, name)([a, b], **keywords)
    theirs = getattr(torch, name)([ta, tb], **keywords)
    np.testing.assert_array_equal(ours.numpy(), theirs.detach().numpy())


def test_cat_refuses_dim_and_axis_together():
    a, _ = _pair()
    with pytest.raises(ArgumentError, match="concat: give dim or axis, not both"):
        mt.cat([a, a], dim=1, axis=0)


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "cumsum"])
def test_reduction_methods_take_dtype(name):
    x = mt.tensor(np.array([[1.5, 2.0], [3.0, -1.0]], dtype=np.float32), requires_grad=True)
    tx = torch.tensor(x.numpy(), requires_grad=True)
    ours = getattr(x, name)(1, dtype=np.float64)
    theirs = getattr(tx, name)(1, dtype=torch.float64)
    assert ours.dtype == np.float64
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12)
    ours.sum().backward()
    theirs.sum().backward()
    assert x.grad.dtype == np.float32  # the gradient comes back through the cast
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


def test_softmax_methods_take_dtype():
    x = mt.tensor(np.array([[1.0, 2.0, 3.0]], dtype=np.float32))
    assert x.softmax(1, dtype=np.float64).dtype == np.float64
    assert x.log_softmax(-1, np.float64).dtype == np.float64


@pytest.mark.parametrize(
    "name, args, keywords",
    [
        ("add", (), {"alpha": 2}),
        ("add", (), {}),
        ("sub", (), {"alpha": -0.5}),
        ("subtract", (), {}),
        ("mul", (), {}),
        ("multiply", (), {}),
        ("div", (), {}),
        ("divide", (), {}),
        ("true_divide", (), {}),
    ],
)
def test_arithmetic_by_name_matches_torch(name, args, keywords):
    (a, ta), (b, tb) = _pair(seed=3), _pair(seed=4)
    for ours, theirs in (
        (getattr(a, name)(b, *args, **keywords), getattr(ta, name)(tb, *args, **keywords)),
        (getattr(mt, name)(a, b, **keywords), getattr(torch, name)(ta, tb, **keywords)),
    ):
        np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12)
        ours.sum().backward()
        theirs.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("mode", ["floor", "trunc"])
@pytest.mark.parametrize(
    "a, b",
    [
        ([7, -7, 6, -1], [2, 2, -4, 3]),
        ([5.5, -3.2, 1.0, -0.0], [2.0, 2.0, 0.0, 3.0]),
        ([7, -7], 2),
        ([7.5, -7.5], 2),
    ],
)
def test_div_rounding_mode_matches_torch(mode, a, b):
    ours = mt.div(mt.tensor(a), mt.tensor(b) if isinstance(b, list) else b, rounding_mode=mode)
    theirs = torch.div(
        torch.tensor(a), torch.tensor(b) if isinstance(b, list) else b, rounding_mode=mode
    )
    assert ours.dtype == theirs.numpy().dtype
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_div_rounding_mode_has_zero_gradient_and_refuses_bad_input():
    (a, ta), (b, tb) = _pair(seed=5), _pair(seed=6)
    a.div(b, rounding_mode="floor").sum().backward()
    torch.div(ta, tb, rounding_mode="floor").sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), ta.grad.numpy())
    assert not a.grad.numpy().any() and not b.grad.numpy().any()
    with pytest.raises(ArgumentError, match="rounding_mode must be None, 'trunc' or 'floor'"):
        a.div(b, rounding_mode="round")
    with pytest.raises(ArgumentError, match="integer division by zero"):
        mt.div(mt.tensor([1, 2]), mt.tensor([1, 0]), rounding_mode="floor")


def test_alpha_scales_a_number_as_a_number():
    # float64 0.1 * 3, not a float32 0-d tensor's
    x = mt.zeros(1, dtype=np.float64)
    assert (
        mt.add(x, 0.1, alpha=3).item()
        == torch.add(torch.zeros(1, dtype=torch.float64), 0.1, alpha=3).item()
    )
    assert mt.sub(x, 1e-9, alpha=1000).item() == -1e-9 * 1000


def test_alpha_must_be_an_integer_for_integer_inputs():
    with pytest.raises(DTypeError, match="add: alpha must be an integer for integer inputs"):
        mt.add(mt.tensor([1, 2]), mt.tensor([3, 4]), alpha=0.5)
    with pytest.raises(RuntimeError, match="alpha"):
        torch.add(torch.tensor([1, 2]), torch.tensor([3, 4]), alpha=0.5)
    np.testing.assert_array_equal(mt.add(mt.tensor([1, 2]), mt.tensor([3, 4]), alpha=3), [10, 14])


def test_neg_and_negative():
    a, ta = _pair()
    np.testing.assert_array_equal(a.neg().numpy(), ta.neg().detach().numpy())
    np.testing.assert_array_equal(mt.negative(a).numpy(), torch.negative(ta).detach().numpy())


def test_contiguous_copies_only_what_is_not_c_ordered():
    a, _ = _pair((3, 4))
    assert a.contiguous() is a
    transposed = a.T
    assert not transposed.array.flags.c_contiguous
    copy = transposed.contiguous()
    assert copy.array.flags.c_contiguous and copy.grad_fn is not None
    np.testing.assert_array_equal(copy.numpy(), a.numpy().T)
    copy.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.ones((3, 4)))


def test_empty_has_the_shape_dtype_and_device_asked_for():
    x = mt.empty(2, 3, dtype=np.float64, requires_grad=True)
    assert x.shape == (2, 3) and x.dtype == np.float64 and x.requires_grad
    assert mt.empty((4,)).shape == (4,) and mt.empty(0).shape == (0,)
    like = mt.empty_like(mt.zeros(3, 2, dtype=np.int64))
    assert like.shape == (3, 2) and like.dtype == np.int64


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_matches_torch(indexing):
    (a, ta), (b, tb), (c, tc) = _pair((3,), 7), _pair((2,), 8), _pair((4,), 9)
    ours = mt.meshgrid(a, b, c, indexing=indexing)
    theirs = torch.meshgrid(ta, tb, tc, indexing=indexing)
    weights = [np.random.default_rng(i).standard_normal(t.shape) for i, t in enumerate(theirs)]
    for o, t in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(o.numpy(), t.detach().numpy())
    sum((o * mt.tensor(w)).sum() for o, w in zip(ours, weights, strict=True)).backward()
    sum((t * torch.tensor(w)).sum() for t, w in zip(theirs, weights, strict=True)).backward()
    for x, tx in ((a, ta), (b, tb), (c, tc)):
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    assert [o.shape for o in mt.meshgrid([a, b])] == [(3, 2), (3, 2)]  # one list, as torch


def test_meshgrid_refuses_what_torch_refuses():
    with pytest.raises(ArgumentError, match="meshgrid: indexing must be 'ij' or 'xy'"):
        mt.meshgrid(mt.arange(2), indexing="ji")
    with pytest.raises(ValueError, match=r"meshgrid: expects 0-d or 1-D tensors, got shapes"):
        mt.meshgrid(mt.zeros(2, 2))


def test_a_tuple_inside_an_index_reads_as_a_list():
    x, tx = mt.arange(12).reshape(3, 4), torch.arange(12).reshape(3, 4)
    for index in (((1, 0, -1), slice(None)), (slice(None), (0, 2)), ((2, 0), (1, 3))):
        np.testing.assert_array_equal(x[index].numpy(), tx[index].numpy())
    # the top-level tuple is still the tuple of dims: x[(1, 2)] is x[1, 2]
    np.testing.assert_array_equal(x[(1, 2)].numpy(), tx[(1, 2)].numpy())


def test_flip_of_no_dims_is_a_copy():
    x = mt.arange(6).reshape(2, 3)
    for flipped in (mt.flip(x, ()), x.flip(()), x.flip(dims=())):
        np.testing.assert_array_equal(flipped.numpy(), x.numpy())
        assert not np.shares_memory(flipped.numpy(), x.numpy())
    with pytest.raises(ArgumentError, match=r"flip: needs the dims to reverse \(\(\) for none\)"):
        x.flip()


def test_refusals_as_torch():
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        torch.clip(torch.zeros(2), None, None)
    with pytest.raises(ArgumentError, match="clip: at least one of min and max"):
        mt.clip(mt.zeros(2), None, None)
    with pytest.raises(NotImplementedError):
        torch.linspace(0, 1, 5, dtype=torch.bool)
    with pytest.raises(DTypeError, match="linspace: dtype bool is not supported"):
        mt.linspace(0, 1, 5, dtype=bool)
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        torch.tensor([1, 2]) ** -1
    with pytest.raises(ArgumentError, match="pow: integers to negative integer powers"):
        mt.tensor([1, 2]) ** -1
    # a tensor of exponents holding negatives: PyTorch's integer power, 0 but for 1 and -1
    bases, powers = [2, 1, -1, 0, -2, -1], [-1, -3, -3, -1, -2, 1]
    np.testing.assert_array_equal(
        (mt.tensor(bases) ** mt.tensor(powers)).numpy(),
        (torch.tensor(bases) ** torch.tensor(powers)).numpy(),
    )
    np.testing.assert_array_equal((mt.tensor([2, 3]) ** 2).numpy(), [4, 9])
    np.testing.assert_allclose((mt.tensor([2.0, 4.0]) ** -1).numpy(), [0.5, 0.25])
