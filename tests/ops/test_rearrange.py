"""The rearranging ops (roll, unfold, diagonal, diag, diag_embed, unflatten, repeat_interleave,
movedim, narrow, swapaxes, rot90) and einsum: the composed functions' samples through the
registry's checks, agreement with PyTorch beyond the samples, and the errors."""

from __future__ import annotations

import numpy as np
import op_samples  # noqa: F401 (first: it imports the sample files, this one's among them)
import pytest
from samples.shapes.rearrange import COMPOSED

import minitrain as mt
from minitrain import ops
from minitrain.errors import (
    ArgumentError,
    DimensionError,
    DTypeError,
    IndexOutOfRangeError,
    ShapeError,
)


def test_every_rearranging_function_has_samples():
    composed = set(ops.shapes.rearrange.__all__)
    assert composed == set(COMPOSED), sorted(composed ^ set(COMPOSED))


# (The registry's checks run on samples/shapes/rearrange.py's COMPOSED too: tests/ops/test_ops.py
# and test_second_order.py.)


# PyTorch agreement beyond the samples
EQUATIONS = [
    ("Ba,aB", [(2, 3), (3, 2)]),
    ("ba", [(2, 3)]),
    ("aB", [(2, 3)]),
    ("i...", [(2, 3, 4)]),
    ("...,...", [(3,), (2, 1)]),
    ("i...,i...->...", [(3,), (3, 2)]),
    ("ij->j...", [(3, 2)]),
    ("...ij->...", [(3, 2)]),
    ("i...j,j...k", [(2, 5, 3), (3, 1, 4)]),
    ("i j , j k -> k i", [(2, 3), (3, 4)]),
    ("ii,i->i", [(3, 3), (3,)]),
    ("i,ij,ij->j", [(3,), (3, 2), (1, 2)]),
    ("iii->i", [(2, 2, 2)]),
    ("ii->i", [(0, 0)]),
    ("ij,jk->ik", [(2, 0), (0, 3)]),
    ("", [()]),
    (",->", [(), ()]),
    ("ab,cd,bc,da->", [(2, 3), (4, 5), (3, 4), (5, 2)]),
    ("abc,cd,ab->bd", [(2, 3, 4), (4, 5), (1, 3)]),
]


@pytest.mark.parametrize("equation, shapes", EQUATIONS, ids=[e for e, _ in EQUATIONS])
def test_einsum_matches_torch(torch, equation, shapes):
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(shape) for shape in shapes]
    ours_in = [mt.tensor(v, requires_grad=True) for v in values]
    theirs_in = [torch.tensor(v, requires_grad=True) for v in values]
    ours, theirs = mt.einsum(equation, *ours_in), torch.einsum(equation, *theirs_in)
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_allclose(ours.array, theirs.detach().numpy(), rtol=1e-12, atol=1e-12)
    upstream = rng.standard_normal(ours.shape)
    ours.backward(upstream)
    theirs.backward(torch.from_numpy(upstream))
    for x, t in zip(ours_in, theirs_in, strict=True):
        np.testing.assert_allclose(x.grad.array, t.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_einsum_in_float32_at_the_benchmark_shape(torch):
    rng = np.random.default_rng(1)
    q, k = (rng.standard_normal((8, 4, 64, 32), dtype=np.float32) for _ in range(2))
    ours = mt.einsum("bhqd,bhkd->bhqk", mt.tensor(q), mt.tensor(k))
    theirs = torch.einsum("bhqd,bhkd->bhqk", torch.from_numpy(q), torch.from_numpy(k))
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours.array, theirs.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "equation, dtype",
    [("i,i->", np.int32), ("ij->j", np.int32), ("ij->ji", np.int32), ("ii->i", np.int32),
     ("ij,j->i", np.int64), ("i,i->", np.uint8), ("ij->", np.bool_), ("ij->ji", np.bool_)],
)  # fmt: skip
def test_einsum_integer_dtypes_are_torchs(torch, equation, dtype):
    # a sum of one operand is int64 (torch.sum's rule); products of two keep their dtype
    values = (np.arange(9).reshape(3, 3) % 4).astype(dtype)
    terms = equation.split("->")[0].split(",")
    operands = [values[0] if len(term) == 1 else values for term in terms]
    ours = mt.einsum(equation, *map(mt.tensor, operands))
    theirs = torch.einsum(equation, *map(torch.from_numpy, operands))
    assert ours.dtype == theirs.numpy().dtype
    np.testing.assert_array_equal(ours.array, theirs.numpy())


def test_einsum_output_owns_its_memory():
    x = mt.tensor(np.arange(6.0).reshape(2, 3))
    for equation in ("ij->ji", "ij->ij", "ii->i"):
        operand = x if equation != "ii->i" else x[:, :2]
        out = mt.einsum(equation, operand)
        out.array[...] = -1.0
        assert (x.array >= 0).all(), equation


def test_einsum_gradient_of_a_repeated_operand_sums_both_uses():
    x = mt.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    (g,) = mt.grad(mt.einsum("i,i->", x, x), x)
    np.testing.assert_allclose(g.array, 2 * x.array)


