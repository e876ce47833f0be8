"""Cold start: a fresh Python process that imports the framework, builds the character language
model of examples/train_char_lm.py at a small size (2 blocks of width 128, context 64, batch 16)
and trains it; the time from before the framework's import to the end of the first training step,
and to the end of the first STEPS steps, against a process doing the same with PyTorch's import
and the same model in PyTorch (benchmarks/char_lm.py's twin). minitrain's process gets an empty
numba cache (NUMBA_CACHE_DIR pointed at a new temporary directory), as on a fresh machine: its
kernels compile in a background process while the ops run their generic kernels
(minitrain/runtime/background_compile.py; the child waits for that process, untimed, before it
ends, so that it does not run beside the next measurement). The note gives the same process on a
warm cache, one that a run compiling every kernel at its first call filled. In both processes the
clock starts before any import (numpy's included) and the model trains on the same random tokens.
Alone: `python -m benchmarks.cold_start`."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from benchmarks.common import QUIET_S, Result, Timings, median, try_import_torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS, ROUNDS, VOCABULARY = 20, 3, 100
SIZES = {"layers": 2, "width": 128, "heads": 4, "context": 64, "batch": 16}
TARGET = 1.0  # issue 34: a first run no slower than PyTorch's import plus first step

# The child process: seconds from before the import to the end of step 1 and of step STEPS.
_CHILD = """
import time
start = time.perf_counter()
import sys
sys.path[:0] = [{root!r}, {examples!r}]
import numpy as np
framework, sizes, steps, vocabulary = {framework!r}, {sizes!r}, {steps}, {vocabulary}
rng = np.random.default_rng(0)
windows = rng.integers(0, vocabulary, (steps, sizes["batch"], sizes["context"] + 1))
if framework == "minitrain":
    import minitrain as mt
    import train_char_lm as example
    config = example.Config(**sizes)
    mt.manual_seed(0)
    model = example.build_model(vocabulary, config)
    optimizer = example.make_optimizer(model, config)

    def step(window):
        optimizer.zero_grad()
        example.loss_of(model, window[:, :-1], window[:, 1:]).backward()
        mt.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
        optimizer.step()
else:
    import types
    import torch
    from benchmarks.char_lm import _torch_gpt
    config = types.SimpleNamespace(norm="rms", clip=1.0, **sizes)
    torch.manual_seed(0)
    model = _torch_gpt(torch, vocabulary, config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.99))

    def step(window):
        optimizer.zero_grad()
        x, y = torch.from_numpy(window[:, :-1]), torch.from_numpy(window[:, 1:])
        logits = model(x)
        torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), y.reshape(-1)
        ).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
        optimizer.step()

times = []
for window in windows:
    step(window)
    times.append(time.perf_counter() - start)
print(times[0], times[-1], flush=True)
if framework == "minitrain":  # untimed: the compile process's work done before the next run
    from minitrain.runtime import background_compile
    background_compile.wait_for_kernels()
"""


def child_code(framework: str) -> str:
    """The program a child process runs for `framework` ('minitrain' or 'torch')."""
    return _CHILD.format(
        root=ROOT,
        examples=os.path.join(ROOT, "examples"),
        framework=framework,
        sizes=SIZES,
        steps=STEPS,
        vocabulary=VOCABULARY,
    )


def time_child(framework: str, numba_cache: str, background: bool = True) -> tuple[float, float]:
    """(seconds to the end of the first step, to the end of step STEPS) in a fresh process;
    minitrain's compiles its kernels in the background unless `background` is False."""
    time.sleep(QUIET_S)
    env = {**os.environ, "NUMBA_CACHE_DIR": numba_cache}
    env["MINITRAIN_COMPILE_IN_BACKGROUND"] = "1" if background else "0"
    done = subprocess.run(
        [sys.executable, "-c", child_code(framework)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise RuntimeError(f"cold start ({framework}) failed:\n{done.stderr[-2000:]}")
    first, last = map(float, done.stdout.split()[-2:])
    return first, last


def run() -> list[Result]:
    torch = try_import_torch()
    first = [[], []]  # [minitrain's rounds, torch's rounds]
    all_steps = [[], []]
    with tempfile.TemporaryDirectory(prefix="minitrain-cold-") as scratch:
        for round_index in range(ROUNDS):
            cache = os.path.join(scratch, f"numba-{round_index}")  # empty: numba compiles all
            order = ["minitrain", "torch"] if torch is not None else ["minitrain"]
            if round_index % 2:
                order.reverse()
            for framework in order:
                i = 0 if framework == "minitrain" else 1
                one, many = time_child(framework, cache)
                first[i].append(one)
                all_steps[i].append(many)
        # the warm figure: a run that compiles every kernel the step uses at its first call
        # fills the cache (a cold run compiles only what it reached), then a run on that cache
        time_child("minitrain", cache, background=False)
        warm_first, warm_many = time_child("minitrain", cache)
    rows = []
    size = f"char LM {SIZES['layers']}x{SIZES['width']} T{SIZES['context']} b{SIZES['batch']}"
    for label, per_round, warm in (
        ("first step", first, warm_first),
        (f"first {STEPS} steps", all_steps, warm_many),
    ):
        timings = Timings(per_round if torch is not None else per_round[:1])
        note = f"warm numba cache: minitrain {warm:.2f} s"
        if torch is not None:
            warm_ratios = [warm / seconds for seconds in per_round[1]]
            note += f", {median(warm_ratios):.2f} of PyTorch's"
        result = Result(
            f"cold start: import + {label}, {size}",
            timings[0],
            timings[1] if torch is not None else None,
            per="run",
            target=TARGET,
            note=note,
            round_ratios=timings.ratios_if_pair(),
        )
        rows.append(result)
    return rows


if __name__ == "__main__":
    from benchmarks.common import print_table

    print_table(run())
