"""minitrain's checkpoint format: nested state of arrays, Tensors and plain values in an .npz
archive with a JSON document, written and read without pickle."""

from __future__ import annotations

import json
import math
import zipfile
from typing import IO, Any

import numpy as np

from .. import backend
from ..errors import ArgumentError, CheckpointError
from ..nn.modules.module import Module, Parameter
from ..tensor import Tensor

__all__ = [
    "FORMAT_NAME", "FORMAT_VERSION", "STRUCTURE_MEMBER", "encode_checkpoint", "write_checkpoint",
    "read_checkpoint",
]  # fmt: skip


FORMAT_NAME = "minitrain.checkpoint"
# 2: Tensors are tagged ("tensor", "parameter") and load as Tensors; version 1 had no such tags
# (Tensors were saved as their arrays), so a version-1 reader cannot read a version-2 file
FORMAT_VERSION = 2
STRUCTURE_MEMBER = "__minitrain__"  # the archive member holding the JSON document

# numeric, bool, complex, byte and unicode strings, datetimes: numpy reads all of them back
# without pickle. Object arrays (and structured ones) would need pickle, which can run code.
_ARRAY_KINDS = frozenset("biufcSUMm")
_NON_FINITE = ("nan", "inf", "-inf")
_CHUNK_BYTES = 1 << 18  # arrays are read in chunks of this size, as numpy reads them


def encode_checkpoint(state: Any) -> dict[str, np.ndarray]:
    """The members of the archive holding `state` in minitrain's format (see
    `minitrain.io.save`), every value checked: CheckpointError naming the first that cannot be
    saved, before a file is touched."""
    document, arrays = _Encoder().encode_state(state)
    text = json.dumps(document, allow_nan=False, separators=(",", ":"))
    return {STRUCTURE_MEMBER: np.frombuffer(text.encode("ascii"), dtype=np.uint8), **arrays}


def write_checkpoint(members: dict[str, np.ndarray], file: IO[bytes]) -> None:
    """Write encode_checkpoint's members to the open binary `file`: an uncompressed .npz."""
    np.savez(file, **members)


def read_checkpoint(archive: zipfile.ZipFile, name: str, target: backend.Device | None) -> Any:
    """The state a minitrain checkpoint's open `archive` holds (`name` is the file's, for
    errors), its arrays on `target` (None: numpy arrays on the host)."""
    arrays = _Arrays(archive, name)
    document = _read_document(arrays, name)
    decoder = _Decoder(arrays, name, target, document["version"])
    return decoder.decode(document["state"], "state")


# Saving


