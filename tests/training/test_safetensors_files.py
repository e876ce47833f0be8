"""safetensors files through minitrain.io.safetensors: round trips, files other writers made, and
the error where the package is missing."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import minitrain
from minitrain.errors import CheckpointError, DTypeError
from minitrain.io import safetensors as mt_safetensors

DTYPES = [np.float16, np.float32, np.float64, np.int8, np.int32, np.int64, np.uint8, np.bool_]


def _state():
    rng = np.random.default_rng(0)
    state = {
        np.dtype(dtype).name: (rng.standard_normal((2, 3)) * 10).astype(dtype) for dtype in DTYPES
    }
    state["scalar"] = np.array(2.5, dtype=np.float32)
    state["transposed"] = np.arange(6.0).reshape(2, 3).T  # not contiguous: saved as its values
    return state


def _assert_loaded(loaded, state):
    assert sorted(loaded) == sorted(state)
    for key, array in state.items():
        tensor = loaded[key]
        assert type(tensor) is minitrain.Tensor and tensor.dtype == array.dtype
        assert tensor.shape == array.shape
        np.testing.assert_array_equal(tensor.numpy(), array)


def test_a_file_round_trips_tensors_and_arrays(tmp_path):
    pytest.importorskip("safetensors")
    state = _state()
    given = {key: minitrain.tensor(a) if i % 2 else a for i, (key, a) in enumerate(state.items())}
    path = tmp_path / "model.safetensors"
    mt_safetensors.save_file(given, path, metadata={"format": "pt"})
    assert sorted(os.listdir(tmp_path)) == ["model.safetensors"]  # no temporary left
    _assert_loaded(mt_safetensors.load_file(path), state)
    _assert_loaded(mt_safetensors.load_file(str(path), device="cpu"), state)


def test_bytes_round_trip_and_other_readers_agree(tmp_path):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    state = _state()
    data = mt_safetensors.save({k: minitrain.tensor(v) for k, v in state.items()})
    assert isinstance(data, bytes)
    _assert_loaded(mt_safetensors.load(data), state)
    for key, array in safetensors_numpy.load(data).items():  # the package's own reader
        np.testing.assert_array_equal(array, state[key])


def test_metadata_is_written_into_the_header(tmp_path):
    safetensors = pytest.importorskip("safetensors")
    path = tmp_path / "m.safetensors"
    mt_safetensors.save_file({"w": minitrain.ones(2)}, path, metadata={"epoch": "3"})
    with safetensors.safe_open(str(path), framework="numpy") as file:
        assert file.metadata() == {"epoch": "3"}


def test_a_file_written_by_safetensors_torch_loads(tmp_path):
    torch = pytest.importorskip("torch")
    safetensors_torch = pytest.importorskip("safetensors.torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    state = {key: value.contiguous() for key, value in model.state_dict().items()}
    path = tmp_path / "torch.safetensors"
    safetensors_torch.save_file(state, str(path))
    loaded = mt_safetensors.load_file(path)
    assert sorted(loaded) == sorted(state)
    for key, value in state.items():
        assert loaded[key].dtype == value.numpy().dtype
        np.testing.assert_array_equal(loaded[key].numpy(), value.numpy())
    restored = minitrain.nn.Sequential(minitrain.nn.Linear(3, 4), minitrain.nn.BatchNorm1d(4))
    restored.load_state_dict(loaded)
    restored.eval()
    model.eval()
    inputs = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    with torch.no_grad():
        expected = model(torch.from_numpy(inputs)).numpy()
    np.testing.assert_allclose(restored(minitrain.tensor(inputs)).numpy(), expected, rtol=1e-5)
    again = safetensors_torch.load(mt_safetensors.save(loaded))  # and torch reads minitrain's
    for key, value in state.items():
        assert torch.equal(again[key], value)


def test_bad_arguments_and_damaged_data_are_reported(tmp_path):
    pytest.importorskip("safetensors")
    with pytest.raises(DTypeError, match=r"save: tensors\['w'\] is a list"):
        mt_safetensors.save({"w": [1, 2]})
    with pytest.raises(DTypeError, match="names must be str"):
        mt_safetensors.save({1: minitrain.ones(2)})
    with pytest.raises(DTypeError, match="metadata must be a dict of str to str"):
        mt_safetensors.save({"w": minitrain.ones(2)}, metadata={"epoch": 3})
    with pytest.raises(CheckpointError, match="cannot read the bytes as safetensors"):
        mt_safetensors.load(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json")
    with pytest.raises(FileNotFoundError, match="no safetensors file"):
        mt_safetensors.load_file(tmp_path / "missing.safetensors")


def test_a_missing_package_names_the_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "safetensors", None)
    monkeypatch.setitem(sys.modules, "safetensors.numpy", None)
    for call in (
        lambda: mt_safetensors.save({"w": minitrain.ones(2)}),
        lambda: mt_safetensors.load(b""),
        lambda: mt_safetensors.save_file({"w": minitrain.ones(2)}, tmp_path / "x"),
        lambda: mt_safetensors.load_file(tmp_path / "x"),
    ):
        with pytest.raises(ImportError, match="pip install safetensors"):
            call()
    assert os.listdir(tmp_path) == []


def test_minitrain_load_points_a_safetensors_file_to_load_file(tmp_path):
    pytest.importorskip("safetensors")
    path = tmp_path / "model.safetensors"
    mt_safetensors.save_file({"w": minitrain.ones(2)}, path)
    with pytest.raises(CheckpointError, match="safetensors file.*safetensors.load_file"):
        minitrain.load(path)
