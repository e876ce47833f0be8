"""Normalization forward plus backward on float32, against PyTorch in the same process:
BatchNorm2d in training mode on (32, 64, 32, 32) (running statistics updated), LayerNorm and
RMSNorm on (64 * 128, 768), each with a weight (and bias) that receive gradients. Both sides
include the framework's work: recording, the backward walk, and the leaf gradients."""

from __future__ import annotations

import numpy as np

from benchmarks.common import Result, alternating_times, try_import_torch

BATCH_NORM_SHAPE = (32, 64, 32, 32)
ROWS_SHAPE = (64 * 128, 768)
TARGET_RATIO = 1.0


def _steps(torch):
    """(name, input shape, [minitrain's step, PyTorch's step when it is installed]) per case."""
    import minitrain as mt
    from minitrain import ops

    rng = np.random.default_rng(0)
    images = rng.standard_normal(BATCH_NORM_SHAPE, dtype=np.float32)
    images_up = rng.standard_normal(BATCH_NORM_SHAPE, dtype=np.float32)
    rows = rng.standard_normal(ROWS_SHAPE, dtype=np.float32)
    rows_up = rng.standard_normal(ROWS_SHAPE, dtype=np.float32)
    channels, features = BATCH_NORM_SHAPE[1], ROWS_SHAPE[1]

    gain, shift = np.ones(channels, np.float32), np.zeros(channels, np.float32)
    running_mean, running_var = np.zeros(channels, np.float32), np.ones(channels, np.float32)
    row_gain, row_shift = np.ones(features, np.float32), np.zeros(features, np.float32)

    def batch_norm_minitrain():
        x = mt.Tensor(images, requires_grad=True)
        w, b = mt.Tensor(gain, requires_grad=True), mt.Tensor(shift, requires_grad=True)
        y = ops.batch_norm(x, w, b, running_mean=running_mean, running_var=running_var)
        y.backward(images_up)

    def layer_norm_minitrain():
        x = mt.Tensor(rows, requires_grad=True)
        w, b = mt.Tensor(row_gain, requires_grad=True), mt.Tensor(row_shift, requires_grad=True)
        ops.layer_norm(x, (features,), w, b).backward(rows_up)

    def rms_norm_minitrain():
        x = mt.Tensor(rows, requires_grad=True)
        w = mt.Tensor(row_gain, requires_grad=True)
        ops.rms_norm(x, (features,), w).backward(rows_up)

    cases = [
        ("batch_norm2d", BATCH_NORM_SHAPE),
        ("layer_norm", ROWS_SHAPE),
        ("rms_norm", ROWS_SHAPE),
    ]
    ours = [batch_norm_minitrain, layer_norm_minitrain, rms_norm_minitrain]
    if torch is None:
        return [(*case, [fn]) for case, fn in zip(cases, ours, strict=True)]

    functional = torch.nn.functional
    torch_running_mean = torch.from_numpy(running_mean.copy())
    torch_running_var = torch.from_numpy(running_var.copy())

    def batch_norm_torch():
        x = torch.from_numpy(images).requires_grad_()
        w = torch.from_numpy(gain).requires_grad_()
        b = torch.from_numpy(shift).requires_grad_()
        y = functional.batch_norm(x, torch_running_mean, torch_running_var, w, b, training=True)
        y.backward(torch.from_numpy(images_up))

    def layer_norm_torch():
        x = torch.from_numpy(rows).requires_grad_()
        w = torch.from_numpy(row_gain).requires_grad_()
        b = torch.from_numpy(row_shift).requires_grad_()
        functional.layer_norm(x, (features,), w, b).backward(torch.from_numpy(rows_up))

    def rms_norm_torch():
        x = torch.from_numpy(rows).requires_grad_()
        w = torch.from_numpy(row_gain).requires_grad_()
        functional.rms_norm(x, (features,), w).backward(torch.from_numpy(rows_up))

    theirs = [batch_norm_torch, layer_norm_torch, rms_norm_torch]
    return [(*case, list(fns)) for case, *fns in zip(cases, ours, theirs, strict=True)]


def run() -> list[Result]:
    results = []
    for name, shape, fns in _steps(try_import_torch()):
        times = alternating_times(fns, number=5)
        results.append(
            Result(
                f"{name} {'x'.join(map(str, shape))} fwd+bwd",
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
