"""Conv2d forward plus backward on a (32, 64, 32, 32) float32 batch with 64 filters 3x3 and
padding 1, against PyTorch in the same process, including the framework's work (recording, the
backward walk, the leaf gradients of input, weight and bias). Also reports the FLOP rate
achieved next to numpy's float32 matmul rate on this machine, measured in the same run."""

from __future__ import annotations

import numpy as np

from benchmarks.common import Result, alternating_times, try_import_torch

N, C, H, W = 32, 64, 32, 32
M, KERNEL = 64, 3
TARGET_RATIO = 1.0  # issue 34: at least PyTorch's (oneDNN's) speed
TARGET_MATMUL_FRACTION = 0.5
MATMUL_SIZE = 2048
# Multiply-adds of the forward GEMM; the backward does it twice more (dX and dW), 2 FLOPs each.
FLOPS = 3 * 2 * N * M * C * KERNEL * KERNEL * H * W


def run() -> list[Result]:
    import minitrain as mt
    from minitrain.nn.functional import conv2d

    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, C, H, W), dtype=np.float32)
    weight = rng.standard_normal((M, C, KERNEL, KERNEL), dtype=np.float32) / (C * KERNEL) ** 0.5
    bias = rng.standard_normal(M, dtype=np.float32)
    upstream = rng.standard_normal((N, M, H, W), dtype=np.float32)
    a = rng.standard_normal((MATMUL_SIZE, MATMUL_SIZE), dtype=np.float32)
    b = rng.standard_normal((MATMUL_SIZE, MATMUL_SIZE), dtype=np.float32)

    def conv_minitrain():
        leaves = [mt.Tensor(v, requires_grad=True) for v in (x, weight, bias)]
        conv2d(*leaves, padding=1).backward(upstream)

    def matmul_numpy():
        np.matmul(a, b)

    fns = [conv_minitrain, matmul_numpy]
    torch = try_import_torch()
    if torch is not None:
        torch_upstream = torch.from_numpy(upstream)

        def conv_torch():
            leaves = [torch.from_numpy(v).requires_grad_() for v in (x, weight, bias)]
            torch.nn.functional.conv2d(*leaves, padding=1).backward(torch_upstream)

        fns.append(conv_torch)

    times = alternating_times(fns, number=3)
    matmul_rate = 2 * MATMUL_SIZE**3 / times[1] / 1e9
    conv_rate = FLOPS / times[0] / 1e9
    fraction = conv_rate / matmul_rate
    verdict = "ok" if fraction >= TARGET_MATMUL_FRACTION else "MISSED"
    note = (
        f"{conv_rate:.1f} GFLOP/s ({FLOPS / 1e9:.2f} GFLOP), {fraction:.0%} of numpy's float32 "
        f"matmul ({matmul_rate:.1f} GFLOP/s at {MATMUL_SIZE}^2); target >= "
        f"{TARGET_MATMUL_FRACTION:.0%}  {verdict}"
    )
    if torch is not None:
        note += f"; PyTorch {FLOPS / times[2] / 1e9:.1f} GFLOP/s"
    return [
        Result(
            f"conv2d {N}x{C}x{H}x{W} {M}x{KERNEL}x{KERNEL} fwd+bwd",
            times[0],
            times[2] if torch is not None else None,
            target=TARGET_RATIO,
            round_ratios=times.ratios(0, 2) if torch is not None else None,
            note=note,
        )
    ]


if __name__ == "__main__":
    from benchmarks.common import print_table

    print_table(run())
