"""minitrain on a GPU against PyTorch CUDA on the same GPU, in one process: the CNN training step
of benchmarks/training.py and the char LM training step of benchmarks/char_lm.py, from the same
weights, each model and batch moved to the GPU once. Needs CuPy, a GPU and PyTorch built with
CUDA; without them run() returns no rows and says why. Not part of `make bench`, which stays on
the CPU: `python -m benchmarks.gpu`, or `make gpu-check`."""

from __future__ import annotations

import time

from benchmarks import char_lm, training
from benchmarks.common import Result, try_import_torch

CNN_TARGET = 2.0  # issue 24's acceptance: minitrain's CNN step at most 2x PyTorch CUDA's time
DEVICE = "cuda"
WARMUP_STEPS = 3  # CuPy compiles its kernels, cuDNN and cuBLAS pick algorithms on first use


def cuda_missing() -> str:
    """Why minitrain cannot run on a GPU here: CuPy missing, no driver or no GPU ('' where
    it can)."""
    import minitrain as mt
    from minitrain.errors import DeviceError

    try:
        mt.cuda.synchronize()
    except DeviceError as error:
        return str(error).removeprefix("cuda.synchronize: ")
    return ""


def torch_cuda_missing(torch) -> str:
    """Why PyTorch cannot run on the GPU here ('' where it can)."""
    if torch is None:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return f"PyTorch {torch.__version__} sees no GPU (a CPU-only build, or no driver)"
    return ""


def best_synchronized_times(steps, synchronize, number: int, repeat: int) -> list[float]:
    """Seconds per call of each step: the best of `repeat` rounds of `number` calls, each round
    timed from a synchronized GPU to a synchronized GPU (kernels run after their launch returns),
    after WARMUP_STEPS calls. Rounds alternate between the steps, as in common.alternating_times."""
    for step in steps:
        for _ in range(WARMUP_STEPS):
            step()
    best = [float("inf")] * len(steps)
    for _ in range(repeat):
        for i, step in enumerate(steps):
            synchronize()
            start = time.perf_counter()
            for _ in range(number):
                step()
            synchronize()
            best[i] = min(best[i], (time.perf_counter() - start) / number)
    return best


def run() -> list[Result]:
    """The GPU rows; none, after printing why, without CuPy, a GPU or PyTorch CUDA."""
    import minitrain as mt

    torch = try_import_torch()
    missing = cuda_missing() or torch_cuda_missing(torch)
    if missing:
        print(f"GPU benchmark not run: {missing}")
        return []

    def synchronize():
        mt.cuda.synchronize()
        torch.cuda.synchronize()

    model, ours = training.minitrain_step("cnn", device=DEVICE)
    theirs = training.torch_step("cnn", weights_from=model, device=DEVICE)
    cnn_times = best_synchronized_times([ours, theirs], synchronize, number=20, repeat=5)
    ours, theirs, first_losses, config = char_lm.training_steps(torch, device=DEVICE)
    lm_times = best_synchronized_times([ours, theirs], synchronize, number=5, repeat=5)
    return [
        Result(
            "GPU train step CNN (64,1,28,28) SGD momentum",
            cnn_times[0],
            cnn_times[1],
            per="step",
            target=CNN_TARGET,
        ),
        Result(
            f"GPU train step char LM (GPT {config.layers}x{config.width}, T={config.context}, "
            f"b{config.batch})",
            lm_times[0],
            lm_times[1],
            per="step",
            note="first loss " + " vs ".join(f"{loss:.6f}" for loss in first_losses),
        ),
    ]


if __name__ == "__main__":
    from benchmarks.common import print_table

    print_table(run())
