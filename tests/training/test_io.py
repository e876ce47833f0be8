"""Checkpoints: exact round trips, the file format, atomic writes, and clear errors."""

import builtins
import enum
import inspect
import io as pyio
import json
import os
import pathlib
import pickle
import stat
import sys
import types
import zipfile
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import minitrain
from minitrain import backend, io, optim
from minitrain.errors import CheckpointError, DTypeError, MinitrainError
from minitrain.io.checkpoint import STRUCTURE_MEMBER


def assert_same(loaded, saved):
    """Equal values of equal types all the way down (arrays: dtype, shape and values)."""
    if isinstance(saved, minitrain.Tensor):
        assert type(loaded) is type(saved) and loaded.requires_grad == saved.requires_grad
        loaded, saved = loaded.array, saved.array
    if isinstance(saved, np.ndarray):
        assert type(loaded) is np.ndarray
        assert loaded.dtype == saved.dtype and loaded.shape == saved.shape
        np.testing.assert_array_equal(loaded, saved)
        return
    if isinstance(saved, dict):
        assert type(loaded) is dict
        assert list(loaded) == list(saved)
        assert [type(k) for k in loaded] == [type(k) for k in saved]
        for key in saved:
            assert_same(loaded[key], saved[key])
        return
    assert type(loaded) is type(saved)
    if isinstance(saved, (list, tuple)):
        assert len(loaded) == len(saved)
        for item_loaded, item_saved in zip(loaded, saved, strict=True):
            assert_same(item_loaded, item_saved)
    elif isinstance(saved, (float, np.floating)) and np.isnan(saved):
        assert np.isnan(loaded)
    else:
        assert loaded == saved
        if isinstance(saved, float):
            assert np.signbit(loaded) == np.signbit(saved)


def round_trip(state, tmp_path):
    path = tmp_path / "state.npz"
    io.save(state, path)
    return io.load(path)


def listing(directory):
    return sorted(os.listdir(directory))


# Round trips.
@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        0,
        -3,
        2**80,
        1.5,
        -0.0,
        0.1,
        1e308,
        5e-324,
        float("inf"),
        float("-inf"),
        float("nan"),
        "",
        "plain",
        "ünïcödé ☃ \U0001f600",
        "\ud800 lone surrogate",
        '{"array": "a0"}',
        [],
        (),
        {},
        (1,),
        [1, 2.0, "3", None, True],
        (1, (2, (3, [4]))),
        [[], [()], {}],
        {"betas": (0.9, 0.999), "nesterov": False, "lr": 0.1, "weight_decay": 0},
    ],
    ids=repr,
)
def test_plain_values_round_trip_exactly(value, tmp_path):
    assert_same(round_trip(value, tmp_path), value)


def test_json_looking_dicts_are_data_not_tags(tmp_path):
    state = {"array": "a0", "float": "nan", "tuple": [1], "dict": [], "scalar": "a0"}
    assert_same(round_trip(state, tmp_path), state)


def test_dict_keys_keep_their_type_and_order(tmp_path):
    state = {"b": 1, 1: "one", "1": "string one", 0: [0], -5: None, "a": 2, 2**70: "big"}
    loaded = round_trip(state, tmp_path)
    assert_same(loaded, state)
    assert loaded[1] == "one" and loaded["1"] == "string one"


def test_dict_subclass_loads_as_plain_dict(tmp_path):
    state = OrderedDict([("weight", np.ones(2)), ("bias", np.zeros(1))])
    loaded = round_trip(state, tmp_path)
    assert_same(loaded, dict(state))


