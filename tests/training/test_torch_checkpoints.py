"""PyTorch's checkpoint files read without PyTorch: values, dtypes, layouts, and the restricted
unpickler refusing every global outside tensor state before it runs."""

from __future__ import annotations

import io as pyio
import json
import os
import pathlib
import pickle
import subprocess
import sys
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
import torch_zip_writer as writer
from torch_zip_writer import Call, FakeParameter, FakeTensor, Global, Storage

import minitrain
from minitrain.errors import CheckpointError

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]


def load_bytes(data: bytes, **options):
    return minitrain.load(pyio.BytesIO(data), **options)


DTYPES = [
    np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
    np.bool_, np.complex64, np.complex128,
]  # fmt: skip


@pytest.mark.parametrize("byteorder", ["little", "big", None])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_tensors_load_with_their_values_dtype_and_shape(dtype, byteorder):
    values = (np.arange(-6, 6).reshape(3, 4) * 1.5).astype(dtype)
    if dtype in (np.complex64, np.complex128):
        values = values + 1j * values[::-1]
    data = writer.torch_zip(OrderedDict(w=writer.tensor(values)), byteorder=byteorder)
    loaded = load_bytes(data)
    assert type(loaded) is OrderedDict and list(loaded) == ["w"]
    tensor = loaded["w"]
    assert type(tensor) is minitrain.Tensor and not tensor.requires_grad
    assert tensor.dtype == np.dtype(dtype) and tensor.shape == (3, 4)
    assert tensor.array.dtype.isnative and tensor.array.flags.writeable
    np.testing.assert_array_equal(tensor.numpy(), values)


def test_a_view_is_rebuilt_from_its_offset_size_and_stride():
    elements = np.arange(20, dtype=np.float32)
    storage = Storage(elements, "FloatStorage")
    transposed = FakeTensor(storage, 3, (3, 2), (1, 4))  # elements[3 + i + 4 j]
    row = FakeTensor(storage, 10, (4,), (1,))
    scalar = FakeTensor(storage, 19, (), ())
    empty = FakeTensor(storage, 0, (0, 5), (5, 1))
    loaded = load_bytes(writer.torch_zip([transposed, row, scalar, empty]))
    expected = np.array([[3 + i + 4 * j for j in range(2)] for i in range(3)], np.float32)
    np.testing.assert_array_equal(loaded[0].numpy(), expected)
    np.testing.assert_array_equal(loaded[1].numpy(), elements[10:14])
    assert loaded[2].shape == () and loaded[2].item() == 19.0
    assert loaded[3].shape == (0, 5) and loaded[3].dtype == np.float32
    assert loaded[0].array.flags.c_contiguous  # copied out of the storage
    loaded[1].array[0] = -1.0  # views no longer share memory
    assert loaded[0].numpy()[1, 1] == 8.0


def test_parameters_load_as_parameters_with_their_requires_grad():
    weight = FakeParameter(writer.tensor(np.ones((2, 2), np.float32)))
    frozen = FakeParameter(writer.tensor(np.zeros(3)), requires_grad=False)
    counter = writer.tensor(np.array(5))
    loaded = load_bytes(writer.torch_zip({"weight": weight, "frozen": frozen, "n": counter}))
    assert type(loaded) is dict  # a plain dict stays one
    assert type(loaded["weight"]) is minitrain.nn.Parameter and loaded["weight"].requires_grad
    assert type(loaded["frozen"]) is minitrain.nn.Parameter and not loaded["frozen"].requires_grad
    assert type(loaded["n"]) is minitrain.Tensor and loaded["n"].item() == 5


def test_a_tensor_requiring_grad_keeps_it():
    tensor = FakeTensor(Storage(np.ones(2), "DoubleStorage"), 0, (2,), (1,), True)
    loaded = load_bytes(writer.torch_zip([tensor]))[0]
    assert loaded.requires_grad and loaded.is_leaf


