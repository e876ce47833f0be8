"""Training steps with the model called through minitrain.compile, against PyTorch eager (issue
35's rows): the MLP of benchmarks.training, the tiny GPT of benchmarks.char_lm, the transformer
block of benchmarks.transformer and the LSTM of benchmarks.recurrent, each built by the same
code as its eager row, from the same weights. Three steps are timed in alternating rounds:
minitrain compiled, PyTorch eager and minitrain eager; the row's ratio is compiled over PyTorch,
its note the compiled step over minitrain's eager one, and what the capture cost: the first two
calls, which run eagerly while they record (capture/compiled.py). torch.compile is not timed:
its first call compiles C++ for tens of seconds. Alone: `python -m benchmarks.compiled`."""

from __future__ import annotations

import time

from benchmarks import char_lm, recurrent, training, transformer
from benchmarks.common import Result, alternating_times, median, try_import_torch

# issue 35's targets, compiled over PyTorch eager (the LSTM has none: at least eager's speed)
MLP_TARGET, GPT_TARGET, BLOCK_TARGET = 0.5, 0.6, 0.5


def _mlp(torch, compiled):
    model, step = training.minitrain_step("mlp", compiled=compiled)
    theirs = None if torch is None or compiled else training.torch_step("mlp", weights_from=model)
    return step, theirs


def _gpt(torch, compiled):
    ours, theirs, _, _ = char_lm.training_steps(
        None if compiled else torch, compiled=compiled, layers=2, batch=16
    )
    return ours, theirs


def _block(torch, compiled):
    ours, theirs, _ = transformer.training_steps(None if compiled else torch, compiled=compiled)
    return ours, theirs


def _lstm(torch, compiled):
    weights, ours = recurrent._minitrain_step("LSTM", compiled=compiled)
    theirs = None if torch is None or compiled else recurrent._torch_step("LSTM", weights)
    return ours, theirs


# (row name, the steps' maker, target, calls a round, rounds)
ROWS = (
    ("MLP 784-256-256-10 b128 Adam", _mlp, MLP_TARGET, 20, 7),
    ("char LM GPT 2x128, T=64, b16", _gpt, GPT_TARGET, 4, 7),
    ("transformer block d=256 T=128 b16 AdamW", _block, BLOCK_TARGET, 2, 7),
    ("LSTM 2x256 T64 b32 Adam", _lstm, None, 2, 7),
)


def _capture_cost(step) -> float:
    """Seconds of the compiled step's first two calls together: both run eagerly, recording."""
    start = time.perf_counter()
    step()
    step()
    return time.perf_counter() - start


def run(rows=ROWS) -> list[Result]:
    torch = try_import_torch()
    results = []
    for name, make, target, number, rounds in rows:
        compiled_step, _ = make(torch, compiled=True)
        capture = _capture_cost(compiled_step)
        eager_step, torch_step = make(torch, compiled=False)
        steps = [compiled_step, eager_step] + ([torch_step] if torch_step else [])
        times = alternating_times(steps, number=number, rounds=rounds)
        over_eager = median(times.ratios(0, 1))
        note = (
            f"minitrain eager {times[1] * 1e3:.2f} ms a step, compiled / eager {over_eager:.2f}; "
            f"capture (the first two calls, eager) {capture * 1e3:.0f} ms"
        )
        ratios = times.ratios(0, 2) if torch_step else None
        results.append(
            Result(
                f"compiled: train step {name}",
                times[0],
                times[2] if torch_step else None,
                per="step",
                target=target,
                note=note,
                round_ratios=ratios,
            )
        )
    return results


if __name__ == "__main__":
    from benchmarks.common import print_table

    print_table(run())