@pytest.mark.parametrize(
    "array",
    [
        np.array(3.5, dtype=np.float32),
        np.array(7, dtype=np.int64),
        np.array(True),
        np.zeros(0, dtype=np.float32),
        np.zeros((0, 3), dtype=np.int64),
        np.zeros((2, 0, 4), dtype=np.float16),
        np.arange(24, dtype=np.float16).reshape(2, 3, 4),
        np.arange(6, dtype=np.float64).reshape(3, 2) / 7,
        np.array([np.inf, -np.inf, np.nan, -0.0], dtype=np.float32),
        np.array([-(2**63), 2**63 - 1], dtype=np.int64),
        np.array([0, 255], dtype=np.uint8),
        np.array([-128, 127], dtype=np.int8),
        np.array([2**64 - 1], dtype=np.uint64),
        np.array([True, False, True]),
        np.array([1 + 2j, -3j], dtype=np.complex64),
        np.array(["ab", "ünï"]),
        np.array([b"xy", b"\x00z"]),
        np.array(["2024-01-02"], dtype="datetime64[D]"),
        np.array([5], dtype="timedelta64[s]"),
        np.arange(6, dtype=">f4").reshape(2, 3),
        np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4)),
        np.arange(20, dtype=np.int32).reshape(4, 5)[::2, 1::2],
    ],
    ids=lambda a: f"{a.dtype}{a.shape}",
)
def test_arrays_round_trip_with_dtype_shape_and_values(array, tmp_path):
    loaded = round_trip({"x": array}, tmp_path)["x"]
    assert_same(loaded, array)
    assert loaded.flags.writeable


@pytest.mark.parametrize(
    "scalar",
    [np.float32(1.25), np.float64(-0.5), np.float16(3), np.int64(-7), np.uint8(200), np.bool_(1)],
    ids=repr,
)
def test_numpy_scalars_stay_numpy_scalars(scalar, tmp_path):
    loaded = round_trip([scalar], tmp_path)[0]
    assert type(loaded) is type(scalar) and loaded == scalar


def test_tensors_load_as_tensors_and_parameters_as_parameters(tmp_path):
    weight = minitrain.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    steps = minitrain.tensor(np.array(4, dtype=np.int64))
    half = minitrain.tensor(np.ones(3, dtype=np.float16))
    frozen = minitrain.nn.Parameter(np.ones(2, dtype=np.float32), requires_grad=False)
    bias = minitrain.nn.Parameter(np.zeros(2, dtype=np.float32))
    state = {"weight": weight, "steps": steps, "half": half, "frozen": frozen, "bias": bias}
    loaded = round_trip(state, tmp_path)
    assert_same(loaded, state)
    assert loaded["weight"].is_leaf and loaded["weight"].grad is None
    assert loaded["weight"].numpy().shape == (2, 3) and loaded["steps"].item() == 4


def test_an_array_held_twice_is_stored_once_and_loads_as_one(tmp_path):
    shared = np.arange(1000, dtype=np.float64)
    tensor = minitrain.Tensor(shared)
    path = tmp_path / "tied.npz"
    io.save({"encoder": shared, "decoder": shared, "tied": tensor, "copy": shared.copy()}, path)
    loaded = io.load(path)
    assert loaded["encoder"] is loaded["decoder"] is loaded["tied"].array
    assert type(loaded["tied"]) is minitrain.Tensor
    assert loaded["copy"] is not loaded["encoder"]
    np.testing.assert_array_equal(loaded["copy"], shared)
    with zipfile.ZipFile(path) as archive:
        assert len(archive.namelist()) == 3  # the structure and two arrays


def test_model_shaped_state_dict_round_trips(tmp_path):
    rng = np.random.default_rng(0)
    state = {
        "conv.weight": minitrain.tensor(rng.standard_normal((4, 1, 3, 3)).astype(np.float32)),
        "conv.bias": minitrain.tensor(np.zeros(4, dtype=np.float32)),
        "bn.running_mean": minitrain.tensor(np.zeros(4, dtype=np.float32)),
        "bn.num_batches_tracked": minitrain.tensor(np.array(12, dtype=np.int64)),
    }
    loaded = round_trip(state, tmp_path)
    assert_same(loaded, state)


def test_optimizer_shaped_state_dict_round_trips(tmp_path):
    state = {
        "state": {
            0: {"step": 3, "exp_avg": np.full((2, 2), 0.5), "exp_avg_sq": np.ones((2, 2))},
            1: {"step": 3, "exp_avg": np.zeros(2), "exp_avg_sq": np.zeros(2)},
        },
        "param_groups": [
            {
                "params": [0, 1],
                "lr": 0.1,
                "betas": (0.9, 0.999),
                "eps": 1e-8,
                "weight_decay": 0,
                "amsgrad": False,
                "maximize": False,
                "initial_lr": 0.1,
            }
        ],
    }
    assert_same(round_trip(state, tmp_path), state)


