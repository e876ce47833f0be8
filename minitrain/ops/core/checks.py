"""Argument checks the op families share: each raises a minitrain error naming the caller (the
function the user called, as it should read in the message), the argument and what it got.

A check used by one family only stays in that family's file; one used by two or more lives here.
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import ArgumentError, DimensionError, DTypeError, ShapeError
from .op import array_of
from .promotion import dtype_of


def check_floating(caller: str, **arrays) -> None:
    """Each named array (None entries skipped) must be floating point."""
    for name, array in arrays.items():
        if array is not None and array.dtype.kind != "f":
            raise DTypeError(f"{caller}: '{name}' must be floating point, got {array.dtype}")


def check_same_shape(caller: str, dY, other, other_name: str) -> None:
    """A gradient kernel's dY and the forward value it pairs with must have one shape."""
    if dY.shape != other.shape:
        raise ShapeError(
            f"{caller}: dY {tuple(dY.shape)} and {other_name} {tuple(other.shape)} must have "
            f"the same shape"
        )


def check_real(caller: str, name: str, value) -> float:
    """A finite real number (bools refused), as a Python float: float32 arrays combined with it
    stay float32 (numpy's weak scalars)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise DTypeError(f"{caller}: {name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ArgumentError(f"{caller}: {name} must be finite, got {value}")
    return float(value)


def check_eps(caller: str, eps, name: str = "eps") -> float:
    """An epsilon added to a variance: a finite number >= 0 (bools refused), as a Python float;
    `name` is the argument's in the caller's signature."""
    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.integer, np.floating)):
        raise DTypeError(f"{caller}: {name} must be a number, got {type(eps).__name__}")
    if not (math.isfinite(eps) and eps >= 0):
        raise ArgumentError(f"{caller}: {name} must be finite and >= 0, got {eps}")
    return float(eps)


def check_shape(caller: str, name: str, value, expected: tuple, context: str) -> None:
    """An array (None skipped) must have the `expected` shape; `context` says why, as "one per
    channel of x (2, 3, 4)"."""
    if value is not None and tuple(value.shape) != expected:
        raise ShapeError(
            f"{caller}: {name} {tuple(value.shape)} must have shape {expected} ({context})"
        )


# what require_kind says an op that refuses bool x wants
NOT_BOOL = "numeric (not bool)"


def require_kind(caller: str, x, kinds: str, wanted: str, cast: str) -> None:
    """Refuse x, before the op runs, unless its dtype's kind is one of `kinds` (numpy's: "b"
    bool, "i" / "u" signed / unsigned integers, "f" floating), as PyTorch refuses it: a
    DTypeError naming the caller, x, its dtype, and the cast that makes it acceptable (`wanted`
    says what x must be: "floating point", NOT_BOOL)."""
    dtype = dtype_of(x)
    if dtype.kind not in kinds:
        raise DTypeError(f"{caller}: x must be {wanted}, got {dtype} (cast it first: x.{cast}())")


def normalize_axis(dim, ndim: int, caller: str) -> tuple[int, ...]:
    """PyTorch's `dim` (None for all, an int or a sequence) as a sorted tuple of distinct
    non-negative dims, the `axis` numpy's reductions take."""
    if dim is None:
        return tuple(range(ndim))
    try:
        dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    except TypeError:  # not iterable: a float, say
        raise DTypeError(f"{caller}: dim must be an int or a tuple of ints, got {dim!r}") from None
    limit = ndim if ndim else 1  # a 0-d tensor accepts dim 0 / -1, as PyTorch does
    result = []
    for d in dims:
        if not isinstance(d, (int, np.integer)):
            raise DTypeError(f"{caller}: dim must be ints, got {dim!r}")
        if not -limit <= d < limit:
            raise DimensionError(f"{caller}: dim {d} is out of range for a tensor with {ndim} dims")
        result.append(int(d) % limit)
    if ndim == 0:
        return ()
    if len(set(result)) != len(result):
        raise ShapeError(f"{caller}: dim {dim!r} repeats a dim")
    return tuple(sorted(result))


def normalize_one_axis(dim, ndim: int, caller: str) -> int | None:
    """One int dim, non-negative; None for a 0-d tensor's dim 0 or -1."""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise DTypeError(f"{caller}: takes one int dim, got {dim!r}")
    axes = normalize_axis(dim, ndim, caller)
    return axes[0] if axes else None


def is_integral(value) -> bool:
    """An integer or bool array (or Tensor) or number: not a float."""
    if isinstance(value, (bool, int, np.integer, np.bool_)):
        return True
    dtype = getattr(value, "dtype", None)
    return dtype is not None and np.dtype(dtype).kind in "biu"


def check_integer_divisor(caller: str, dividend, divisor) -> None:
    """Refuse an integer quotient or remainder by zero (both operands integral, a 0 in the
    divisor) before the op runs, as PyTorch refuses it: numpy would give 0 with a warning. A
    floating one is inf or nan, as in PyTorch."""
    dividend, divisor = array_of(dividend), array_of(divisor)
    if is_integral(dividend) and is_integral(divisor) and bool((divisor == 0).any()):
        raise ArgumentError(f"{caller}: integer division by zero (other holds a 0)")