def test_bfloat16_tensors_load_as_float32_exactly():
    values = np.array([1.5, -2.25, 3.0, 0.0, 65536.0, np.inf], dtype=np.float32)
    bits = (values.view(np.uint32) >> 16).astype(np.uint16)  # these are exact in bfloat16
    tensor = FakeTensor(Storage(bits, "BFloat16Storage"), 0, (6,), (1,))
    for byteorder in ("little", "big"):
        loaded = load_bytes(writer.torch_zip([tensor], byteorder=byteorder))[0]
        assert loaded.dtype == np.float32
        np.testing.assert_array_equal(loaded.numpy(), values)


def test_conjugate_and_negative_metadata_is_applied():
    storage = Storage(np.array([1 + 2j, 3 - 1j], np.complex64), "ComplexFloatStorage")
    conj = FakeTensor(storage, 0, (2,), (1,), False, {"conj": True})
    neg = FakeTensor(storage, 0, (2,), (1,), False, {"neg": True})
    loaded = load_bytes(writer.torch_zip([conj, neg]))
    np.testing.assert_array_equal(loaded[0].numpy(), [1 - 2j, 3 + 1j])
    np.testing.assert_array_equal(loaded[1].numpy(), [-1 - 2j, -3 + 1j])


def test_a_training_checkpoint_of_plain_values_loads():
    state = {
        "epoch": 7,
        "best": 0.25,
        "name": "run",
        "flags": {"amsgrad": False, "foreach": None},
        "betas": (0.9, 0.999),
        "seen": {1, 2},
        "frozen": frozenset({3}),
        "raw": b"\x00\xffbytes",
        "shape": Call(Global("torch", "Size"), [2, 3]),
        "dtype": Global("torch", "float16"),
        "device": Call(Global("torch", "device"), "cuda", 0),
        "z": Call(Global("builtins", "complex"), 1.0, 2.0),
        "optimizer": {
            "state": {0: {"step": writer.tensor(np.array(3.0, np.float32))}},
            "param_groups": [{"lr": 0.1, "params": [0]}],
        },
    }
    loaded = load_bytes(writer.torch_zip(state))
    assert {k: loaded[k] for k in ("epoch", "best", "name", "flags", "betas")} == {
        k: state[k] for k in ("epoch", "best", "name", "flags", "betas")
    }
    assert loaded["seen"] == {1, 2} and loaded["frozen"] == frozenset({3})
    assert loaded["raw"] == b"\x00\xffbytes"
    assert loaded["shape"] == (2, 3) and loaded["dtype"] is np.float16
    assert loaded["device"] == "cuda:0" and loaded["z"] == 1 + 2j
    assert loaded["optimizer"]["state"][0]["step"].item() == 3.0
    assert loaded["optimizer"]["param_groups"] == [{"lr": 0.1, "params": [0]}]


def test_paths_file_objects_and_any_record_name_are_read(tmp_path):
    data = writer.torch_zip({"w": writer.tensor(np.arange(3.0))}, prefix="my_model")
    path = tmp_path / "model.pt"
    path.write_bytes(data)
    for source in (path, str(path)):
        np.testing.assert_array_equal(minitrain.load(source)["w"].numpy(), np.arange(3.0))
    with open(path, "rb") as file:
        loaded = minitrain.load(file, map_location="cpu", weights_only=True)
    np.testing.assert_array_equal(loaded["w"].numpy(), np.arange(3.0))


