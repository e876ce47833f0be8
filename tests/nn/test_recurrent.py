"""RNN, LSTM, GRU and their cells against PyTorch (values, and the gradients of the input, the
initial state and every parameter, from a torch state_dict loaded strictly), float64 gradchecks,
the graph they record (one sequence op per layer and direction), the cell
kernels (numba against the generic gate math, `need`), and their errors."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import backend, nn, ops
from minitrain.autograd import graph_nodes
from minitrain.errors import ArgumentError, DTypeError, ShapeError

SEQ, BATCH, FEATURES, HIDDEN = 5, 3, 4, 6
LAYERS = ["RNN", "LSTM", "GRU"]
CONFIGS = {
    "plain": {},
    "batch_first": {"batch_first": True},
    "bidirectional": {"bidirectional": True},
    "two_layers": {"num_layers": 2},
    "two_layers_bidirectional_batch_first": {
        "num_layers": 2,
        "bidirectional": True,
        "batch_first": True,
    },
    "no_bias": {"bias": False},
}


def _pair(torch, name: str, **options):
    """(minitrain's layer, PyTorch's) in float64, minitrain's loaded strictly from PyTorch's."""
    theirs = getattr(torch.nn, name)(FEATURES, HIDDEN, dtype=torch.float64, **options)
    ours = getattr(nn, name)(FEATURES, HIDDEN, dtype=np.float64, **options)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _check_against_torch(torch, name, options, batched=True, given_state=True, seed=0):
    """Run both layers on one input (and initial state), compare the outputs, then the
    gradients of the input, the state and every parameter for random upstream gradients."""
    rng = np.random.default_rng(seed)
    ours, theirs = _pair(torch, name, **options)
    directions = 2 if options.get("bidirectional") else 1
    count = options.get("num_layers", 1) * directions
    if not batched:
        shape, state_shape = (SEQ, FEATURES), (count, HIDDEN)
    else:
        shape = (BATCH, SEQ, FEATURES) if options.get("batch_first") else (SEQ, BATCH, FEATURES)
        state_shape = (count, BATCH, HIDDEN)
    x = rng.standard_normal(shape)
    states = [rng.standard_normal(state_shape) for _ in range(2 if name == "LSTM" else 1)]
    our_x, their_x = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    our_states = [mt.tensor(s, requires_grad=True) for s in states]
    their_states = [torch.tensor(s, requires_grad=True) for s in states]

    def hx(parts):
        if not given_state:
            return None
        return tuple(parts) if name == "LSTM" else parts[0]

    our_out, our_last = ours(our_x, hx(our_states))
    their_out, their_last = theirs(their_x, hx(their_states))
    our_last = list(our_last) if name == "LSTM" else [our_last]
    their_last = list(their_last) if name == "LSTM" else [their_last]
    for got, want in zip([our_out, *our_last], [their_out, *their_last], strict=True):
        assert got.shape == tuple(want.shape)
        np.testing.assert_allclose(got.array, want.detach().numpy(), rtol=1e-10, atol=1e-12)

    upstream = [rng.standard_normal(t.shape) for t in [our_out, *our_last]]
    mt.autograd.backward([our_out, *our_last], [mt.tensor(u) for u in upstream])
    torch.autograd.backward([their_out, *their_last], [torch.from_numpy(u) for u in upstream])
    pairs = [("input", our_x, their_x)]
    if given_state:
        pairs += [
            (f"state {i}", a, b)
            for i, (a, b) in enumerate(zip(our_states, their_states, strict=True))
        ]
    their_params = dict(theirs.named_parameters())
    pairs += [(key, p, their_params[key]) for key, p in ours.named_parameters()]
    assert len(pairs) == (1 + given_state * len(states) + len(their_params))
    for what, got, want in pairs:
        np.testing.assert_allclose(
            got.grad.array, want.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=what
        )


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("name", LAYERS)
def test_layer_matches_torch(torch, name, config):
    _check_against_torch(torch, name, CONFIGS[config])


@pytest.mark.parametrize("name", LAYERS)
def test_unbatched_input_matches_torch(torch, name):
    _check_against_torch(torch, name, {"num_layers": 2, "bidirectional": True}, batched=False)


@pytest.mark.parametrize("name", LAYERS)
def test_default_initial_state_is_zeros_as_in_torch(torch, name):
    _check_against_torch(torch, name, {"num_layers": 2}, given_state=False)
    _check_against_torch(torch, name, {"batch_first": True}, batched=False, given_state=False)


def test_rnn_relu_matches_torch(torch):
    _check_against_torch(torch, "RNN", {"nonlinearity": "relu", "num_layers": 2}, seed=3)


@pytest.mark.parametrize("name", LAYERS)
def test_state_dicts_have_torchs_names_in_torchs_order_both_ways(torch, name):
    options = {"num_layers": 2, "bidirectional": True}
    ours, theirs = _pair(torch, name, **options)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert "weight_ih_l1_reverse" in ours.state_dict()
    fresh = getattr(torch.nn, name)(FEATURES, HIDDEN, dtype=torch.float64, **options)
    fresh.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in ours.state_dict().items()})
    for key, value in fresh.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), theirs.state_dict()[key].numpy())
    shapes = {key: tuple(v.shape) for key, v in theirs.state_dict().items()}
    assert {key: v.shape for key, v in ours.state_dict().items()} == shapes


def test_all_weights_per_layer_and_direction(torch):
    ours, theirs = _pair(torch, "LSTM", num_layers=2, bidirectional=True)
    assert len(ours.all_weights) == len(theirs.all_weights) == 4
    for got, want in zip(ours.all_weights, theirs.all_weights, strict=True):
        assert [p.shape for p in got] == [tuple(p.shape) for p in want]


@pytest.mark.parametrize("name", LAYERS)
def test_float32_layer_keeps_float32(name):
    layer = getattr(nn, name)(FEATURES, HIDDEN, num_layers=2)
    x = mt.tensor(np.ones((SEQ, BATCH, FEATURES), np.float32), requires_grad=True)
    out, _ = layer(x)
    out.sum().backward()
    assert out.dtype == np.float32 and x.grad.dtype == np.float32
    assert all(p.grad.dtype == np.float32 for p in layer.parameters())


def test_initialisation_is_torchs_uniform_range():
    layer = nn.LSTM(FEATURES, 64, num_layers=2)
    bound = 1 / np.sqrt(64)
    for p in layer.parameters():
        assert np.abs(p.array).max() <= bound
        assert np.abs(p.array).max() > 0.9 * bound


def _outputs(layer, x, h):
    state = (h[0], h[1]) if isinstance(layer, nn.LSTM) else h
    out, last = layer(x, state)
    return (out, *last) if isinstance(layer, nn.LSTM) else (out, last)


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_tiny_layer_passes_gradcheck_in_float64(name):
    # a bidirectional two-layer layer of three steps, against central finite differences: the
    # whole Jacobian in its input and initial state (gradcheck), and each parameter's gradient
    # of one random projection of every output, element by element
    mt.manual_seed(0)
    layer = getattr(nn, name)(2, 2, num_layers=2, bidirectional=True, dtype=np.float64)
    rng = np.random.default_rng(0)
    x = mt.tensor(rng.standard_normal((3, 2, 2)), requires_grad=True)
    h = mt.tensor(rng.standard_normal((2,) * (name == "LSTM") + (4, 2, 2)), requires_grad=True)
    assert mt.gradcheck(lambda x, h: _outputs(layer, x, h), [x, h], mode="full")

    outputs = _outputs(layer, x, h)
    upstream = [rng.standard_normal(o.shape) for o in outputs]
    mt.autograd.backward(list(outputs), [mt.tensor(u) for u in upstream])

    def projection() -> float:
        with mt.no_grad():
            return sum(
                float((o.array * u).sum())
                for o, u in zip(_outputs(layer, x, h), upstream, strict=True)
            )

    eps = 1e-6
    for key, param in layer.named_parameters():
        numeric = np.empty(param.shape)
        for index in np.ndindex(param.shape):
            kept = param.array[index]
            param.array[index] = kept + eps
            ahead = projection()
            param.array[index] = kept - eps
            behind = projection()
            param.array[index] = kept
            numeric[index] = (ahead - behind) / (2 * eps)
        np.testing.assert_allclose(param.grad.array, numeric, rtol=1e-6, atol=1e-8, err_msg=key)


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_backprop_through_time_is_one_sequence_node_per_layer_and_direction(name):
    layer = getattr(nn, name)(FEATURES, HIDDEN, num_layers=2, bidirectional=True)
    x = mt.tensor(np.ones((SEQ, BATCH, FEATURES), np.float32))
    out, _ = layer(x)
    names = [node.op.name for node in graph_nodes([out])]
    assert names.count(name.lower() + "_sequence") == 2 * 2
    assert name.lower() + "_cell" not in names  # the steps loop inside the sequence ops


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_second_derivatives_through_a_layer_match_torch(torch, name):
    # the gradient of the input, recorded (create_graph), differentiated again into every
    # parameter: the cells' tensor_backward against PyTorch's double backward
    ours, theirs = _pair(torch, name, num_layers=2)
    x = np.random.default_rng(4).standard_normal((3, 2, FEATURES))
    our_x, their_x = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (our_g,) = mt.grad((ours(our_x)[0] ** 2).sum(), [our_x], create_graph=True)
    (their_g,) = torch.autograd.grad((theirs(their_x)[0] ** 2).sum(), [their_x], create_graph=True)
    np.testing.assert_allclose(our_g.array, their_g.detach().numpy(), rtol=1e-9, atol=1e-12)
    (our_g * our_g).sum().backward()
    (their_g * their_g).sum().backward()
    their_params = dict(theirs.named_parameters())
    for key, p in ours.named_parameters():
        want = their_params[key].grad.numpy()
        np.testing.assert_allclose(p.grad.array, want, rtol=1e-8, atol=1e-12, err_msg=key)


def test_a_weight_changed_in_place_before_backward_is_refused():
    layer = nn.LSTM(FEATURES, HIDDEN)
    out, _ = layer(mt.tensor(np.ones((SEQ, BATCH, FEATURES), np.float32)))
    with mt.no_grad():
        layer.weight_hh_l0.add_(1.0)
    with pytest.raises(
        mt.errors.GraphError, match=r"LSTMSequenceGrad: 'w_hh', a value lstm_sequence"
    ):
        out.sum().backward()


def test_dropout_between_layers_acts_in_training_only(torch):
    mt.manual_seed(0)
    ours, theirs = _pair(torch, "LSTM", num_layers=2, dropout=0.5)
    x = np.random.default_rng(0).standard_normal((SEQ, BATCH, FEATURES))
    trained, _ = ours(mt.tensor(x))
    ours.eval()
    theirs.eval()
    evaluated, _ = ours(mt.tensor(x))
    want, _ = theirs(torch.from_numpy(x))
    np.testing.assert_allclose(evaluated.array, want.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert not np.allclose(trained.array, evaluated.array)


def test_dropout_with_one_layer_warns_as_torch():
    with pytest.warns(UserWarning, match="dropout=0.5 acts between layers"):
        nn.GRU(FEATURES, HIDDEN, dropout=0.5)


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("given_state", [True, False], ids=["given_state", "zero_state"])
def test_cell_matches_torch(torch, name, batched, given_state):
    rng = np.random.default_rng(1)
    theirs = getattr(torch.nn, name)(FEATURES, HIDDEN, dtype=torch.float64)
    ours = getattr(nn, name)(FEATURES, HIDDEN, dtype=np.float64)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    lead = (BATCH,) if batched else ()
    x = rng.standard_normal(lead + (FEATURES,))
    states = [rng.standard_normal(lead + (HIDDEN,)) for _ in range(2 if name == "LSTMCell" else 1)]
    our_in = [mt.tensor(a, requires_grad=True) for a in (x, *states)]
    their_in = [torch.tensor(a, requires_grad=True) for a in (x, *states)]

    def hx(parts):
        if not given_state:
            return None
        return tuple(parts) if name == "LSTMCell" else parts[0]

    got, want = ours(our_in[0], hx(our_in[1:])), theirs(their_in[0], hx(their_in[1:]))
    got = list(got) if name == "LSTMCell" else [got]
    want = list(want) if name == "LSTMCell" else [want]
    upstream = [rng.standard_normal(g.shape) for g in got]
    for g, w in zip(got, want, strict=True):
        assert g.shape == tuple(w.shape)
        np.testing.assert_allclose(g.array, w.detach().numpy(), rtol=1e-10, atol=1e-12)
    mt.autograd.backward(got, [mt.tensor(u) for u in upstream])
    torch.autograd.backward(want, [torch.from_numpy(u) for u in upstream])
    pairs = list(zip(our_in, their_in, strict=True)) if given_state else [(our_in[0], their_in[0])]
    their_params = dict(theirs.named_parameters())
    pairs += [(p, their_params[key]) for key, p in ours.named_parameters()]
    for a, b in pairs:
        np.testing.assert_allclose(a.grad.array, b.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_rnn_cell_relu_and_no_bias_match_torch(torch):
    theirs = torch.nn.RNNCell(FEATURES, HIDDEN, bias=False, nonlinearity="relu")
    ours = nn.RNNCell(FEATURES, HIDDEN, bias=False, nonlinearity="relu")
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(2).standard_normal((BATCH, FEATURES)).astype(np.float32)
    want = theirs(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(ours(mt.tensor(x)).array, want, rtol=1e-5, atol=1e-6)
    assert list(ours.state_dict()) == ["weight_ih", "weight_hh"]


def test_repr_reads_as_torchs(torch):
    for name, options in [
        ("LSTM", {"num_layers": 2, "batch_first": True, "bidirectional": True}),
        ("GRU", {"bias": False, "dropout": 0.25, "num_layers": 2}),
        ("RNN", {"nonlinearity": "relu"}),
    ]:
        want = repr(getattr(torch.nn, name)(FEATURES, HIDDEN, **options))
        assert repr(getattr(nn, name)(FEATURES, HIDDEN, **options)) == want
    for name in ("LSTMCell", "GRUCell", "RNNCell"):
        want = repr(getattr(torch.nn, name)(FEATURES, HIDDEN, bias=False))
        assert repr(getattr(nn, name)(FEATURES, HIDDEN, bias=False)) == want
    want = repr(torch.nn.RNNCell(FEATURES, HIDDEN, nonlinearity="relu"))
    assert repr(nn.RNNCell(FEATURES, HIDDEN, nonlinearity="relu")) == want


# The cell ops' kernels


def _cell_arrays(gates, batch=4, inputs=3, hidden=5, dtype=np.float64, scale=1.0, seed=0):
    rng = np.random.default_rng(seed)
    lead = (2,) if gates == 4 else ()
    arrays = (
        rng.standard_normal((batch, inputs)),
        rng.standard_normal(lead + (batch, hidden)),
        rng.standard_normal((gates * hidden, inputs)) * scale,
        rng.standard_normal((gates * hidden, hidden)) * scale,
        rng.standard_normal(gates * hidden),
        rng.standard_normal(gates * hidden),
    )
    return [a.astype(dtype) for a in arrays]


def _values_and_grads(op, arrays, upstream):
    inputs = [mt.tensor(a, requires_grad=True) for a in arrays]
    out = op(*inputs)
    out.backward(upstream)
    return [out.array] + [t.grad.array for t in inputs]


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 1e-5)])
@pytest.mark.parametrize("scale", [0.5, 30.0], ids=["moderate", "saturated"])
@pytest.mark.parametrize("op, gates", [(ops.lstm_cell, 4), (ops.gru_cell, 3)])
def test_numba_gate_kernels_agree_with_the_generic_ones(op, gates, scale, dtype, rtol):
    # the gates' sigmoids and tanhs on numba_math's exp, against numpy's, in and out of
    # saturation (pre-activations to about +-300 at scale 30)
    arrays = _cell_arrays(gates, batch=7, inputs=9, hidden=33, dtype=dtype, scale=scale)
    state = arrays[1]
    upstream = np.random.default_rng(1).standard_normal(state.shape).astype(dtype)
    with backend.use_numba(True):
        fast = _values_and_grads(op, arrays, upstream)
    with backend.use_numba(False):
        plain = _values_and_grads(op, arrays, upstream)
    for i, (a, b) in enumerate(zip(fast, plain, strict=True)):
        assert a.dtype == dtype
        scale_of = max(np.abs(b).max(), 1.0)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale_of, err_msg=f"output {i}")


@pytest.mark.parametrize("op, gates", [(ops.lstm_cell, 4), (ops.gru_cell, 3)])
def test_parallel_and_serial_gate_kernels_agree_exactly(monkeypatch, record_builds, op, gates):
    from minitrain.ops.sequence import gru, lstm

    module, factory = (lstm, "_lstm_kernels") if gates == 4 else (gru, "_gru_kernels")
    builds = record_builds(module, factory)
    arrays = _cell_arrays(gates, batch=6, inputs=5, hidden=7, dtype=np.float32)
    upstream = np.ones(arrays[1].shape, np.float32)
    results = []
    for threshold in (0, 1 << 62):
        monkeypatch.setattr(module, "GATE_PARALLEL_ELEMENTS", threshold)
        results.append(_values_and_grads(op, arrays, upstream))
    assert builds == [True, True, False, False]  # forward and gradient, each build
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("numba", [True, False], ids=["numba", "generic"])
def test_gate_math_keeps_its_limits(numba):
    # huge pre-activations give gates of exactly 0 and 1 and a tanh of +-1, never nan
    x, state, w_ih, w_hh, b_ih, b_hh = _cell_arrays(4, scale=1e4)
    with backend.use_numba(numba):
        out = ops.lstm_cell(x, state, w_ih, w_hh, b_ih, b_hh).array
        h = ops.gru_cell(x, state[0], w_ih[:15], w_hh[:15], b_ih[:15], b_hh[:15]).array
    assert np.isfinite(out).all() and np.isfinite(h).all()
    assert np.abs(out[0]).max() <= 1.0


@pytest.mark.parametrize("kernel, gates", [("lstm_cell_grad", 4), ("gru_cell_grad", 3)])
def test_cell_kernel_computes_only_what_need_asks(kernel, gates):
    x, state, w_ih, w_hh, b_ih, b_hh = _cell_arrays(gates)
    op = ops.lstm_cell if gates == 4 else ops.gru_cell
    inputs = [mt.tensor(a, requires_grad=True) for a in (x, state, w_ih, w_hh, b_ih, b_hh)]
    out = op(*inputs)
    upstream = np.ones(out.shape)
    out.backward(upstream, retain_graph=True)
    saved = out.grad_fn.saved_arrays()
    second = saved["state"] if gates == 4 else saved["h"]
    last = saved["out"] if gates == 4 else saved["hn"]
    full = getattr(ops, kernel)(upstream, x, second, w_ih, w_hh, saved["gates"], last)
    for got, want in zip(full, inputs, strict=True):
        np.testing.assert_allclose(got, want.grad.array, rtol=1e-12)
    need = (False, True, False, True, False, True)
    some = getattr(ops, kernel)(upstream, x, second, w_ih, w_hh, saved["gates"], last, need)
    assert [g is not None for g in some] == list(need)
    for got, want in zip(some, full, strict=True):
        if got is not None:
            np.testing.assert_array_equal(got, want)


def test_cell_kernel_refuses_arrays_of_another_forward():
    x, state, w_ih, w_hh, *_ = _cell_arrays(4)
    gates = np.zeros((4, 20))
    with pytest.raises(ShapeError, match=r"lstm_cell_grad: dY \(2, 4, 4\) must have shape"):
        ops.lstm_cell_grad(np.zeros((2, 4, 4)), x, state, w_ih, w_hh, gates, state)
    with pytest.raises(ShapeError, match=r"gru_cell_grad: gates \(4, 20\) must have shape"):
        ops.gru_cell_grad(state[0], x, state[0], w_ih[:15], w_hh[:15], gates, state[0])


def test_cell_op_shape_errors_name_the_op_and_shapes():
    x, state, w_ih, w_hh, b_ih, b_hh = _cell_arrays(4)
    with pytest.raises(
        ShapeError, match=r"lstm_cell: state \(2, 3, 5\) must have shape \(2, 4, 5\)"
    ):
        ops.lstm_cell(x, state[:, :3], w_ih, w_hh)
    with pytest.raises(ShapeError, match=r"lstm_cell: w_ih \(20, 2\) must be"):
        ops.lstm_cell(x, state, w_ih[:, :2], w_hh)
    with pytest.raises(ShapeError, match=r"lstm_cell: b_hh \(19,\) must have shape \(20,\)"):
        ops.lstm_cell(x, state, w_ih, w_hh, b_ih, b_hh[:19])
    with pytest.raises(ShapeError, match=r"gru_cell: w_hh \(20, 5\) must be \(3 \* hidden_size"):
        ops.gru_cell(x, state[0], w_ih[:15], w_hh)
    with pytest.raises(ShapeError, match=r"gru_cell: x \(3,\) must be \(batch, input_size\)"):
        ops.gru_cell(x[0], state[0], w_ih[:15], w_hh[:15])


# The layers' errors


@pytest.mark.parametrize("name", LAYERS)
def test_input_of_the_wrong_rank_or_size_names_the_layer_and_shapes(name):
    layer = getattr(nn, name)(FEATURES, HIDDEN)
    with pytest.raises(
        ShapeError, match=rf"^{name}: input must be 3-D .* got shape \(5, 3, 4, 1\)"
    ):
        layer(mt.tensor(np.zeros((SEQ, BATCH, FEATURES, 1), np.float32)))
    with pytest.raises(ShapeError, match=rf"^{name}: input \(5, 3, 7\) has 7 features .* "
                                         rf"input_size=4"):  # fmt: skip
        layer(mt.tensor(np.zeros((SEQ, BATCH, 7), np.float32)))
    with pytest.raises(ShapeError, match=rf"^{name}: input \(0, 3, 4\) has no time steps"):
        layer(mt.tensor(np.zeros((0, BATCH, FEATURES), np.float32)))
    with pytest.raises(DTypeError, match=rf"^{name}: input is float64 but the layer's"):
        layer(mt.tensor(np.zeros((SEQ, BATCH, FEATURES))))


@pytest.mark.parametrize("name", ["RNN", "GRU"])
def test_hidden_state_of_the_wrong_shape_names_the_layer_and_shapes(name):
    layer = getattr(nn, name)(FEATURES, HIDDEN, num_layers=2)
    x = mt.tensor(np.zeros((SEQ, BATCH, FEATURES), np.float32))
    with pytest.raises(ShapeError, match=rf"^{name}: hx \(1, 3, 6\) must have shape \(2, 3, 6\) "
                                         rf"\(num_layers \* num_directions, batch, hidden_size\) "
                                         rf"for input \(5, 3, 4\)"):  # fmt: skip
        layer(x, mt.tensor(np.zeros((1, BATCH, HIDDEN), np.float32)))
    with pytest.raises(ShapeError, match=rf"^{name}: hx \(2, 3, 6\) must have shape \(2, 6\)"):
        layer(x[:, 0], mt.tensor(np.zeros((2, BATCH, HIDDEN), np.float32)))


def test_lstm_hidden_state_errors_name_h_0_and_c_0():
    layer = nn.LSTM(FEATURES, HIDDEN, batch_first=True)
    x = mt.tensor(np.zeros((BATCH, SEQ, FEATURES), np.float32))
    good = mt.tensor(np.zeros((1, BATCH, HIDDEN), np.float32))
    bad = mt.tensor(np.zeros((1, BATCH, HIDDEN + 1), np.float32))
    with pytest.raises(ShapeError, match=r"^LSTM: c_0 \(1, 3, 7\) must have shape \(1, 3, 6\)"):
        layer(x, (good, bad))
    with pytest.raises(ShapeError, match=r"^LSTM: h_0 \(1, 3, 7\) must have shape \(1, 3, 6\)"):
        layer(x, (bad, good))
    with pytest.raises(DTypeError, match=r"^LSTM: hx must be a pair \(h_0, c_0\), got Tensor"):
        layer(x, good)
    with pytest.raises(DTypeError, match=r"^LSTM: c_0 is float64"):
        layer(x, (good, mt.tensor(np.zeros((1, BATCH, HIDDEN)))))


def test_cell_errors_name_the_cell_and_shapes():
    cell = nn.LSTMCell(FEATURES, HIDDEN)
    x = mt.tensor(np.zeros((BATCH, FEATURES), np.float32))
    h = mt.tensor(np.zeros((BATCH, HIDDEN), np.float32))
    with pytest.raises(ShapeError, match=r"^LSTMCell: input must be .* got shape \(1, 3, 4\)"):
        cell(x.unsqueeze(0))
    with pytest.raises(ShapeError, match=r"^LSTMCell: c \(2, 6\) must have shape \(3, 6\)"):
        cell(x, (h, h[:2]))
    with pytest.raises(ShapeError, match=r"^GRUCell: hx \(3, 6\) must have shape \(6,\)"):
        nn.GRUCell(FEATURES, HIDDEN)(x[0], h)
    with pytest.raises(ShapeError, match=r"^RNNCell: input must be .*input_size=4, got shape"):
        nn.RNNCell(FEATURES, HIDDEN)(mt.tensor(np.zeros((BATCH, 5), np.float32)))


def test_constructor_arguments_are_checked_as_torch_does():
    with pytest.raises(ArgumentError, match=r"^LSTM: proj_size=3 is not supported"):
        nn.LSTM(FEATURES, HIDDEN, proj_size=3)
    nn.LSTM(FEATURES, HIDDEN, proj_size=0)
    with pytest.raises(ArgumentError, match=r"^RNN: unknown nonlinearity 'gelu'"):
        nn.RNN(FEATURES, HIDDEN, nonlinearity="gelu")
    with pytest.raises(ArgumentError, match=r"^RNNCell: unknown nonlinearity 'gelu'"):
        nn.RNNCell(FEATURES, HIDDEN, nonlinearity="gelu")
    with pytest.raises(ArgumentError, match=r"^GRU: dropout must be a probability"):
        nn.GRU(FEATURES, HIDDEN, num_layers=2, dropout=1.5)
    with pytest.raises(ArgumentError, match=r"^LSTM: hidden_size must be positive, got 0"):
        nn.LSTM(FEATURES, 0)
    with pytest.raises(DTypeError, match=r"^GRU: num_layers must be an int, got 2.0"):
        nn.GRU(FEATURES, HIDDEN, num_layers=2.0)


@pytest.mark.parametrize("name", LAYERS)
def test_layers_run_on_a_device_as_on_the_cpu(cuda_device, name):
    """Each layer (two layers, bidirectional, zero initial state) and its cell, moved to the
    device, gives the CPU's output and gradients."""
    rng = np.random.default_rng(3)
    layer = getattr(nn, name)(FEATURES, HIDDEN, num_layers=2, bidirectional=True, dtype=np.float64)
    cell = getattr(nn, name + "Cell")(FEATURES, HIDDEN, dtype=np.float64)
    x = rng.standard_normal((SEQ, BATCH, FEATURES))
    results = []
    for device in ("cpu", cuda_device):
        layer.to(device), cell.to(device)
        inputs = mt.tensor(x, requires_grad=True, device=device)
        out, _ = layer(inputs)
        step = cell(inputs[0])
        step = step[0] if name == "LSTM" else step
        ((out * out).sum() + step.sum()).backward()
        assert out.device == mt.device(device)
        grads = [inputs.grad, *(p.grad for p in (*layer.parameters(), *cell.parameters()))]
        results.append([out.cpu().array] + [g.cpu().array for g in grads])
        layer.zero_grad(), cell.zero_grad()
    for ours, reference in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(ours, reference, rtol=1e-10, atol=1e-12)
