"""PyTorch's checkpoint files read without PyTorch: torch.save's zip archive, its pickle
unpickled by a restricted unpickler that admits only the globals of tensor state."""

from __future__ import annotations

import math
import pickle
import reprlib
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


# A tensor can have more elements than its storage: an expanded view (stride 0) or one whose
# rows overlap. torch.load keeps such a tensor a view of its storage; minitrain copies every
# tensor into an array of its own, so it costs its full size although the file holds only the
# storage: a 1.5 KB file can ask for 40 GB. Real checkpoints' expanded tensors are small (a
# broadcast mask, expanded position ids), so the expanded tensors of one file may take this many
# bytes in all (a quarter GiB: far above those, far below a machine's memory); past it the file
# is refused, as a decompression bomb, before anything is allocated.
EXPANDED_BYTES_LIMIT = 256 * 2**20


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

    As torch's weights_only unpickler, the pickle may call only the admitted functions and
    classes, add items only to the dicts, lists and sets it made, and set attributes only on
    the OrderedDicts it made (a state_dict's `_metadata`): pickle's BUILD on anything else (an
    admitted function, a tensor) raises CheckpointError before anything changes. `bytearray`
    takes its bytes only (a count, which would allocate that many bytes, is refused).

    Memory: a storage member is read only after its recorded size is checked against the
    size the pickle gives it. A tensor with more elements than its storage (an expanded view)
    is copied out in full, where torch keeps a view; the expanded tensors of a file may take
    EXPANDED_BYTES_LIMIT bytes (256 MiB) in all, and past that the file is refused (a few bytes
    of file could otherwise ask for any amount of memory).

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
    """A storage's elements, a flat host array (bfloat16 already widened to float32), and the
    archive member and storage type they were read from (for errors)."""

    def __init__(self, elements: np.ndarray, member: str, type_name: str) -> None:
        self.elements, self.member, self.type_name = elements, member, type_name


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
        bfloat = storage_type.dtype == "bfloat16"
        dtype = np.dtype(np.uint16 if bfloat else storage_type.dtype).newbyteorder(self.byteorder)
        needed = numel * dtype.itemsize
        # The member's recorded size is checked before anything is decompressed: a compressed
        # member could otherwise unpack to any size. zipfile stops at the recorded size (and
        # checks the checksum), so `raw` is at most `needed` bytes; a member that unpacks to
        # fewer is caught after.
        declared = self.archive.getinfo(member).file_size
        if declared != needed:
            raise CheckpointError(
                f"load: {self.name!r} is a damaged PyTorch checkpoint: the {storage_type.name} "
                f"{member!r} holds {declared} bytes, its {numel} elements need {needed}"
            )
        raw = self.archive.read(member)
        if len(raw) != needed:
            raise CheckpointError(
                f"load: {self.name!r} is a damaged PyTorch checkpoint: the {storage_type.name} "
                f"{member!r} records {declared} bytes but unpacks to {len(raw)}"
            )
        elements = np.frombuffer(raw, dtype=dtype)
        if bfloat:  # a bfloat16 is the top half of the float32 with the same value
            elements = (elements.astype(np.uint32) << 16).view(np.float32)
        if not elements.dtype.isnative:
            elements = elements.astype(elements.dtype.newbyteorder("="))
        return _Storage(elements, member, storage_type.name)


class _Rebuilder:
    """The functions of torch._utils the pickle calls, as minitrain builds their results."""

    def __init__(self, name: str, target: backend.Device | None) -> None:
        self.name, self.target = name, target
        self.expanded_bytes = 0  # of the tensors so far with more elements than their storage

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
        numel = math.prod(size)
        if numel > elements.size:  # an expanded view: checked before anything is allocated
            before = self.expanded_bytes
            self.expanded_bytes += numel * itemsize
            if self.expanded_bytes > EXPANDED_BYTES_LIMIT:
                earlier = f" (after {before} bytes of expanded tensors before it)" if before else ""
                raise CheckpointError(
                    f"load: {self.name!r} holds a tensor of size {size}, stride {stride} on the "
                    f"{storage.type_name} {storage.member!r} of {elements.size} elements: its "
                    f"{numel} elements would take {numel * itemsize} bytes{earlier}, more than "
                    f"minitrain copies out of a smaller storage ({EXPANDED_BYTES_LIMIT} bytes "
                    f"in all; torch keeps such a tensor a view, minitrain copies each tensor). "
                    f"If the tensor is real, save it with .clone()"
                )
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


def _bytearray(data: bytes | str = b"", encoding: str = "latin1") -> bytearray:
    """builtins.bytearray as pickles of bytearrays call it: with bytes (protocol 3 on), a
    latin-1 str (protocol 2) or nothing. A count, which bytearray would allocate, is refused."""
    if type(data) is str and encoding in ("latin1", "latin-1"):
        return bytearray(data, "latin1")
    if type(data) is not bytes:
        raise CheckpointError(
            f"load: builtins.bytearray is admitted with bytes or a latin-1 str only (what "
            f"pickles of bytearrays carry), not {_described(data)}: a count would allocate "
            f"that many bytes"
        )
    return bytearray(data)


class _TensorUnpickler(pickle._Unpickler):
    """An unpickler that resolves only the admitted globals and storage persistent ids: any
    other global raises before anything it names is imported or called. It is Python's own
    unpickler (pickle._Unpickler) with the opcodes that call or change objects checked first:
    REDUCE, NEWOBJ, NEWOBJ_EX, OBJ and INST call admitted functions and classes only; SETITEM(S)
    change dicts, APPEND(S) lists, ADDITEMS sets; BUILD sets attributes of the OrderedDicts
    this load made only. Admitted functions and classes are therefore never changed. (The pure
    Python unpickler is slower than C's, which cannot be restricted so, but a checkpoint's
    pickle is small: its tensors' data are storages outside it.)"""

    dispatch = pickle._Unpickler.dispatch.copy()

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
            ("builtins", "bytearray"): _bytearray,
            ("_codecs", "encode"): _latin1_bytes,
        }
        # what the pickle may call (dtypes and storage types are admitted, not callable)
        self.callables = list(self.admitted.values())
        self.made: dict[int, OrderedDict] = {}  # the OrderedDicts this load made, by id

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

    # The opcodes that call: each checks what it calls is admitted, then runs as pickle's.

    def _check_callable(self, function: Any, opcode: str, classes_only: bool = False) -> None:
        if any(function is admitted for admitted in self.callables) and (
            not classes_only or isinstance(function, type)
        ):
            return
        raise CheckpointError(
            f"load: {self.name!r} is a PyTorch checkpoint whose data.pkl calls "
            f"{_described(function)} (pickle's {opcode}), which minitrain refuses: it calls "
            f"only the admitted functions and classes of tensor state"
        )

    def _note_made(self) -> None:
        if type(self.stack[-1]) is OrderedDict:
            self.made[id(self.stack[-1])] = self.stack[-1]  # kept alive: its id stays its own

    def load_reduce(self) -> None:
        self._check_callable(self.stack[-2], "REDUCE")
        super().load_reduce()
        self._note_made()

    dispatch[pickle.REDUCE[0]] = load_reduce

    def load_newobj(self) -> None:
        self._check_callable(self.stack[-2], "NEWOBJ", classes_only=True)
        super().load_newobj()
        self._note_made()

    dispatch[pickle.NEWOBJ[0]] = load_newobj

    def load_newobj_ex(self) -> None:
        self._check_callable(self.stack[-3], "NEWOBJ_EX", classes_only=True)
        super().load_newobj_ex()
        self._note_made()

    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex

    def _instantiate(self, klass: Any, args: tuple) -> None:  # OBJ and INST
        self._check_callable(klass, "OBJ/INST")
        super()._instantiate(klass, args)
        self._note_made()

    # The opcodes that change an object: each checks its target first.

    def _check_target(self, target: Any, opcode: str, kinds: tuple[type, ...]) -> None:
        if type(target) not in kinds:
            raise CheckpointError(
                f"load: {self.name!r} is a PyTorch checkpoint whose data.pkl changes "
                f"{_described(target)} (pickle's {opcode}), which minitrain refuses: it "
                f"changes only the {' and '.join(kind.__name__ for kind in kinds)} objects "
                f"the pickle made"
            )

    def load_setitem(self) -> None:
        self._check_target(self.stack[-3], "SETITEM", (dict, OrderedDict))
        super().load_setitem()

    dispatch[pickle.SETITEM[0]] = load_setitem

    def load_setitems(self) -> None:  # the target lies under the mark
        self._check_target(self.metastack[-1][-1], "SETITEMS", (dict, OrderedDict))
        super().load_setitems()

    dispatch[pickle.SETITEMS[0]] = load_setitems

    def load_append(self) -> None:
        self._check_target(self.stack[-2], "APPEND", (list,))
        super().load_append()

    dispatch[pickle.APPEND[0]] = load_append

    def load_appends(self) -> None:
        self._check_target(self.metastack[-1][-1], "APPENDS", (list,))
        super().load_appends()

    dispatch[pickle.APPENDS[0]] = load_appends

    def load_additems(self) -> None:
        self._check_target(self.metastack[-1][-1], "ADDITEMS", (set,))
        super().load_additems()

    dispatch[pickle.ADDITEMS[0]] = load_additems

    def load_build(self) -> None:
        """BUILD sets an object's state: only a dict of attributes (a state_dict's _metadata)
        on an OrderedDict this load made, none named as OrderedDict's own (which would hide
        its methods), as torch's weights_only unpickler allows."""
        state, target = self.stack[-1], self.stack[-2]
        if type(target) is not OrderedDict or self.made.get(id(target)) is not target:
            raise CheckpointError(
                f"load: {self.name!r} is a PyTorch checkpoint whose data.pkl sets the state of "
                f"{_described(target)} (pickle's BUILD), which minitrain refuses: it sets "
                f"only the attributes of the OrderedDicts the pickle made (a state_dict's "
                f"_metadata)"
            )
        if type(state) is not dict or not all(
            type(key) is str and not hasattr(OrderedDict, key) for key in state
        ):
            raise CheckpointError(
                f"load: {self.name!r} is a PyTorch checkpoint whose data.pkl sets the state of "
                f"an OrderedDict to {_described(state)}, which minitrain refuses: it sets only "
                f"a dict of attributes that are not OrderedDict's own (such as _metadata)"
            )
        self.stack.pop()
        target.__dict__.update(state)

    dispatch[pickle.BUILD[0]] = load_build


def _described(value: Any) -> str:
    """A value in an error: its type, and its name (a function or class) or its repr, cut
    short (reprlib shortens a long list's before making it)."""
    if hasattr(value, "__qualname__"):
        return (
            f"a {type(value).__name__} ({getattr(value, '__module__', '?')}.{value.__qualname__})"
        )
    try:
        shown = reprlib.repr(value)[:60]
    except ValueError:  # an int past str's digit limit
        shown = "..."
    return f"a {type(value).__name__} ({shown})"
