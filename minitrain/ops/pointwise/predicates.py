"""Elementwise tests and logic, outside the graph (bool or integer results have no gradient):
isnan, isinf, isposinf, isneginf, isfinite, isclose (allclose, array_equal: one bool), the
logical and the bitwise operators.

Plain functions, not registered ops, as the comparisons are: each takes tensors, arrays or
numbers and returns a Tensor that does not require grad. Operands broadcast, and the bitwise
ones promote as PyTorch's do (`result_type`)."""

from __future__ import annotations

import math

import numpy as np

from ... import backend
from ...arguments import as_array
from ...errors import ArgumentError, DTypeError, ShapeError
from ...tensor import Tensor
from ..core.promotion import result_type
from ..core.variants import variants

__all__ = [
    "allclose",
    "array_equal",
    "bitwise_and",
    "bitwise_left_shift",
    "bitwise_not",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "isclose",
    "isfinite",
    "isinf",
    "isnan",
    "isneginf",
    "isposinf",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
]


def _operand(caller: str, name: str, value):
    """A Tensor's array, an array or a number as it is, a nested list as an array."""
    if isinstance(value, Tensor):
        return value.array
    if isinstance(value, (bool, int, float, np.generic)) or backend.is_array(value):
        return value
    if isinstance(value, (list, tuple)):
        return as_array(value)
    raise DTypeError(
        f"{caller}: {name} must be a Tensor, an array or a number, got {type(value).__name__}"
    )


def _described(value) -> str:
    """An operand as an error message shows it: its dtype and shape, or a number's type."""
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return f"{value.dtype} {tuple(value.shape)}"
    return type(value).__name__


def _check_one_device(caller: str, x, y) -> None:
    """A DeviceError naming both where x and y are arrays on two devices (CuPy's own
    TypeError names neither: "Unsupported type <class 'numpy.ndarray'>")."""
    if backend.cupy is not None and backend.array_module(x, y) is not np:
        backend.check_same_device(caller, (x, y))


def _broadcasting(caller: str, function, x, y):
    """function(x, y), its broadcasting error a ShapeError naming the caller and both shapes,
    and operands on two devices a DeviceError naming both (a CPU number array beside a GPU
    one would otherwise be copied over, or compared on the host)."""
    _check_one_device(caller, x, y)
    try:
        return function(x, y)
    except ValueError:
        raise ShapeError(
            f"{caller}: shapes do not broadcast: input {np.shape(x)} and other {np.shape(y)}"
        ) from None


# Floating-point classes. Integers and bools are finite: their answers are constant.


@variants("function", "method")
def isnan(input) -> Tensor:  # noqa: A002 (PyTorch's name)
    """True where input is NaN."""
    x = _operand("isnan", "input", input)
    return Tensor(backend.array_module(x).isnan(x))


@variants("function", "method")
def isinf(input) -> Tensor:  # noqa: A002
    """True where input is inf or -inf."""
    x = _operand("isinf", "input", input)
    return Tensor(backend.array_module(x).isinf(x))


@variants("function", "method")
def isposinf(input) -> Tensor:  # noqa: A002
    """True where input is inf."""
    x = _operand("isposinf", "input", input)
    return Tensor(backend.array_module(x).asarray(x == math.inf))


@variants("function", "method")
def isneginf(input) -> Tensor:  # noqa: A002
    """True where input is -inf."""
    x = _operand("isneginf", "input", input)
    return Tensor(backend.array_module(x).asarray(x == -math.inf))


@variants("function", "method")
def isfinite(input) -> Tensor:  # noqa: A002
    """True where input is neither NaN nor infinite."""
    x = _operand("isfinite", "input", input)
    return Tensor(backend.array_module(x).isfinite(x))


def _tolerance(caller: str, name: str, value) -> float:
    if isinstance(value, Tensor) and value.ndim == 0:
        value = value.item()
    if not isinstance(value, (int, float, np.integer, np.floating)):
        raise DTypeError(f"{caller}: {name} must be a number, got {type(value).__name__}")
    if not value >= 0:  # nan too
        raise ArgumentError(f"{caller}: {name} must be >= 0, got {value}")
    return float(value)


@variants("function", "method")
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> Tensor:  # noqa: A002
    """True where |input - other| <= atol + rtol * |other| (elementwise, broadcasting), or where
    they are equal (infinities of one sign); NaNs count as equal only with `equal_nan`.

    As in PyTorch: two tensors must share a dtype; integers and bools are compared in float32,
    floating tensors in their own dtype."""
    x, y = _operand("isclose", "input", input), _operand("isclose", "other", other)
    rtol, atol = _tolerance("isclose", "rtol", rtol), _tolerance("isclose", "atol", atol)
    x_dtype, y_dtype = getattr(x, "dtype", None), getattr(y, "dtype", None)
    if x_dtype is not None and y_dtype is not None and x_dtype != y_dtype:
        raise DTypeError(
            f"isclose: input and other must have one dtype, got {x_dtype} and {y_dtype}"
        )
    xp = backend.array_module(x, y)
    close = _broadcasting("isclose", xp.equal, x, y)  # exact, before any cast
    dtype = x_dtype if x_dtype is not None else y_dtype
    if dtype is not None and dtype.kind != "f":  # differences of integers would wrap
        x, y = (v.astype(np.float32) if hasattr(v, "dtype") else v for v in (x, y))
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf: nan, not close anyway
        if equal_nan:
            close = close | (xp.isnan(x) & xp.isnan(y))
        if rtol or atol:
            error = xp.abs(x - y)
            close = close | (xp.isfinite(error) & (error <= atol + rtol * xp.abs(y)))
    return Tensor(xp.asarray(close))


