"""The whole-sequence recurrent ops (lstm_sequence, gru_sequence) against the chain of cell ops
they replace (values and every gradient: equal to float32 rounding, to 1e-12 in float64), numba
against the generic gate math, inference without a graph, their shape errors, and a float32
layer against PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import backend, nn, ops
from minitrain.errors import ShapeError

# (sequence op, cell op, gates, the state's leading dims)
KINDS = {
    "lstm": (ops.lstm_sequence, ops.lstm_cell, 4, (2,)),
    "gru": (ops.gru_sequence, ops.gru_cell, 3, ()),
}
# dtype: (rtol, atol) of the sequence op against the chain of cells
TOLERANCES = {np.float64: (1e-12, 1e-13), np.float32: (1e-5, 1e-6)}


def _leaves(kind, dtype, steps=6, batch=4, hidden=5, bias=True, seed=0):
    """Input gates, initial state, w_hh and b_hh (or None) of one direction, requiring grad."""
    _, _, gates, lead = KINDS[kind]
    rng = np.random.default_rng(seed)
    values = [
        rng.standard_normal((steps, batch, gates * hidden)),
        rng.standard_normal(lead + (batch, hidden)),
        rng.uniform(-0.6, 0.6, (gates * hidden, hidden)),
    ]
    if bias:
        values.append(rng.standard_normal(gates * hidden))
    return [mt.tensor(v.astype(dtype), requires_grad=True) for v in values]


def _by_cells(kind, input_gates, state, w_hh, b_hh=None, reverse=False):
    """The sequence op's output from one cell op per step, as nn.LSTM and nn.GRU ran before."""
    _, cell, _, _ = KINDS[kind]
    steps = len(input_gates)
    run = [None] * steps
    for t in range(steps - 1, -1, -1) if reverse else range(steps):
        state = cell(input_gates[t], state, None, w_hh, None, b_hh)
        run[t] = state
    return ops.stack(run)


def _values_and_grads(out, leaves, upstream):
    grads = mt.grad(out, leaves, grad_outputs=mt.tensor(upstream))
    return [out.array] + [g.array for g in grads]


@pytest.mark.parametrize("numba", [True, False])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", KINDS)
def test_sequence_op_equals_the_chain_of_cells(kind, dtype, reverse, bias, numba):
    leaves = _leaves(kind, dtype, bias=bias)
    sequence = KINDS[kind][0]
    with backend.use_numba(numba):
        out = sequence(*leaves, reverse=reverse)
        upstream = np.random.default_rng(1).standard_normal(out.shape).astype(dtype)
        got = _values_and_grads(out, leaves, upstream)
        want = _values_and_grads(_by_cells(kind, *leaves, reverse=reverse), leaves, upstream)
    rtol, atol = TOLERANCES[dtype]
    for index, (a, b) in enumerate(zip(got, want, strict=True)):
        assert a.dtype == dtype
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"output {index}")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", KINDS)
def test_numba_and_generic_gate_math_agree_over_a_sequence(kind, dtype):
    leaves = _leaves(kind, dtype, steps=4, batch=3, hidden=7, seed=2)
    upstream = None
    results = []
    for numba in (True, False):
        with backend.use_numba(numba):
            out = KINDS[kind][0](*leaves, reverse=True)
            if upstream is None:
                upstream = np.random.default_rng(3).standard_normal(out.shape).astype(dtype)
            results.append(_values_and_grads(out, leaves, upstream))
    rtol, atol = TOLERANCES[dtype]
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


@pytest.mark.parametrize("kind", KINDS)
def test_forward_without_a_graph_gives_the_recorded_values(kind):
    # without recording the op keeps one step's gates, not every step's
    leaves = _leaves(kind, np.float32)
    recorded = KINDS[kind][0](*leaves)
    with mt.no_grad():
        plain = KINDS[kind][0](*leaves)
    assert not plain.requires_grad
    np.testing.assert_array_equal(plain.array, recorded.array)


@pytest.mark.parametrize("kind", KINDS)
def test_only_the_gradients_asked_for_are_computed_and_they_match(kind):
    leaves = _leaves(kind, np.float64)
    out = KINDS[kind][0](*leaves)
    upstream = np.random.default_rng(4).standard_normal(out.shape)
    full = _values_and_grads(out, leaves, upstream)[1:]
    for index, leaf in enumerate(leaves):
        (alone,) = mt.grad(KINDS[kind][0](*leaves), [leaf], grad_outputs=mt.tensor(upstream))
        np.testing.assert_allclose(alone.array, full[index], rtol=1e-14, atol=1e-15)


