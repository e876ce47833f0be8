"""Per-op overhead: a chain of 100 elementwise ops on a 4x4 tensor, forward plus backward,
against PyTorch eager in the same process. At this size the arithmetic is negligible, so the
number is the framework's own cost per recorded op. Alone: `python -m benchmarks.overhead`."""

from __future__ import annotations

import numpy as np

from benchmarks.common import Result, alternating_times, try_import_torch

CHAIN = 100
TARGET = 0.8  # issue 34: a recorded op at most 0.8 of PyTorch's cost


def _chain(x, constant):
    y = x
    for _ in range(CHAIN // 4):
        y = y * constant
        y = y + constant
        y = y - constant
        y = y / constant
    return y


def run() -> list[Result]:
    import minitrain as mt

    data = np.random.default_rng(0).random((4, 4), dtype=np.float32) + 0.5
    constant = np.full((4, 4), 1.01, dtype=np.float32)

    def step_minitrain():
        x = mt.Tensor(data, requires_grad=True)
        _chain(x, mt.Tensor(constant)).sum().backward()

    ops_per_step = CHAIN + 1  # the chain and the final sum
    torch = try_import_torch()
    round_ratios = None
    if torch is None:
        (minitrain_s,) = alternating_times([step_minitrain], number=200)
        torch_s = None
    else:
        torch_constant = torch.from_numpy(constant)

        def step_torch():
            x = torch.tensor(data, requires_grad=True)
            _chain(x, torch_constant).sum().backward()

        times = alternating_times([step_minitrain, step_torch], number=200)
        minitrain_s, torch_s = times
        round_ratios = times.ratios()
        torch_s /= ops_per_step
    minitrain_s /= ops_per_step
    return [
        Result(
            "overhead: 100-op chain on 4x4, fwd+bwd",
            minitrain_s,
            torch_s,
            per="op",
            target=TARGET,
            round_ratios=round_ratios,
        )
    ]


if __name__ == "__main__":
    from benchmarks.common import print_table

    print_table(run())
