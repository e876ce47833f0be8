"""Arguments read as PyTorch and numpy spell them: nested data, dtypes, `to`'s device-or-dtype
target, shapes and dims spread out or as one sequence, dim or axis, keepdim or keepdims."""

from __future__ import annotations

import numpy as np

from . import backend
from .errors import ArgumentError, DTypeError, ShapeError
from .runtime.defaults import get_default_dtype


def nested_array(data, caller: str):
    """np.asarray(data), where ragged nested sequences are a ShapeError saying where they are
    ragged, as PyTorch does (numpy's error names neither the dim nor the lengths)."""
    try:
        return np.asarray(data)
    except ValueError:
        ragged = _ragged(data)
        if ragged is None:
            raise
        raise ShapeError(f"{caller}: nested sequences must be rectangular: {ragged}") from None


def _ragged(data) -> str | None:
    """Where nested sequences first stop being rectangular, in words (None if they are)."""
    items, dim = [data], 0
    while items:
        sequences = [_is_sequence(item) for item in items]
        if not any(sequences):
            return None
        if not all(sequences):
            return f"at dim {dim}, some elements are sequences and some are not"
        lengths = [len(item) for item in items]
        other = next((n for n in lengths if n != lengths[0]), None)
        if other is not None:
            return f"expected a sequence of length {lengths[0]} at dim {dim}, got {other}"
        items, dim = [element for item in items for element in item], dim + 1
    return None


def _is_sequence(item) -> bool:
    """A list or tuple, or an array or Tensor of at least one dim (numpy takes either)."""
    return isinstance(item, (list, tuple)) or getattr(item, "ndim", 0) > 0


def as_dtype(dtype, caller: str) -> np.dtype:
    """`dtype` (np.float32, 'float64', np.dtype(...)) as a numpy dtype, or a DTypeError naming
    `caller` (numpy's own TypeError says nothing of who asked)."""
    try:
        return np.dtype(dtype)
    except DTypeError:
        raise  # minitrain.bfloat16's own message
    except TypeError:
        raise DTypeError(
            f"{caller}: dtype must be a numpy dtype (np.float32, 'float64', ...), got {dtype!r}"
        ) from None


def device_and_dtype(caller: str, target, device, dtype) -> tuple:
    """`to`'s arguments, positional target (a device or a dtype) or keywords, as (Device or
    None, np.dtype or None)."""
    if target is not None:
        is_device = isinstance(target, (str, backend.Device)) and not _is_dtype_name(target)
        if (device if is_device else dtype) is not None:
            raise ArgumentError(
                f"{caller}: {'device' if is_device else 'dtype'} given twice, as {target!r} and "
                f"as a keyword"
            )
        if is_device:
            device = target
        else:
            dtype = target
    return (
        None if device is None else backend.device(device),
        None if dtype is None else as_dtype(dtype, caller),
    )


def _is_dtype_name(target) -> bool:
    if not isinstance(target, str):
        return False
    try:
        np.dtype(target)
    except TypeError:
        return False
    return True


def shape_args(args) -> tuple:
    """A shape or dims given spread out or as one sequence: f(2, 3) and f((2, 3)) alike."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def dims_args(caller: str, args, keywords) -> tuple:
    """The dims given positionally or as PyTorch's `dims=` keyword (not both)."""
    if set(keywords) - {"dims"}:
        raise ArgumentError(f"{caller}: unexpected keywords {sorted(set(keywords) - {'dims'})}")
    if "dims" in keywords:
        if args:
            raise ArgumentError(f"{caller}: dims given both positionally and as a keyword")
        args = (keywords["dims"],)
    return shape_args(args)


def dim_arg(dim, axis, caller: str):
    """One dim argument (an int, a tuple of ints or None) from PyTorch's `dim` or numpy's
    `axis` spelling."""
    if dim is not None and axis is not None:
        raise DTypeError(f"{caller}: give dim or axis, not both")
    dim = axis if dim is None else dim
    if isinstance(dim, bool) or (isinstance(dim, tuple) and any(type(d) is bool for d in dim)):
        raise DTypeError(f"{caller}: dim must be an int or a tuple of ints, got {dim!r}")
    return dim


def keepdim_arg(keepdim, keepdims) -> bool:
    """PyTorch's `keepdim` or numpy's `keepdims` (which wins when given)."""
    return bool(keepdims if keepdims is not None else keepdim)


def dim_and_correction(dim, unbiased, correction, caller: str):
    """(dim, correction) from PyTorch's var / std arguments: x.var(False) means unbiased=False."""
    if isinstance(dim, bool):
        if unbiased is not None:
            raise ArgumentError(f"{caller}: unbiased given twice ({dim!r} in dim's place)")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise ArgumentError(f"{caller}: give unbiased or correction, not both")
    if unbiased is not None:
        if not isinstance(unbiased, (bool, np.bool_)):
            raise DTypeError(f"{caller}: unbiased must be a bool, got {unbiased!r}")
        return dim, int(unbiased)
    return dim, 1 if correction is None else correction


def as_array(data, dtype=None, device=None):
    """Turn data (not a Tensor: callers unwrap one) into an array. Python floats (and lists of
    them) become the default dtype (float32 unless set_default_dtype changed it), Python ints
    int64; numpy arrays and scalars keep their dtype unless `dtype` is given."""
    if backend.is_array(data) or isinstance(data, np.generic):
        array = data
    else:
        array = nested_array(data, "tensor")
        if dtype is None and array.dtype == np.float64:
            array = array.astype(get_default_dtype())
        elif array.dtype.kind not in "biuf":
            raise DTypeError(
                f"tensor: cannot make a tensor from {type(data).__name__} "
                f"(numpy made dtype {array.dtype} of it)"
            )
    xp = backend.array_module(array)
    array = xp.asarray(array, dtype=dtype)
    if device is not None:
        array = backend.to_device(array, backend.device(device))
    return array
