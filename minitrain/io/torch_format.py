"""PyTorch's checkpoint files read without PyTorch: torch.save's zip archive, its pickle
unpickled by a restricted unpickler that admits only the globals of tensor state."""

from __future__ import annotations

import pickle
import zipfile
from collections import OrderedDict
from typing import Any

import numpy as np

from .. import backend
from ..errors import CheckpointError
from ..nn.modules.module import Parameter
from ..runtime.defaults import bfloat16
from ..tensor import Tensor

__all__ = ["is_torch_archive", "is_legacy_torch_file", "read_torch_checkpoint"]

# torch.save before PyTorch 1.6 wrote a pickle stream that starts with this number, pickled
LEGACY_MAGIC = pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2)[:-1]

# PyTorch's storage classes (the pickle names them in each storage's persistent id) and the
# dtype of their elements; bfloat16's are read as float32 (exactly: its bits are float32's top
# half). UntypedStorage holds bytes.
STORAGE_DTYPES = {
    "DoubleStorage": np.float64, "FloatStorage": np.float32, "HalfStorage": np.float16,
    "BFloat16Storage": "bfloat16", "LongStorage": np.int64, "IntStorage": np.int32,
    "ShortStorage": np.int16, "CharStorage": np.int8, "ByteStorage": np.uint8,
    "BoolStorage": np.bool_, "ComplexFloatStorage": np.complex64,
    "ComplexDoubleStorage": np.complex128, "UntypedStorage": np.uint8,
}  # fmt: skip

# torch's dtype names (a dtype pickles as the global torch.<name>) and what they load as
TORCH_DTYPES = {
    "float64": np.float64, "double": np.float64, "float32": np.float32, "float": np.float32,
    "float16": np.float16, "half": np.float16, "bfloat16": bfloat16, "int64": np.int64,
    "long": np.int64, "int32": np.int32, "int": np.int32, "int16": np.int16, "short": np.int16,
    "int8": np.int8, "uint8": np.uint8, "bool": np.bool_, "complex64": np.complex64,
    "cfloat": np.complex64, "complex128": np.complex128, "cdouble": np.complex128,
}  # fmt: skip


def is_torch_archive(archive: zipfile.ZipFile) -> bool:
    """Whether a zip archive is torch.save's: it holds `<name>/data.pkl`."""
    return _record_prefix(archive) is not None


def is_legacy_torch_file(head: bytes) -> bool:
    """Whether a file's first bytes are those of torch.save's format before PyTorch 1.6."""
    return head.startswith(LEGACY_MAGIC)


def read_torch_checkpoint(
    archive: zipfile.ZipFile,
    name: str,
    target: backend.Device | None,
    weights_only: bool | None = None,
    **unpickler_arguments: Any,
) -> Any:
    """What torch.load(weights_only=True) would return from a torch.save zip `archive` (`name`
    is the file's, for errors), its tensors as minitrain Tensors on `target` (None: the CPU).

    The archive holds `<name>/data.pkl` (the pickled structure), `<name>/data/<key>` (each
    storage's raw bytes), `<name>/byteorder` and `<name>/version`. The pickle is read by an
    unpickler that admits only the globals torch's weights_only unpickler admits for tensor
    state: `collections.OrderedDict`; `torch._utils._rebuild_tensor_v2` (and `_rebuild_tensor`),
    rebuilding a tensor from its storage, offset, size and stride (copied into an array of its
    own: tensors that shared a storage no longer share memory); `_rebuild_parameter` and
    `_rebuild_parameter_with_state` (with no Python state), giving a Parameter with its
    requires_grad; the storage types; `torch.Size` (a tuple); `torch.device` (its name, a str);
    dtypes (numpy's dtypes, `minitrain.bfloat16` for torch.bfloat16); `builtins` set, frozenset,
    complex and bytearray; `_codecs.encode` for latin-1 (protocol 2's bytes). Dicts, lists,
    tuples, numbers, strings and bytes are pickle's own: an optimizer's state_dict and a
    training checkpoint's dict of them load. Any other global (a Module, a function,
    `os.system`) raises CheckpointError naming it before anything is called, whatever
    `weights_only` is: `weights_only=False` only changes the advice in that error.

    dtypes: float16/32/64, int8/16/32/64, uint8, bool and complex64/128 keep theirs; bfloat16
    tensors load as float32 (exact: minitrain computes in no bfloat16), a difference from torch.
    A storage of another type (uint16, float8, quantized) is refused, naming it.
    """
    prefix = _record_prefix(archive)
    byteorder = _byteorder(archive, prefix, name)
    unpickler = _TensorUnpickler(
        archive.open(f"{prefix}data.pkl"),
        _Storages(archive, prefix, name, byteorder),
        _Rebuilder(name, target),
        name,
        weights_only,
        **unpickler_arguments,
    )
    try:
        return unpickler.load()
    except CheckpointError:
        raise
    except (
        pickle.UnpicklingError,
        TypeError,
        AttributeError,
        IndexError,
        KeyError,
        ValueError,
        EOFError,
        RecursionError,
        MemoryError,
    ) as exc:
        raise CheckpointError(
            f"load: {name!r} is a PyTorch checkpoint whose data.pkl is damaged "
            f"({type(exc).__name__}: {exc})"
        ) from exc


