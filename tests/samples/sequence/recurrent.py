"""Samples of ops/sequence/recurrent.py: lstm_cell and gru_cell against PyTorch's."""

from __future__ import annotations

from op_samples import Sample, draws, normal, uniform
from reference import torch

from minitrain import ops


def _torch_lstm_cell(x, state, *weights):
    """torch.lstm_cell's (h, c) stacked as minitrain's state, h over c."""
    return torch.stack(torch.lstm_cell(x, (state[0], state[1]), *weights))


def _torch_gru_cell(x, h, *weights):
    return torch.gru_cell(x, h, *weights)


def _cell(name, call, ref, gates, batch, inputs, hidden, state_lead, bias=True, grad=None):
    """A cell sample: x (batch, inputs), the state, weights in U(-0.6, 0.6) (gates off their
    flat ends) and normal biases, or no biases."""
    size = gates * hidden
    weights = (uniform(-0.6, 0.6, size, inputs), uniform(-0.6, 0.6, size, hidden))
    biases = (normal(size), normal(size)) if bias else ()
    return Sample(
        name,
        draws(normal(batch, inputs), normal(*state_lead, batch, hidden), *weights, *biases),
        call,
        ref,
        grad=grad,
    )


def _given_gates(name, call, torch_cell, gates, state_lead, batch=3, hidden=5) -> Sample:
    """A cell given the input's gates (w_ih None): PyTorch's twin multiplies them by an identity
    w_ih."""
    size = gates * hidden

    def ours(input_gates, state, w_hh, b_hh):
        return call(input_gates, state, None, w_hh, None, b_hh)

    def theirs(input_gates, state, w_hh, b_hh):
        identity = torch.eye(size, dtype=input_gates.dtype)
        return torch_cell(input_gates, state, identity, w_hh, None, b_hh)

    return Sample(
        name,
        draws(
            normal(batch, size),
            normal(*state_lead, batch, hidden),
            uniform(-0.6, 0.6, size, hidden),
            normal(size),
        ),  # fmt: skip
        ours,
        theirs,
    )


def _lstm(name, batch=3, inputs=4, hidden=5, **kw) -> Sample:
    return _cell(name, ops.lstm_cell, _torch_lstm_cell, 4, batch, inputs, hidden, (2,), **kw)


def _gru(name, batch=3, inputs=4, hidden=5, **kw) -> Sample:
    return _cell(name, ops.gru_cell, _torch_gru_cell, 3, batch, inputs, hidden, (), **kw)


SAMPLES: dict[str, list[Sample]] = {
    "lstm_cell": [
        _lstm("batch"),
        _lstm("no_bias", bias=False),
        _lstm("batch_of_one", batch=1, inputs=3, hidden=2),
        _lstm("frozen_weights", grad=(0, 1)),
        _lstm("weights_only", grad=(2, 3, 4, 5)),
        _given_gates("given_input_gates", ops.lstm_cell, _torch_lstm_cell, 4, (2,)),
    ],
    "gru_cell": [
        _gru("batch"),
        _gru("no_bias", bias=False),
        _gru("batch_of_one", batch=1, inputs=3, hidden=2),
        _gru("frozen_weights", grad=(0, 1)),
        _gru("weights_only", grad=(2, 3, 4, 5)),
        _given_gates("given_input_gates", ops.gru_cell, _torch_gru_cell, 3, ()),
    ],
}
