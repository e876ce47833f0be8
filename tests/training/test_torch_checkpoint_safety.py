"""PyTorch's checkpoint files read without PyTorch, the crafted ones: pickles that would change
the admitted globals (BUILD, SETITEM, APPEND, ... on a function or class) or allocate without
bound (bytearray(N), an expanded tensor, a zip member bigger than its storage), each refused
before anything changes or is allocated."""

from __future__ import annotations

import io as pyio
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
import torch_zip_writer as writer
from torch_zip_writer import FakeTensor, Storage

import minitrain
from minitrain.errors import CheckpointError
from minitrain.io import torch_format


def load_bytes(data: bytes, **options):
    return minitrain.load(pyio.BytesIO(data), **options)


def _zip_with(members: dict[str, bytes], compression=zipfile.ZIP_STORED) -> bytes:
    buffer = pyio.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def _unchanged_afterwards():
    """What the crafted pickles below aim at is as it was."""
    assert torch_format._device_name("cuda") == "cuda"
    assert torch_format._device_name.__defaults__ == (None,)
    assert torch_format._device_name.__dict__ == {}
    assert OrderedDict.__module__ == "collections" and not hasattr(OrderedDict, "x")
    assert set.__module__ == "builtins" and not hasattr(np.float32, "x")


# the repro: BUILD with slot state setattr()s __defaults__ on the admitted torch.device
BUILD_ON_A_FUNCTION = b"ctorch\ndevice\n(N}(V__defaults__\n(Vhacked\ntutb0(dp0\n."


@pytest.mark.parametrize(
    "pickle_bytes, complaint",
    [
        (BUILD_ON_A_FUNCTION, r"state of a function \(.*torch_format\._device_name\)"),
        (b"ctorch\ndevice\n}(V__doc__\nVx\nub.", "sets the state of a function"),
        (b"ccollections\nOrderedDict\n}(Vx\nI1\nub.", "sets the state of a type"),
        (b"ccollections\nOrderedDict\n)R}(Vkeys\nI1\nub.", "state of an OrderedDict to a dict"),
        (b"ccollections\nOrderedDict\n)R(N}tb.", "state of an OrderedDict to a tuple"),
        (b"ccollections\nOrderedDict\nVx\nI1\ns.", r"changes a type .* \(pickle's SETITEM\)"),
        (b"ctorch\ndevice\n(Vx\nI1\nu.", r"changes a function .* \(pickle's SETITEMS\)"),
        (b"ctorch\ndevice\nVx\na.", r"changes a function .* \(pickle's APPEND\)"),
        (b"cbuiltins\nset\n(Vx\ne.", r"changes a type .* \(pickle's APPENDS\)"),
        (b"\x80\x04cbuiltins\nfrozenset\n(Vx\n\x90.", r"changes a type .* \(pickle's ADDITEMS\)"),
        (b"ctorch\nfloat32\n(I1\ntR.", r"calls a type .*float32.* \(pickle's REDUCE\)"),
        (b"\x80\x02ctorch\ndevice\n)\x81.", r"calls a function .* \(pickle's NEWOBJ\)"),
        (b"(ctorch\nfloat32\nI1\no.", r"calls a type .* \(pickle's OBJ/INST\)"),
    ],
    ids=["build-slots", "build-dict", "build-class", "build-method-name", "build-slot-state",
         "setitem", "setitems", "append", "appends", "additems", "reduce-dtype", "newobj", "obj"],
)  # fmt: skip
def test_pickles_changing_admitted_globals_are_refused_before_they_change(pickle_bytes, complaint):
    with pytest.raises(CheckpointError, match=complaint):
        load_bytes(_zip_with({"archive/data.pkl": pickle_bytes}))
    _unchanged_afterwards()


def test_the_build_payload_would_change_the_function_if_unpickled_freely():
    """The control: Python's unpickler, admitting the same global, runs the repro's BUILD."""

    def device(kind, index=None):
        return kind if index is None else f"{kind}:{index}"

    class Free(pickle.Unpickler):
        def find_class(self, module, name):
            return device

    Free(pyio.BytesIO(BUILD_ON_A_FUNCTION)).load()
    assert device("cuda") == "cuda:hacked"


def test_a_build_on_a_tensor_is_refused():
    data = writer.torch_zip([writer.tensor(np.ones(2))])
    with zipfile.ZipFile(pyio.BytesIO(data)) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    members["archive/data.pkl"] = (
        members["archive/data.pkl"][:-1] + b"h\x0c}b."
    )  # memo 12: the tensor
    with pytest.raises(CheckpointError, match=r"sets the state of a Tensor"):
        load_bytes(_zip_with(members))


def test_an_ordered_dicts_metadata_is_kept():
    state = OrderedDict(w=writer.tensor(np.ones(2)))
    state._metadata = OrderedDict({"": {"version": 1}, "w": {"version": 2}})
    loaded = load_bytes(writer.torch_zip(state))
    assert type(loaded) is OrderedDict and loaded._metadata == state._metadata


def test_a_real_state_dicts_metadata_is_kept(tmp_path):
    torch = pytest.importorskip("torch")
    state = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3)).state_dict()
    torch.save(state, tmp_path / "model.pt")
    loaded = minitrain.load(tmp_path / "model.pt")
    assert list(loaded) == list(state) and loaded._metadata == state._metadata


