"""safetensors files read and written with safetensors.torch's function names, on Tensors."""

from __future__ import annotations

import importlib
import os

import numpy as np

from .. import backend
from ..errors import CheckpointError, DTypeError, MinitrainError
from ..tensor import Tensor
from .atomic import write_atomically

__all__ = ["save_file", "load_file", "save", "load", "SafetensorsMissingError"]


class SafetensorsMissingError(MinitrainError, ImportError):
    """The safetensors package is not installed."""


def save_file(
    tensors: dict[str, Tensor], filename: str | os.PathLike, metadata: dict[str, str] | None = None
) -> None:
    """Write `tensors` (names to Tensors or arrays) to the safetensors file `filename`, as
    safetensors.torch.save_file does; `metadata` is a dict of str to str kept in its header.
    The file is written atomically (a temporary file renamed onto it, as `minitrain.save`
    writes). Needs the safetensors package (`pip install safetensors`)."""
    data = save(tensors, metadata)
    write_atomically(os.fsdecode(filename), lambda file: file.write(data), caller="save_file")


def load_file(filename: str | os.PathLike, device: str | backend.Device = "cpu") -> dict:
    """The tensors of the safetensors file `filename`, as safetensors.torch.load_file returns
    them: a dict of names to Tensors, on `device` ('cpu', 'cuda', 'cuda:1' or a Device).
    Needs the safetensors package (`pip install safetensors`); a file it cannot read raises
    CheckpointError, one with bfloat16 tensors among them (numpy has no bfloat16)."""
    target = backend.device(device)
    safetensors_numpy = _safetensors_numpy("load_file")
    name = os.fsdecode(filename)
    if not os.path.exists(name):
        raise FileNotFoundError(f"load_file: no safetensors file at {name!r}")
    try:
        arrays = safetensors_numpy.load_file(name)
    except Exception as exc:  # safetensors' own SafetensorError, and numpy's dtype errors
        raise CheckpointError(f"load_file: cannot read {name!r} as safetensors: {exc}") from exc
    return _tensors(arrays, target)


def save(tensors: dict[str, Tensor], metadata: dict[str, str] | None = None) -> bytes:
    """`tensors` (names to Tensors or arrays) in safetensors format, as bytes, as
    safetensors.torch.save returns them. Needs the safetensors package."""
    safetensors_numpy = _safetensors_numpy("save")
    if not isinstance(tensors, dict):
        raise DTypeError(f"save: tensors must be a dict of names to tensors, got {type(tensors)}")
    arrays = {}
    for key, value in tensors.items():
        if type(key) is not str:
            raise DTypeError(f"save: safetensors names must be str, got {key!r}")
        array = value.array if isinstance(value, Tensor) else value
        if not backend.is_array(array):
            raise DTypeError(
                f"save: tensors[{key!r}] is a {type(value).__name__}; safetensors holds tensors"
            )
        host = backend.to_device(array, backend.CPU)
        # C order, as safetensors stores it (np.ascontiguousarray would make a 0-d array 1-d)
        arrays[key] = host if host.flags.c_contiguous else host.copy(order="C")
    if metadata is not None and not (
        isinstance(metadata, dict)
        and all(type(k) is str and type(v) is str for k, v in metadata.items())
    ):
        raise DTypeError(f"save: metadata must be a dict of str to str, got {metadata!r}")
    return safetensors_numpy.save(arrays, metadata=metadata)


def load(data: bytes) -> dict:
    """The tensors of safetensors `data` (bytes), as safetensors.torch.load returns them: a
    dict of names to Tensors on the CPU. Needs the safetensors package."""
    safetensors_numpy = _safetensors_numpy("load")
    if not isinstance(data, (bytes, bytearray)):
        raise DTypeError(f"load: data must be bytes, got {type(data).__name__}")
    try:
        arrays = safetensors_numpy.load(bytes(data))
    except Exception as exc:  # safetensors' own SafetensorError, and numpy's dtype errors
        raise CheckpointError(f"load: cannot read the bytes as safetensors: {exc}") from exc
    return _tensors(arrays, None)


def _tensors(arrays: dict[str, np.ndarray], target: backend.Device | None) -> dict:
    moved = {key: backend.to_device(array, target or backend.CPU) for key, array in arrays.items()}
    return {key: Tensor.wrap(array) for key, array in moved.items()}


def _safetensors_numpy(caller: str):
    """safetensors.numpy, imported on first use: the package is an optional extra."""
    try:
        return importlib.import_module("safetensors.numpy")
    except ImportError:
        raise SafetensorsMissingError(
            f"{caller}: safetensors files need the safetensors package: pip install safetensors "
            f"(or pip install 'minitrain[safetensors]')"
        ) from None