def test_a_real_optimizer_resumes_from_a_loaded_checkpoint(tmp_path):
    rng = np.random.default_rng(3)
    initial = [rng.standard_normal((3, 2)), rng.standard_normal(2)]
    grads = [[rng.standard_normal(a.shape) for a in initial] for _ in range(5)]

    def make():
        params = [minitrain.tensor(a.copy(), requires_grad=True) for a in initial]
        return params, optim.Adam(params, lr=0.05, betas=(0.8, 0.99))

    def step(params, optimizer, grad_arrays):
        for param, grad in zip(params, grad_arrays, strict=True):
            param.grad = minitrain.tensor(grad)
        optimizer.step()

    params, optimizer = make()
    for grad_arrays in grads[:3]:
        step(params, optimizer, grad_arrays)
    path = tmp_path / "run.ckpt"
    io.save({"params": [p.array for p in params], "optimizer": optimizer.state_dict()}, path)
    for grad_arrays in grads[3:]:
        step(params, optimizer, grad_arrays)

    checkpoint = io.load(path)
    resumed, resumed_optimizer = make()
    for param, saved in zip(resumed, checkpoint["params"], strict=True):
        param.array = saved
    resumed_optimizer.load_state_dict(checkpoint["optimizer"])
    assert checkpoint["optimizer"]["param_groups"][0]["betas"] == (0.8, 0.99)
    for grad_arrays in grads[3:]:
        step(resumed, resumed_optimizer, grad_arrays)
    for param, reference in zip(resumed, params, strict=True):
        np.testing.assert_array_equal(param.array, reference.array)


def test_cupy_arrays_are_copied_to_the_host(tmp_path, monkeypatch):
    class FakeCupyArray:
        """Stands in for a CuPy array: a device array that backend copies with asnumpy."""

        def __init__(self, host):
            self.host, self.dtype = host, host.dtype
            self.device = types.SimpleNamespace(id=0)

    fake_cupy = types.SimpleNamespace(ndarray=FakeCupyArray, asnumpy=lambda a: a.host.copy())
    monkeypatch.setattr(backend, "cupy", fake_cupy)
    host = np.arange(4, dtype=np.float32)
    loaded = round_trip({"w": FakeCupyArray(host)}, tmp_path)
    assert_same(loaded, {"w": host})


# The file: its path, its format, what lies beside it.
@pytest.mark.parametrize("name", ["model.ckpt", "model", "model.npz", "model.tar.gz"])
def test_the_file_is_written_exactly_at_the_path_given(name, tmp_path):
    io.save({"x": np.ones(2)}, str(tmp_path / name))
    assert listing(tmp_path) == [name]
    assert_same(io.load(str(tmp_path / name)), {"x": np.ones(2)})


def test_pathlike_paths_are_accepted(tmp_path):
    class Where(os.PathLike):
        def __fspath__(self):
            return str(tmp_path / "custom")

    io.save([1], Where())
    assert io.load(Where()) == [1]
    assert io.load(pathlib.Path(tmp_path, "custom")) == [1]


def test_bytes_paths_are_accepted(tmp_path):
    path = os.fsencode(tmp_path / "bytes.npz")
    io.save([1], path)
    assert listing(tmp_path) == ["bytes.npz"]
    assert io.load(path) == [1]


def test_file_objects_are_written_in_place_and_read_from_their_position(tmp_path):
    state = {"w": minitrain.tensor([1.0, 2.0], requires_grad=True), "n": np.arange(3)}
    buffer = pyio.BytesIO()
    buffer.write(b"header")  # written after what is already there, as torch.save does
    io.save(state, buffer)
    buffer.seek(len(b"header"))
    assert_same(io.load(buffer), state)
    with open(tmp_path / "opened.pt", "wb") as file:
        io.save(state, file)
    assert listing(tmp_path) == ["opened.pt"]  # no temporary: written in place
    with open(tmp_path / "opened.pt", "rb") as file:
        assert_same(io.load(file), state)