def test_hand_built_files_read_the_same_in_torch():
    torch = pytest.importorskip("torch")
    storage = Storage(np.arange(12, dtype=np.float64), "DoubleStorage")
    state = OrderedDict(
        w=FakeTensor(storage, 1, (2, 3), (1, 4)),
        p=FakeParameter(writer.tensor(np.ones(2, np.float32))),
        n=writer.tensor(np.array(4)),
    )
    data = writer.torch_zip(state)
    expected = torch.load(pyio.BytesIO(data), weights_only=True)
    loaded = load_bytes(data)
    assert list(loaded) == list(expected)
    for key, value in expected.items():
        assert loaded[key].dtype == value.detach().numpy().dtype
        np.testing.assert_array_equal(loaded[key].numpy(), value.detach().numpy())
    assert isinstance(loaded["p"], minitrain.nn.Parameter) == isinstance(
        expected["p"], torch.nn.Parameter
    )


# Globals outside tensor state: refused before they run.


def _payloads(marker: pathlib.Path):
    """(module, name, args) calls that would create `marker` if anything ran them."""
    return [
        ("os", "system", (f"touch {marker}",)),
        ("posix", "system", (f"touch {marker}",)),
        ("builtins", "eval", (f"open({str(marker)!r}, 'w').close()",)),
        ("builtins", "exec", (f"open({str(marker)!r}, 'w').close()",)),
        ("subprocess", "Popen", (["touch", str(marker)],)),
        ("builtins", "open", (str(marker), "w")),
        ("torch.nn.modules.linear", "Linear", (2, 3)),
        ("numpy.core.multiarray", "_reconstruct", (str(marker),)),
    ]


@pytest.mark.parametrize("index", range(8))
@pytest.mark.parametrize("weights_only", [None, True, False])
def test_globals_outside_tensor_state_are_refused_before_they_run(index, weights_only, tmp_path):
    marker = tmp_path / "pwned"
    module, name, args = _payloads(marker)[index]
    state = OrderedDict(w=writer.tensor(np.ones(2)), hook=Call(Global(module, name), *args))
    path = tmp_path / "malicious.pt"
    path.write_bytes(writer.torch_zip(state))
    with pytest.raises(CheckpointError, match=rf"needs the global {module}\.{name},") as info:
        minitrain.load(path, weights_only=weights_only)
    assert not marker.exists()
    assert ("weights_only=False changes nothing" in str(info.value)) == (weights_only is False)


def test_the_payload_would_run_if_unpickled_freely(tmp_path):
    """The control: the eval payload is real, so its refusal above means something."""
    marker = tmp_path / "pwned"
    _, _, args = _payloads(marker)[2]
    data, _ = writer.pickled(Call(Global("builtins", "eval"), *args))
    pickle.loads(data)
    assert marker.exists()


def test_a_parameter_with_python_state_is_refused():
    def with_state(state):
        hooks = OrderedDict()
        rebuild = Global("torch._utils", "_rebuild_parameter_with_state")
        return Call(rebuild, writer.tensor(np.ones(2)), True, hooks, state)

    loaded = load_bytes(writer.torch_zip([with_state({}), with_state(({}, None))]))
    assert all(type(p) is minitrain.nn.Parameter for p in loaded)
    with pytest.raises(CheckpointError, match="Parameter with Python attributes"):
        load_bytes(writer.torch_zip([with_state({"tag": "frozen"})]))


# Damaged and unsupported files.


def _zip_with(members: dict[str, bytes]) -> bytes:
    buffer = pyio.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "tensor, complaint",
    [
        (FakeTensor(Storage(np.ones(4), "DoubleStorage"), 2, (3,), (1,)), "reaches element 4"),
        (FakeTensor(Storage(np.ones(4), "DoubleStorage"), -1, (2,), (1,)), "offset -1"),
        (FakeTensor(Storage(np.ones(4), "DoubleStorage"), 0, (2,), (-1,)), "stride"),
        (FakeTensor(Storage(np.ones(4), "DoubleStorage"), 0, (2, 2), (1,)), "size"),
        (FakeTensor(Storage(np.ones(4), "DoubleStorage", numel=5), 0, (2,), (1,)), "5 elements"),
        (FakeTensor(Storage(np.ones(4, np.int64), "LongStorage"), 0, (2,), (1,), True), "grad"),
        (FakeTensor("not a storage", 0, (2,), (1,)), "storage str"),
    ],
    ids=["past-the-end", "negative-offset", "negative-stride", "stride-length", "numel", "int-grad",
         "no-storage"],
)  # fmt: skip
def test_a_damaged_tensor_is_reported(tensor, complaint):
    with pytest.raises(CheckpointError, match=complaint):
        load_bytes(writer.torch_zip([tensor]))


