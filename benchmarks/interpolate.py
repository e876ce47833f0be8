"""Bilinear upsampling by 2 of a (16, 32, 64, 64) float32 batch, forward plus backward, against
PyTorch in the same process, including the framework's work (recording, the backward walk and the
input's leaf gradient)."""

from __future__ import annotations

import numpy as np

from benchmarks.common import Result, alternating_times, try_import_torch

N, C, H, W = 16, 32, 64, 64
SCALE = 2
TARGET_RATIO = 1.5


def run() -> list[Result]:
    import minitrain as mt
    from minitrain.nn.functional import interpolate

    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, C, H, W), dtype=np.float32)
    upstream = rng.standard_normal((N, C, H * SCALE, W * SCALE), dtype=np.float32)

    def interpolate_minitrain():
        leaf = mt.Tensor(x, requires_grad=True)
        interpolate(leaf, scale_factor=SCALE, mode="bilinear").backward(upstream)

    fns = [interpolate_minitrain]
    torch = try_import_torch()
    if torch is not None:
        torch_upstream = torch.from_numpy(upstream)

        def interpolate_torch():
            leaf = torch.from_numpy(x).requires_grad_()
            torch.nn.functional.interpolate(leaf, scale_factor=SCALE, mode="bilinear").backward(
                torch_upstream
            )

        fns.append(interpolate_torch)

    times = alternating_times(fns, number=5)
    return [
        Result(
            f"interpolate x{SCALE} {N}x{C}x{H}x{W} fwd+bwd",
            times[0],
            times[1] if torch is not None else None,
            round_ratios=times.ratios_if_pair(),
            target=TARGET_RATIO,
        )
    ]


if __name__ == "__main__":
    from benchmarks.common import print_table

    print_table(run())
