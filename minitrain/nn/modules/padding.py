"""Padding layers: ConstantPad1d/2d/3d, ZeroPad1d/2d/3d, ReflectionPad1d/2d/3d,
ReplicationPad1d/2d/3d and CircularPad1d/2d/3d, each F.pad with its mode."""

from __future__ import annotations

from ...errors import DTypeError
from ...tensor import Tensor
from ..functional.vision import pad
from .module import Module


def _padding(caller: str, padding, dims: int) -> tuple[int, ...]:
    """An int as the same width on both sides of each of the last `dims` dims; a sequence as it
    is (F.pad's order: the last dim's (left, right) first), as PyTorch reads it."""
    if isinstance(padding, bool):
        raise DTypeError(f"{caller}: padding must be an int or a tuple of ints, got {padding!r}")
    if isinstance(padding, int):
        return (padding,) * (2 * dims)
    if isinstance(padding, (tuple, list)):
        return tuple(padding)
    raise DTypeError(
        f"{caller}: padding must be an int or a tuple of ints, got {type(padding).__name__}"
    )


class PadBase(Module):
    """What the padding layers share: `padding` read as PyTorch does (an int for every side of
    the last `dims` dims, or F.pad's tuple) and F.pad in the class's `mode`."""

    mode = "constant"
    dims = 0

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _padding(type(self).__name__, padding, self.dims)

    def forward(self, x: Tensor) -> Tensor:
        """x padded on its last dims by `padding` (the last dim's (left, right) first)."""
        return pad(x, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ConstantPadBase(PadBase):
    """Padding with a constant `value`."""

    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, x: Tensor) -> Tensor:
        """x padded on its last dims by `padding` with `value`."""
        return pad(x, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(ConstantPadBase):
    """Pad the last dim of (C, W) or (N, C, W) with `value`: padding an int or (left, right)."""

    dims = 1


class ConstantPad2d(ConstantPadBase):
    """Pad the last 2 dims with `value`: padding an int or (left, right, top, bottom)."""

    dims = 2


class ConstantPad3d(ConstantPadBase):
    """Pad the last 3 dims with `value`: padding an int or (left, right, top, bottom, front,
    back)."""

    dims = 3


class ZeroPadBase(ConstantPadBase):
    """Padding with zeros; printed as PyTorch's ZeroPad layers, the padding alone."""

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(ZeroPadBase):
    """Pad the last dim with zeros: padding an int or (left, right)."""

    dims = 1


class ZeroPad2d(ZeroPadBase):
    """Pad the last 2 dims with zeros: padding an int or (left, right, top, bottom)."""

    dims = 2


class ZeroPad3d(ZeroPadBase):
    """Pad the last 3 dims with zeros: padding an int or (left, right, top, bottom, front,
    back)."""

    dims = 3


class ReflectionPad1d(PadBase):
    """Pad the last dim with the input's reflection about its edge element (each width less
    than the dim's size)."""

    mode, dims = "reflect", 1


class ReflectionPad2d(PadBase):
    """Pad the last 2 dims with the input's reflection about its edge elements."""

    mode, dims = "reflect", 2


class ReflectionPad3d(PadBase):
    """Pad the last 3 dims with the input's reflection about its edge elements."""

    mode, dims = "reflect", 3


class ReplicationPad1d(PadBase):
    """Pad the last dim with copies of its edge elements."""

    mode, dims = "replicate", 1


class ReplicationPad2d(PadBase):
    """Pad the last 2 dims with copies of their edge elements."""

    mode, dims = "replicate", 2


class ReplicationPad3d(PadBase):
    """Pad the last 3 dims with copies of their edge elements."""

    mode, dims = "replicate", 3


class CircularPad1d(PadBase):
    """Pad the last dim by wrapping around: the left pad is the input's end, the right its
    start."""

    mode, dims = "circular", 1


class CircularPad2d(PadBase):
    """Pad the last 2 dims by wrapping around."""

    mode, dims = "circular", 2


class CircularPad3d(PadBase):
    """Pad the last 3 dims by wrapping around."""

    mode, dims = "circular", 3