def test_a_missing_storage_member_is_reported():
    data = writer.torch_zip([writer.tensor(np.ones(3))])
    with zipfile.ZipFile(pyio.BytesIO(data)) as archive:
        members = {n: archive.read(n) for n in archive.namelist() if "/data/" not in n}
    with pytest.raises(CheckpointError, match="no member 'archive/data/0'"):
        load_bytes(_zip_with(members))


def test_an_unknown_persistent_id_or_storage_type_is_reported():
    class OddId(writer._Pickler):
        def persistent_id(self, obj):
            return ("module", "x") if isinstance(obj, Storage) else None

    buffer = pyio.BytesIO()
    OddId(buffer, {}).dump([writer.tensor(np.ones(2))])
    with pytest.raises(CheckpointError, match="persistent id minitrain does not know"):
        load_bytes(_zip_with({"archive/data.pkl": buffer.getvalue()}))
    odd = FakeTensor(Storage(np.ones(2, np.uint16), "UInt16Storage"), 0, (2,), (1,))
    with pytest.raises(CheckpointError, match=r"global torch\.UInt16Storage"):
        load_bytes(writer.torch_zip([odd]))


@pytest.mark.parametrize(
    "pickle_bytes", [b"\x80\x02}q\x00", b"garbage", b""], ids=["truncated", "garbage", "empty"]
)
def test_a_damaged_data_pkl_is_reported(pickle_bytes):
    with pytest.raises(CheckpointError, match="data.pkl is damaged"):
        load_bytes(_zip_with({"archive/data.pkl": pickle_bytes}))


def test_an_odd_byte_order_record_is_reported():
    data = writer.torch_zip([writer.tensor(np.ones(2))], byteorder="middle")
    with pytest.raises(CheckpointError, match="byte order 'middle'"):
        load_bytes(data)


def test_the_legacy_format_asks_for_a_newer_pytorch(tmp_path):
    path = tmp_path / "old.pt"
    legacy = pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2) + pickle.dumps(1001, protocol=2)
    path.write_bytes(legacy)
    with pytest.raises(CheckpointError, match="before PyTorch 1.6.*save it again"):
        minitrain.load(path)


# Real PyTorch files, loaded in a process where torch cannot be imported.

_CHILD = """
import json, sys
sys.modules["torch"] = None  # import torch now raises ImportError
import numpy as np
import minitrain as mt
from minitrain import nn

folder = sys.argv[1]
inputs = np.load(folder + "/inputs.npz")
model = nn.Sequential(
    nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(64, 3)
)
lstm = nn.LSTM(3, 5, num_layers=2, batch_first=True)
loaded = {name: mt.load(folder + "/" + name + ".pt") for name in ("model", "lstm", "optimizer")}
checkpoint = mt.load(folder + "/checkpoint.pt", weights_only=False)
model.load_state_dict(loaded["model"])
lstm.load_state_dict(loaded["lstm"])
model.eval()
types = {key: type(value).__name__ for key, value in loaded["model"].items()}
mt.save(
    {
        **loaded,
        "checkpoint": checkpoint,
        "types": types,
        "model_out": model(mt.tensor(inputs["image"])).array,
        "lstm_out": lstm(mt.tensor(inputs["sequence"]))[0].array,
    },
    folder + "/out.npz",
)
print(json.dumps("torch" in sys.modules and sys.modules["torch"] is not None))
"""