def test_einsum_second_derivative_of_a_quadratic_form(torch):
    rng = np.random.default_rng(2)
    a, v = rng.standard_normal((3, 3)), rng.standard_normal(3)
    x = mt.tensor(v, requires_grad=True)
    (g,) = mt.grad(mt.einsum("i,ij,j->", x, mt.tensor(a), x), x, create_graph=True)
    (h,) = mt.grad(mt.einsum("i,i->", g, mt.tensor(np.ones(3))), x)
    np.testing.assert_allclose(g.array, (a + a.T) @ v)
    np.testing.assert_allclose(h.array, (a + a.T) @ np.ones(3))


def test_roll_unfold_diagonal_and_narrow_of_integers(torch):
    values = np.arange(24).reshape(2, 3, 4)
    x, t = mt.tensor(values), torch.from_numpy(values)
    pairs = [
        (x.roll(1), t.roll(1)),
        (x.unfold(2, 2, 1), t.unfold(2, 2, 1)),
        (x.diagonal(0, 1, 2), t.diagonal(0, 1, 2)),
        (x.narrow(1, 1, 2), t.narrow(1, 1, 2)),
        (x.repeat_interleave(2, dim=0), t.repeat_interleave(2, dim=0)),
        (x.diag_embed(), t.diag_embed()),
        (x.rot90(), t.rot90()),
    ]
    for ours, theirs in pairs:
        assert ours.dtype == theirs.numpy().dtype
        np.testing.assert_array_equal(ours.array, theirs.numpy())


def test_repeat_interleave_of_counts_alone_gives_indices(torch):
    counts = np.array([1, 0, 3, 2])
    ours = mt.repeat_interleave(mt.tensor(counts))
    theirs = torch.repeat_interleave(torch.from_numpy(counts))
    assert ours.dtype == np.int64
    np.testing.assert_array_equal(ours.array, theirs.numpy())


def test_repeat_interleave_output_size_and_counts_gradient():
    x = mt.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    out = x.repeat_interleave(mt.tensor([2, 0, 3]), output_size=5)
    np.testing.assert_array_equal(out.array, [1, 1, 3, 3, 3])
    out.backward(np.arange(5.0))
    np.testing.assert_array_equal(x.grad.array, [0 + 1, 0, 2 + 3 + 4])


def test_narrow_is_a_view_and_takes_a_tensor_start():
    x = mt.tensor(np.arange(6.0).reshape(2, 3))
    view = x.narrow(1, mt.tensor(1), 2)
    np.testing.assert_array_equal(view.array, [[1, 2], [4, 5]])
    x.array[0, 1] = 10.0
    assert view.array[0, 0] == 10.0


def test_methods_and_functions_reach_the_ops():
    x = mt.tensor(np.arange(24.0).reshape(2, 3, 4))
    assert mt.moveaxis(x, 0, -1).shape == x.movedim(0, -1).shape == (3, 4, 2)
    assert mt.swapdims(x, 0, 1).shape == x.swapaxes(0, 1).shape == (3, 2, 4)
    assert mt.unflatten(x, 2, (2, 2)).shape == (2, 3, 2, 2)
    assert mt.diag(x[0]).shape == (3,) and x[0, 0].diag().shape == (4, 4)
    assert mt.einsum("ijk->k", x).shape == (4,)


