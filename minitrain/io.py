"""Checkpoints: save and load nested state of arrays and plain values, safely and atomically."""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import secrets
import stat
import zipfile
import zlib
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from . import backend
from .errors import ArgumentError, CheckpointError, DTypeError
from .tensor import Tensor

__all__ = ["save", "load", "write_atomically"]


FORMAT_NAME = "minitrain.checkpoint"
FORMAT_VERSION = 1
STRUCTURE_MEMBER = "__minitrain__"  # the archive member holding the JSON document

# numeric, bool, complex, byte and unicode strings, datetimes: numpy reads all of them back
# without pickle. Object arrays (and structured ones) would need pickle, which can run code.
_ARRAY_KINDS = frozenset("biufcSUMm")
_NON_FINITE = ("nan", "inf", "-inf")
_ZIP_MAGIC = b"PK\x03\x04"


def save(state: Any, path: str | os.PathLike) -> None:
    """Write `state` to the file `path` (exactly that name: no suffix is added), atomically.

    `state` is any nesting of dicts (str or int keys), lists and tuples over arrays, Tensors (their
    data is saved; CuPy arrays are copied to the host), numpy scalars, None, bool, int, float
    (inf and nan included) and str: a model's `state_dict()`, an optimizer's, or a dict of both.
    Dict subclasses (OrderedDict) load as plain dicts. An unsupported value raises CheckpointError
    naming its key path, before any file is touched.

    The file is first written in full to a temporary file in the same directory, flushed to disk,
    then renamed onto `path`: a crash or an error mid-write leaves any previous file intact.

    Format, version 1: an uncompressed .npz (zip) archive, readable with
    `np.load(path, allow_pickle=False)`. Member `__minitrain__` is a UTF-8 JSON document stored as
    a 1-D uint8 array: `{"format": "minitrain.checkpoint", "version": 1, "state": ...}`. In
    "state", null, booleans, integers, finite floats, strings and arrays stand for themselves;
    every JSON object is a one-key tag: `{"float": "nan" | "inf" | "-inf"}`, `{"tuple": [...]}`,
    `{"dict": [[key, value], ...]}` (in order), `{"array": "a0"}` (the member `a0.npy`) and
    `{"scalar": "a1"}` (a numpy scalar, stored as a 0-d array). An array held in several places
    is stored once. Nothing is pickled, so loading never runs code from the file.
    """
    name = _file_name(path, "save")
    document, arrays = _Encoder().encode_state(state)
    text = json.dumps(document, allow_nan=False, separators=(",", ":"))
    members = {STRUCTURE_MEMBER: np.frombuffer(text.encode("ascii"), dtype=np.uint8), **arrays}
    write_atomically(name, lambda file: np.savez(file, **members))


def load(path: str | os.PathLike, map_location: str | backend.Device | None = None) -> Any:
    """Read a checkpoint written by `save`: the same structure, with arrays where arrays or
    Tensors were saved and every other value exactly as saved (tuples stay tuples, int keys stay
    int, dtypes and shapes are kept). Nothing in the file is executed.

    The file holds host arrays, whatever device they were saved from, so they load as numpy
    arrays; `map_location` ('cpu', 'cuda', 'cuda:1' or a Device) puts every array on that device
    instead (numpy scalars stay numpy scalars). Unlike torch.load, no array goes back to a GPU
    unless asked: a checkpoint saved on a GPU loads on a machine without one.

    Raises FileNotFoundError when there is no file, and CheckpointError (a ValueError) when the
    file is truncated or damaged, is not a minitrain checkpoint, or has a newer format version.
    Every array is checked against its header and its checksum: a damaged file never loads as
    shorter or altered arrays.
    """
    name = _file_name(path, "load")
    target = _map_location(map_location)
    try:
        file = open(name, "rb")
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "load: no checkpoint file at", name) from None
    with file:
        if file.read(len(_ZIP_MAGIC)) != _ZIP_MAGIC:
            raise CheckpointError(
                f"load: {name!r} is not a minitrain checkpoint: it is not a zip (.npz) archive"
            )
        file.seek(0)
        try:
            with zipfile.ZipFile(file) as archive:
                arrays = _Arrays(archive, name)
                document = _read_document(arrays, name)
                return _Decoder(arrays, name, target).decode(document["state"], "state")
        except CheckpointError:
            raise
        except (
            zipfile.BadZipFile,
            zlib.error,
            EOFError,
            OSError,
            ValueError,
            NotImplementedError,  # zipfile: a compression method it does not know
        ) as exc:
            raise CheckpointError(
                f"load: {name!r} is truncated or damaged ({type(exc).__name__}: {exc})"
            ) from exc


