"""PyTorch's legacy tensor types: `FloatTensor`, `LongTensor`, ... one per dtype.

Older programs and tutorials still build tensors with them (`torch.FloatTensor(2, 3)`,
`torch.LongTensor([1, 2])`), cast with them (`x.type(torch.FloatTensor)`) and test against them
(`isinstance(x, torch.FloatTensor)`). Each is a class whose call makes a plain Tensor of its
dtype on the CPU, and which a tensor is an instance of when it has that dtype there, as in
PyTorch. The CUDA ones are named by string only (`x.type("torch.cuda.FloatTensor")`)."""

from __future__ import annotations

import numbers

import numpy as np

from . import creation
from .errors import DTypeError
from .tensor import Tensor

TYPE_NAMES = {
    np.dtype(np.float32): "FloatTensor", np.dtype(np.float64): "DoubleTensor",
    np.dtype(np.float16): "HalfTensor", np.dtype(np.int64): "LongTensor",
    np.dtype(np.int32): "IntTensor", np.dtype(np.int16): "ShortTensor",
    np.dtype(np.int8): "CharTensor", np.dtype(np.uint8): "ByteTensor",
    np.dtype(np.bool_): "BoolTensor", np.dtype(np.uint16): "UInt16Tensor",
    np.dtype(np.uint32): "UInt32Tensor", np.dtype(np.uint64): "UInt64Tensor",
    np.dtype(np.complex64): "ComplexFloatTensor", np.dtype(np.complex128): "ComplexDoubleTensor",
}  # fmt: skip
TYPE_DTYPES = {name: dtype for dtype, name in TYPE_NAMES.items()}


class LegacyTensorType(type):
    """The metaclass of FloatTensor and the others: calling one makes a Tensor; `isinstance`
    asks the tensor's dtype and device."""

    dtype: np.dtype

    def __call__(cls, *args, device=None):
        if device is not None and str(device) != "cpu":
            raise DTypeError(
                f"{cls.__name__}: the legacy types make CPU tensors, got device={device!r}; "
                f"use minitrain.tensor(..., device={device!r})"
            )
        if not args:
            return creation.empty(0, dtype=cls.dtype)
        if all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
            return creation.empty(*args, dtype=cls.dtype)  # a shape, values unset as PyTorch's
        if len(args) == 1:
            return creation.tensor(args[0], dtype=cls.dtype)  # values: a copy, in this dtype
        raise DTypeError(
            f"{cls.__name__}: expected a shape (ints) or one sequence of values, got "
            f"{', '.join(type(a).__name__ for a in args)}"
        )

    def __instancecheck__(cls, value) -> bool:
        return isinstance(value, Tensor) and value.dtype == cls.dtype and not value.is_cuda

    def __repr__(cls) -> str:
        return f"<class 'minitrain.{cls.__name__}'>"


def _legacy_type(name: str, dtype: np.dtype) -> LegacyTensorType:
    return LegacyTensorType(
        name, (), {"dtype": dtype, "__doc__": f"PyTorch's legacy {name}: a {dtype} CPU tensor."}
    )


FloatTensor = _legacy_type("FloatTensor", np.dtype(np.float32))
DoubleTensor = _legacy_type("DoubleTensor", np.dtype(np.float64))
HalfTensor = _legacy_type("HalfTensor", np.dtype(np.float16))
LongTensor = _legacy_type("LongTensor", np.dtype(np.int64))
IntTensor = _legacy_type("IntTensor", np.dtype(np.int32))
ShortTensor = _legacy_type("ShortTensor", np.dtype(np.int16))
CharTensor = _legacy_type("CharTensor", np.dtype(np.int8))
ByteTensor = _legacy_type("ByteTensor", np.dtype(np.uint8))
BoolTensor = _legacy_type("BoolTensor", np.dtype(np.bool_))

__all__ = [
    "FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor",
    "CharTensor", "ByteTensor", "BoolTensor",
]  # fmt: skip
