"""PyTorch's program set-up names, so that a PyTorch script runs unchanged with
`import minitrain as torch`: `backends` (cudnn's and TF32's switches, which change nothing
here), `amp` (GradScaler, autocast), `accelerator`, `inference_mode` and `compile`.

One package, not a module each at the top of minitrain/: they are shims around what minitrain
already does (no_grad, float32 on the CPU) and kept together so that minitrain/ stays small;
`minitrain/__init__.py` exposes them under PyTorch's names (`minitrain.backends`,
`minitrain.amp`, `minitrain.cuda.amp`, `minitrain.accelerator`, `minitrain.inference_mode`,
`minitrain.compile`). Each says plainly what it does not do: nothing here compiles, autocasts
or switches a kernel."""

from . import accelerator, amp, backends
from .modes import compile, inference_mode  # noqa: A004 (PyTorch's name)

__all__ = ["accelerator", "amp", "backends", "compile", "inference_mode"]
