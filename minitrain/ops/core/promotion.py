"""PyTorch's dtype rules, which every op's output follows: `result_type` (how operands of
different dtypes promote), the check that inputs share one dtype where PyTorch's matmul and conv
do not promote, and the float32 default for what numpy would make float64."""

from __future__ import annotations

import numpy as np

from ...arguments import as_array
from ...errors import DTypeError
from ...tensor import Tensor

__all__ = [
    "any_float64",
    "check_one_dtype",
    "dtype_of",
    "mixed_dtypes",
    "promote_pair",
    "result_type",
]

FLOAT64 = np.dtype(np.float64)
# PyTorch's dtype categories, lowest first, and the dtype a number of each kind stands for.
_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
_NUMBER_DTYPE = {
    "b": np.dtype(np.bool_),
    "u": np.dtype(np.int64),
    "i": np.dtype(np.int64),
    "f": np.dtype(np.float32),
    "c": np.dtype(np.complex64),
}


def result_type(values) -> np.dtype:
    """The dtype PyTorch gives an elementwise op of `values` (`torch.result_type`): tensors,
    arrays and numbers (Python's or numpy's alike).

    Dtypes fall in categories, bool < integer < floating. Within its category, a tensor with
    dimensions outranks a 0-d tensor, which outranks a number; a higher category always wins.
    So float32 (3,) with a float64 0-d tensor gives float32, int32 (3,) with 2.5 gives float32
    (a float number stands for float32, an int for int64), and int32 (3,) with a float64 0-d
    tensor gives float64. Dtypes of one rank combine as `torch.promote_types`: within a
    category, the wider (uint8 with int8 gives int16); across, the higher's (float16 with int64
    gives float16, where numpy widens to float64)."""
    dims = zero_dims = numbers = None
    for value in values:
        if isinstance(value, Tensor):
            value = value.array
        if value is None:
            continue
        if isinstance(value, (bool, int, float, complex, np.generic)):
            numbers = _promote_types(numbers, _NUMBER_DTYPE[_number_kind(value)])
        elif value.ndim:
            dims = _promote_types(dims, value.dtype)
        else:
            zero_dims = _promote_types(zero_dims, value.dtype)
    return _outranking(dims, _outranking(zero_dims, numbers))


def _number_kind(number) -> str:
    if isinstance(number, np.generic):
        return number.dtype.kind
    if isinstance(number, bool):
        return "b"
    return "i" if isinstance(number, int) else "f" if isinstance(number, float) else "c"


def _promote_types(first, second):
    """`torch.promote_types`; None stands for no dtype yet."""
    if first is None or first == second:
        return second
    if second is None:
        return first
    first_category, second_category = _CATEGORY[first.kind], _CATEGORY[second.kind]
    if first_category != second_category and min(first_category, second_category) <= 1:
        # bool or an integer meets a higher category: that dtype, unwidened
        return first if first_category > second_category else second
    return np.promote_types(first, second)


def _outranking(higher, lower):
    """The dtype of a higher-ranked group of values combined with a lower-ranked one: the
    higher's, unless the lower's category is higher."""
    if higher is None:
        return lower
    if lower is None or _CATEGORY[higher.kind] >= _CATEGORY[lower.kind]:
        return higher
    return _promote_types(higher, lower)


def promote_pair(arrays, indices) -> None:
    """Bring the inputs at `indices` to their `result_type`, in place in the list `arrays`:
    arrays and numpy scalars of another dtype are cast; Python numbers stay, as numpy fits them
    to the arrays' dtype."""
    values = [arrays[index] for index in indices]
    if any(getattr(v, "dtype", np.dtype(float)).kind not in _CATEGORY for v in values):
        return  # strings, objects, times: the op's own numpy code says what it makes of them
    target = result_type(values)
    for index in indices:
        value = arrays[index]
        if isinstance(value, np.generic):
            arrays[index] = target.type(value)
        elif hasattr(value, "dtype") and value.dtype != target:
            arrays[index] = value.astype(target)


def check_one_dtype(caller: str, **values) -> None:
    """`values` (None entries skipped) must have one dtype, as PyTorch's matmul, linear and conv
    require: they do not promote, so that a float64 input cannot silently turn a float32 model's
    activations into float64."""
    dtypes = {name: dtype_of(v) for name, v in values.items() if v is not None}
    if len(set(dtypes.values())) > 1:
        given = ", ".join(f"{name} {dtype}" for name, dtype in dtypes.items())
        raise DTypeError(
            f"{caller}: inputs must share one dtype, got {given} (cast one, e.g. with .float())"
        )


def mixed_dtypes(dtypes) -> bool:
    """Whether the (non-None) dtypes are not all one: same_dtype's check, on the hot path."""
    first = None
    for dtype in dtypes:
        if dtype is None or dtype is first:
            continue
        if first is None:
            first = dtype
        elif dtype != first:
            return True
    return False


def dtype_of(value) -> np.dtype:
    """The dtype the op will see: lists of Python floats become float32 (as_array)."""
    return value.dtype if hasattr(value, "dtype") else as_array(value).dtype


def any_float64(dtypes) -> bool:
    # not `FLOAT64 in dtypes`: numpy reads dtype None as float64, so dtype('float64') == None
    return any(d is not None and d == FLOAT64 for d in dtypes)
