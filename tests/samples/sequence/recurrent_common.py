"""The fused recurrent cells' sample helpers, shared by the samples of ops/sequence/lstm.py and
gru.py (which share ops/sequence/recurrent_common.py): a cell sample, and a cell given the input's
gates."""

from __future__ import annotations

from op_samples import Sample, draws, normal, uniform
from reference import torch


def cell_sample(name, call, ref, gates, batch, inputs, hidden, state_lead, bias=True, grad=None):
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


def given_gates_sample(name, call, torch_cell, gates, state_lead, batch=3, hidden=5) -> Sample:
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


def sequence_sample(name, call, torch_cell, gates, state_lead, steps=3, batch=2, hidden=3,
                    bias=True, reverse=False, grad=None) -> Sample:  # fmt: skip
    """A whole-sequence op (input gates of every step, the initial state, w_hh, b_hh): PyTorch's
    twin runs its cell step by step over the given gates (an identity w_ih), stacking every
    step's state in time order, the steps run backwards where `reverse`."""
    size = gates * hidden

    def ours(input_gates, state, w_hh, b_hh=None):
        return call(input_gates, state, w_hh, b_hh, reverse=reverse)

    def theirs(input_gates, state, w_hh, b_hh=None):
        identity = torch.eye(size, dtype=input_gates.dtype)
        run = [None] * steps
        for t in range(steps - 1, -1, -1) if reverse else range(steps):
            state = torch_cell(input_gates[t], state, identity, w_hh, None, b_hh)
            run[t] = state
        return torch.stack(run)

    weights = (uniform(-0.6, 0.6, size, hidden),) + ((normal(size),) if bias else ())
    return Sample(
        name,
        draws(normal(steps, batch, size), normal(*state_lead, batch, hidden), *weights),
        ours,
        theirs,
        grad=grad,
    )
