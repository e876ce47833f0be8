"""einsum against PyTorch's in the same process: attention scores 'bhqd,bhkd->bhqk' (b=8, h=4,
q=k=64, d=32, float32), forward plus backward to both operands, each framework's work included
(recording, the backward walk, the leaf gradients). Alone: `python -m benchmarks.einsum`."""

from __future__ import annotations

import numpy as np

from benchmarks.common import Result, alternating_times, try_import_torch

EQUATION = "bhqd,bhkd->bhqk"
BATCH, HEADS, LENGTH, WIDTH = 8, 4, 64, 32
TARGET_RATIO = 1.5


def run() -> list[Result]:
    import minitrain as mt

    rng = np.random.default_rng(0)
    shape = (BATCH, HEADS, LENGTH, WIDTH)
    queries = rng.standard_normal(shape, dtype=np.float32)
    keys = rng.standard_normal(shape, dtype=np.float32)
    upstream = rng.standard_normal((BATCH, HEADS, LENGTH, LENGTH), dtype=np.float32)

    def minitrain_step():
        q = mt.Tensor(queries, requires_grad=True)
        k = mt.Tensor(keys, requires_grad=True)
        mt.einsum(EQUATION, q, k).backward(upstream)

    steps = [minitrain_step]
    torch = try_import_torch()
    if torch is not None:
        torch_upstream = torch.from_numpy(upstream)

        def torch_step():
            q = torch.from_numpy(queries).requires_grad_()
            k = torch.from_numpy(keys).requires_grad_()
            torch.einsum(EQUATION, q, k).backward(torch_upstream)

        steps.append(torch_step)
    times = alternating_times(steps, number=20)
    return [
        Result(
            f"einsum {EQUATION} {BATCH}x{HEADS}x{LENGTH}x{WIDTH} fwd+bwd",
            times[0],
            times[1] if len(times) > 1 else None,
            round_ratios=times.ratios_if_pair(),
            target=TARGET_RATIO,
        )
    ]


if __name__ == "__main__":
    from benchmarks.common import print_table

    print_table(run())
