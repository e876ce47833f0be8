"""`minitrain.amp` (also `minitrain.cuda.amp`), PyTorch's mixed-precision helpers.

minitrain does not autocast: an enabled `autocast` asking for float16 or bfloat16 is an error
that says so (`autocast(..., enabled=False)`, which programs write for their CPU runs, does
nothing). `GradScaler` scales the loss and unscales the gradients as PyTorch's does, and is a
pass-through (`scale` returns the loss, `step` calls `optimizer.step()`, `update` does nothing)
with `enabled=False` or for 'cuda' on a machine without a GPU (PyTorch warns and disables it
there too)."""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from .. import backend
from .. import cuda as cuda_module
from ..autograd.grad_mode import no_grad
from ..errors import ArgumentError, DeviceError, DTypeError

__all__ = ["GradScaler", "autocast"]


class GradScaler:
    """PyTorch's GradScaler: `scaler.scale(loss).backward()`, `scaler.step(optimizer)`,
    `scaler.update()`. Enabled, it multiplies the loss by the scale, divides the gradients by it
    before the step (`unscale_`), skips a step whose gradients hold an inf or a NaN and then
    halves the scale (`backoff_factor`), and doubles it (`growth_factor`) after
    `growth_interval` clean steps. Disabled (enabled=False, or device 'cuda' without a GPU), it
    changes nothing. `minitrain.cuda.amp.GradScaler(init_scale, ...)`'s positional form works
    too."""

    def __init__(
        self,
        device="cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ):
        if isinstance(device, numbers.Real) and not isinstance(device, bool):
            device, init_scale = "cuda", device  # torch.cuda.amp.GradScaler(init_scale, ...)
        self.device = backend.device(device)
        if enabled and self.device.type == "cuda" and not cuda_module.is_available():
            warnings.warn(
                "GradScaler is enabled for 'cuda', but no GPU can be used: disabling it",
                UserWarning,
                stacklevel=2,
            )
            enabled = False
        if not 0 < backoff_factor < 1 or growth_factor <= 1:
            raise ArgumentError(
                "GradScaler: backoff_factor must be in (0, 1) and growth_factor above 1, got "
                f"{backoff_factor} and {growth_factor}"
            )
        self._enabled = bool(enabled)
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._found_inf: dict[int, bool] = {}  # per optimizer (by id) since the last update

    def is_enabled(self) -> bool:
        """Whether the scaler scales (False: every method passes through)."""
        return self._enabled

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled, as PyTorch)."""
        return self._scale if self._enabled else 1.0

    def scale(self, outputs):
        """The loss (or a list or tuple of losses) times the scale; unchanged when disabled."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        return outputs * self._scale

    def unscale_(self, optimizer) -> None:
        """Divide the gradients of `optimizer`'s parameters by the scale (once per step: before
        clipping them) and note whether any holds an inf or a NaN."""
        if not self._enabled:
            return
        if id(optimizer) in self._found_inf:
            raise ArgumentError("unscale_ was already called on this optimizer since update()")
        found = False
        inverse = 1.0 / self._scale
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if param.grad is None:
                        continue
                    param.grad = param.grad * inverse
                    values = param.grad.array
                    found |= not bool(backend.array_module(values).isfinite(values).all())
        self._found_inf[id(optimizer)] = found

    def step(self, optimizer, *args, **kwargs):
        """`optimizer.step()`, after unscaling its gradients, unless one holds an inf or a NaN
        (then the step is skipped and None returned)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if id(optimizer) not in self._found_inf:
            self.unscale_(optimizer)
        if self._found_inf[id(optimizer)]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale: float | None = None) -> None:
        """Set the scale for the next step: `new_scale`, or halved after a skipped step and
        doubled after `growth_interval` clean ones. Nothing when disabled."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale)
        elif any(self._found_inf.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        elif self._found_inf:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        self._found_inf = {}

    def state_dict(self) -> dict:
        """The scale and its counters, as PyTorch's keys ({} when disabled)."""
        if not self._enabled:
            return {}
        return {
            "scale": self._scale,
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._growth_tracker,
        }

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what `state_dict` returned (nothing to do when disabled)."""
        if not self._enabled:
            return
        if not state_dict:
            raise ArgumentError("GradScaler.load_state_dict: the state dict is empty")
        self._scale = float(np.asarray(state_dict["scale"]))
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])


class autocast:  # noqa: N801 (PyTorch's name)
    """PyTorch's autocast, which minitrain does not do: with `enabled=False` (or dtype float32)
    it is a context manager and decorator that changes nothing; asking for float16 or bfloat16
    is a DTypeError saying minitrain computes in the tensors' own dtypes. `device_type` must be
    'cpu' or 'cuda' (a DeviceError otherwise)."""

    def __init__(
        self, device_type: str = "cuda", dtype=None, enabled: bool = True, cache_enabled=None
    ):
        if device_type not in ("cpu", "cuda"):
            raise DeviceError(f"autocast: device_type must be 'cpu' or 'cuda', got {device_type!r}")
        self.device_type = device_type
        self.enabled = bool(enabled)
        name = getattr(dtype, "name", None) or (
            ("bfloat16" if device_type == "cpu" else "float16") if dtype is None else str(dtype)
        )
        if self.enabled and name != "float32":
            raise DTypeError(
                f"autocast({device_type!r}): minitrain cannot autocast to {name}; it computes "
                "in each tensor's own dtype. Pass enabled=False (or cast the model and inputs "
                "with .half() where float16 is wanted)"
            )

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return None

    def __call__(self, fn):
        return fn
