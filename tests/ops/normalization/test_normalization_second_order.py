"""Second derivatives of the normalization ops and dropout, checked by hand: Hessian-vector
products against PyTorch's with x made by an op (not a leaf), the invertible layer norm's (which
keeps no x) against the standard one's, up to the third derivative and after x is freed,
evaluation-mode batch norm, and dropout's constant mask."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from normalization_cases import CASES, Case, assert_all_close

import minitrain as mt
from minitrain import ops

TOL = {"rtol": 1e-9, "atol": 1e-11}


def _directions(case, x, weight, bias, seed=1):
    """A direction v per present input of [x, weight, bias], for sum(first derivative * v)."""
    rng = np.random.default_rng(seed)
    return [None if a is None else rng.standard_normal(a.shape) for a in (x, weight, bias)]


def _second_order(case, x, weight, bias, dy, directions):
    """[first derivatives], [second derivatives] of sum(case(2 x, weight, bias) * dy) in
    minitrain, with respect to [x, weight, bias] (None where absent): x enters through an op, so
    it is no leaf of the normalization; the second derivatives are those of sum(first * v)."""
    leaves = [None if a is None else mt.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    out = case.call(leaves[0] * 2.0, leaves[1], leaves[2])
    present = [leaf for leaf in leaves if leaf is not None]
    firsts = mt.grad(out, present, mt.tensor(dy), create_graph=True)
    total = sum(
        (g * mt.tensor(v)).sum()
        for g, v in zip(firsts, [v for v in directions if v is not None], strict=True)
    )
    seconds = mt.grad(total, present, allow_unused=True)
    return _spread(leaves, firsts), _spread(leaves, seconds)


def _torch_second_order(torch, case, x, weight, bias, dy, directions):
    """`_second_order` by PyTorch."""
    leaves = [None if a is None else torch.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    out = case.torch_call(torch, leaves[0] * 2.0, leaves[1], leaves[2])
    present = [leaf for leaf in leaves if leaf is not None]
    firsts = torch.autograd.grad(out, present, torch.tensor(dy), create_graph=True)
    total = sum(
        (g * torch.tensor(v)).sum()
        for g, v in zip(firsts, [v for v in directions if v is not None], strict=True)
    )
    seconds = torch.autograd.grad(total, present, allow_unused=True)
    return _spread(leaves, firsts), _spread(leaves, seconds)


def _spread(leaves, grads):
    """Gradients of the present leaves as arrays in the places of [x, weight, bias]; zeros for an
    unused one, None for an absent one."""
    found = iter(grads)
    result = []
    for leaf in leaves:
        if leaf is None:
            result.append(None)
            continue
        g = next(found)
        data = np.zeros(tuple(leaf.shape)) if g is None else g.detach().numpy()
        result.append(np.asarray(data))
    return result


@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_hessian_vector_products_match_torch(torch, case, affine, numba):
    x, weight, bias, dy = case.make(affine=affine)
    directions = _directions(case, x, weight, bias)
    firsts, seconds = _second_order(case, x, weight, bias, dy, directions)
    want_firsts, want_seconds = _torch_second_order(torch, case, x, weight, bias, dy, directions)
    assert_all_close(firsts, want_firsts, **TOL)
    assert_all_close(seconds, want_seconds, **TOL)
    assert np.abs(seconds[0]).max() > 1e-3  # x's second derivative is no zero by accident


@pytest.mark.parametrize("dims", [1, 2])
def test_invertible_layer_norm_second_derivatives_equal_the_standard_ones(dims, numba):
    standard = Case("layer_norm", (3, 4, 5), dims)
    x, weight, bias, dy = standard.make()
    directions = _directions(standard, x, weight, bias)
    want = _second_order(standard, x, weight, bias, dy, directions)
    invertible = standard._replace(op="invertible_layer_norm")
    got = _second_order(invertible, x, weight, bias, dy, directions)
    assert_all_close([*got[0], *got[1]], [*want[0], *want[1]], **TOL)


def _third_derivative(op, x, weight, bias, dy, v, u):
    """d/d(x, weight, bias) of sum(u * d/dx sum(v * d/dx sum(dy * layer_norm(2 x))))."""
    leaves = [mt.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    out = ops.layer_norm(leaves[0] * 2.0, (5,), leaves[1], leaves[2], invertible=op)
    (first,) = mt.grad(out, [leaves[0]], mt.tensor(dy), create_graph=True)
    (second,) = mt.grad((first * mt.tensor(v)).sum(), [leaves[0]], create_graph=True)
    thirds = mt.grad((second * mt.tensor(u)).sum(), leaves, allow_unused=True)
    return [
        np.zeros(leaf.shape) if g is None else g.array
        for leaf, g in zip(leaves, thirds, strict=True)
    ]


def test_invertible_layer_norm_third_derivatives_equal_the_standard_ones():
    # the derivative of its RowInvStd (the inv_std it cannot recompute from x) is itself
    # differentiable: the third derivative agrees too
    x, weight, bias, dy = Case("layer_norm", (3, 5)).make()
    rng = np.random.default_rng(2)
    v, u = rng.standard_normal((2, 3, 5))
    want = _third_derivative(False, x, weight, bias, dy, v, u)
    got = _third_derivative(True, x, weight, bias, dy, v, u)
    assert_all_close(got, want, **TOL)
    assert np.abs(got[0]).max() > 1e-3


def test_invertible_layer_norm_differentiates_twice_after_x_is_freed():
    # create_graph needs x's place in the graph, not its values: x may be gone
    x, weight, bias, dy = Case("layer_norm", (3, 5)).make()
    leaves = [mt.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    made = leaves[0] * 2.0
    gone = weakref.ref(made.array)
    out = ops.layer_norm(made, (5,), leaves[1], leaves[2], invertible=True)
    assert "x" not in out.grad_fn.saved_arrays()
    del made
    gc.collect()
    assert gone() is None
    firsts = mt.grad(out, leaves, mt.tensor(dy), create_graph=True)
    v = np.random.default_rng(3).standard_normal(x.shape)
    seconds = mt.grad((firsts[0] * mt.tensor(v)).sum(), leaves, allow_unused=True)
    standard = Case("layer_norm", (3, 5))
    want = _second_order(standard, x, weight, bias, dy, [v, 0 * weight, 0 * bias])
    assert_all_close([g.array for g in firsts], want[0], **TOL)
    assert_all_close([g.array for g in seconds], want[1], **TOL)


def test_eval_batch_norm_second_derivatives(torch):
    # Y = x * a + b with a = weight / sqrt(running_var + eps), the running statistics constants:
    # dx = dy * a is linear in x (no second derivative in x), and its derivative in weight is
    # sum over (N, spatial) of dy * v / sqrt(running_var + eps)
    rng = np.random.default_rng(4)
    x, dy, v = rng.standard_normal((3, 4, 2, 3, 5))
    weight, bias, running_mean = rng.standard_normal((3, 2))
    running_var = rng.uniform(0.5, 2.0, 2)
    leaves = [mt.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    out = ops.batch_norm(
        leaves[0],
        leaves[1],
        leaves[2],
        running_mean=running_mean,
        running_var=running_var,
        training=False,
    )
    (dx,) = mt.grad(out, [leaves[0]], mt.tensor(dy), create_graph=True)
    seconds = mt.grad((dx * mt.tensor(v)).sum(), leaves, allow_unused=True)
    inv_std = 1 / np.sqrt(running_var + 1e-5)
    assert seconds[0] is None or not np.any(seconds[0].array)
    np.testing.assert_allclose(seconds[1].array, (dy * v).sum(axis=(0, 2, 3)) * inv_std, **TOL)
    assert seconds[2] is None or not np.any(seconds[2].array)

    tensors = [torch.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    out = torch.nn.functional.batch_norm(
        tensors[0],
        torch.tensor(running_mean),
        torch.tensor(running_var),
        tensors[1],
        tensors[2],
        training=False,
    )
    (dx,) = torch.autograd.grad(out, [tensors[0]], torch.tensor(dy), create_graph=True)
    (want,) = torch.autograd.grad((dx * torch.tensor(v)).sum(), [tensors[1]])
    np.testing.assert_allclose(seconds[1].array, want.numpy(), **TOL)


def test_dropout_second_derivative_is_the_mask():
    # dx = dy * mask with the mask a constant: linear in dy, nothing in x
    rng = np.random.default_rng(5)
    x = mt.tensor(rng.standard_normal((6, 7)), requires_grad=True)
    dy = mt.tensor(rng.standard_normal((6, 7)), requires_grad=True)
    v = rng.standard_normal((6, 7))
    mt.manual_seed(11)
    out = ops.dropout(x, 0.4)
    mask = out.array / x.array
    assert set(np.round(np.unique(mask), 12)) == {0.0, round(1 / 0.6, 12)}
    (dx,) = mt.grad(out, [x], dy, create_graph=True)
    np.testing.assert_allclose(dx.array, dy.array * mask, **TOL)
    d_dy, d_x = mt.grad((dx * mt.tensor(v)).sum(), [dy, x], allow_unused=True)
    np.testing.assert_allclose(d_dy.array, v * mask, **TOL)
    assert d_x is None or not np.any(d_x.array)