def _record_prefix(archive: zipfile.ZipFile) -> str | None:
    """The folder ('archive/' or the file's stem, '' where none) holding data.pkl."""
    for member in archive.namelist():
        folder, _, base = member.rpartition("/")
        if base == "data.pkl" and "/" not in folder:
            return f"{folder}/" if folder else ""
    return None


def _byteorder(archive: zipfile.ZipFile, prefix: str, name: str) -> str:
    """'<' or '>': the storages' byte order (files without the record are little-endian)."""
    member = f"{prefix}byteorder"
    if member not in archive.namelist():
        return "<"
    recorded = archive.read(member).decode("ascii", "replace").strip()
    if recorded not in ("little", "big"):
        raise CheckpointError(
            f"load: {name!r} is a PyTorch checkpoint with byte order {recorded[:20]!r}; "
            f"expected 'little' or 'big'"
        )
    return "<" if recorded == "little" else ">"


class _StorageType:
    """Stands in for one of torch's storage classes (torch.FloatStorage, ...)."""

    def __init__(self, name: str) -> None:
        self.name, self.dtype = name, STORAGE_DTYPES[name]


class _Storage:
    """A storage's elements, a flat host array (bfloat16 already widened to float32)."""

    def __init__(self, elements: np.ndarray) -> None:
        self.elements = elements


class _Storages:
    """The archive's storages, read once each and checked against the size the pickle gives."""

    def __init__(self, archive: zipfile.ZipFile, prefix: str, name: str, byteorder: str) -> None:
        self.archive, self.prefix, self.name, self.byteorder = archive, prefix, name, byteorder
        self._read: dict[tuple[str, str], _Storage] = {}

    def get(self, pid: Any) -> _Storage:
        if not (
            type(pid) is tuple
            and len(pid) == 5
            and pid[0] == "storage"
            and isinstance(pid[1], _StorageType)
            and type(pid[2]) is str
            and type(pid[4]) is int
        ):
            raise CheckpointError(
                f"load: {self.name!r} is a PyTorch checkpoint with a persistent id minitrain "
                f"does not know: {str(pid)[:80]} (it reads tensors' storages only)"
            )
        _, storage_type, key, _location, numel = pid
        if (key, storage_type.name) not in self._read:
            self._read[key, storage_type.name] = self._load(storage_type, key, numel)
        return self._read[key, storage_type.name]

    def _load(self, storage_type: _StorageType, key: str, numel: int) -> _Storage:
        member = f"{self.prefix}data/{key}"
        if member not in self.archive.namelist():
            raise CheckpointError(
                f"load: {self.name!r} is a damaged PyTorch checkpoint: it has no member "
                f"{member!r} for a {storage_type.name}"
            )
        raw = self.archive.read(member)  # zipfile checks the member's checksum
        bfloat = storage_type.dtype == "bfloat16"
        dtype = np.dtype(np.uint16 if bfloat else storage_type.dtype).newbyteorder(self.byteorder)
        if len(raw) != numel * dtype.itemsize:
            raise CheckpointError(
                f"load: {self.name!r} is a damaged PyTorch checkpoint: the {storage_type.name} "
                f"{member!r} holds {len(raw)} bytes, its {numel} elements need "
                f"{numel * dtype.itemsize}"
            )
        elements = np.frombuffer(raw, dtype=dtype)
        if bfloat:  # a bfloat16 is the top half of the float32 with the same value
            elements = (elements.astype(np.uint32) << 16).view(np.float32)
        if not elements.dtype.isnative:
            elements = elements.astype(elements.dtype.newbyteorder("="))
        return _Storage(elements)