class _Encoder:
    """Turns a state into the JSON document and the arrays it refers to."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self._name_of: dict[int, str] = {}  # id of a saved array -> its member: stored once
        self._keep_alive: list[Any] = []  # the originals behind _name_of, so ids stay unique
        self._open: set[int] = set()  # ids of the containers being encoded: finds cycles

    def encode_state(self, state: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        encoded = self.encode(state, "state")
        return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "state": encoded}, self.arrays

    def encode(self, value: Any, path: str) -> Any:
        kind = type(value)
        if value is None or kind in (bool, int, str):
            return value
        if kind is float:
            return value if math.isfinite(value) else {"float": repr(value)}
        if isinstance(value, np.generic):  # before float: np.float64 is a float subclass
            return {"scalar": self._add_array(np.asarray(value), value, path)}
        if isinstance(value, Tensor):
            tag = "parameter" if isinstance(value, Parameter) else "tensor"
            return {tag: [self._add_array(value.array, value.array, path), value.requires_grad]}
        if backend.is_array(value):
            return {"array": self._add_array(value, value, path)}
        if kind in (list, tuple) or isinstance(value, dict):
            return self._encode_container(value, path)
        advice = ""
        if isinstance(value, Module):
            advice = (
                "; save the module's state_dict() and load it into a new module with "
                "load_state_dict(), as PyTorch recommends (minitrain never pickles a Module)"
            )
        raise CheckpointError(
            f"save: {path} is a {kind.__qualname__}, which a checkpoint cannot hold; it holds "
            f"arrays, Tensors, numpy scalars, None, bool, int, float, str, and lists, tuples and "
            f"dicts (str or int keys) of them{advice}"
        )

    def _encode_container(self, value: list | tuple | dict, path: str) -> Any:
        if id(value) in self._open:
            raise CheckpointError(f"save: {path} contains itself (a reference cycle)")
        self._open.add(id(value))
        if isinstance(value, dict):
            encoded = {"dict": [self._encode_item(key, item, path) for key, item in value.items()]}
        else:
            items = [self.encode(item, f"{path}[{i}]") for i, item in enumerate(value)]
            encoded = items if type(value) is list else {"tuple": items}
        self._open.discard(id(value))
        return encoded

    def _encode_item(self, key: Any, item: Any, path: str) -> list:
        if type(key) not in (str, int):
            raise CheckpointError(
                f"save: {path} has the key {key!r} of type {type(key).__qualname__}; "
                f"checkpoint keys must be str or int"
            )
        return [key, self.encode(item, f"{path}[{key!r}]")]

    def _add_array(self, array: Any, original: Any, path: str) -> str:
        if id(original) in self._name_of:
            return self._name_of[id(original)]
        if array.dtype.kind not in _ARRAY_KINDS:
            raise CheckpointError(
                f"save: {path} is an array of dtype {array.dtype}; a checkpoint holds numeric, "
                f"bool, string and datetime arrays only (object arrays would need pickle, which "
                f"can run code when loaded)"
            )
        name = f"a{len(self.arrays)}"
        self.arrays[name] = backend.to_device(array, backend.CPU)
        self._name_of[id(original)] = name
        self._keep_alive.append(original)
        return name


# Loading


def _reject_constant(constant: str) -> None:
    raise ArgumentError(f"the JSON document holds {constant}, which minitrain never writes")


class _Arrays:
    """The arrays of a checkpoint's archive (its .npy members), read without pickle and checked in
    full. numpy alone reads the bytes an array's header asks for and stops there, so a damaged
    header (one flipped bit in its shape) would load a shorter array without any error, never
    reaching the member's end, where zipfile compares the checksum."""

    def __init__(self, archive: zipfile.ZipFile, name: str) -> None:
        self.archive, self.name = archive, name
        self.files = [m.removesuffix(".npy") for m in archive.namelist() if m.endswith(".npy")]

    def read(self, member: str, path: str) -> np.ndarray:
        info = self.archive.getinfo(f"{member}.npy")
        with self.archive.open(info) as stream:
            shape, fortran_order, dtype = _read_npy_header(stream, self.name, member)
            self._check_header(member, path, shape, dtype, info.file_size - stream.tell())
            # the sizes agree, so this reads the member to its end, where zipfile checks its
            # checksum
            array = _read_npy_data(stream, math.prod(shape), dtype)
        return array.reshape(shape[::-1]).T if fortran_order else array.reshape(shape)

    def _check_header(
        self, member: str, path: str, shape: tuple[int, ...], dtype: np.dtype, data_bytes: int
    ) -> None:
        if dtype.hasobject:
            raise CheckpointError(
                f"load: {self.name!r} is damaged or unsafe: the array {member!r} for {path} holds "
                f"Python objects ({dtype}), which only pickle can read; minitrain never writes or "
                f"reads pickled data"
            )
        needed = math.prod(shape) * dtype.itemsize
        if needed != data_bytes:
            raise CheckpointError(
                f"load: {self.name!r} is damaged: the array {member!r} for {path} holds "
                f"{data_bytes} bytes of data, its header (shape {shape}, dtype {dtype}) needs "
                f"{needed}"
            )


def _read_npy_header(stream: IO[bytes], name: str, member: str):
    """(shape, fortran_order, dtype) from a .npy member's header."""
    version = np.lib.format.read_magic(stream)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(stream)
    if version == (2, 0):
        return np.lib.format.read_array_header_2_0(stream)
    raise CheckpointError(
        f"load: {name!r} is damaged: the array {member!r} is in .npy format version {version}, "
        f"which minitrain never writes"
    )