def test_a_file_object_that_cannot_seek_is_read(tmp_path):
    class Pipe(pyio.RawIOBase):
        def __init__(self, data):
            self.stream = pyio.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, buffer):
            data = self.stream.read(len(buffer))
            buffer[: len(data)] = data
            return len(data)

    buffer = pyio.BytesIO()
    io.save({"x": np.ones(2)}, buffer)
    assert_same(io.load(Pipe(buffer.getvalue())), {"x": np.ones(2)})


def test_neither_a_name_nor_a_file_object_is_refused():
    for where, call in (("save", lambda f: io.save([1], f)), ("load", io.load)):
        with pytest.raises(DTypeError, match=f"{where}: f must be a file name.*int"):
            call(3)


def test_an_unsupported_value_writes_nothing_to_a_file_object():
    buffer = pyio.BytesIO()
    with pytest.raises(CheckpointError, match=r"state\['f'\]"):
        io.save({"w": np.ones(2), "f": print}, buffer)
    assert buffer.getvalue() == b""


def test_a_whole_module_is_refused_with_the_state_dict_advice(tmp_path):
    with pytest.raises(CheckpointError, match=r"Linear.*state_dict\(\).*load_state_dict"):
        io.save(minitrain.nn.Linear(2, 3), tmp_path / "model.pt")
    assert listing(tmp_path) == []


def test_torch_load_options_are_accepted_and_checked(tmp_path):
    path = tmp_path / "x.pt"
    io.save({"x": np.ones(2)}, path)
    for options in ({"weights_only": True}, {"weights_only": False}, {"mmap": True}, {}):
        assert_same(io.load(path, None, pickle, **options), {"x": np.ones(2)})
    assert_same(io.load(path, encoding="latin1"), {"x": np.ones(2)})
    with pytest.raises(DTypeError, match="weights_only must be True, False or None"):
        io.load(path, weights_only="yes")
    with pytest.raises(minitrain.errors.ArgumentError, match="pickle_module"):
        io.load(path, pickle_module=json)
    with pytest.raises(minitrain.errors.ArgumentError, match="unexpected keyword.*'strict'"):
        io.load(path, strict=True)


def test_a_long_non_ascii_file_name_can_be_saved(tmp_path):
    name = "模型" * 40 + ".npz"  # 244 bytes in UTF-8: a valid name (at most 255 bytes)
    io.save([1], tmp_path / name)
    assert listing(tmp_path) == [name]
    assert io.load(tmp_path / name) == [1]


def test_format_is_a_plain_npz_with_a_versioned_json_structure(tmp_path):
    path = tmp_path / "state.npz"
    weight = np.arange(3, dtype=np.float32)
    io.save({"w": weight, "n": (1, float("nan"))}, path)
    with np.load(path, allow_pickle=False) as archive:
        document = json.loads(archive[STRUCTURE_MEMBER].tobytes())
        assert document["format"] == "minitrain.checkpoint" and document["version"] == 2
        state = document["state"]
        assert state == {"dict": [["w", {"array": "a0"}], ["n", {"tuple": [1, {"float": "nan"}]}]]}
        np.testing.assert_array_equal(archive["a0"], weight)


def test_saving_through_a_symlink_replaces_the_file_it_points_to(tmp_path):
    real = tmp_path / "real.npz"
    link = tmp_path / "latest.npz"
    io.save([1], real)
    link.symlink_to(real)
    io.save([2], link)
    assert link.is_symlink()
    assert io.load(real) == [2]