def test_bytearray_takes_bytes_only():
    raw = b"\x00\xffab"
    loaded = load_bytes(writer.torch_zip({"p2": bytearray(raw), "empty": bytearray()}))
    assert loaded == {"p2": bytearray(raw), "empty": bytearray()}  # protocol 2: a latin-1 str
    for protocol in (3, 5):
        data = pickle.dumps(bytearray(raw), protocol=protocol)
        assert load_bytes(_zip_with({"archive/data.pkl": data})) == bytearray(raw)
    gibibyte = b"cbuiltins\nbytearray\n(J\x00\x00\x00\x40tR."  # bytearray(2**30)
    with pytest.raises(CheckpointError, match=r"bytearray .* not a int \(1073741824\)"):
        load_bytes(_zip_with({"archive/data.pkl": gibibyte}))
    digits = b"\xff" * 2999 + b"\x7f"  # LONG4: an int of 7200 digits, past str's limit
    huge = b"\x80\x02cbuiltins\nbytearray\n(\x8b\xb8\x0b\x00\x00" + digits + b"tR."
    with pytest.raises(CheckpointError, match=r"bytearray .* not a int \(\.\.\.\)"):
        load_bytes(_zip_with({"archive/data.pkl": huge}))


def _no_copies(monkeypatch):
    """Fails the test where the reader builds a strided view (the step before its copy)."""

    def refuse(*args, **kwargs):
        raise AssertionError("as_strided was reached: the tensor would be allocated")

    monkeypatch.setattr(np.lib.stride_tricks, "as_strided", refuse)


def test_an_expanded_tensor_past_the_limit_is_refused_before_allocation(monkeypatch):
    storage = Storage(np.zeros(1, np.float32), "FloatStorage")
    bomb = FakeTensor(storage, 0, (100000, 100000), (0, 0))
    data = writer.torch_zip(OrderedDict(w=bomb))
    assert len(data) < 2000
    _no_copies(monkeypatch)
    with pytest.raises(CheckpointError) as info:
        load_bytes(data)
    message = str(info.value)
    assert "size (100000, 100000), stride (0, 0) on the FloatStorage 'archive/data/0'" in message
    assert "of 1 elements" in message and "would take 40000000000 bytes" in message
    assert "268435456 bytes in all" in message and "after" not in message


def test_small_expanded_tensors_load_until_their_total_passes_the_limit(monkeypatch):
    storage = Storage(np.array([1.0, 2.0], np.float32), "FloatStorage")
    expanded = FakeTensor(storage, 0, (3, 2), (0, 1))
    loaded = load_bytes(writer.torch_zip([expanded]))[0]
    np.testing.assert_array_equal(loaded.numpy(), [[1, 2]] * 3)
    assert loaded.array.flags.writeable and loaded.array.strides == (8, 4)  # its own memory

    monkeypatch.setattr(torch_format, "EXPANDED_BYTES_LIMIT", 1000)

    def each():  # 800 bytes from a storage of 8
        return FakeTensor(storage, 0, (200,), (0,))

    assert len(load_bytes(writer.torch_zip([each()]))) == 1
    with pytest.raises(CheckpointError, match=r"take 800 bytes \(after 800 bytes of expanded"):
        load_bytes(writer.torch_zip([each(), each()]))
    contiguous = writer.tensor(np.ones(400, np.float32))  # 1600 bytes, from its own storage
    assert len(load_bytes(writer.torch_zip([contiguous, contiguous]))) == 2


def _with_recorded_size(data: bytes, member: str, size: int) -> bytes:
    """The zip `data` with `member`'s uncompressed size recorded as `size` (in its local
    header and its central directory entry), its content unchanged."""
    data = bytearray(data)
    with zipfile.ZipFile(pyio.BytesIO(bytes(data))) as archive:
        local = archive.getinfo(member).header_offset
    data[local + 22 : local + 26] = size.to_bytes(4, "little")
    central = data.find(b"PK\x01\x02")
    while data[central + 46 : central + 46 + len(member)] != member.encode():
        central = data.find(b"PK\x01\x02", central + 4)
    data[central + 24 : central + 28] = size.to_bytes(4, "little")
    return bytes(data)


def _storage_zip(storage_bytes: bytes, numel: int) -> bytes:
    """A file whose one tensor's DoubleStorage of `numel` elements is the deflated member
    archive/data/0 holding `storage_bytes`."""
    data = writer.torch_zip(
        [FakeTensor(Storage(np.ones(1), "DoubleStorage", numel), 0, (1,), (1,))]
    )
    with zipfile.ZipFile(pyio.BytesIO(data)) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    members["archive/data/0"] = storage_bytes
    return _zip_with(members, zipfile.ZIP_DEFLATED)


def test_a_storage_member_of_the_wrong_recorded_size_is_refused_before_it_is_read(monkeypatch):
    data = _storage_zip(bytes(8_000_000), numel=3)  # 8 MB of zeros, deflated to a few KB
    assert len(data) < 100_000
    read = []
    original = zipfile.ZipFile.open
    monkeypatch.setattr(
        zipfile.ZipFile,
        "open",
        lambda self, name, *args, **kwargs: (
            read.append(str(name)) or original(self, name, *args, **kwargs)
        ),
    )
    with pytest.raises(CheckpointError, match="'archive/data/0' holds 8000000 bytes, its 3 "):
        load_bytes(data)
    assert not any("/data/" in name for name in read)


def test_a_compressed_member_that_unpacks_to_another_size_is_refused():
    longer = _with_recorded_size(_storage_zip(bytes(8_000_000), numel=3), "archive/data/0", 24)
    with pytest.raises(CheckpointError, match="Bad CRC-32 for file .archive/data/0."):  # capped
        load_bytes(longer)
    shorter = _with_recorded_size(_storage_zip(bytes(16), numel=3), "archive/data/0", 24)
    with pytest.raises(CheckpointError, match="records 24 bytes but unpacks to 16"):
        load_bytes(shorter)
