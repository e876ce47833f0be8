"""An op's arguments read before it runs: a non-tensor operand as an array or number, a value as
a Tensor, its array or its shape, and the broadcasting error that names the op's inputs."""

from __future__ import annotations

import numpy as np

from ... import backend
from ...arguments import as_array
from ...autograd.grad_mode import recording
from ...errors import DTypeError, ShapeError
from ...tensor import Tensor

__all__ = [
    "array_of",
    "array_step",
    "as_tensor",
    "check_broadcast",
    "operand",
    "shape_of",
]


def operand(value, op, index):
    """A non-tensor input as an array or a plain number (numbers keep numpy's weak promotion).
    A numpy float operand of a promoted (binary elementwise) op is a Python float to PyTorch,
    and becomes one here, so it takes the fast path of numbers; numpy's integers stay as they
    are, for PyTorch's wrap-around where Python's int would overflow the array's dtype."""
    if op._promoted_indices and isinstance(value, np.floating):
        return float(value)
    if (
        value is None
        or isinstance(value, (bool, int, float, np.generic))
        or backend.is_array(value)
    ):
        return value
    if isinstance(value, (list, tuple)):
        return as_array(value)
    raise DTypeError(
        f"{op.name}: argument '{op.input_name(index)}' must be a Tensor, an array or a number, "
        f"got {type(value).__name__}"
    )


def as_tensor(value) -> Tensor:
    """value itself when a Tensor (its graph kept), else a new leaf Tensor holding it."""
    # through as_array, not Tensor(value): an int there is PyTorch's torch.Tensor(size)
    return value if isinstance(value, Tensor) else Tensor.wrap(as_array(value))


def array_of(value):
    """The array behind an op's argument: a Tensor's data, an array as it is, None as None,
    anything else (numbers, lists) through np.asarray: for checks before an op runs."""
    if value is None or backend.is_array(value):
        return value
    return value.array if isinstance(value, Tensor) else np.asarray(value)


def shape_of(value) -> tuple:
    """The shape of a Tensor, an array, a number or a nested list: for checks before an op runs."""
    return tuple(value.shape) if hasattr(value, "shape") else np.shape(value)


def check_broadcast(op, arrays) -> None:
    """Numpy's broadcasting error, raised again as ours: naming the op and the shapes."""
    shapes = [a.shape for a in arrays if hasattr(a, "shape")]
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        given = ", ".join(
            f"{op.input_name(i)} {a.shape}" for i, a in enumerate(arrays) if hasattr(a, "shape")
        )
        raise ShapeError(f"{op.name}: shapes do not broadcast: {given}") from None


def array_step(fn, *args):
    """fn(*args): an array computed from tensors' arrays outside the ops (an index copied from
    an index tensor, a mask, a check of their values that raises). While minitrain.compile
    captures, the step is recorded, so that each replay computes it again from that call's
    arrays instead of keeping this call's result as a constant (capture/recorder.py). Returns
    fn's result."""
    result = fn(*args)
    capture = recording.capture
    if capture is not None:
        capture.array_step(fn, args, result)
    return result