def test_replacing_a_file_keeps_its_permissions(tmp_path):
    path = tmp_path / "private.npz"
    io.save([1], path)
    os.chmod(path, 0o600)
    io.save([2], path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert io.load(path) == [2]


def test_a_new_file_gets_ordinary_permissions(tmp_path):
    umask = os.umask(0o022)
    try:
        io.save([1], tmp_path / "new.npz")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(os.stat(tmp_path / "new.npz").st_mode) == 0o644


# Atomic writes.
def _old_checkpoint(tmp_path):
    path = tmp_path / "model.npz"
    old = {"w": np.arange(5.0), "epoch": 1}
    io.save(old, path)
    return path, old


def _half_written_savez(exception):
    def savez(file, **members):
        file.write(b"PK\x03\x04 a few bytes of a zip archive that never gets finished")
        raise exception

    return savez


@pytest.mark.parametrize("exception", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_write_failing_midway_leaves_the_old_file_and_no_temporary(
    exception, tmp_path, monkeypatch
):
    path, old = _old_checkpoint(tmp_path)
    monkeypatch.setattr(np, "savez", _half_written_savez(exception))
    with pytest.raises(type(exception)):
        io.save({"w": np.zeros(5), "epoch": 2}, path)
    assert listing(tmp_path) == ["model.npz"]
    assert_same(io.load(path), old)


@pytest.mark.parametrize("stage", ["fsync", "replace"])
def test_a_failure_after_writing_leaves_the_old_file_and_no_temporary(stage, tmp_path, monkeypatch):
    path, old = _old_checkpoint(tmp_path)

    def fail(*args):
        raise OSError(5, f"{stage} failed")

    monkeypatch.setattr(os, stage, fail)
    with pytest.raises(OSError, match=f"{stage} failed"):
        io.save({"w": np.zeros(5), "epoch": 2}, path)
    monkeypatch.undo()
    assert listing(tmp_path) == ["model.npz"]
    assert_same(io.load(path), old)


def test_an_unsupported_value_late_in_the_state_touches_no_file(tmp_path, monkeypatch):
    path, old = _old_checkpoint(tmp_path)
    opened = []
    monkeypatch.setattr(os, "open", lambda *args: opened.append(args))
    state = {"w": np.zeros(5), "epoch": 2, "last": [1, 2, {"hook": print}]}
    with pytest.raises(CheckpointError, match=r"state\['last'\]\[2\]\['hook'\]"):
        io.save(state, path)
    assert opened == []
    monkeypatch.undo()
    assert listing(tmp_path) == ["model.npz"]
    assert_same(io.load(path), old)


def test_a_read_only_file_is_left_as_it_is(tmp_path, monkeypatch):
    path, old = _old_checkpoint(tmp_path)
    os.chmod(path, 0o444)
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # root may write it: act as a user who may not
        monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)
    with pytest.raises(PermissionError, match="read-only") as info:
        io.save({"w": np.zeros(5), "epoch": 2}, path)
    assert str(path) in str(info.value)
    monkeypatch.undo()
    assert listing(tmp_path) == ["model.npz"]
    assert_same(io.load(path), old)


def test_saving_onto_a_directory_fails_cleanly(tmp_path):
    (tmp_path / "taken").mkdir()
    with pytest.raises(IsADirectoryError, match="taken"):
        io.save([1], tmp_path / "taken")
    with pytest.raises(IsADirectoryError):
        io.save([1], str(tmp_path) + os.sep)
    assert listing(tmp_path) == ["taken"]
    assert listing(tmp_path / "taken") == []


def test_saving_into_a_missing_directory_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing"):
        io.save([1], tmp_path / "missing" / "model.npz")


# What cannot be saved.
Point = namedtuple("Point", "x y")


class Color(enum.IntEnum):
    RED = 1


@pytest.mark.parametrize(
    "value, type_name",
    [
        ({1, 2}, "set"),
        (b"bytes", "bytes"),
        (1 + 2j, "complex"),
        (object(), "object"),
        (print, "builtin_function_or_method"),
        (Point(1, 2), "Point"),
        (Color.RED, "Color"),
        (range(3), "range"),
    ],
    ids=lambda v: type(v).__name__,
)
def test_unsupported_values_are_refused_naming_the_key_path(value, type_name, tmp_path):
    state = {"layers": [{}, {}, {"weight": np.ones(2), "extra": value}]}
    with pytest.raises(CheckpointError) as info:
        io.save(state, tmp_path / "x.npz")
    message = str(info.value)
    assert "state['layers'][2]['extra']" in message and type_name in message
    assert listing(tmp_path) == []


def test_object_arrays_are_refused_naming_the_key_path(tmp_path):
    state = {"layers": [None, None, {"weight": np.array([1, "two"], dtype=object)}]}
    with pytest.raises(CheckpointError, match=r"state\['layers'\]\[2\]\['weight'\].*object"):
        io.save(state, tmp_path / "x.npz")
    structured = np.zeros(2, dtype=[("a", np.int32), ("b", np.float32)])
    with pytest.raises(CheckpointError, match=r"state\[0\]"):
        io.save([structured], tmp_path / "x.npz")


@pytest.mark.parametrize("key", [(1, 2), 1.5, True, None, np.int64(3), b"k"], ids=repr)
def test_keys_other_than_str_or_int_are_refused(key, tmp_path):
    with pytest.raises(CheckpointError) as info:
        io.save({"state": {0: {key: 1}}}, tmp_path / "x.npz")
    message = str(info.value)
    assert "state['state'][0]" in message and repr(key) in message and "str or int" in message


def test_a_structure_containing_itself_is_refused(tmp_path):
    state = {"a": []}
    state["a"].append(state)
    with pytest.raises(CheckpointError, match=r"state\['a'\]\[0\] contains itself"):
        io.save(state, tmp_path / "x.npz")


def test_checkpoint_error_is_a_minitrain_value_error():
    assert issubclass(CheckpointError, MinitrainError) and issubclass(CheckpointError, ValueError)


# What cannot be loaded.
def _write_archive(path, document=None, **arrays):
    """A hand-made .npz: `document` (a dict, or raw bytes) as the structure, plus `arrays`."""
    members = dict(arrays)
    if document is not None:
        raw = document if isinstance(document, bytes) else json.dumps(document).encode()
        members[STRUCTURE_MEMBER] = np.frombuffer(raw, dtype=np.uint8)
    with open(path, "wb") as file:
        np.savez(file, **members)


def _document(state, version=1, name="minitrain.checkpoint"):
    return {"format": name, "version": version, "state": state}


def test_a_version_1_file_still_loads_its_arrays(tmp_path):
    # what version 1 wrote for {"w": tensor, "n": (1, nan), "s": np.float32}: Tensors as arrays
    path = tmp_path / "old.npz"
    state = {
        "dict": [
            ["w", {"array": "a0"}],
            ["n", {"tuple": [1, {"float": "nan"}]}],
            ["s", {"scalar": "a1"}],
        ]
    }
    _write_archive(path, _document(state), a0=np.arange(3.0), a1=np.asarray(np.float32(2)))
    assert_same(io.load(path), {"w": np.arange(3.0), "n": (1, float("nan")), "s": np.float32(2)})


@pytest.mark.parametrize(
    "entry, version",
    [
        ({"tensor": ["a0", False]}, 1),  # version 1 had no Tensor tags
        ({"tensor": ["a0"]}, 2),
        ({"tensor": ["a0", 1]}, 2),
        ({"parameter": "a0"}, 2),
    ],
)
def test_a_damaged_tensor_entry_is_reported(entry, version, tmp_path):
    path = tmp_path / "damaged.npz"
    _write_archive(path, _document({"dict": [["w", entry]]}, version=version), a0=np.ones(3))
    with pytest.raises(CheckpointError, match=r"state\['w'\] is an entry minitrain does not"):
        io.load(path)


def test_an_integer_tensor_marked_as_requiring_grad_is_reported(tmp_path):
    path = tmp_path / "damaged.npz"
    document = _document({"tensor": ["a0", True]}, version=2)
    _write_archive(path, document, a0=np.ones(3, dtype=np.int64))
    with pytest.raises(CheckpointError, match="int64 that requires grad"):
        io.load(path)


def test_a_missing_file_raises_file_not_found_with_the_path(tmp_path):
    path = tmp_path / "nowhere.npz"
    with pytest.raises(FileNotFoundError) as info:
        io.load(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("keep", [0.05, 0.5, 0.95, -1])
def test_a_truncated_file_is_reported(keep, tmp_path):
    path = tmp_path / "cut.npz"
    io.save({"w": np.arange(1000.0), "b": np.ones(10)}, path)
    raw = path.read_bytes()
    cut = len(raw) - 1 if keep == -1 else int(len(raw) * keep)
    path.write_bytes(raw[:cut])
    with pytest.raises(CheckpointError, match="truncated or damaged") as info:
        io.load(path)
    assert str(path) in str(info.value)


def test_corrupted_array_bytes_are_reported(tmp_path):
    path = tmp_path / "flipped.npz"
    io.save({"w": np.zeros(1000)}, path)
    raw = bytearray(path.read_bytes())
    middle = raw.index(b"\x00" * 4000) + 2000  # inside the array's data
    raw[middle] = 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match="damaged"):
        io.load(path)


def _replace_in_file(path, old, new):
    raw = path.read_bytes()
    assert raw.count(old) == 1 and len(old) == len(new)
    path.write_bytes(raw.replace(old, new))


def test_a_flipped_bit_in_an_array_header_never_loads_a_shorter_array(tmp_path):
    path = tmp_path / "flipped.npz"
    io.save({"w": np.arange(1000.0)}, path)
    _replace_in_file(path, b"(1000,)", b"(100 ,)")  # '0' -> ' ' is one bit: shape (100,)
    with pytest.raises(CheckpointError, match=r"damaged.*'a0'.*state\['w'\].*\(100,\)") as info:
        io.load(path)
    assert str(path) in str(info.value)


def test_a_damaged_header_asking_for_a_huge_array_is_reported(tmp_path):
    path = tmp_path / "huge.npz"
    io.save({"w": np.arange(1000.0)}, path)
    huge = b"(10000000000000,), }"  # 80 TB of float64, were it allocated
    _replace_in_file(path, b"(1000,), }".ljust(len(huge)), huge)  # into the header's padding
    with pytest.raises(CheckpointError, match="damaged.*'a0'"):
        io.load(path)


def _npy_bytes(array) -> bytes:
    buffer = pyio.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _checkpoint_with_member(path, name: str, content: bytes) -> None:
    """A checkpoint whose state is the one array 'a0', stored as the member `name`."""
    structure = np.frombuffer(json.dumps(_document({"array": "a0"})).encode(), np.uint8)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{STRUCTURE_MEMBER}.npy", _npy_bytes(structure))
        archive.writestr(name, content)


def test_a_member_that_is_not_an_array_is_never_loaded_as_one(tmp_path):
    path = tmp_path / "bytes.npz"
    _checkpoint_with_member(path, "a0", b"raw bytes, not an .npy array")
    with pytest.raises(CheckpointError, match="'a0'.*does not hold"):
        io.load(path)


def test_an_array_in_an_npy_format_version_minitrain_never_writes_is_reported(tmp_path):
    path = tmp_path / "future.npz"
    future = bytearray(_npy_bytes(np.arange(3.0)))
    future[6] = 9  # the major version byte after the magic
    _checkpoint_with_member(path, "a0.npy", bytes(future))
    with pytest.raises(CheckpointError, match="'a0' is in .npy format version \\(9, 0\\)"):
        io.load(path)


@pytest.mark.parametrize(
    "content",
    [b"", b"not a checkpoint at all\n", b"\x93NUMPY", pickle.dumps({"w": [1.0]})],
    ids=["empty", "text", "npy-magic", "pickle"],
)
def test_a_file_that_is_not_a_zip_is_reported(content, tmp_path):
    path = tmp_path / "foreign.npz"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match="not a minitrain checkpoint.*not a zip"):
        io.load(path)