class _Rebuilder:
    """The functions of torch._utils the pickle calls, as minitrain builds their results."""

    def __init__(self, name: str, target: backend.Device | None) -> None:
        self.name, self.target = name, target

    def tensor_v2(
        self, storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None
    ) -> Tensor:
        array = self._strided(storage, storage_offset, size, stride)
        for flag, on in (metadata or {}).items():
            if flag == "conj" and on:
                array = np.conj(array)
            elif flag == "neg" and on:
                array = np.negative(array)
            elif on:
                raise CheckpointError(
                    f"load: {self.name!r} holds a tensor with the metadata {flag!r}, which "
                    f"minitrain does not know"
                )
        return self._tensor(array, requires_grad)

    def tensor_v1(self, storage, storage_offset, size, stride) -> Tensor:
        return self._tensor(self._strided(storage, storage_offset, size, stride), False)

    def parameter(self, data, requires_grad, backward_hooks, state=None) -> Parameter:
        if not isinstance(data, Tensor) or type(requires_grad) is not bool:
            raise CheckpointError(
                f"load: {self.name!r} is a damaged PyTorch checkpoint: a Parameter of "
                f"{type(data).__name__} with requires_grad {requires_grad!r}"
            )
        parts = state if isinstance(state, tuple) else (state,)
        if any(parts):
            raise CheckpointError(
                f"load: {self.name!r} holds a Parameter with Python attributes "
                f"({str(state)[:80]}), which a minitrain Parameter cannot keep"
            )
        self._check_requires_grad(data.array, requires_grad)
        return Parameter(data.array, requires_grad=requires_grad)

    def _strided(self, storage, offset, size, stride) -> np.ndarray:
        if not (
            isinstance(storage, _Storage)
            and _is_count(offset)
            and type(size) is tuple
            and type(stride) is tuple
            and len(size) == len(stride)
            and all(map(_is_count, size + stride))
        ):
            raise CheckpointError(
                f"load: {self.name!r} is a damaged PyTorch checkpoint: a tensor with storage "
                f"{type(storage).__name__}, offset {offset!r}, size {size!r}, stride {stride!r}"
            )
        elements = storage.elements
        if 0 in size:
            return np.empty(size, dtype=elements.dtype)
        last = offset + sum((n - 1) * step for n, step in zip(size, stride, strict=True))
        if last >= elements.size:
            raise CheckpointError(
                f"load: {self.name!r} is a damaged PyTorch checkpoint: a tensor of size "
                f"{size}, stride {stride} at offset {offset} reaches element {last} of a "
                f"storage of {elements.size}"
            )
        itemsize = elements.dtype.itemsize
        view = np.lib.stride_tricks.as_strided(
            elements[offset:], shape=size, strides=[step * itemsize for step in stride]
        )
        return view.copy()  # an array of its own, writable, in C order

    def _tensor(self, array: np.ndarray, requires_grad: Any) -> Tensor:
        if type(requires_grad) is not bool:
            raise CheckpointError(
                f"load: {self.name!r} is a damaged PyTorch checkpoint: requires_grad "
                f"{requires_grad!r}"
            )
        self._check_requires_grad(array, requires_grad)
        tensor = Tensor.wrap(
            array if self.target is None else backend.to_device(array, self.target)
        )
        tensor.requires_grad = requires_grad
        return tensor

    def _check_requires_grad(self, array: np.ndarray, requires_grad: bool) -> None:
        if requires_grad and array.dtype.kind != "f":
            raise CheckpointError(
                f"load: {self.name!r} holds a {array.dtype} tensor that requires grad, which "
                f"minitrain allows floating-point tensors only"
            )


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _device_name(kind: str, index: int | None = None) -> str:
    """torch.device(kind, index) as its name: the checkpoint's device is not where minitrain
    puts the tensors (map_location is)."""
    return kind if index is None else f"{kind}:{index}"


def _latin1_bytes(text: str, encoding: str = "latin1") -> bytes:
    """_codecs.encode as pickle protocol 2 uses it: bytes pickled as a latin-1 str."""
    if type(text) is not str or encoding not in ("latin1", "latin-1"):
        raise CheckpointError("load: _codecs.encode is admitted for latin-1 str only")
    return text.encode("latin1")


class _TensorUnpickler(pickle.Unpickler):
    """An unpickler that resolves only the admitted globals and storage persistent ids: any
    other global raises before anything it names is imported or called."""

    def __init__(self, stream, storages, rebuilder, name, weights_only, **arguments) -> None:
        super().__init__(stream, **arguments)
        self.storages, self.name, self.weights_only = storages, name, weights_only
        self.admitted = {
            ("collections", "OrderedDict"): OrderedDict,
            ("torch._utils", "_rebuild_tensor_v2"): rebuilder.tensor_v2,
            ("torch._utils", "_rebuild_tensor"): rebuilder.tensor_v1,
            ("torch._utils", "_rebuild_parameter"): rebuilder.parameter,
            ("torch._utils", "_rebuild_parameter_with_state"): rebuilder.parameter,
            ("torch", "Size"): tuple,
            ("torch", "device"): _device_name,
            ("builtins", "set"): set,
            ("builtins", "frozenset"): frozenset,
            ("builtins", "complex"): complex,
            ("builtins", "bytearray"): bytearray,
            ("_codecs", "encode"): _latin1_bytes,
        }

    def find_class(self, module: str, name: str) -> Any:
        if module == "__builtin__":  # Python 2's name, which protocol 2 pickles write
            module = "builtins"
        if (module, name) in self.admitted:
            return self.admitted[module, name]
        if module in ("torch", "torch.storage") and name in STORAGE_DTYPES:
            return _StorageType(name)
        if module == "torch" and name in TORCH_DTYPES:
            return TORCH_DTYPES[name]
        advice = (
            " weights_only=False changes nothing here: minitrain never runs code from a file."
            if self.weights_only is False
            else ""
        )
        raise CheckpointError(
            f"load: {self.name!r} is a PyTorch checkpoint that needs the global "
            f"{module}.{name}, which minitrain does not admit: it loads tensors, Parameters, "
            f"OrderedDicts, torch.Size, dtypes and plain values only, as torch.load(..., "
            f"weights_only=True) does.{advice} Save a state_dict() rather than an object."
        )

    def persistent_load(self, pid: Any) -> Any:
        return self.storages.get(pid)