# Errors: a minitrain error naming the op, the argument and what it got
ERRORS = [
    (lambda x: x.roll((1, 2)), ArgumentError, "roll: with dims=None"),
    (lambda x: x.roll((1, 2), (0,)), ArgumentError, r"roll: needs one shift per dim"),
    (lambda x: x.roll(1.5, 0), DTypeError, "roll: shifts must be an int"),
    (lambda x: x.roll(1, 3), DimensionError, "out of range"),
    (lambda x: x.unfold(2, 5, 1), ShapeError, r"unfold: size 5 is larger than dim 2"),
    (lambda x: x.unfold(2, 2, 0), ArgumentError, "unfold: step must be positive, got 0"),
    (lambda x: x.unfold(2, -1, 1), ArgumentError, "unfold: size must be non-negative"),
    (lambda x: x.diagonal(0, 1, -2), ArgumentError, "diagonal: dim1 and dim2 name the same"),
    (lambda x: x[0, 0].diagonal(), ShapeError, r"diagonal: needs a tensor of at least 2 dims"),
    (lambda x: x.diagonal(1.0), DTypeError, "diagonal: offset must be an int"),
    (lambda x: x.diag(), ShapeError, r"diag: takes a 1-D or 2-D tensor, got shape \(2, 3, 4\)"),
    (lambda x: x.diag_embed(0, 0, 0), ArgumentError, "diag_embed: dim1 and dim2 name the same"),
    (lambda x: x.unflatten(2, (3, -1)), ShapeError, r"unflatten: sizes \(3, -1\) do not"),
    (lambda x: x.unflatten(2, (-1, -1)), ArgumentError, "unflatten: sizes"),
    (lambda x: x.unflatten(2, ()), ArgumentError, "unflatten: sizes must not be empty"),
    (
        lambda x: x.repeat_interleave(mt.tensor([1, 2]), 1),
        ShapeError,
        "repeat_interleave: repeats has 2 counts, but the dim repeated has 3",
    ),
    (lambda x: x.repeat_interleave(-1, 1), ArgumentError, "must be non-negative, got -1"),
    (
        lambda x: x.repeat_interleave(mt.tensor([1.0, 2.0, 3.0]), 1),
        DTypeError,
        "repeat_interleave: repeats must be integers, got dtype float32",
    ),
    (
        lambda x: x.repeat_interleave(mt.tensor([[1, 0, 2]]), 1),
        ShapeError,
        r"repeats must be an int, 0-d or 1-D, got shape \(1, 3\)",
    ),
    (
        lambda x: x.repeat_interleave(2, 1, output_size=5),
        ArgumentError,
        "output_size is 5, but the repeats make 6",
    ),
    (lambda x: x.movedim((0, 0), (2, 1)), ArgumentError, r"movedim: source \(0, 0\) repeats"),
    (lambda x: x.movedim((0, 1), (2,)), ArgumentError, "movedim: source .* must name as many"),
    (lambda x: x.movedim(3, 0), DimensionError, "out of range"),
    (lambda x: x.narrow(1, -4, 2), IndexOutOfRangeError, "narrow: start -4 is out of range"),
    (lambda x: x.narrow(1, 2, 2), ArgumentError, r"narrow: start \(2\) \+ length \(2\)"),
    (lambda x: x.narrow(1, 0, -1), ArgumentError, r"length \(-1\)"),
    (lambda x: x[0, 0, 0].narrow(0, 0, 1), ShapeError, "narrow: cannot narrow a 0-d tensor"),
    (lambda x: x.swapaxes(0, 3), DimensionError, "swapaxes: dim 3 is out of range"),
    (lambda x: x.rot90(1, (1, -2)), ArgumentError, "rot90: dims must be two different dims"),
    (lambda x: x.rot90(1, (1,)), ArgumentError, r"rot90: dims must name 2 dims, got \(1,\)"),
    (lambda x: x[0, 0].rot90(), ShapeError, "rot90: needs a tensor of at least 2 dims"),
    (lambda x: x.rot90(1.0), DTypeError, "rot90: k must be an int"),
]


@pytest.mark.parametrize("call, error, message", ERRORS)
def test_rearranging_errors(call, error, message):
    x = mt.tensor(np.ones((2, 3, 4)), requires_grad=True)
    with pytest.raises(error, match=message):
        call(x)


EINSUM_ERRORS = [
    ("ij,jk->ik", [(2, 3), (4, 4)], ShapeError, r"subscript 'j' has size 4 in operand 1"),
    ("ii->i", [(2, 3)], ShapeError, r"subscript 'i' is repeated in operand 0 .* sizes 2 and 3"),
    ("ij->ii", [(2, 2)], ShapeError, "output subscript 'i' appears twice"),
    ("ij->k", [(2, 2)], ShapeError, "output subscript 'k' appears in no operand's subscripts"),
    ("i1", [(2, 3)], ArgumentError, r"invalid subscript '1' at index 1 of 'i1'"),
    ("i->i->i", [(3,)], ArgumentError, r"invalid subscript '-' at index 4"),
    ("..i", [(3,)], ArgumentError, r"invalid subscript '\.' at index 0"),
    ("...i...", [(3, 2)], ArgumentError, "two ellipses in one term"),
    ("ijk", [(2, 3)], ShapeError, r"operand 0 has 2 dims \(shape \(2, 3\)\), but its subscripts"),
    ("i,", [(3,)], ArgumentError, "has subscripts for 2 operands, but 1 were given"),
    ("i", [(3,), (3,)], ArgumentError, "has subscripts for 1 operands, but 2 were given"),
    ("...ij,...jk", [(2, 2, 3), (3, 3, 4)], ShapeError, "dim of the ellipsis has size 3"),
]


@pytest.mark.parametrize("equation, shapes, error, message", EINSUM_ERRORS)
def test_einsum_errors_name_the_subscripts(torch, equation, shapes, error, message):
    with pytest.raises((RuntimeError, ValueError)):
        torch.einsum(equation, *(torch.ones(shape) for shape in shapes))
    with pytest.raises(error, match=message):
        mt.einsum(equation, *(mt.ones(*shape) for shape in shapes))


def test_einsum_errors_of_its_arguments():
    with pytest.raises(ArgumentError, match="needs an equation and at least one operand"):
        mt.einsum("i")
    with pytest.raises(ArgumentError, match="needs an equation"):
        mt.einsum()
    with pytest.raises(ArgumentError, match=r"subscript 52 of operand 0 must be an int in"):
        mt.einsum(mt.ones(2), [52])
    with pytest.raises(DTypeError, match="cannot multiply bool operands"):
        mt.einsum("i,i->", mt.tensor([True]), mt.tensor([False]))
    with pytest.raises(DTypeError, match="must share one dtype"):
        mt.einsum("i,i->", mt.ones(2), mt.ones(2, dtype=np.float64))