def test_an_npy_file_is_not_a_checkpoint(tmp_path):
    path = tmp_path / "array.npy"
    np.save(path, np.ones(3))
    with pytest.raises(CheckpointError, match="not a zip"):
        io.load(path)


def test_an_npz_without_the_structure_is_not_a_checkpoint(tmp_path):
    path = tmp_path / "plain.npz"
    _write_archive(path, weight=np.ones(3))
    with pytest.raises(CheckpointError, match="not a minitrain checkpoint.*__minitrain__.*weight"):
        io.load(path)


def test_a_zip_of_other_files_is_not_a_checkpoint(tmp_path):
    path = tmp_path / "other.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hello")
    with pytest.raises(CheckpointError, match="not a minitrain checkpoint"):
        io.load(path)


def test_another_format_name_is_not_a_checkpoint(tmp_path):
    path = tmp_path / "other.npz"
    _write_archive(path, _document([], name="somebody.else"))
    with pytest.raises(CheckpointError, match="not a minitrain checkpoint.*somebody.else"):
        io.load(path)


def test_a_newer_format_version_asks_for_an_upgrade(tmp_path):
    path = tmp_path / "future.npz"
    _write_archive(path, _document([], version=3))
    with pytest.raises(CheckpointError, match="version 3.*up to 2.*upgrade"):
        io.load(path)


