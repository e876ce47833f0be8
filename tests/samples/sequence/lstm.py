"""Samples of ops/sequence/lstm.py: lstm_cell and lstm_sequence against PyTorch's cell."""

from __future__ import annotations

from op_samples import Sample
from reference import torch
from samples.sequence.recurrent_common import cell_sample, given_gates_sample, sequence_sample

from minitrain import ops


def _torch_lstm_cell(x, state, *weights):
    """torch.lstm_cell's (h, c) stacked as minitrain's state, h over c."""
    return torch.stack(torch.lstm_cell(x, (state[0], state[1]), *weights))


def _lstm(name, batch=3, inputs=4, hidden=5, **kw) -> Sample:
    return cell_sample(name, ops.lstm_cell, _torch_lstm_cell, 4, batch, inputs, hidden, (2,), **kw)


def _lstm_sequence(name, **kw) -> Sample:
    return sequence_sample(name, ops.lstm_sequence, _torch_lstm_cell, 4, (2,), **kw)


SAMPLES: dict[str, list[Sample]] = {
    "lstm_cell": [
        _lstm("batch"),
        _lstm("no_bias", bias=False),
        _lstm("batch_of_one", batch=1, inputs=3, hidden=2),
        _lstm("frozen_weights", grad=(0, 1)),
        _lstm("weights_only", grad=(2, 3, 4, 5)),
        given_gates_sample("given_input_gates", ops.lstm_cell, _torch_lstm_cell, 4, (2,)),
    ],
    "lstm_sequence": [
        _lstm_sequence("forwards"),
        _lstm_sequence("reverse", reverse=True),
        _lstm_sequence("no_bias", bias=False),
        _lstm_sequence("one_step", steps=1),
        _lstm_sequence("frozen_weights", grad=(0, 1)),
        _lstm_sequence("weights_only", grad=(2, 3)),
    ],
}
