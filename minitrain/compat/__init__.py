"""PyTorch's program set-up names, so that a PyTorch script runs unchanged with
`import minitrain as torch`: `backends` (cudnn's and TF32's switches, which change nothing
here), `amp` (GradScaler, autocast), `accelerator` and `inference_mode`.

One package, not a module each at the top of minitrain/: they are shims around what minitrain
already does (no_grad, float32 on the CPU) and kept together so that minitrain/ stays small;
`minitrain/__init__.py` exposes them under PyTorch's names (`minitrain.backends`,
`minitrain.amp`, `minitrain.cuda.amp`, `minitrain.accelerator`, `minitrain.inference_mode`,
`minitrain.use_deterministic_algorithms`). Each says plainly what it does not do: nothing here
autocasts; the deterministic switch only keeps numba's kernels compiling at their first call
(runtime/background_compile.py). `minitrain.compile` is a real capture (minitrain/capture/)."""

from . import accelerator, amp, backends
from .modes import (  # noqa: A004 (PyTorch's name)
    are_deterministic_algorithms_enabled,
    inference_mode,
    is_deterministic_algorithms_warn_only_enabled,
    use_deterministic_algorithms,
)

__all__ = [
    "accelerator",
    "amp",
    "are_deterministic_algorithms_enabled",
    "backends",
    "inference_mode",
    "is_deterministic_algorithms_warn_only_enabled",
    "use_deterministic_algorithms",
]
