"""`minitrain.accelerator`, PyTorch's torch.accelerator: the GPU a program would use, if any.
minitrain's only accelerator is CUDA (through CuPy)."""

from __future__ import annotations

from .. import backend
from .. import cuda as cuda_module

__all__ = ["is_available", "current_accelerator", "device_count"]


def is_available() -> bool:
    """Whether a GPU can be used (`minitrain.cuda.is_available()`)."""
    return cuda_module.is_available()


def current_accelerator() -> backend.Device | None:
    """The current GPU as a Device (`cuda:N`), or None on a machine without one, as PyTorch."""
    if not cuda_module.is_available():
        return None
    return backend.Device("cuda", cuda_module.current_device())


def device_count() -> int:
    """How many GPUs minitrain can use (0 without one)."""
    return cuda_module.device_count()
