"""The process-wide defaults PyTorch programs set up first: the floating dtype the creation
functions use when none is given (float32, or float64), the device they make tensors on (the
CPU, or a GPU), and `bfloat16`, a name minitrain cannot compute in.

`set_default_dtype` / `get_default_dtype` and `set_default_device` / `get_default_device` are
PyTorch's; `minitrain.tensor([1.0])`, `zeros`, `ones`, `empty`, `full`, `randn`, `rand`, `eye`,
`linspace` and `arange` with a float argument follow them."""

from __future__ import annotations

import numpy as np

from .. import backend
from ..errors import DTypeError

__all__ = [
    "set_default_dtype", "get_default_dtype", "set_default_device", "get_default_device",
    "default_device_or", "UnsupportedDType", "bfloat16",
]  # fmt: skip

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_state = {"dtype": np.dtype(np.float32), "device": backend.CPU}


class UnsupportedDType:
    """A PyTorch dtype name minitrain has no kernels for (`minitrain.bfloat16`): making or
    casting a tensor to it raises a DTypeError (numpy reads `.dtype` of any object it is given
    as a dtype), never a silent float32."""

    def __init__(self, name: str):
        self.name = name

    @property
    def dtype(self):
        """Always a DTypeError: minitrain cannot compute in this dtype."""
        raise DTypeError(
            f"minitrain cannot compute in {self.name}: numpy has no {self.name}; "
            "use float32 (or float16 to store)"
        )

    @property
    def is_floating_point(self) -> bool:
        """True, as PyTorch's dtype says of itself."""
        return True

    def __repr__(self) -> str:
        return f"minitrain.{self.name}"


bfloat16 = UnsupportedDType("bfloat16")


def set_default_dtype(dtype) -> None:
    """Make `dtype` (float32 or float64, as in PyTorch) the dtype of new floating tensors made
    without `dtype=`; any other dtype is a DTypeError naming it."""
    try:
        resolved = np.dtype(dtype)
    except DTypeError:
        raise
    except TypeError:
        resolved = None
    if resolved not in _FLOATS:
        raise DTypeError(
            f"set_default_dtype: only float32 and float64 can be the default, got {dtype!r}"
        )
    _state["dtype"] = resolved


def get_default_dtype() -> np.dtype:
    """The dtype of new floating tensors made without `dtype=` (float32 unless set)."""
    return _state["dtype"]


def set_default_device(device) -> None:
    """Make `device` ('cpu', 'cuda', 'cuda:1', a Device; None for the CPU) the device the
    creation functions make tensors on without `device=`. A GPU minitrain cannot use is the
    DeviceError `minitrain.device('cuda')` raises, at once."""
    target = backend.CPU if device is None else backend.device(device)
    if target.type != "cpu":
        with backend.device_context(target):  # raises DeviceError without CuPy or the GPU
            pass
    _state["device"] = target


def get_default_device() -> backend.Device:
    """The device the creation functions make tensors on without `device=` (the CPU unless
    set)."""
    return _state["device"]


def default_device_or(device) -> backend.Device:
    """`device` as a Device, or the default device when it is None."""
    return _state["device"] if device is None else backend.device(device)
