"""save and load, as torch.save and torch.load: a path or a file object, and the format read
told apart by the archive's members (minitrain's checkpoint, or PyTorch's zip file). Also
`minitrain.serialization`, as torch.serialization: its safe-globals registry, kept for the
programs that fill it."""

from __future__ import annotations

import errno
import io
import os
import pickle
import zipfile
import zlib
from typing import IO, Any

from .. import backend
from ..errors import ArgumentError, CheckpointError, DTypeError
from .atomic import write_atomically
from .checkpoint import STRUCTURE_MEMBER, encode_checkpoint, read_checkpoint, write_checkpoint
from .torch_format import is_legacy_torch_file, is_torch_archive, read_torch_checkpoint

__all__ = [
    "save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
]  # fmt: skip

_ZIP_MAGIC = b"PK\x03\x04"
_UNPICKLER_ARGUMENTS = ("encoding", "errors", "fix_imports")  # what pickle.Unpickler takes


def save(obj: Any, f: str | os.PathLike | IO[bytes], pickle_module=None, pickle_protocol=None):
    """Write `obj` to `f`, as torch.save does: `f` a file name (exactly that name: no suffix is
    added) or a binary file object open for writing (io.BytesIO, open(path, "wb")).

    `obj` is any nesting of dicts (str or int keys), lists and tuples over Tensors (Parameters
    stay Parameters, requires_grad is kept; CuPy arrays are copied to the host), arrays, numpy
    scalars, None, bool, int, float (inf and nan included) and str: a model's `state_dict()`, an
    optimizer's, or a dict of both. Dict subclasses (OrderedDict) load as plain dicts. An
    unsupported value raises CheckpointError naming its key path, before any file is touched.
    Unlike torch.save, a whole Module (or any other object) is refused: save
    `model.state_dict()`, PyTorch's own advice, and load it with `load_state_dict`.
    `pickle_module` and `pickle_protocol` are accepted for PyTorch's programs and ignored:
    nothing is pickled.

    A file name is written atomically: first in full to a temporary file in the same directory,
    flushed to disk, then renamed onto it, so a crash or an error mid-write leaves any previous
    file intact. A file object is written in place, from its current position.

    Format, version 2: an uncompressed .npz (zip) archive, readable with
    `np.load(path, allow_pickle=False)`. Member `__minitrain__` is a UTF-8 JSON document stored as
    a 1-D uint8 array: `{"format": "minitrain.checkpoint", "version": 2, "state": ...}`. In
    "state", null, booleans, integers, finite floats and strings stand for themselves; every
    JSON object is a one-key tag: `{"float": "nan" | "inf" | "-inf"}`, `{"tuple": [...]}`,
    `{"dict": [[key, value], ...]}` (in order), `{"array": "a0"}` (the member `a0.npy`),
    `{"tensor": ["a0", requires_grad]}` and `{"parameter": ["a0", requires_grad]}` (a Tensor or
    Parameter around that array: new in version 2) and `{"scalar": "a1"}` (a numpy scalar,
    stored as a 0-d array). An array held in several places is stored once. Nothing is pickled,
    so loading never runs code from the file. `load` still reads version 1, where Tensors were
    saved as their arrays.
    """
    members = encode_checkpoint(obj)  # every value checked before a file is touched
    if _is_file_object(f, "write"):
        write_checkpoint(members, f)
        return
    name = _file_name(f, "save")
    write_atomically(name, lambda file: write_checkpoint(members, file))


