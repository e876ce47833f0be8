"""Checkpoints under faults: a real checkpoint cut at every byte and flipped at every byte, a disk
that fills at every write of a save, and state dicts that fail their check after a few entries.
"""

import copy
import errno
import io as pyio
import json
import os
import stat
import struct
import zipfile
from collections import Counter

import numpy as np
import pytest

import minitrain
from minitrain import io, nn, optim
from minitrain.errors import CheckpointError, MinitrainError
from minitrain.io import atomic
from minitrain.io import safetensors as mt_safetensors
from minitrain.nn.modules.module import StateDictError

# Bytes are flipped whole (xor 0xFF) and by their lowest bit alone: one changes what a reader
# parses beyond recognition, the other into a neighbouring value (a digit into the next one).
FLIPS = {"every bit": 0xFF, "the low bit": 0x01}
NAME = "runs/7/model.pt"  # the name errors must give


def _trained_model_and_optimizer():
    """A small real model (Conv2d, BatchNorm2d with its buffers, Linear) and its Adam after two
    steps. Small, because the tests below load its checkpoint once per byte: every array is a
    member of the archive, and both the file's length and the time of a load grow with their
    number. So the BatchNorm has no affine parameters (nor Adam state for them): 13 members
    instead of 19, half the time."""
    minitrain.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 2, 2, bias=False),
        nn.BatchNorm2d(2, affine=False),
        nn.Flatten(),
        nn.Linear(2, 1),
    )
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    inputs = minitrain.randn(3, 1, 2, 2)
    for _ in range(2):
        optimizer.zero_grad()
        model(inputs).square().mean().backward()
        optimizer.step()
    return model, optimizer


@pytest.fixture(scope="module")
def training_state():
    model, optimizer = _trained_model_and_optimizer()
    return {
        "model": dict(model.state_dict()),  # an OrderedDict loads as a dict: saved as one
        "optimizer": optimizer.state_dict(),
        "epoch": 3,
        "note": "text",
    }


