"""GELU forward plus backward on (16, 64, 512) float32, exact and tanh forms, against PyTorch in
the same process: the transformer block's activation (batch 16, context 64, MLP width 512). Both
sides include the framework's work: recording, the backward walk and the leaf's gradient."""

from __future__ import annotations

import numpy as np

from benchmarks.common import Result, alternating_times, try_import_torch

SHAPE = (16, 64, 512)
TARGET_RATIO = 1.0
FORMS = ("none", "tanh")


def _steps(torch, approximate: str) -> list:
    """[minitrain's step, PyTorch's step when it is installed] for one form of gelu."""
    import minitrain as mt
    from minitrain import ops

    rng = np.random.default_rng(0)
    inputs = rng.standard_normal(SHAPE, dtype=np.float32)
    upstream = rng.standard_normal(SHAPE, dtype=np.float32)

    def minitrain_step():
        x = mt.Tensor(inputs, requires_grad=True)
        ops.gelu(x, approximate=approximate).backward(upstream)

    if torch is None:
        return [minitrain_step]
    torch_upstream = torch.from_numpy(upstream)

    def torch_step():
        x = torch.from_numpy(inputs).requires_grad_()
        torch.nn.functional.gelu(x, approximate=approximate).backward(torch_upstream)

    return [minitrain_step, torch_step]


def run() -> list[Result]:
    torch = try_import_torch()
    results = []
    for approximate in FORMS:
        times = alternating_times(_steps(torch, approximate), number=20)
        form = "exact" if approximate == "none" else "tanh"
        results.append(
            Result(
                f"gelu ({form}) {'x'.join(map(str, SHAPE))} fwd+bwd",
                times[0],
                times[1] if len(times) > 1 else None,
                round_ratios=times.ratios_if_pair(),
                target=TARGET_RATIO,
            )
        )
    return results


if __name__ == "__main__":
    from benchmarks.common import print_table

    print_table(run())