def test_sequence_errors_name_the_op_and_shapes():
    input_gates, state, w_hh, b_hh = (leaf.array for leaf in _leaves("lstm", np.float64))
    with pytest.raises(ShapeError, match=r"lstm_sequence: input_gates \(4, 20\) must be"):
        ops.lstm_sequence(input_gates[0], state, w_hh, b_hh)
    with pytest.raises(ShapeError, match=r"lstm_sequence: input_gates \(0, 4, 20\) must be"):
        ops.lstm_sequence(input_gates[:0], state, w_hh, b_hh)
    with pytest.raises(ShapeError, match=r"lstm_sequence: state \(2, 3, 5\) must have shape"):
        ops.lstm_sequence(input_gates, state[:, :3], w_hh, b_hh)
    with pytest.raises(ShapeError, match=r"lstm_sequence: b_hh \(19,\) must have shape \(20,\)"):
        ops.lstm_sequence(input_gates, state, w_hh, b_hh[:19])
    with pytest.raises(ShapeError, match=r"gru_sequence: w_hh \(20, 5\) must be \(3 \*"):
        ops.gru_sequence(input_gates[..., :15], state[0], w_hh, b_hh[:15])
    with pytest.raises(ShapeError, match=r"gru_sequence: without w_ih, x \(4, 20\) must be"):
        ops.gru_sequence(input_gates, state[0], w_hh[:15], b_hh[:15])


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_float32_layer_matches_torch_at_a_realistic_size(name, bidirectional):
    torch = pytest.importorskip("torch")
    theirs = getattr(torch.nn, name)(16, 32, num_layers=2, bidirectional=bidirectional)
    ours = getattr(nn, name)(16, 32, num_layers=2, bidirectional=bidirectional)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(5).standard_normal((20, 8, 16)).astype(np.float32)
    our_x, their_x = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    our_out, their_out = ours(our_x)[0], theirs(their_x)[0]
    np.testing.assert_allclose(our_out.array, their_out.detach().numpy(), rtol=1e-5, atol=1e-6)
    upstream = np.random.default_rng(6).standard_normal(our_out.shape).astype(np.float32)
    our_out.backward(mt.tensor(upstream))
    their_out.backward(torch.from_numpy(upstream))
    np.testing.assert_allclose(our_x.grad.array, their_x.grad.numpy(), rtol=1e-4, atol=1e-5)
    their_params = dict(theirs.named_parameters())
    for key, p in ours.named_parameters():
        want = their_params[key].grad.numpy()
        np.testing.assert_allclose(p.grad.array, want, rtol=1e-4, atol=1e-5, err_msg=key)


@pytest.mark.parametrize("kind", KINDS)
def test_strided_inputs_give_what_contiguous_ones_give(kind):
    # input gates read through a transposed view, as a batch-first caller might pass them
    leaves = _leaves(kind, np.float32)
    batch_major = mt.tensor(np.ascontiguousarray(leaves[0].array.transpose(1, 0, 2)))
    batch_major.requires_grad_(True)
    strided = batch_major.transpose(0, 1)
    assert not strided.array.flags.c_contiguous
    out = KINDS[kind][0](strided, *leaves[1:])
    want = KINDS[kind][0](*leaves)
    np.testing.assert_array_equal(out.array, want.array)
    upstream = np.random.default_rng(7).standard_normal(out.shape).astype(np.float32)
    (got,) = mt.grad(out, [batch_major], grad_outputs=mt.tensor(upstream))
    (expected,) = mt.grad(want, [leaves[0]], grad_outputs=mt.tensor(upstream))
    np.testing.assert_array_equal(got.array, expected.array.transpose(1, 0, 2))


def test_a_gru_output_changed_in_place_backpropagates_as_pytorchs():
    # PyTorch's GRU output may be changed in place before backward (its kernel keeps its own
    # copy); the sequence op saved its output, so the layer must hand out a copy of it
    mt.manual_seed(0)
    layer = nn.GRU(3, 4)
    x = np.random.default_rng(1).standard_normal((5, 2, 3), dtype=np.float32)
    grads = []
    for in_place in (True, False):
        inputs = mt.tensor(x, requires_grad=True)
        output, h_n = layer(inputs)
        if in_place:
            output.mul_(2.0)
        else:
            output = output * 2.0
        (output.sum() + h_n.sum()).backward()
        grads.append(inputs.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
