"""A small writer of torch.save's zip format without PyTorch, for the reader's tests: stand-ins
whose pickles name torch's globals, written by Python's own pickler."""

from __future__ import annotations

import io
import pickle
import zipfile
from collections import OrderedDict

import numpy as np


class Global:
    """A global by name (`module.name`), pickled as the GLOBAL opcode without importing it."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle asks a reduce's function to be callable
        raise TypeError(f"{self.module}.{self.name} is a stand-in, never called")


class Call:
    """Pickles as a call of `function` (a Global) with `args`: the REDUCE opcode."""

    def __init__(self, function: Global, *args) -> None:
        self.function, self.args = function, args

    def __reduce__(self):
        return self.function, self.args


class Storage:
    """A storage: a flat array saved as the member data/<key>, named by a persistent id."""

    def __init__(self, elements: np.ndarray, storage_type: str, numel: int | None = None) -> None:
        self.elements, self.storage_type = np.array(elements, order="C").ravel(), storage_type
        self.numel = elements.size if numel is None else numel


class FakeTensor:
    """Pickles as torch's tensors do: _rebuild_tensor_v2(storage, offset, size, stride, ...)."""

    def __init__(self, storage, offset, size, stride, requires_grad=False, metadata=None):
        self.args = (storage, offset, tuple(size), tuple(stride), requires_grad, OrderedDict())
        if metadata is not None:
            self.args += (metadata,)

    def __reduce__(self):
        return Global("torch._utils", "_rebuild_tensor_v2"), self.args


class FakeParameter:
    """Pickles as torch's Parameters do: _rebuild_parameter(tensor, requires_grad, hooks)."""

    def __init__(self, tensor: FakeTensor, requires_grad: bool = True) -> None:
        self.tensor, self.requires_grad = tensor, requires_grad

    def __reduce__(self):
        hooks = OrderedDict()
        return Global("torch._utils", "_rebuild_parameter"), (
            self.tensor,
            self.requires_grad,
            hooks,
        )


STORAGE_TYPES = {
    np.dtype(np.float32): "FloatStorage", np.dtype(np.float64): "DoubleStorage",
    np.dtype(np.float16): "HalfStorage", np.dtype(np.int64): "LongStorage",
    np.dtype(np.int32): "IntStorage", np.dtype(np.int16): "ShortStorage",
    np.dtype(np.int8): "CharStorage", np.dtype(np.uint8): "ByteStorage",
    np.dtype(np.bool_): "BoolStorage", np.dtype(np.complex64): "ComplexFloatStorage",
    np.dtype(np.complex128): "ComplexDoubleStorage",
}  # fmt: skip


def tensor(array, requires_grad: bool = False) -> FakeTensor:
    """A contiguous tensor of `array`'s values, on a storage of its own."""
    array = np.asarray(array)
    storage = Storage(array.ravel(), STORAGE_TYPES[array.dtype])
    strides = [s // array.itemsize for s in array.copy(order="C").strides]
    return FakeTensor(storage, 0, array.shape, strides, requires_grad)


class _Pickler(pickle._Pickler):
    """Python's pickler, writing Global stand-ins as GLOBAL opcodes and storages as persistent
    ids ('storage', storage type, key, location, numel), as torch.save does."""

    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file, storages: dict) -> None:
        super().__init__(file, protocol=2)
        self.storages = storages  # id -> (key, Storage)

    def save_stand_in_global(self, obj: Global) -> None:
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
        self.memoize(obj)

    dispatch[Global] = save_stand_in_global

    def persistent_id(self, obj):
        if not isinstance(obj, Storage):
            return None
        if id(obj) not in self.storages:
            self.storages[id(obj)] = (str(len(self.storages)), obj)
        key, _ = self.storages[id(obj)]
        return ("storage", Global("torch", obj.storage_type), key, "cpu", obj.numel)


def pickled(obj) -> tuple[bytes, dict]:
    """data.pkl's bytes for `obj`, and its storages by key."""
    buffer, storages = io.BytesIO(), {}
    _Pickler(buffer, storages).dump(obj)
    return buffer.getvalue(), dict(storages.values())


def torch_zip(obj, prefix: str = "archive", byteorder: str | None = "little") -> bytes:
    """The bytes torch.save would write for `obj` (its stand-ins for tensors), in its zip."""
    data, storages = pickled(obj)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(f"{prefix}/data.pkl", data)
        if byteorder is not None:
            archive.writestr(f"{prefix}/byteorder", byteorder)
        for key, storage in storages.items():
            elements = storage.elements
            if byteorder == "big":
                elements = elements.astype(elements.dtype.newbyteorder(">"))
            archive.writestr(f"{prefix}/data/{key}", elements.tobytes())
        archive.writestr(f"{prefix}/version", "3\n")
    return buffer.getvalue()