@pytest.mark.parametrize("version", [0, "1", 1.0, None])
def test_an_invalid_format_version_is_reported(version, tmp_path):
    path = tmp_path / "odd.npz"
    _write_archive(path, _document([], version=version))
    with pytest.raises(CheckpointError, match="format version"):
        io.load(path)


@pytest.mark.parametrize(
    "document, complaint",
    [
        (b"\xff\xfe not utf-8", "not JSON"),
        (b"{not json", "not JSON"),
        (b'{"format": "minitrain.checkpoint", "version": 1, "state": NaN}', "not JSON"),
        (b"[1, 2]", "not a minitrain checkpoint"),
        (_document({"array": "a7"}), "'a7'.*does not hold"),
        (_document({"array": STRUCTURE_MEMBER}), "does not hold"),
        (_document({"scalar": "a0"}), "does not know"),  # a0 is not 0-d
        (_document({"pickle": "a0"}), "does not know"),
        (_document({"float": "1e999"}), "does not know"),
        (_document({"tuple": [1], "dict": []}), "does not know"),
        (_document({"dict": [["k"]]}), r"state has a dict entry"),
        (_document({"dict": [[1.5, 2]]}), r"state has a dict entry"),
        (_document({"dict": [["w", {"bad": 1}]]}), r"state\['w'\]"),
    ],
)
def test_a_damaged_structure_is_reported(document, complaint, tmp_path):
    path = tmp_path / "damaged.npz"
    _write_archive(path, document, a0=np.ones(3))
    with pytest.raises(CheckpointError, match=complaint):
        io.load(path)


