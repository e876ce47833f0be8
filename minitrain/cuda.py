"""`minitrain.cuda`, PyTorch's torch.cuda: whether a GPU is at hand, how many, waiting for one,
and seeding their random generators. Every function works without CuPy installed."""

from __future__ import annotations

import numbers

from . import backend
from .errors import DeviceError

__all__ = [
    "is_available", "device_count", "current_device", "init", "is_initialized", "synchronize",
    "manual_seed", "manual_seed_all",
]  # fmt: skip


def is_available() -> bool:
    """Whether a GPU can be used: CuPy is installed and sees at least one."""
    return backend.cuda_device_count() > 0


def device_count() -> int:
    """How many GPUs CuPy sees (0 without CuPy, a driver or a GPU)."""
    return backend.cuda_device_count()


def init() -> None:
    """Set up the GPU state now rather than on a device's first use (torch.cuda.init): CuPy is
    imported and the GPU found; a DeviceError saying what is missing where no GPU can be used."""
    _cupy("init")


def is_initialized() -> bool:
    """Whether the GPU state is set up: a CUDA device used, or `init` called."""
    return backend.cupy is not None


def current_device() -> int:
    """The index of the GPU new arrays go to by default; a DeviceError without one."""
    return _cupy("current_device").cuda.Device().id


def synchronize(device: int | str | backend.Device | None = None) -> None:
    """Wait until every kernel queued on `device` (the current GPU by default) has finished:
    before reading a clock around GPU work, as torch.cuda.synchronize."""
    with backend.device_context(_target(device, "synchronize")) as gpu:
        gpu.synchronize()


def manual_seed(seed: int) -> None:
    """Seed the random generator of the current GPU (cupy.random). Without a GPU nothing is
    seeded, as in PyTorch; `minitrain.manual_seed` seeds the CPU and every GPU."""
    seed = backend.check_seed(seed, "cuda.manual_seed")
    if is_available():
        backend.seed_cuda(seed, current_device())


def manual_seed_all(seed: int) -> None:
    """Seed the random generator of every GPU (nothing without one, as in PyTorch)."""
    seed = backend.check_seed(seed, "cuda.manual_seed_all")
    if is_available():
        backend.seed_cuda(seed)


def _cupy(caller: str):
    """The cupy module; a DeviceError naming `caller` where no GPU can be used."""
    try:
        return backend.Device("cuda", 0).xp
    except DeviceError as error:
        raise DeviceError(f"cuda.{caller}: {error}") from None


def _target(device, caller: str) -> backend.Device:
    """`device` (an index, 'cuda:N' or a Device; None for the current GPU) as a CUDA Device."""
    cupy = _cupy(caller)
    if device is None:
        return backend.Device("cuda", cupy.cuda.Device().id)
    if isinstance(device, numbers.Integral) and not isinstance(device, bool):
        device = f"cuda:{int(device)}"
    target = backend.device(device)
    if target.type != "cuda":
        raise DeviceError(f"cuda.{caller}: expected a CUDA device, got '{target}'")
    return target
