"""Whole training steps against PyTorch: an MLP (784-256-256-10, batch 128, Adam), a small CNN
(Conv-BN-ReLU-MaxPool twice, then Linear, on (64, 1, 28, 28)) and issue 34's CNN (3->32->64
Conv-BN-ReLU-MaxPool twice, then Linear, on (32, 3, 32, 32)), both with SGD and momentum:
zero_grad, forward, cross entropy, backward and the optimizer step, from the same initial weights.
Also the small CNN run's peak memory, each framework measured alone in a fresh process (see
`_peak_memory`). Alone: `python -m benchmarks.training`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

from benchmarks.common import Result, alternating_times, try_import_torch

MLP_TARGET, CNN_TARGET, CNN32_TARGET, MEMORY_TARGET = 0.8, 1.5, 1.0, 1.2  # 0.8, 1.0: issue 34
MEMORY_STEPS = 5


def _mlp(framework):
    nn = framework.nn
    return nn.Sequential(
        nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)
    )


def _cnn32(framework):
    """Issue 34's CNN: two 3x3 conv-BN-ReLU-pool stages 3->32->64 on 32x32 images, a linear head."""
    nn = framework.nn
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(64 * 8 * 8, 10),
    )


def _model(framework, kind: str):
    return {"mlp": _mlp, "cnn": _cnn, "cnn32": _cnn32}[kind](framework)


def _cnn(framework):
    nn = framework.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 7 * 7, 10),
    )


def _data(kind: str):
    rng = np.random.default_rng(0)
    shape = {"mlp": (128, 784), "cnn": (64, 1, 28, 28), "cnn32": (32, 3, 32, 32)}[kind]
    return rng.standard_normal(shape, dtype=np.float32), rng.integers(0, 10, shape[0])


def minitrain_step(kind: str, device: str = "cpu", compiled: bool = False):
    """minitrain's model of `kind` ('mlp', 'cnn' or 'cnn32') on `device` and its training step
    on the benchmark's batch, moved there once; the model called through minitrain.compile
    where `compiled`."""
    import minitrain as mt

    mt.manual_seed(0)
    model = _model(mt, kind).to(device)
    call = mt.compile(model) if compiled else model
    if kind == "mlp":
        optimizer = mt.optim.Adam(model.parameters(), lr=1e-3)
    else:
        optimizer = mt.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    inputs, labels = _data(kind)
    x, y = mt.tensor(inputs, device=device), mt.tensor(labels, device=device)
    loss_fn = mt.nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad()
        loss_fn(call(x), y).backward()
        optimizer.step()

    return model, step


def torch_step(kind: str, weights_from=None, device: str = "cpu"):
    """PyTorch's twin of minitrain_step (from `weights_from`'s weights, where given)."""
    import torch

    model = _model(torch, kind)
    if weights_from is not None:  # the same initial weights as minitrain's model
        with torch.no_grad():
            for p, q in zip(weights_from.parameters(), model.parameters(), strict=True):
                q.copy_(torch.from_numpy(p.detach().cpu().numpy()))
    model.to(device)
    if kind == "mlp":
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    inputs, labels = _data(kind)
    x, y = torch.from_numpy(inputs).to(device), torch.from_numpy(labels).to(device)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

    return step


def _peak_memory(framework: str) -> int:
    """Bytes by which the process's resident memory peaks above its level after a warm-up step,
    over MEMORY_STEPS more CNN steps, in a fresh process of its own. Linux resets the peak
    (VmHWM) when 5 is written to /proc/self/clear_refs; the warm-up has already paid for
    imports, compilation and the allocators' first growth, in either framework."""
    code = (
        "import json, sys; sys.path.insert(0, '.');"
        "from benchmarks.training import _measure_in_process;"
        f"print(json.dumps(_measure_in_process({framework!r})))"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def _measure_in_process(framework: str) -> int:
    step = minitrain_step("cnn")[1] if framework == "minitrain" else torch_step("cnn")
    step()
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    baseline = _status_kib("VmRSS")
    for _ in range(MEMORY_STEPS):
        step()
    return (_status_kib("VmHWM") - baseline) * 1024


# (kind, target, row name after "train step ", calls a round, rounds)
ROWS = (
    ("mlp", MLP_TARGET, "MLP 784-256-256-10 b128 Adam", 20, 7),
    ("cnn", CNN_TARGET, "CNN (64,1,28,28) SGD momentum", 5, 7),
    ("cnn32", CNN32_TARGET, "CNN (32,3,32,32) 3->32->64 SGD momentum", 4, 7),
)


def run() -> list[Result]:
    torch = try_import_torch()
    results = []
    for kind, target, name, number, rounds in ROWS:
        model, ours = minitrain_step(kind)
        steps = [ours] if torch is None else [ours, torch_step(kind, weights_from=model)]
        times = alternating_times(steps, number=number, rounds=rounds)
        results.append(
            Result(
                f"train step {name}",
                times[0],
                times[1] if torch else None,
                per="step",
                target=target,
                round_ratios=times.ratios_if_pair(),
            )
        )
    if torch is not None and os.path.exists("/proc/self/clear_refs"):
        results.append(
            Result(
                "CNN training peak memory above warm-up",
                _peak_memory("minitrain"),
                _peak_memory("torch"),
                per=f"{MEMORY_STEPS} steps",
                target=MEMORY_TARGET,
                unit="MiB",
            )
        )
    return results


if __name__ == "__main__":
    from benchmarks.common import print_table

    print_table(run())
