"""Softmax cross entropy on a (4096, 1000) float32 batch, forward plus backward, against PyTorch in
the same process: the fused cross_entropy (minitrain's numba kernels on the CPU), and softmax on
its own. Both include the framework's work: recording, the backward walk, and the leaf gradient."""

from __future__ import annotations

import numpy as np

from benchmarks.common import Result, alternating_times, try_import_torch

ROWS, CLASSES = 4096, 1000
TARGET_RATIO = 1.2


def run() -> list[Result]:
    import minitrain as mt
    from minitrain import ops

    rng = np.random.default_rng(0)
    logits = rng.standard_normal((ROWS, CLASSES), dtype=np.float32)
    labels = rng.integers(0, CLASSES, ROWS)
    upstream = rng.standard_normal((ROWS, CLASSES), dtype=np.float32)

    def xent_minitrain():
        x = mt.Tensor(logits, requires_grad=True)
        ops.cross_entropy(x, labels).backward()

    def softmax_minitrain():
        x = mt.Tensor(logits, requires_grad=True)
        ops.softmax(x, dim=1).backward(upstream)

    # name -> [minitrain's step, PyTorch's step when it is installed]
    steps = {"cross_entropy": [xent_minitrain]}
    if hasattr(ops, "softmax"):
        steps["softmax"] = [softmax_minitrain]

    torch = try_import_torch()
    if torch is not None:
        torch_labels, torch_upstream = torch.from_numpy(labels), torch.from_numpy(upstream)

        def xent_torch():
            x = torch.from_numpy(logits).requires_grad_()
            torch.nn.functional.cross_entropy(x, torch_labels).backward()

        def softmax_torch():
            x = torch.from_numpy(logits).requires_grad_()
            torch.softmax(x, 1).backward(torch_upstream)

        steps["cross_entropy"].append(xent_torch)
        if "softmax" in steps:
            steps["softmax"].append(softmax_torch)

    results = []
    for name, fns in steps.items():
        times = alternating_times(fns, number=5)
        results.append(
            Result(
                f"{name} {ROWS}x{CLASSES} fwd+bwd",
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
