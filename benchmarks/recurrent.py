"""An LSTM training step against PyTorch: 2 layers, input and hidden size 256, 64 time steps,
batch 32, float32, a linear head on every step's output and cross entropy over 10 classes, Adam:
zero_grad, forward, loss, backward and the optimizer step, from the same initial weights. Also
the same step with minitrain's numba gate kernels off (the numpy gate math), and PyTorch's
without oneDNN (its composed per-step LSTM), to show what each costs. Alone:
`python -m benchmarks.recurrent`."""

from __future__ import annotations

import numpy as np

from benchmarks.common import Result, best_times, try_import_torch

STEPS, BATCH, FEATURES, HIDDEN, LAYERS, CLASSES = 64, 32, 256, 256, 2, 10
TARGET = 1.5


def _data():
    rng = np.random.default_rng(0)
    inputs = rng.standard_normal((STEPS, BATCH, FEATURES), dtype=np.float32)
    return inputs, rng.integers(0, CLASSES, STEPS * BATCH)


def _model(framework):
    nn = framework.nn
    return nn.LSTM(FEATURES, HIDDEN, LAYERS), nn.Linear(HIDDEN, CLASSES)


def _minitrain_step():
    import minitrain as mt

    mt.manual_seed(0)
    lstm, head = _model(mt)
    optimizer = mt.optim.Adam([*lstm.parameters(), *head.parameters()], lr=1e-3)
    inputs, labels = _data()
    x = mt.Tensor(inputs)

    def step():
        optimizer.zero_grad()
        output, _ = lstm(x)
        logits = head(output).reshape(STEPS * BATCH, CLASSES)
        mt.nn.functional.cross_entropy(logits, labels).backward()
        optimizer.step()

    return (lstm, head), step


def _torch_step(weights_from):
    import torch

    lstm, head = _model(torch)
    with torch.no_grad():  # the same initial weights as minitrain's model
        for ours, theirs in zip(weights_from, (lstm, head), strict=True):
            for p, q in zip(ours.parameters(), theirs.parameters(), strict=True):
                q.copy_(torch.from_numpy(p.data))
    optimizer = torch.optim.Adam([*lstm.parameters(), *head.parameters()], lr=1e-3)
    inputs, labels = _data()
    x, y = torch.from_numpy(inputs), torch.from_numpy(labels)

    def step():
        optimizer.zero_grad()
        output, _ = lstm(x)
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


def run() -> list[Result]:
    torch = try_import_torch()
    model, ours = _minitrain_step()
    steps = [ours, _without_numba(ours)]
    if torch is not None:
        theirs = _torch_step(model)
        steps += [theirs, _without_onednn(torch, theirs)]
    times = best_times(steps, number=2, repeat=5)
    name = f"train step LSTM {LAYERS}x{HIDDEN} T{STEPS} b{BATCH} Adam"
    torch_s = times[2] if torch else None
    note = f"gate math without numba: {times[1] * 1e3:.1f} ms"
    if torch is not None:
        note += f"; torch without oneDNN: {times[3] * 1e3:.1f} ms"
    return [Result(name, times[0], torch_s, per="step", target=TARGET, note=note)]


if __name__ == "__main__":
    from benchmarks.common import print_table

    print_table(run())
