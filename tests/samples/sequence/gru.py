"""Samples of ops/sequence/gru.py: gru_cell and gru_sequence against PyTorch's cell."""

from __future__ import annotations

from op_samples import Sample
from reference import torch
from samples.sequence.recurrent_common import cell_sample, given_gates_sample, sequence_sample

from minitrain import ops


def _torch_gru_cell(x, h, *weights):
    return torch.gru_cell(x, h, *weights)


def _gru(name, batch=3, inputs=4, hidden=5, **kw) -> Sample:
    return cell_sample(name, ops.gru_cell, _torch_gru_cell, 3, batch, inputs, hidden, (), **kw)


def _gru_sequence(name, **kw) -> Sample:
    return sequence_sample(name, ops.gru_sequence, _torch_gru_cell, 3, (), **kw)


SAMPLES: dict[str, list[Sample]] = {
    "gru_cell": [
        _gru("batch"),
        _gru("no_bias", bias=False),
        _gru("batch_of_one", batch=1, inputs=3, hidden=2),
        _gru("frozen_weights", grad=(0, 1)),
        _gru("weights_only", grad=(2, 3, 4, 5)),
        given_gates_sample("given_input_gates", ops.gru_cell, _torch_gru_cell, 3, ()),
    ],
    "gru_sequence": [
        _gru_sequence("forwards"),
        _gru_sequence("reverse", reverse=True),
        _gru_sequence("no_bias", bias=False),
        _gru_sequence("one_step", steps=1),
        _gru_sequence("frozen_weights", grad=(0, 1)),
        _gru_sequence("weights_only", grad=(2, 3)),
    ],
}