def _read_npy_data(stream: IO[bytes], count: int, dtype: np.dtype) -> np.ndarray:
    """The `count` items that follow a .npy header, read in chunks as numpy's read_array reads
    them (a member is never held twice in memory)."""
    array = np.ndarray(count, dtype=dtype)  # np.empty cannot make zero-width string dtypes
    if dtype.itemsize == 0:
        return array
    per_chunk = max(1, _CHUNK_BYTES // dtype.itemsize)
    for start in range(0, count, per_chunk):
        stop = min(start + per_chunk, count)
        data = stream.read((stop - start) * dtype.itemsize)
        array[start:stop] = np.frombuffer(data, dtype=dtype, count=stop - start)
    return array


def _read_document(arrays: _Arrays, name: str) -> dict[str, Any]:
    """The JSON document of a checkpoint, its format name and version checked."""
    if STRUCTURE_MEMBER not in arrays.files:
        raise CheckpointError(
            f"load: {name!r} is an .npz archive but not a minitrain checkpoint (it has no "
            f"{STRUCTURE_MEMBER!r} member; its members: {sorted(arrays.files)[:8]})"
        )
    raw = arrays.read(STRUCTURE_MEMBER, "the structure")
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise CheckpointError(
            f"load: {name!r} is damaged: {STRUCTURE_MEMBER!r} should be a 1-D uint8 array, "
            f"got dtype {raw.dtype} and shape {raw.shape}"
        )
    try:
        document = json.loads(raw.tobytes().decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise CheckpointError(
            f"load: {name!r} is damaged: its structure is not JSON ({exc})"
        ) from exc
    if not isinstance(document, dict) or document.get("format") != FORMAT_NAME:
        found = document.get("format") if isinstance(document, dict) else None
        raise CheckpointError(
            f"load: {name!r} is not a minitrain checkpoint (format {found!r}, expected "
            f"{FORMAT_NAME!r})"
        )
    version = document.get("version")
    if type(version) is not int or version < 1 or "state" not in document:
        raise CheckpointError(f"load: {name!r} is damaged: format version {version!r}")
    if version > FORMAT_VERSION:
        raise CheckpointError(
            f"load: {name!r} has checkpoint format version {version}, but this minitrain reads "
            f"versions up to {FORMAT_VERSION}: upgrade minitrain to load it"
        )
    return document


class _Decoder:
    """Rebuilds the saved state from the JSON document and the archive's arrays."""

    def __init__(
        self, arrays: _Arrays, name: str, target: backend.Device | None, version: int
    ) -> None:
        self.arrays = arrays
        self.version = version  # the file's format version: version 1 has no Tensor tags
        self.name = name
        self.target = target  # the device arrays go to (None: they stay numpy arrays)
        self._loaded: dict[str, np.ndarray] = {}  # an array saved once comes back as one object
        self._moved: dict[str, Any] = {}  # the same on map_location's device

    def decode(self, node: Any, path: str) -> Any:
        try:
            return self._decode(node, path)
        except RecursionError:
            raise CheckpointError(f"load: {self.name!r} is damaged: nested too deeply") from None

    def _decode(self, node: Any, path: str) -> Any:
        if node is None or type(node) in (bool, int, float, str):
            return node
        if type(node) is list:
            return [self._decode(item, f"{path}[{i}]") for i, item in enumerate(node)]
        if type(node) is dict and len(node) == 1:
            ((tag, body),) = node.items()
            if tag == "float" and body in _NON_FINITE:
                return float(body)
            if tag == "tuple" and type(body) is list:
                return tuple(self._decode(item, f"{path}[{i}]") for i, item in enumerate(body))
            if tag == "dict" and type(body) is list:
                return dict(self._decode_item(entry, path) for entry in body)
            if tag == "array" and type(body) is str:
                return self._array_on_target(body, path)
            if tag in ("tensor", "parameter") and self.version >= 2 and _is_tensor_entry(body):
                return self._tensor(tag, *body, path)
            if tag == "scalar" and type(body) is str:
                array = self._array(body, path)
                if array.ndim == 0:
                    return array[()]
        raise CheckpointError(
            f"load: {self.name!r} is damaged: {path} is an entry minitrain does not know: "
            f"{json.dumps(node)[:80]}"
        )

    def _decode_item(self, entry: Any, path: str) -> tuple[str | int, Any]:
        if type(entry) is not list or len(entry) != 2 or type(entry[0]) not in (str, int):
            raise CheckpointError(
                f"load: {self.name!r} is damaged: {path} has a dict entry that is not a "
                f"[str or int key, value] pair: {json.dumps(entry)[:80]}"
            )
        key, value = entry
        return key, self._decode(value, f"{path}[{key!r}]")

    def _array_on_target(self, member: str, path: str) -> Any:
        array = self._array(member, path)
        if self.target is None:
            return array
        if member not in self._moved:
            self._moved[member] = backend.to_device(array, self.target)
        return self._moved[member]

    def _tensor(self, tag: str, member: str, requires_grad: bool, path: str) -> Tensor:
        """A Tensor (or Parameter) around the member's array, shared with every other entry
        that refers to it, as a tensor's storage is in PyTorch's checkpoints."""
        array = self._array_on_target(member, path)
        if requires_grad and array.dtype.kind != "f":
            raise CheckpointError(
                f"load: {self.name!r} is damaged: {path} is a tensor of dtype {array.dtype} "
                f"that requires grad; only floating-point tensors can"
            )
        if tag == "parameter":
            return Parameter(array, requires_grad=requires_grad)
        tensor = Tensor.wrap(array)
        tensor.requires_grad = requires_grad
        return tensor

    def _array(self, member: str, path: str) -> np.ndarray:
        if member not in self._loaded:
            if member == STRUCTURE_MEMBER or member not in self.arrays.files:
                raise CheckpointError(
                    f"load: {self.name!r} is damaged: {path} refers to the array {member!r}, "
                    f"which the archive does not hold"
                )
            self._loaded[member] = self.arrays.read(member, path)
        return self._loaded[member]


def _is_tensor_entry(body: Any) -> bool:
    """Whether a "tensor" or "parameter" tag's body is [member, requires_grad]."""
    return type(body) is list and len(body) == 2 and type(body[0]) is str and type(body[1]) is bool
