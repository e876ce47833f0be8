"""What a tensor prints as: PyTorch's text, `tensor([1.5000, 2.0000], requires_grad=True)`, its
numbers formatted by PyTorch's rules and the dtype, device and graph said where PyTorch says
them."""

from __future__ import annotations

import numpy as np

from . import backend

__all__ = ["tensor_repr"]


def tensor_repr(tensor) -> str:
    """`repr(tensor)`: the values (copied to the host from a GPU), then what PyTorch adds: the
    dtype where it is not the default of its kind, the device off the CPU, grad_fn or
    requires_grad."""
    data = tensor.array if isinstance(tensor.array, np.ndarray) else tensor.cpu().array
    body = np.array2string(
        data, separator=", ", prefix="tensor(", formatter=_float_formatter(data)
    ).replace(", ...,", ",  ...,")  # PyTorch writes a row's summary as " ..."
    extras = []
    inferred = data.dtype == np.float32 or (data.size and data.dtype in (np.int64, np.bool_))
    if not inferred:  # PyTorch names a dtype that the values do not imply
        extras.append(f"dtype={tensor.dtype}")
    if tensor.device != backend.CPU:
        extras.append(f"device='{tensor.device}'")
    if tensor.node is not None:
        extras.append(f"grad_fn=<{tensor.node.name}>")
    elif tensor.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + ", ".join([body, *extras]) + ")"


def _float_formatter(data: np.ndarray) -> dict | None:
    """numpy's formatter for a floating array printed as PyTorch prints it: whole numbers as
    `3.`; else 4 decimals, `3.5000`; scientific `1.0000e-05` where the finite nonzero magnitudes
    span more than 1000x, pass 1e8 or (not all whole) go below 1e-4; each padded to the widest.
    Past 1000 elements, only the 3 first and last along each dim count (those shown)."""
    if data.dtype.kind != "f" or data.size == 0:
        return None
    if data.size > 1000:
        for axis, size in enumerate(data.shape):
            data = np.take(data, [*range(3), *range(size - 3, size)], axis) if size > 6 else data
    shown = data[np.isfinite(data) & (data != 0)].astype(np.float64)
    finite = np.abs(shown)
    whole = bool(np.all(np.ceil(finite) == finite))
    wide = finite.size and (finite.max() / finite.min() > 1000 or finite.max() > 1e8)
    scientific = wide or (not whole and finite.size and finite.min() < 1e-4)
    spec = ".4e" if scientific else ".0f" if whole else ".4f"

    def text(value) -> str:
        written = format(float(value), spec)
        return written + "." if spec == ".0f" and np.isfinite(value) else written

    width = max((len(text(value)) for value in shown), default=0)
    return {"float_kind": lambda value: text(value).rjust(width)}