def _map_location(map_location) -> backend.Device | None:
    """load's `map_location` as a Device that can hold arrays (checked before the file is read),
    or None: leave the arrays on the host."""
    if map_location is None:
        return None
    if not isinstance(map_location, (str, backend.Device)):
        raise DTypeError(
            f"load: map_location must be a device ('cpu', 'cuda', 'cuda:1' or a Device), got "
            f"{type(map_location).__name__}"
        )
    target = backend.device(map_location)
    backend.device_context(target)  # a DeviceError now, where the GPU is missing
    return target


def _file_name(path: str | bytes | os.PathLike, caller: str) -> str:
    """The file name `path` gives, as a str; anything else (a file object) is refused."""
    try:
        return os.fsdecode(path)
    except TypeError:
        raise DTypeError(
            f"{caller}: path must be a file name (str, bytes or os.PathLike), got "
            f"{type(path).__name__}"
        ) from None


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
            return {"array": self._add_array(value.array, value.array, path)}
        if backend.is_array(value):
            return {"array": self._add_array(value, value, path)}
        if kind in (list, tuple) or isinstance(value, dict):
            return self._encode_container(value, path)
        raise CheckpointError(
            f"save: {path} is a {kind.__qualname__}, which a checkpoint cannot hold; it holds "
            f"arrays, Tensors, numpy scalars, None, bool, int, float, str, and lists, tuples and "
            f"dicts (str or int keys) of them"
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


def write_atomically(path: str, write: Callable[[IO[bytes]], None], caller: str = "save") -> None:
    """Write a file through a temporary one in the same directory, then rename it onto `path`."""
    if not path or path.endswith(("/", os.sep)) or os.path.isdir(path):
        raise IsADirectoryError(
            errno.EISDIR, f"{caller}: the path names a directory, not a file", path
        )
    target = os.path.realpath(path)  # through a symbolic link: replace the file it points to
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        raise FileNotFoundError(errno.ENOENT, f"{caller}: the directory does not exist", directory)
    if os.path.exists(target) and not os.access(target, os.W_OK):
        # a rename would replace a file that writing it in place may not: leave it as it is
        raise PermissionError(errno.EACCES, f"{caller}: the file is read-only", path)
    temp_path, descriptor = _create_temporary(directory, os.path.basename(target))
    try:
        with os.fdopen(descriptor, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        with contextlib.suppress(FileNotFoundError):
            # keep the permissions of the file being replaced, as writing it in place would
            os.chmod(temp_path, stat.S_IMODE(os.stat(target).st_mode))
        os.replace(temp_path, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_path)
        raise
    _fsync_directory(directory)


def _create_temporary(directory: str, name: str) -> tuple[str, int]:
    # os.open with mode 0o666 gives the permissions of an ordinary new file (the umask applies);
    # tempfile.mkstemp would make it private (0o600).
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while len(os.fsencode(name)) > 200:  # file names are limited to 255 bytes, not characters
        name = name[:-1]
    while True:
        temp_path = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            return temp_path, os.open(temp_path, flags, 0o666)
        except FileExistsError:
            continue


def _fsync_directory(directory: str) -> None:
    """Make the rename itself durable. Windows cannot open a directory, and some file systems
    refuse to fsync one: the rename has happened either way."""
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


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
            shape, _, dtype = _read_npy_header(stream, self.name, member)
            data_bytes = info.file_size - stream.tell()
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
        # the sizes agree, so numpy reads the member to its end, where its checksum is checked
        with self.archive.open(info) as stream:
            return np.lib.format.read_array(stream, allow_pickle=False)


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

    def __init__(self, arrays: _Arrays, name: str, target: backend.Device | None) -> None:
        self.arrays = arrays
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
                array = self._array(body, path)
                if self.target is None:
                    return array
                if body not in self._moved:
                    self._moved[body] = backend.to_device(array, self.target)
                return self._moved[body]
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

    def _array(self, member: str, path: str) -> np.ndarray:
        if member not in self._loaded:
            if member == STRUCTURE_MEMBER or member not in self.arrays.files:
                raise CheckpointError(
                    f"load: {self.name!r} is damaged: {path} refers to the array {member!r}, "
                    f"which the archive does not hold"
                )
            self._loaded[member] = self.arrays.read(member, path)
        return self._loaded[member]
