"""An LSTM and a GRU training step against PyTorch: 2 layers, input and hidden size 256, 64 time
steps, batch 32, float32, a linear head on every step's output and cross entropy over 10 classes,
Adam: zero_grad, forward, loss, backward and the optimizer step, from the same initial weights.
Also the same step with minitrain's numba gate kernels off (the numpy gate math), and PyTorch's
without oneDNN (its composed per-step cell), to show what each costs. The rows keep the cells'
numba gate kernels (lstm_cell's and gru_cell's `numba_bench`). And issue 34's LSTM alone: 2
layers, input 64, hidden 256, 64 steps, batch 32, forward plus the backward of the sum of its
outputs (gradients of the input and every weight), no optimizer. Alone:
`python -m benchmarks.recurrent` (or `... recurrent LSTM`, `GRU`, `fwd+bwd` for some rows)."""

from __future__ import annotations

import numpy as np

from benchmarks.common import Result, alternating_times, try_import_torch

STEPS, BATCH, FEATURES, HIDDEN, LAYERS, CLASSES = 64, 32, 256, 256, 2, 10
TARGET = 1.5
CELLS = ("LSTM", "GRU")  # a row each
SEQUENCE_ROW = "fwd+bwd"  # issue 34's LSTM row
LSTM_INPUTS, LSTM_TARGET = 64, 1.0


def _data():
    rng = np.random.default_rng(0)
    inputs = rng.standard_normal((STEPS, BATCH, FEATURES), dtype=np.float32)
    return inputs, rng.integers(0, CLASSES, STEPS * BATCH)


def _model(framework, cell: str):
    nn = framework.nn
    return getattr(nn, cell)(FEATURES, HIDDEN, LAYERS), nn.Linear(HIDDEN, CLASSES)


def _minitrain_step(cell: str, compiled: bool = False):
    """((rnn, head), minitrain's training step); the forward through minitrain.compile where
    `compiled`."""
    import minitrain as mt

    mt.manual_seed(0)
    rnn, head = _model(mt, cell)
    optimizer = mt.optim.Adam([*rnn.parameters(), *head.parameters()], lr=1e-3)
    inputs, labels = _data()
    x = mt.Tensor(inputs)

    def forward(x):
        output, _ = rnn(x)
        return head(output).reshape(STEPS * BATCH, CLASSES)

    call = mt.compile(forward) if compiled else forward

    def step():
        optimizer.zero_grad()
        mt.nn.functional.cross_entropy(call(x), labels).backward()
        optimizer.step()

    return (rnn, head), step


def _torch_step(cell: str, weights_from):
    import torch

    rnn, head = _model(torch, cell)
    with torch.no_grad():  # the same initial weights as minitrain's model
        for ours, theirs in zip(weights_from, (rnn, head), strict=True):
            for p, q in zip(ours.parameters(), theirs.parameters(), strict=True):
                q.copy_(torch.from_numpy(p.array))
    optimizer = torch.optim.Adam([*rnn.parameters(), *head.parameters()], lr=1e-3)
    inputs, labels = _data()
    x, y = torch.from_numpy(inputs), torch.from_numpy(labels)

    def step():
        optimizer.zero_grad()
        output, _ = rnn(x)
        logits = head(output).reshape(STEPS * BATCH, CLASSES)
        torch.nn.functional.cross_entropy(logits, y).backward()
        optimizer.step()

    return step


def _without_numba(step):
    from minitrain import backend

    def plain():
        with backend.use_numba(False):
            step()

    return plain


def _without_onednn(torch, step):
    def plain():
        with torch.backends.mkldnn.flags(enabled=False):
            step()

    return plain


def _run_cell(torch, cell: str) -> Result:
    """The row `train step <cell> ...`: minitrain's step against PyTorch's, with numba and oneDNN
    off in the note."""
    model, ours = _minitrain_step(cell)
    steps = [ours, _without_numba(ours)]
    if torch is not None:
        theirs = _torch_step(cell, model)
        steps += [theirs, _without_onednn(torch, theirs)]
    times = alternating_times(steps, number=2, rounds=5)
    name = f"train step {cell} {LAYERS}x{HIDDEN} T{STEPS} b{BATCH} Adam"
    torch_s = times[2] if torch else None
    note = f"gate math without numba: {times[1] * 1e3:.1f} ms"
    if torch is not None:
        note += f"; torch without oneDNN: {times[3] * 1e3:.1f} ms"
    ratios = times.ratios(0, 2) if torch is not None else None
    return Result(
        name, times[0], torch_s, per="step", target=TARGET, note=note, round_ratios=ratios
    )


def _lstm_sequence(torch) -> Result:
    """The row `LSTM 2x256 in64 T64 b32 fwd+bwd`: forward, then backward of the outputs' sum."""
    import minitrain as mt

    rng = np.random.default_rng(0)
    inputs = rng.standard_normal((STEPS, BATCH, LSTM_INPUTS), dtype=np.float32)
    mt.manual_seed(0)
    ours = mt.nn.LSTM(LSTM_INPUTS, HIDDEN, LAYERS)

    def minitrain_step():
        x = mt.Tensor(inputs, requires_grad=True)
        ours.zero_grad()
        ours(x)[0].sum().backward()

    steps = [minitrain_step]
    if torch is not None:
        theirs = torch.nn.LSTM(LSTM_INPUTS, HIDDEN, LAYERS)
        with torch.no_grad():  # the same weights
            for p, q in zip(ours.parameters(), theirs.parameters(), strict=True):
                q.copy_(torch.from_numpy(p.array))

        def torch_step():
            x = torch.from_numpy(inputs).requires_grad_()
            theirs.zero_grad()
            theirs(x)[0].sum().backward()

        steps.append(torch_step)
    times = alternating_times(steps, number=3, rounds=7)
    return Result(
        f"LSTM {LAYERS}x{HIDDEN} in{LSTM_INPUTS} T{STEPS} b{BATCH} fwd+bwd",
        times[0],
        times[1] if torch is not None else None,
        target=LSTM_TARGET,
        round_ratios=times.ratios_if_pair(),
    )


def run(rows=(*CELLS, SEQUENCE_ROW)) -> list[Result]:
    torch = try_import_torch()
    results = [_run_cell(torch, cell) for cell in rows if cell in CELLS]
    if SEQUENCE_ROW in rows:
        results.append(_lstm_sequence(torch))
    return results


if __name__ == "__main__":
    import sys

    from benchmarks.common import print_table

    # e.g. `python -m benchmarks.recurrent GRU`
    print_table(run(tuple(sys.argv[1:]) or (*CELLS, SEQUENCE_ROW)))