def load(
    f: str | os.PathLike | IO[bytes],
    map_location: str | backend.Device | None = None,
    pickle_module=None,
    *,
    weights_only: bool | None = None,
    mmap: bool | None = None,
    **pickle_load_args: Any,
) -> Any:
    """Read a checkpoint from `f` (a file name, or a binary file object open for reading, read
    from its current position), as torch.load does: one written by `save`, or by PyTorch's
    `torch.save` (its zip format, the default since PyTorch 1.6), told apart by the archive's
    members. Nothing in the file is executed.

    A minitrain checkpoint loads as saved: Tensors and Parameters as Tensors and Parameters
    (requires_grad kept), arrays as arrays, every other value exactly as saved (tuples stay
    tuples, int keys stay int, dtypes and shapes are kept); a version-1 file, which held
    Tensors as arrays, loads its arrays. A PyTorch checkpoint loads as torch.load would give it
    with `weights_only=True`: its tensors as Tensors, its Parameters as Parameters, its
    OrderedDicts, torch.Size (as tuples), dtypes (as numpy's) and plain values; see
    `minitrain.io.torch_format.read_torch_checkpoint` for what it admits and its dtypes (bfloat16
    loads as float32). PyTorch's format before 1.6 (not a zip) is refused: re-save the file with
    a newer PyTorch. A safetensors file is read by `minitrain.io.safetensors.load_file`.

    The file holds host arrays, whatever device they were saved from, so they load on the CPU;
    `map_location` ('cpu', 'cuda', 'cuda:1' or a Device) puts every array and Tensor on that
    device instead (numpy scalars stay numpy scalars). Unlike torch.load, nothing goes back to a
    GPU unless asked: a checkpoint saved on a GPU loads on a machine without one. A dict or a
    function as `map_location` is refused (DTypeError).

    `weights_only` True or None (PyTorch's default since 2.6) is the one path there is: the
    restricted reading above. `weights_only=False` does not change it: minitrain never unpickles
    arbitrary objects, so a PyTorch file that would need it (a pickled Module, a custom class)
    raises CheckpointError naming the global it would have run, even then. `mmap` is accepted
    and ignored: the file is read into memory. `pickle_module` may only be None or the standard
    `pickle`; of `pickle_load_args`, the `encoding`, `errors` and `fix_imports` of
    `pickle.Unpickler` (for Python 2 strings in old PyTorch files) are passed on, any other is
    refused (ArgumentError).

    Raises FileNotFoundError when there is no file, and CheckpointError (a ValueError) when the
    file is truncated or damaged, is no checkpoint minitrain reads, or has a newer format
    version. Every array is checked against its header and its checksum (each PyTorch storage
    against its size): a damaged file never loads as shorter or altered arrays.
    """
    target = _map_location(map_location)
    unpickler_arguments = _check_load_options(pickle_module, weights_only, mmap, pickle_load_args)
    if _is_file_object(f, "read"):
        name = str(getattr(f, "name", None) or f"<{type(f).__name__}>")
        return _load_from(_seekable(f), name, target, weights_only, unpickler_arguments)
    name = _file_name(f, "load")
    try:
        file = open(name, "rb")
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "load: no checkpoint file at", name) from None
    with file:
        return _load_from(file, name, target, weights_only, unpickler_arguments)


def _load_from(file: IO[bytes], name: str, target, weights_only, unpickler_arguments) -> Any:
    start = file.tell()
    head = file.read(len(_ZIP_MAGIC))
    if head != _ZIP_MAGIC:
        file.seek(start)
        if is_legacy_torch_file(file.read(16)):
            raise CheckpointError(
                f"load: {name!r} is in PyTorch's format from before PyTorch 1.6 (a pickle "
                f"stream, not a zip archive), which minitrain does not read: load it with "
                f"torch.load and save it again with a newer PyTorch (torch.save's default "
                f"zip format)"
            )
        file.seek(start)
        hint = ""
        if _looks_like_safetensors(file.read(9)):
            hint = (
                "; it looks like a safetensors file: read it with "
                "minitrain.io.safetensors.load_file"
            )
        raise CheckpointError(
            f"load: {name!r} is not a minitrain checkpoint: it is not a zip (.npz) archive{hint}"
        )
    file.seek(start)
    try:
        with zipfile.ZipFile(file) as archive:
            _refuse_encrypted_members(archive, name)
            if f"{STRUCTURE_MEMBER}.npy" not in archive.namelist() and is_torch_archive(archive):
                return read_torch_checkpoint(
                    archive, name, target, weights_only, **unpickler_arguments
                )
            return read_checkpoint(archive, name, target)
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


def _refuse_encrypted_members(archive: zipfile.ZipFile, name: str) -> None:
    """Neither minitrain nor PyTorch encrypts a member: the flag is a damaged bit, which zipfile
    would report as a RuntimeError asking for a password."""
    for info in archive.infolist():
        if info.flag_bits & 0x1:
            raise CheckpointError(
                f"load: {name!r} is damaged: its member {info.filename!r} is marked as "
                f"encrypted, which minitrain and PyTorch never write"
            )