@variants("function", "method")
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:  # noqa: A002
    """Whether isclose holds for every element (as a Python bool)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).array.all())


def array_equal(input, other) -> bool:  # noqa: A002
    """Whether two tensors have one shape and equal elements (as a Python bool): PyTorch's
    torch.equal. Dtypes may differ (values compare); NaN equals nothing."""
    x, y = _operand("equal", "input", input), _operand("equal", "other", other)
    if not (hasattr(x, "shape") and hasattr(y, "shape")):
        raise DTypeError(
            f"equal: input and other must be tensors, got {_described(x)} and {_described(y)}"
        )
    _check_one_device("equal", x, y)
    return x.shape == y.shape and bool(backend.array_module(x, y).equal(x, y).all())


# Logic: any dtype, nonzero is True; bool results.


@variants("function", "method")
def logical_and(input, other) -> Tensor:  # noqa: A002
    """input and other, elementwise (nonzero is True); a bool tensor."""
    x, y = _operand("logical_and", "input", input), _operand("logical_and", "other", other)
    xp = backend.array_module(x, y)
    return Tensor(xp.asarray(_broadcasting("logical_and", xp.logical_and, x, y)))


@variants("function", "method")
def logical_or(input, other) -> Tensor:  # noqa: A002
    """input or other, elementwise (nonzero is True); a bool tensor."""
    x, y = _operand("logical_or", "input", input), _operand("logical_or", "other", other)
    xp = backend.array_module(x, y)
    return Tensor(xp.asarray(_broadcasting("logical_or", xp.logical_or, x, y)))


@variants("function", "method")
def logical_xor(input, other) -> Tensor:  # noqa: A002
    """input xor other, elementwise (nonzero is True); a bool tensor."""
    x, y = _operand("logical_xor", "input", input), _operand("logical_xor", "other", other)
    xp = backend.array_module(x, y)
    return Tensor(xp.asarray(_broadcasting("logical_xor", xp.logical_xor, x, y)))


@variants("function", "method")
def logical_not(input) -> Tensor:  # noqa: A002
    """not input, elementwise (nonzero is True); a bool tensor."""
    x = _operand("logical_not", "input", input)
    return Tensor(backend.array_module(x).logical_not(x))


# Bitwise: integer and bool operands (bool for and, or, xor, not; shifts take integers),
# promoted as PyTorch promotes them.


def _integers(caller: str, input, other, kinds: str = "biu"):
    """input and other as arrays of their PyTorch result dtype (a number cast to it, wrapping
    as PyTorch's does), which must be integer (or bool, where `kinds` has "b"), and the array
    module."""
    x, y = _operand(caller, "input", input), _operand(caller, "other", other)
    dtype = result_type((x, y))
    if dtype.kind not in kinds:
        wanted = "integer or bool" if "b" in kinds else "integer"
        raise DTypeError(
            f"{caller}: takes {wanted} operands, got input {_described(x)} and other "
            f"{_described(y)}"
        )
    xp = backend.array_module(x, y)
    x, y = (xp.asarray(v).astype(dtype, copy=False) for v in (x, y))
    return x, y, xp


@variants("method")
def bitwise_and(input, other) -> Tensor:  # noqa: A002
    """input & other, elementwise, on integer or bool operands."""
    x, y, xp = _integers("bitwise_and", input, other)
    return Tensor(_broadcasting("bitwise_and", xp.bitwise_and, x, y))


@variants("method")
def bitwise_or(input, other) -> Tensor:  # noqa: A002
    """input | other, elementwise, on integer or bool operands."""
    x, y, xp = _integers("bitwise_or", input, other)
    return Tensor(_broadcasting("bitwise_or", xp.bitwise_or, x, y))


@variants("method")
def bitwise_xor(input, other) -> Tensor:  # noqa: A002
    """input ^ other, elementwise, on integer or bool operands."""
    x, y, xp = _integers("bitwise_xor", input, other)
    return Tensor(_broadcasting("bitwise_xor", xp.bitwise_xor, x, y))


@variants("function", "method")
def bitwise_not(input) -> Tensor:  # noqa: A002
    """~input, elementwise: each bit flipped, or not for bools."""
    x = _operand("bitwise_not", "input", input)
    dtype = result_type((x,))
    if dtype.kind not in "biu":
        raise DTypeError(f"bitwise_not: takes an integer or bool input, got {_described(x)}")
    xp = backend.array_module(x)
    return Tensor(xp.invert(xp.asarray(x).astype(dtype, copy=False)))


@variants("method")
def bitwise_left_shift(input, other) -> Tensor:  # noqa: A002
    """input << other, elementwise, on integers (a bool operand promoted to an integer one, as
    with a Python int); a shift by a negative count or by the dtype's width or more gives 0."""
    x, y, xp = _integers("bitwise_left_shift", input, other, kinds="iu")
    return Tensor(_broadcasting("bitwise_left_shift", xp.left_shift, x, y))


@variants("method")
def bitwise_right_shift(input, other) -> Tensor:  # noqa: A002
    """input >> other, elementwise, on integers, with the sign filled in; a shift by a negative
    count or by the dtype's width or more gives 0, or -1 for a negative input."""
    x, y, xp = _integers("bitwise_right_shift", input, other, kinds="iu")
    return Tensor(_broadcasting("bitwise_right_shift", xp.right_shift, x, y))
