"""`inference_mode` and the deterministic-algorithms switch, as PyTorch programs use them:
inference mode is no_grad, and deterministic algorithms keep numba's kernels compiling at their
first call."""

from __future__ import annotations

from ..autograd.grad_mode import enable_grad, no_grad
from ..errors import DTypeError
from ..runtime import background_compile

__all__ = [
    "are_deterministic_algorithms_enabled",
    "inference_mode",
    "is_deterministic_algorithms_warn_only_enabled",
    "use_deterministic_algorithms",
]

# use_deterministic_algorithms' warn_only, False until it is called (as PyTorch's)
_warn_only = False


class inference_mode(no_grad):  # noqa: N801 (PyTorch's name)
    """PyTorch's inference_mode, as minitrain's no_grad: nothing is recorded inside the block
    or decorated function (`@inference_mode`, `@inference_mode()`, `with inference_mode():`).
    `inference_mode(False)` records again, as PyTorch's (it is enable_grad, even inside
    no_grad). Tensors made inside are ordinary tensors (minitrain
    keeps no inference flag, so they have no `is_inference()`), and may later be used in
    recorded ops."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return object.__new__(cls)
        if callable(mode):
            return cls()(mode)
        raise DTypeError(f"inference_mode: mode must be a bool, got {mode!r}")

    def __init__(self, mode: bool = True):
        super().__init__()
        self.on = mode
        self.enabled = not mode

    def __call__(self, fn):
        return (no_grad() if self.on else enable_grad())(fn)


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """PyTorch's switch for deterministic algorithms. minitrain's CPU kernels give the same
    result on every run for the same inputs; what can change a run's arithmetic with timing is a
    numba kernel compiling in the background on a cold cache, while the op runs its generic
    kernels, equal only to float32 rounding (runtime/background_compile.py). With `mode` True
    every kernel compiles at its first call instead, so a run computes the same on a cold cache as
    on a warm one. `warn_only` is kept, as PyTorch keeps it (nothing here would warn)."""
    global _warn_only
    if not isinstance(mode, bool) or not isinstance(warn_only, bool):
        raise DTypeError(
            f"use_deterministic_algorithms: mode and warn_only must be bools, got {mode!r} and "
            f"{warn_only!r}"
        )
    background_compile.deterministic = mode
    _warn_only = warn_only


def are_deterministic_algorithms_enabled() -> bool:
    """Whether use_deterministic_algorithms(True) is in force."""
    return background_compile.deterministic


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """The `warn_only` given with use_deterministic_algorithms."""
    return _warn_only