def _assert_same_tensors(loaded, expected, torch):
    """minitrain's load of a torch state equals torch's (Tensors: dtype, shape, values)."""
    if isinstance(expected, torch.Tensor):
        assert isinstance(loaded, minitrain.Tensor)
        assert loaded.dtype == expected.numpy().dtype and loaded.shape == tuple(expected.shape)
        np.testing.assert_array_equal(loaded.numpy(), expected.detach().numpy())
    elif isinstance(expected, dict):
        assert list(loaded) == list(expected)
        for key in expected:
            _assert_same_tensors(loaded[key], expected[key], torch)
    elif isinstance(expected, (list, tuple)):
        assert len(loaded) == len(expected)
        for item, reference in zip(loaded, expected, strict=True):
            _assert_same_tensors(item, reference, torch)
    else:
        assert loaded == expected


def test_pytorch_state_dicts_load_and_run_where_torch_is_absent(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(64, 3)
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(2):  # moves the batch-norm statistics and fills Adam's state
        optimizer.zero_grad()
        model(torch.randn(8, 1, 6, 6)).square().mean().backward()
        optimizer.step()
    model.eval()
    lstm = nn.LSTM(3, 5, num_layers=2, batch_first=True)
    states = {
        "model": model.state_dict(),
        "lstm": lstm.state_dict(),
        "optimizer": optimizer.state_dict(),
        "checkpoint": {
            "epoch": 2,
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "loss": 0.5,
        },
    }
    for name, state in states.items():
        torch.save(state, tmp_path / f"{name}.pt")
    image = np.random.default_rng(0).standard_normal((2, 1, 6, 6)).astype(np.float32)
    sequence = np.random.default_rng(1).standard_normal((2, 4, 3)).astype(np.float32)
    np.savez(tmp_path / "inputs.npz", image=image, sequence=sequence)

    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=600,
    )
    assert child.returncode == 0, child.stderr
    assert json.loads(child.stdout.strip().splitlines()[-1]) is False  # torch never imported

    out = minitrain.load(tmp_path / "out.npz")
    for name, state in states.items():
        _assert_same_tensors(out[name], state, torch)
    assert out["types"] == {key: "Tensor" for key in states["model"]}
    assert out["model"]["1.num_batches_tracked"].dtype == np.int64
    with torch.no_grad():
        np.testing.assert_allclose(
            out["model_out"], model(torch.from_numpy(image)).numpy(), rtol=1e-5, atol=1e-6
        )
        np.testing.assert_allclose(
            out["lstm_out"], lstm(torch.from_numpy(sequence))[0].numpy(), rtol=1e-5, atol=1e-6
        )


def test_pytorch_optimizer_state_resumes_a_minitrain_optimizer(tmp_path):
    torch = pytest.importorskip("torch")
    weight = np.random.default_rng(2).standard_normal((3, 2))
    grads = [np.random.default_rng(3 + i).standard_normal((3, 2)) for i in range(4)]
    torch_weight = torch.tensor(weight, requires_grad=True)
    torch_optimizer = torch.optim.Adam([torch_weight], lr=0.05)
    for grad in grads[:2]:
        torch_weight.grad = torch.tensor(grad)
        torch_optimizer.step()
    torch.save({"w": torch_weight.detach(), "opt": torch_optimizer.state_dict()}, tmp_path / "a.pt")
    loaded = minitrain.load(tmp_path / "a.pt")
    mt_weight = minitrain.tensor(loaded["w"].numpy(), requires_grad=True)
    mt_optimizer = minitrain.optim.Adam([mt_weight], lr=0.05)
    mt_optimizer.load_state_dict(loaded["opt"])
    for grad in grads[2:]:
        torch_weight.grad = torch.tensor(grad)
        torch_optimizer.step()
        mt_weight.grad = minitrain.tensor(grad)
        mt_optimizer.step()
    np.testing.assert_allclose(mt_weight.numpy(), torch_weight.detach().numpy(), rtol=1e-12)