@pytest.fixture(scope="module")
def checkpoint_bytes(training_state, tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "model.pt"
    io.save(training_state, path)
    return path.read_bytes()


def _same(loaded, saved) -> bool:
    """Whether `loaded` is `saved` again: the same structure and Python types all the way down,
    Tensors of the same class and requires_grad, arrays equal bit for bit in dtype and shape."""
    if type(loaded) is not type(saved):
        return False
    if isinstance(saved, minitrain.Tensor):
        if loaded.requires_grad != saved.requires_grad:
            return False
        loaded, saved = loaded.array, saved.array
    if isinstance(saved, np.ndarray):
        return (
            type(loaded) is np.ndarray
            and (loaded.dtype, loaded.shape) == (saved.dtype, saved.shape)
            and loaded.tobytes() == saved.tobytes()
        )
    if isinstance(saved, dict):
        return [(type(k), k) for k in loaded] == [(type(k), k) for k in saved] and all(
            _same(loaded[key], saved[key]) for key in saved
        )
    if isinstance(saved, (list, tuple)):
        return len(loaded) == len(saved) and all(map(_same, loaded, saved))
    return loaded == saved


def _outcome(load, source, saved, name=None) -> str:
    """What `load(source)` does: 'raised' (a CheckpointError naming the file: `name`, or the
    path `source`), 'identical' (it returned `saved` again), or what went wrong."""
    name = str(source) if name is None else name
    try:
        loaded = load(source)
    except CheckpointError as error:
        return "raised" if name in str(error) else f"not naming the file: {error}"
    except Exception as error:  # noqa: BLE001 (any other exception is what this looks for)
        return f"{type(error).__name__}: {error}"
    return "identical" if _same(loaded, saved) else "a different value"


def _named_file(raw: bytes) -> pyio.BytesIO:
    """`raw` as a file object named NAME: load names a file object by its name, as it names a
    path, and a load per byte needs no write to the disk (a write costs as much as a load)."""
    file = pyio.BytesIO(raw)
    file.name = NAME
    return file


def _failures(outcomes: dict[int, str], allowed: set[str]) -> dict[int, str]:
    """The first few positions whose outcome is not allowed, for the assertion's message."""
    return dict(list((at, o) for at, o in outcomes.items() if o not in allowed)[:5])


def _flipped(raw: bytes, at: int, mask: int) -> bytes:
    damaged = bytearray(raw)
    damaged[at] ^= mask
    return bytes(damaged)


def _member_contents(raw: bytes) -> set[int]:
    """The positions of every member's bytes (the .npy header and data) in a zip archive:
    what the CRC-32 of each member covers."""
    positions = set()
    with zipfile.ZipFile(pyio.BytesIO(raw)) as archive:
        for info in archive.infolist():
            name_length, extra_length = struct.unpack_from("<HH", raw, info.header_offset + 26)
            start = info.header_offset + 30 + name_length + extra_length
            positions.update(range(start, start + info.compress_size))
    return positions


# minitrain's checkpoints.
def test_the_checkpoint_is_a_real_one(training_state, checkpoint_bytes, tmp_path):
    model = training_state["model"]
    assert {"1.running_mean", "1.running_var", "1.num_batches_tracked", "3.bias"} <= set(model)
    assert model["1.num_batches_tracked"].array.dtype == np.int64
    assert model["1.num_batches_tracked"].item() == 2
    assert all(s["step"] == 2 for s in training_state["optimizer"]["state"].values())
    path = tmp_path / "model.pt"
    path.write_bytes(checkpoint_bytes)
    assert _outcome(io.load, path, training_state) == "identical"
    assert 3000 < len(checkpoint_bytes) < 6000  # a few KB: every byte of it is tried below


def test_a_checkpoint_cut_at_any_byte_is_reported_naming_the_file(
    training_state, checkpoint_bytes, tmp_path
):
    outcomes = {}
    for length in range(len(checkpoint_bytes)):
        outcomes[length] = _outcome(
            io.load, _named_file(checkpoint_bytes[:length]), training_state, NAME
        )
    assert _failures(outcomes, {"raised"}) == {}
    path = tmp_path / "model.pt"  # and through a path, at a few lengths
    for length in (0, 4, 30, len(checkpoint_bytes) // 2, len(checkpoint_bytes) - 1):
        path.write_bytes(checkpoint_bytes[:length])
        assert _outcome(io.load, path, training_state) == "raised"


@pytest.mark.parametrize("mask", FLIPS.values(), ids=FLIPS.keys())
def test_a_flipped_byte_is_reported_or_changes_nothing(mask, training_state, checkpoint_bytes):
    outcomes = {}
    for at in range(len(checkpoint_bytes)):
        damaged = _named_file(_flipped(checkpoint_bytes, at, mask))
        outcomes[at] = _outcome(io.load, damaged, training_state, NAME)
    assert _failures(outcomes, {"raised", "identical"}) == {}
    # every byte of the JSON document and of the arrays is under a member's CRC-32: a flip
    # there is always reported; only the archive's bookkeeping (times, versions, attributes)
    # may change without changing what loads
    contents = _member_contents(checkpoint_bytes)
    assert _failures({at: outcomes[at] for at in sorted(contents)}, {"raised"}) == {}
    counts = Counter(outcomes.values())
    assert counts["raised"] >= len(contents) and counts["identical"] > 0


def test_a_member_marked_encrypted_is_reported_as_damage(checkpoint_bytes, tmp_path):
    # a low-bit flip in the central directory's flags: zipfile asks for a password
    path = tmp_path / "model.pt"
    raw = bytearray(checkpoint_bytes)
    directory = raw.index(b"PK\x01\x02")
    raw[directory + 8] |= 0x1  # the general purpose flags: bit 0, encrypted
    path.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match="damaged.*__minitrain__.npy.*encrypted") as info:
        io.load(path)
    assert str(path) in str(info.value)


# safetensors files.
@pytest.fixture(scope="module")
def safetensors_file(training_state, tmp_path_factory):
    pytest.importorskip("safetensors")
    path = tmp_path_factory.mktemp("saved") / "model.safetensors"
    mt_safetensors.save_file(training_state["model"], path, metadata={"epoch": "3"})
    return path.read_bytes(), dict(training_state["model"])


def _load_safetensors(path):
    loaded = mt_safetensors.load_file(path)
    return {key: loaded[key] for key in sorted(loaded)}  # the file keeps its own order


def _sorted(tensors: dict) -> dict:
    return {key: tensors[key] for key in sorted(tensors)}


def test_a_safetensors_file_cut_at_any_byte_is_reported_naming_the_file(safetensors_file, tmp_path):
    raw, tensors = safetensors_file
    path = tmp_path / "model.safetensors"
    outcomes = {}
    for length in range(len(raw)):
        path.write_bytes(raw[:length])
        outcomes[length] = _outcome(_load_safetensors, path, _sorted(tensors))
    assert _failures(outcomes, {"raised"}) == {}


@pytest.mark.parametrize("mask", FLIPS.values(), ids=FLIPS.keys())
def test_a_flipped_byte_in_a_safetensors_file_changes_data_or_names_only(
    mask, safetensors_file, tmp_path
):
    """safetensors files carry no checksum: a flipped byte of tensor data, or of a tensor's
    name, loads as a different value, which no reader can notice. Anything else (the header's
    length, its JSON, a dtype, a shape, an offset) is reported or changes nothing."""
    raw, tensors = safetensors_file
    header_length = int.from_bytes(raw[:8], "little")
    header = raw[8 : 8 + header_length]
    data = range(8 + header_length, len(raw))
    names = set()
    for key in tensors:
        quoted = json.dumps(key).encode()
        start = 8 + header.index(quoted) + 1
        names.update(range(start, start + len(quoted) - 2))
    path = tmp_path / "model.safetensors"
    outcomes = {}
    for at in range(len(raw)):
        path.write_bytes(_flipped(raw, at, mask))
        outcomes[at] = _outcome(_load_safetensors, path, _sorted(tensors))
    assert _failures(outcomes, {"raised", "identical", "a different value"}) == {}
    elsewhere = {at: o for at, o in outcomes.items() if at not in names and at not in data}
    assert _failures(elsewhere, {"raised", "identical"}) == {}
    assert all(outcomes[at] == "a different value" for at in data)  # no checksum: the limit


# A disk that fills while a save writes.
class _FillingDisk(pyio.FileIO):
    """The temporary file of a save, on a disk with room for `room` more writes: the last of
    them lands in part (a short write, as write(2) makes when the disk fills) and every later
    one fails with ENOSPC."""

    def __init__(self, descriptor: int, room: int) -> None:
        super().__init__(descriptor, "wb")
        self.room = room

    def write(self, data) -> int:
        self.room -= 1
        if self.room < 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        data = memoryview(data).cast("B")
        if self.room == 0 and len(data) > 1:
            data = data[: len(data) // 2]
        return super().write(data)


def _buffered(descriptor: int, room: int) -> pyio.BufferedWriter:
    """What os.fdopen(descriptor, "wb") gives, over a _FillingDisk."""
    return pyio.BufferedWriter(_FillingDisk(descriptor, room))


def _open_descriptors() -> int | None:
    """How many file descriptors this process holds, where the system can tell (Linux)."""
    return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None


def _save_checkpoint(state, path):
    io.save(state, path)


def _save_safetensors(state, path):
    pytest.importorskip("safetensors")
    mt_safetensors.save_file(state["model"], path)


SAVERS = {"checkpoint": _save_checkpoint, "safetensors": _save_safetensors}


@pytest.mark.parametrize("save", SAVERS.values(), ids=SAVERS.keys())
def test_a_disk_filling_at_any_write_leaves_the_previous_file(
    save, training_state, tmp_path, monkeypatch
):
    path = tmp_path / "model.pt"
    previous_model, _ = _trained_model_and_optimizer()
    previous_model[3].bias.array[...] = 7.0  # another checkpoint than the one being saved
    save({"model": previous_model.state_dict(), "optimizer": {}}, path)
    previous = path.read_bytes()
    descriptors = _open_descriptors()
    for room in range(1, 1000):
        monkeypatch.setattr(os, "fdopen", lambda fd, mode, room=room: _buffered(fd, room))
        try:
            save(training_state, path)
        except OSError as error:
            assert error.errno == errno.ENOSPC and str(path) in str(error), (room, error)
            assert error.__cause__.errno == errno.ENOSPC
        else:
            break
        finally:
            monkeypatch.undo()
        assert os.listdir(tmp_path) == ["model.pt"], room  # no temporary left behind
        assert path.read_bytes() == previous, room
        assert _open_descriptors() == descriptors, room
    assert room > 1  # the save failed at each of its writes first
    assert path.read_bytes() != previous
    save(training_state, tmp_path / "reference.pt")
    assert path.read_bytes() == (tmp_path / "reference.pt").read_bytes()


@pytest.mark.parametrize(
    "stage, code",
    [
        ("fsync", errno.ENOSPC),  # a file system that allocates late reports the full disk here
        ("fsync", errno.EIO),
        ("replace", errno.EXDEV),
        ("replace", errno.EACCES),
    ],
)
def test_a_failing_fsync_or_rename_names_the_file_and_keeps_its_errno(
    stage, code, training_state, tmp_path, monkeypatch
):
    path = tmp_path / "model.pt"
    io.save({"epoch": 1}, path)
    previous = path.read_bytes()
    descriptors = _open_descriptors()
    cause = OSError(code, os.strerror(code))

    def fail(*args):
        raise cause

    monkeypatch.setattr(os, stage, fail)
    with pytest.raises(OSError) as info:
        io.save(training_state, path)
    monkeypatch.undo()
    error = info.value
    assert error.errno == code and error.__cause__ is cause
    assert isinstance(error, PermissionError) == (code == errno.EACCES)  # OSError's own subclass
    assert str(path) in str(error) and os.strerror(code) in str(error)
    assert "save:" in str(error)
    assert os.listdir(tmp_path) == ["model.pt"]
    assert path.read_bytes() == previous
    assert _open_descriptors() == descriptors


def test_a_directory_that_cannot_be_synced_still_gets_the_new_file(
    training_state, tmp_path, monkeypatch
):
    # the rename has happened by then; some file systems refuse to fsync a directory
    path = tmp_path / "model.pt"
    io.save({"epoch": 1}, path)
    fsync = os.fsync

    def fsync_files_only(descriptor):
        if stat.S_ISDIR(os.fstat(descriptor).st_mode):
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        fsync(descriptor)

    monkeypatch.setattr(os, "fsync", fsync_files_only)
    io.save(training_state, path)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["model.pt"]
    assert _same(io.load(path), training_state)


@pytest.mark.parametrize(
    "cause", [OSError(errno.EIO, os.strerror(errno.EIO)), OSError("the disk went away")], ids=repr
)
def test_a_failed_write_is_reported_by_its_caller(cause, tmp_path, monkeypatch):
    def fail(*args):
        raise cause

    monkeypatch.setattr(os, "replace", fail)
    path = str(tmp_path / "graph.svg")
    with pytest.raises(OSError, match="Graph.write: could not write the file") as info:
        atomic.write_atomically(path, lambda file: file.write(b"<svg/>"), caller="Graph.write")
    assert info.value.errno == cause.errno and info.value.__cause__ is cause
    assert path in str(info.value) and str(cause.strerror or cause) in str(info.value)
    assert os.listdir(tmp_path) == []


# State dicts that fail their check: nothing is loaded, not even the entries before the fault.
def _versions_and_values(module):
    return {
        key: (tensor, tensor.array, tensor.array.copy(), tensor._version)
        for key, tensor in module.state_dict(keep_vars=True).items()
    }


def _assert_unchanged(module, before):
    for key, tensor in module.state_dict(keep_vars=True).items():
        same_tensor, array, values, version = before[key]
        assert tensor is same_tensor and tensor.array is array, key
        assert array.dtype == values.dtype and array.tobytes() == values.tobytes(), key
        assert tensor._version == version, key


def _other_values(module) -> dict:
    """A state dict for `module` whose every value differs from the module's own: loading any
    part of it shows."""
    return {key: minitrain.tensor(tensor.array + 1) for key, tensor in module.state_dict().items()}


def _last_with_wrong_shape(state):
    state[list(state)[-1]] = minitrain.zeros(3)


def _last_missing(state):
    state.popitem()


def _last_ragged(state):
    state[list(state)[-1]] = [[1.0], [1.0, 2.0]]


def _last_not_numbers(state):
    state[list(state)[-1]] = np.array(["one"])


STATE_FAULTS = {
    "wrong shape": (_last_with_wrong_shape, r"'3.bias': shape \(3,\) in the state dict, \(1,\)"),
    "missing": (_last_missing, r"missing keys: \['3.bias'\]"),
    "ragged list": (_last_ragged, "'3.bias': a list that is not an array"),
    "strings": (_last_not_numbers, "'3.bias': dtype <U3 cannot be loaded"),
}


@pytest.mark.parametrize("fault, complaint", STATE_FAULTS.values(), ids=STATE_FAULTS.keys())
def test_a_bad_last_entry_loads_nothing_into_the_model(fault, complaint):
    model, _ = _trained_model_and_optimizer()
    state = _other_values(model)
    assert list(state)[-1] == "3.bias"
    fault(state)
    before = _versions_and_values(model)
    with pytest.raises(StateDictError, match=f"load_state_dict for Sequential: {complaint}"):
        model.load_state_dict(state, strict=True)
    _assert_unchanged(model, before)
    # where PyTorch would have copied every entry before the bad one
    if fault is not _last_missing:
        with pytest.raises(StateDictError):
            model.load_state_dict(state, strict=False)
        _assert_unchanged(model, before)


def test_a_cast_that_fails_in_the_last_entry_loads_nothing_into_the_model():
    model, _ = _trained_model_and_optimizer()
    state = _other_values(model)
    state["3.bias"] = np.array([1e300])  # float64, beyond float32: an overflow in the cast
    before = _versions_and_values(model)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
        model.load_state_dict(state)
    _assert_unchanged(model, before)


def test_a_good_state_dict_still_loads_every_entry_and_counts_the_writes():
    model, _ = _trained_model_and_optimizer()
    state = _other_values(model)
    before = _versions_and_values(model)
    model.load_state_dict(state)
    for key, tensor in model.state_dict(keep_vars=True).items():
        np.testing.assert_array_equal(tensor.array, state[key].array)
        assert tensor.array.dtype == before[key][1].dtype and tensor.array is before[key][1]
        assert tensor._version > before[key][3]


def _optimizer_snapshot(optimizer):
    """The optimizer's containers, its parameters and state values (objects and copies)."""
    groups, state = optimizer.param_groups, optimizer.state
    options = [{k: copy.deepcopy(v) for k, v in g.items() if k != "params"} for g in groups]
    params = [list(group["params"]) for group in groups]
    values = {
        param: {key: (value, copy.deepcopy(value)) for key, value in entries.items()}
        for param, entries in state.items()
    }
    return groups, options, params, state, values


def _assert_optimizer_unchanged(optimizer, snapshot):
    groups, options, params, state, values = snapshot
    assert optimizer.param_groups is groups and optimizer.state is state
    for group, saved_options, saved_params in zip(groups, options, params, strict=True):
        assert {k: v for k, v in group.items() if k != "params"} == saved_options
        assert len(group["params"]) == len(saved_params)
        assert all(p is q for p, q in zip(group["params"], saved_params, strict=True))
    assert list(state) == list(values)
    for param, entries in state.items():
        assert list(entries) == list(values[param])
        for key, (value, copied) in values[param].items():
            assert entries[key] is value
            if isinstance(value, np.ndarray):
                assert value.tobytes() == copied.tobytes()
            else:
                assert value == copied


def _two_group_adam():
    model, _ = _trained_model_and_optimizer()
    optimizer = optim.Adam(
        [{"params": model[0].parameters()}, {"params": model[3].parameters(), "lr": 0.1}],
        lr=0.01,
    )
    inputs = minitrain.randn(3, 1, 2, 2)
    for _ in range(2):
        optimizer.zero_grad()
        model(inputs).square().mean().backward()
        optimizer.step()
    return optimizer


OPTIMIZER_FAULTS = {
    "no params": (lambda s: s["param_groups"][-1].pop("params"), "group 1 must be a dict"),
    "params not a list": (
        lambda s: s["param_groups"][-1].update(params=7),
        "group 1 must be a dict with a 'params' list",
    ),
    "not a dict": (lambda s: s["param_groups"].__setitem__(-1, [2, 3]), "group 1 must be a"),
    "too few params": (lambda s: s["param_groups"][-1].update(params=[1]), "group 1 has 1"),
    "lr not a number": (lambda s: s["param_groups"][-1].update(lr="fast"), "lr must be a real"),
    "one beta": (lambda s: s["param_groups"][-1].update(betas=(0.9,)), "betas must be a pair"),
    "no betas": (lambda s: s["param_groups"][-1].pop("betas"), "group 1 lacks the option"),
    "unknown parameter": (
        lambda s: s["param_groups"][-1].update(params=[1, 9]),
        "state for parameter 2, which none",
    ),
    "state of the wrong shape": (
        lambda s: s["state"][2].update(exp_avg=np.zeros(5, np.float32)),
        r"'exp_avg' of parameter 2 has shape \(5,\)",
    ),
    "state not a dict": (lambda s: s.update(state=[1]), "'state' must be a dict"),
}


@pytest.mark.parametrize("fault, complaint", OPTIMIZER_FAULTS.values(), ids=OPTIMIZER_FAULTS.keys())
def test_a_bad_last_param_group_loads_nothing_into_the_optimizer(fault, complaint):
    optimizer = _two_group_adam()
    state = copy.deepcopy(optimizer.state_dict())
    for entries in state["state"].values():  # other values, so that a partial load would show
        entries["exp_avg"] = entries["exp_avg"] + 1
    state["param_groups"][0]["lr"] = 0.5
    fault(state)
    snapshot = _optimizer_snapshot(optimizer)
    with pytest.raises(MinitrainError, match=complaint):
        optimizer.load_state_dict(state)
    _assert_optimizer_unchanged(optimizer, snapshot)