def test_a_structure_that_is_not_a_byte_array_is_reported(tmp_path):
    path = tmp_path / "strange.npz"
    with open(path, "wb") as file:
        np.savez(file, **{STRUCTURE_MEMBER: np.ones(3)})
    with pytest.raises(CheckpointError, match="uint8"):
        io.load(path)


def test_deep_nesting_in_a_crafted_file_is_reported(tmp_path):
    path = tmp_path / "deep.npz"
    depth = sys.getrecursionlimit() + 100
    state = '{"tuple":[' * depth + "1" + "]}" * depth
    text = '{"format": "minitrain.checkpoint", "version": 1, "state": ' + state + "}"
    _write_archive(path, text.encode())
    with pytest.raises(CheckpointError, match="damaged"):
        io.load(path)


class _RunsCodeWhenUnpickled:
    def __reduce__(self):
        return (exec, ("import builtins; builtins.minitrain_pwned = True",))


def test_pickled_objects_in_a_crafted_checkpoint_are_never_run(tmp_path):
    path = tmp_path / "malicious.npz"
    payload = np.empty(1, dtype=object)
    payload[0] = _RunsCodeWhenUnpickled()
    _write_archive(path, _document({"dict": [["w", {"array": "a0"}]]}), a0=payload)
    with pytest.raises(CheckpointError, match=r"unsafe.*'a0'.*state\['w'\]"):
        io.load(path)
    assert not hasattr(builtins, "minitrain_pwned")


def test_a_pickle_file_is_never_unpickled(tmp_path):
    path = tmp_path / "malicious.pt"
    path.write_bytes(pickle.dumps(_RunsCodeWhenUnpickled()))
    with pytest.raises(CheckpointError, match="not a zip"):
        io.load(path)
    assert not hasattr(builtins, "minitrain_pwned")


def test_save_and_load_take_torchs_parameters():
    torch = pytest.importorskip("torch")

    def names(function):
        return [(p.name, p.kind) for p in inspect.signature(function).parameters.values()]

    assert names(io.load) == names(torch.load)
    assert names(io.save) == names(torch.save)[:4]  # torch's last two are private
    assert minitrain.save is io.save and minitrain.load is io.load
