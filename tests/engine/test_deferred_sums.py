"""The gradients the engine sums lazily (autograd/deferred.py): ProductSum, a recurrent cell's
weights' gradient per time step, and SliceSum, a getitem's gradient. Their arithmetic against the
dense sums, their folding, and that every gradient leaves the engine as an array (hooks, .grad,
grad(), anomaly mode, the graph replay, the public kernels) with the values an eager sum gives."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn, ops
from minitrain.autograd import deferred, replay_backward
from minitrain.autograd.deferred import ProductSum, SliceSum
from minitrain.errors import ShapeError


def _pairs(rng, count, rows=3, left=5, right=4):
    return [
        (rng.standard_normal((rows, left)), rng.standard_normal((rows, right)))
        for _ in range(count)
    ]


def test_sum_of_products_and_column_sums_equal_the_dense_sums():
    rng = np.random.default_rng(0)
    pairs = _pairs(rng, 6)
    total = ProductSum(*pairs[0])
    for a, b in pairs[1:]:
        total = total + ProductSum(a, b)
    np.testing.assert_allclose(total.value(), sum(a.T @ b for a, b in pairs), rtol=1e-13)
    columns = ProductSum(pairs[0][0]) + ProductSum(pairs[1][0])
    np.testing.assert_allclose(columns.value(), pairs[0][0].sum(0) + pairs[1][0].sum(0))
    assert total.shape == (5, 4) and columns.shape == (5,) and total.dtype == np.float64


def test_arrays_add_on_either_side_and_nothing_is_mutated():
    rng = np.random.default_rng(1)
    (a, b), (c, d) = _pairs(rng, 2)
    dense = rng.standard_normal((5, 4))
    kept = dense.copy()
    first = ProductSum(a, b)
    left, right = dense + first, first + dense  # numpy defers the left form to __radd__
    assert type(left) is ProductSum and type(right) is ProductSum
    both = left + ProductSum(c, d)
    np.testing.assert_allclose(both.value(), dense + a.T @ b + c.T @ d, rtol=1e-13)
    np.testing.assert_array_equal(dense, kept)
    np.testing.assert_allclose(first.value(), a.T @ b, rtol=1e-13)  # `+` made new sums
    assert first.value() is not first.value()  # new memory each time: .grad may own it


def test_folds_into_an_array_past_the_row_limit(monkeypatch):
    monkeypatch.setattr(deferred, "FOLD_ROWS", 7)
    rng = np.random.default_rng(2)
    pairs = _pairs(rng, 5, rows=3)
    total = ProductSum(*pairs[0])
    rows_held = []
    for a, b in pairs[1:]:
        total = total + ProductSum(a, b)
        rows_held.append(total.rows)
    assert rows_held == [6, 0, 3, 6]  # folded on reaching 9 rows
    np.testing.assert_allclose(total.value(), sum(a.T @ b for a, b in pairs), rtol=1e-13)


def test_shapes_that_differ_are_refused():
    rng = np.random.default_rng(3)
    (a, b), (c, d) = _pairs(rng, 1)[0], _pairs(rng, 1, right=2)[0]
    with pytest.raises(ShapeError, match=r"\(5, 4\)"):
        ProductSum(a, b) + ProductSum(c, d)
    with pytest.raises(ShapeError, match=r"\(5, 4\)"):
        ProductSum(a, b) + np.zeros((4, 5))


def test_slice_sum_adds_each_piece_at_its_index():
    rng = np.random.default_rng(5)
    pieces = [
        ((2,), rng.standard_normal((3, 4))),
        ((slice(None), slice(1, 3)), rng.standard_normal((5, 2, 4))),
        ((np.array([True, False, True, False, False]),), rng.standard_normal((2, 3, 4))),
        ((None, 4, Ellipsis), rng.standard_normal((1, 3, 4))),
    ]
    expected = np.zeros((5, 3, 4))
    total = None
    for index, value in pieces:
        expected[index] += value
        piece = SliceSum((5, 3, 4), index, value)
        total = piece if total is None else total + piece
    dense = rng.standard_normal((5, 3, 4))
    np.testing.assert_allclose(total.value(), expected, rtol=1e-14)
    np.testing.assert_allclose((dense + total).value(), dense + expected, rtol=1e-14)
    assert total.value() is not total.value()


def test_slice_sum_folds_once_its_pieces_outgrow_the_array():
    rng = np.random.default_rng(6)
    values = [rng.standard_normal((2, 3)) for _ in range(3)]
    total = SliceSum((2, 3), (slice(None),), values[0]) + SliceSum((2, 3), (Ellipsis,), values[1])
    assert total.held == 0 and total.dense is not None and not total.pieces  # 12 > 6: folded
    total = total + SliceSum((2, 3), (0,), values[2][0])
    np.testing.assert_allclose(total.value()[0], (values[0] + values[1] + values[2])[0, :])
    np.testing.assert_allclose(total.value()[1], (values[0] + values[1])[1])


def test_the_two_kinds_added_give_an_array():
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((3, 5)), rng.standard_normal((3, 4))
    piece = rng.standard_normal(4)
    total = ProductSum(a, b) + SliceSum((5, 4), (1,), piece)
    expected = a.T @ b
    expected[1] += piece
    assert type(total) is np.ndarray
    np.testing.assert_allclose(total, expected, rtol=1e-14)


def test_a_tensor_read_slice_by_slice_gets_the_sum_of_the_slices_gradients():
    rng = np.random.default_rng(8)
    x = mt.tensor(rng.standard_normal((6, 3, 2)), requires_grad=True)
    loss = 0.0
    for t in range(6):
        loss = loss + (x[t] * (t + 1)).sum() + (x[t, :, 1] ** 2).sum()
    loss.backward()
    expected = np.broadcast_to(np.arange(1.0, 7.0)[:, None, None], (6, 3, 2)).copy()
    expected[:, :, 1] += 2 * x.array[:, :, 1]
    assert type(x.grad.array) is np.ndarray
    np.testing.assert_allclose(x.grad.array, expected, rtol=1e-14)


def _lstm_and_input(seed=0, seq=7, batch=3):
    mt.manual_seed(seed)
    lstm = nn.LSTM(4, 5, num_layers=2, dtype=np.float64)
    x = mt.tensor(np.random.default_rng(seed).standard_normal((seq, batch, 4)), requires_grad=True)
    return lstm, x


def _unrolled_loss(x, per_step_weights):
    """One LSTM layer by hand, a cell op per step, step t with per_step_weights[t]."""
    hidden = per_step_weights[0][1].shape[1]
    state = mt.tensor(np.zeros((2, x.shape[1], hidden)))
    loss = 0.0
    for t, weights in enumerate(per_step_weights):
        state = ops.lstm_cell(x[t], state, *weights)
        loss = loss + (state * state).sum()
    return loss


@pytest.mark.parametrize("fold_rows", [2048, 4])
def test_sums_at_a_leaf_and_at_a_node_equal_the_sum_over_steps(monkeypatch, fold_rows):
    """The gradient of weights shared by every step is the sum of the gradients of per-step
    copies (the chain rule); at a leaf and through a node (weight * 1), folded or not."""
    monkeypatch.setattr(deferred, "FOLD_ROWS", fold_rows)
    lstm, x = _lstm_and_input()
    weights = lstm.all_weights[0]
    copies = [[mt.tensor(w.array.copy(), requires_grad=True) for w in weights] for _ in x]
    per_step = mt.grad(_unrolled_loss(x, copies), [w for step in copies for w in step])
    expected = [sum(g.array for g in per_step[k :: len(weights)]) for k in range(len(weights))]
    for shared in (weights, [w * 1.0 for w in weights]):
        grads = mt.grad(_unrolled_loss(x, [shared] * len(x)), weights)
        for got, want in zip(grads, expected, strict=True):
            assert type(got.array) is np.ndarray
            np.testing.assert_allclose(got.array, want, rtol=1e-12, atol=1e-13)


def test_hooks_grad_anomaly_and_replay_see_arrays():
    lstm, x = _lstm_and_input(seed=1)
    weight = lstm.weight_hh_l0
    seen = []
    weight.register_hook(lambda g: seen.append(type(g.array)) or None)
    out, _ = lstm(x)
    loss = (out * out).sum()
    (by_grad,) = mt.grad(loss, [weight], retain_graph=True)
    assert type(by_grad.array) is np.ndarray and seen == [np.ndarray]
    replayed = replay_backward([loss])
    assert type(replayed[id(weight)]) is np.ndarray
    np.testing.assert_allclose(replayed[id(weight)], by_grad.array, rtol=1e-12)
    with mt.autograd.detect_anomaly():
        loss.backward()
    np.testing.assert_allclose(weight.grad.array, by_grad.array, rtol=1e-12)


def test_the_public_cell_kernels_return_arrays():
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal(shape) for shape in [(3, 4), (2, 3, 5), (20, 4), (20, 5)]]
    x, state, w_ih, w_hh = (mt.tensor(a, requires_grad=True) for a in arrays)
    out = ops.lstm_cell(x, state, w_ih, w_hh)
    grads = ops.lstm_cell_grad(np.ones((2, 3, 5)), *arrays, out.node.ctx.gates, out.array)
    assert len(grads) == 6 and all(type(g) is np.ndarray for g in grads)