def _looks_like_safetensors(head: bytes) -> bool:
    """Whether a file starts as safetensors files do: its header's length (8 bytes, little
    endian), then the header, a JSON object."""
    return len(head) == 9 and head[8:] == b"{" and int.from_bytes(head[:8], "little") > 1


def _check_load_options(pickle_module, weights_only, mmap, pickle_load_args) -> dict[str, Any]:
    """load's PyTorch options checked before the file is read; the arguments it passes on to
    the unpickler of PyTorch's files."""
    if pickle_module is not None and pickle_module is not pickle:
        raise ArgumentError(
            f"load: pickle_module must be None or the standard pickle module, got "
            f"{pickle_module!r}; minitrain reads PyTorch's files with its own restricted "
            f"unpickler, which runs no code from the file"
        )
    for option, value in (("weights_only", weights_only), ("mmap", mmap)):
        if value is not None and not isinstance(value, bool):
            raise DTypeError(f"load: {option} must be True, False or None, got {value!r}")
    unknown = sorted(set(pickle_load_args) - set(_UNPICKLER_ARGUMENTS))
    if unknown:
        raise ArgumentError(
            f"load: unexpected keyword arguments {unknown}; of pickle's load arguments, "
            f"minitrain takes {list(_UNPICKLER_ARGUMENTS)}"
        )
    return dict(pickle_load_args)


def _is_file_object(f: Any, method: str) -> bool:
    """Whether `f` is a file object (it has `read` or `write`) rather than a file name."""
    return not isinstance(f, (str, bytes, os.PathLike)) and callable(getattr(f, method, None))


def _seekable(file: IO[bytes]) -> IO[bytes]:
    """`file`, or its remaining bytes in memory where it cannot seek (a pipe, a socket):
    a zip archive is read from its end."""
    seekable = getattr(file, "seekable", None)
    if callable(seekable) and seekable():
        return file
    return io.BytesIO(file.read())


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


def _file_name(path: Any, caller: str) -> str:
    """The file name `path` gives, as a str; anything else is refused."""
    try:
        return os.fsdecode(path)
    except TypeError:
        raise DTypeError(
            f"{caller}: f must be a file name (str, bytes or os.PathLike) or a binary file "
            f"object, got {type(path).__name__}"
        ) from None


# torch.serialization's registry of the classes weights_only loading may build. Programs fill
# it before loading their own checkpoints; minitrain keeps the list, and loads what it always
# loads: tensor state, never a class the file names (a module saved whole is refused at save).
_safe_globals: list[Any] = []


def add_safe_globals(safe_globals: list[Any]) -> None:
    """PyTorch's: mark classes and functions as safe to load. Kept (get_safe_globals lists
    them) and changes nothing here: minitrain's load builds tensors and plain containers only,
    whatever is listed."""
    if not isinstance(safe_globals, (list, tuple)):
        raise DTypeError(
            f"add_safe_globals: expected a list of classes or functions, got "
            f"{type(safe_globals).__name__}"
        )
    _safe_globals.extend(safe_globals)


def get_safe_globals() -> list[Any]:
    """The classes and functions given to add_safe_globals (and the open safe_globals blocks)."""
    return list(_safe_globals)


def clear_safe_globals() -> None:
    """Forget every global add_safe_globals was given."""
    _safe_globals.clear()


class safe_globals:  # noqa: N801 (PyTorch's name: a context manager)
    """`with safe_globals([...]):` PyTorch's block within which the listed globals count as
    safe; here they are listed (get_safe_globals) for the block's length and change nothing."""

    def __init__(self, safe_globals: list[Any]) -> None:
        if not isinstance(safe_globals, (list, tuple)):
            raise DTypeError(
                f"safe_globals: expected a list of classes or functions, got "
                f"{type(safe_globals).__name__}"
            )
        self.safe_globals = list(safe_globals)

    def __enter__(self) -> None:
        _safe_globals.extend(self.safe_globals)

    def __exit__(self, *exc_info) -> None:
        for item in self.safe_globals:
            _safe_globals.remove(item)
