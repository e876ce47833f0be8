"""Training on a CUDA device end to end: a small MLP and a small CNN take the same steps on the
device as on the CPU, Module.to moves parameters, buffers and gradients in place, optimizer
state lives where its parameters do, checkpoints hold host arrays and load onto a device with
map_location, fit and evaluate move a loader's batches to the model's device, and the graph view
computes its statistics on the device. The device is the strict stand-in for CuPy
(tests/strict_device.py) and a real GPU where one is at hand (the `cuda_device` fixture)."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

import minitrain as mt
from minitrain import backend, nn, optim, viz
from minitrain.errors import DeviceError
from minitrain.train import evaluate, fit
from minitrain.utils.data import DataLoader, TensorDataset


def _is_device_array(array) -> bool:
    return backend.cupy is not None and type(array) is backend.cupy.ndarray


def _host(array) -> np.ndarray:
    return backend.to_device(array, backend.CPU)


def _mlp() -> nn.Module:
    return nn.Sequential(
        nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4)
    )


def _cnn() -> nn.Module:
    # no bias before the batch norm: its gradient is rounding noise (the norm takes the mean
    # out), which Adam and RMSprop would scale up into steps that differ between any two devices
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1, bias=False),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.LayerNorm(36),
        nn.Linear(36, 4),
    )


def _twins(build):
    """The same model twice: one to stay on the CPU, one to go to the device."""
    mt.manual_seed(0)
    cpu_model, device_model = build(), build()
    device_model.load_state_dict(cpu_model.state_dict())
    return cpu_model, device_model


def _data(shape, batches: int = 6, batch: int = 8):
    rng = np.random.default_rng(1)
    inputs = rng.standard_normal((batches * batch, *shape)).astype(np.float32)
    targets = rng.integers(0, 4, batches * batch)
    return inputs, targets


OPTIMIZERS = {
    "SGD": lambda params: optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-3),
    "SGD-nesterov": lambda params: optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True),
    "Adam": lambda params: optim.Adam(params, lr=1e-2),
    "AdamW-amsgrad": lambda params: optim.AdamW(params, lr=1e-2, amsgrad=True),
    "RMSprop": lambda params: optim.RMSprop(params, lr=3e-3, momentum=0.5, centered=True),
}


def _train(model, optimizer, inputs, targets, device, batch: int = 8) -> list[float]:
    losses = []
    for start in range(0, len(inputs), batch):
        x = mt.tensor(inputs[start : start + batch], device=device)
        y = mt.tensor(targets[start : start + batch], device=device)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def _assert_same_state(device_model, cpu_model) -> None:
    for (name, ours), (_, reference) in zip(
        device_model.state_dict().items(), cpu_model.state_dict().items(), strict=True
    ):
        assert _is_device_array(ours.array), name
        np.testing.assert_allclose(
            _host(ours.array), reference.array, rtol=1e-4, atol=1e-5, err_msg=name
        )


@pytest.mark.parametrize("build, shape", [(_mlp, (6,)), (_cnn, (1, 6, 6))], ids=["mlp", "cnn"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_training_steps_on_the_device_match_the_cpu(cuda_device, build, shape, name):
    cpu_model, device_model = _twins(build)
    device_model.to("cuda")
    inputs, targets = (np.concatenate([data, data]) for data in _data(shape, batches=3))
    cpu_losses = _train(cpu_model, OPTIMIZERS[name](cpu_model.parameters()), inputs, targets, None)
    device_optimizer = OPTIMIZERS[name](device_model.parameters())
    device_losses = _train(device_model, device_optimizer, inputs, targets, "cuda")
    np.testing.assert_allclose(device_losses, cpu_losses, rtol=1e-4)
    assert sum(device_losses[3:]) < sum(device_losses[:3])  # the second pass: it learned
    _assert_same_state(device_model, cpu_model)
    for param in device_model.parameters():
        assert all(
            _is_device_array(value)
            for value in device_optimizer.state[param].values()
            if backend.is_array(value)
        )


# Module.to / cuda / cpu


def test_module_to_moves_parameters_buffers_and_grads_in_place(cuda_device):
    model = _cnn()
    params = list(model.parameters())
    model(mt.randn(2, 1, 6, 6)).sum().backward()
    before = {name: t.array.copy() for name, t in model.state_dict().items()}
    grads = {id(p): p.grad.array.copy() for p in params}
    assert model.to("cuda") is model
    assert list(model.parameters()) == params and all(
        a is b for a, b in zip(model.parameters(), params, strict=True)
    )  # the same Parameter objects
    for tensor in [*model.parameters(), *model.buffers()]:
        assert _is_device_array(tensor.array) and tensor.device == cuda_device
    for param in params:
        assert param.grad.device == cuda_device
        np.testing.assert_array_equal(_host(param.grad.array), grads[id(param)])
    assert model.cpu() is model
    for name, tensor in model.state_dict().items():
        assert type(tensor.array) is np.ndarray
        np.testing.assert_array_equal(tensor.array, before[name], err_msg=name)
    model.cuda()
    assert all(p.is_cuda for p in model.parameters())
    model.cuda(0).to(device="cpu", dtype=np.float64)
    assert all(p.device == backend.CPU and p.dtype == np.float64 for p in model.parameters())
    assert model[1].num_batches_tracked.dtype == np.int64  # not floating: not cast


def test_an_optimizer_built_before_to_keeps_working(cuda_device):
    cpu_model, device_model = _twins(_mlp)
    cpu_optimizer = optim.Adam(cpu_model.parameters(), lr=1e-2)
    device_optimizer = optim.Adam(device_model.parameters(), lr=1e-2)  # built on the CPU ...
    device_model.to("cuda")  # ... then the model moves, as PyTorch allows
    inputs, targets = _data((6,), batches=3)
    cpu_losses = _train(cpu_model, cpu_optimizer, inputs, targets, None)
    device_losses = _train(device_model, device_optimizer, inputs, targets, "cuda")
    np.testing.assert_allclose(device_losses, cpu_losses, rtol=1e-4)
    _assert_same_state(device_model, cpu_model)


# Optimizer state where its parameters are.


def test_optimizer_state_is_made_on_the_device_and_follows_a_move(cuda_device):
    cpu_model, device_model = _twins(_mlp)
    cpu_optimizer = optim.SGD(cpu_model.parameters(), lr=0.05, momentum=0.9)
    device_model.to("cuda")
    device_optimizer = optim.SGD(device_model.parameters(), lr=0.05, momentum=0.9)
    inputs, targets = _data((6,), batches=4)
    first, second = slice(0, 16), slice(16, 32)
    _train(cpu_model, cpu_optimizer, inputs[first], targets[first], None)
    _train(device_model, device_optimizer, inputs[first], targets[first], "cuda")
    buffers = [device_optimizer.state[p]["momentum_buffer"] for p in device_model.parameters()]
    assert all(_is_device_array(b) for b in buffers)
    device_model.cpu()  # the state is still on the device: it follows at the next step
    cpu_losses = _train(cpu_model, cpu_optimizer, inputs[second], targets[second], None)
    moved_losses = _train(device_model, device_optimizer, inputs[second], targets[second], None)
    np.testing.assert_allclose(moved_losses, cpu_losses, rtol=1e-4)
    for param in device_model.parameters():
        assert type(device_optimizer.state[param]["momentum_buffer"]) is np.ndarray


def test_optimizer_load_state_dict_puts_state_on_each_parameters_device(cuda_device):
    cpu_model, device_model = _twins(_mlp)
    cpu_optimizer = optim.Adam(cpu_model.parameters(), lr=1e-2)
    inputs, targets = _data((6,), batches=4)
    _train(cpu_model, cpu_optimizer, inputs[:16], targets[:16], None)
    device_model.load_state_dict(cpu_model.state_dict())
    device_model.to("cuda").double()
    device_optimizer = optim.Adam(device_model.parameters(), lr=1e-2)
    device_optimizer.load_state_dict(cpu_optimizer.state_dict())
    for param in device_model.parameters():
        state = device_optimizer.state[param]
        assert state["step"] == 2 and type(state["step"]) is int
        for key in ("exp_avg", "exp_avg_sq"):
            assert _is_device_array(state[key]) and state[key].dtype == np.float64, key
    back = optim.Adam(_mlp().parameters(), lr=1e-2)
    back.load_state_dict(device_optimizer.state_dict())  # device arrays back onto the CPU
    assert all(type(s["exp_avg"]) is np.ndarray for s in back.state.values())


def test_a_gradient_on_another_device_is_refused_before_any_step(cuda_device):
    weight = nn.Parameter(mt.ones(3, device="cuda"))
    bias = nn.Parameter(mt.ones(3, device="cuda"))
    optimizer = optim.SGD([weight, bias], lr=0.1)
    weight.grad = mt.ones(3, device="cuda")
    bias.grad = mt.ones(3)  # on the CPU
    with pytest.raises(DeviceError, match=r"SGD: a parameter on cuda:0 has a gradient on cpu"):
        optimizer.step()
    np.testing.assert_array_equal(_host(weight.array), [1.0, 1.0, 1.0])  # nothing stepped


# Checkpoints: host arrays in the file; map_location puts them on a device.


def test_a_device_checkpoint_holds_host_arrays_and_loads_with_map_location(cuda_device, tmp_path):
    model = _mlp().to("cuda")
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    inputs, targets = _data((6,), batches=2)
    _train(model, optimizer, inputs, targets, "cuda")
    path = tmp_path / "run.ckpt"
    mt.save(
        {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "w": model[0].weight},
        path,
    )

    plain = mt.load(path)
    for location in (None, "cpu", mt.device("cpu")):
        state = mt.load(path, map_location=location)
        for name, tensor in state["model"].items():
            assert type(tensor) is mt.Tensor and type(tensor.array) is np.ndarray, name
            np.testing.assert_array_equal(tensor.array, plain["model"][name].array)
    on_device = mt.load(path, map_location="cuda")
    assert all(_is_device_array(t.array) for t in on_device["model"].values())
    assert all(_is_device_array(s["exp_avg"]) for s in on_device["optimizer"]["state"].values())
    assert type(on_device["w"]) is mt.nn.Parameter and on_device["w"].requires_grad
    assert on_device["w"].array is on_device["model"]["0.weight"].array  # saved once, loaded once

    x = mt.tensor(inputs[:4], device="cuda")
    expected = _host(model(x).array)
    for location, restored in (("cpu", _mlp()), ("cuda", _mlp().to("cuda"))):
        restored.load_state_dict(mt.load(path, map_location=location)["model"])
        got = restored(x.to(location)).array
        np.testing.assert_allclose(_host(got), expected, rtol=1e-5, atol=1e-6)
    resumed = optim.Adam(model.parameters(), lr=1e-2)
    resumed.load_state_dict(plain["optimizer"])  # host arrays onto the device's parameters
    assert all(_is_device_array(s["exp_avg"]) for s in resumed.state.values())


def test_map_location_must_be_a_device(tmp_path):
    mt.save({"x": np.ones(2)}, tmp_path / "x.npz")
    with pytest.raises(mt.errors.DTypeError, match="load: map_location must be a device"):
        mt.load(tmp_path / "x.npz", map_location={"cuda:0": "cpu"})
    with pytest.raises(DeviceError, match="expected 'cpu', 'cuda' or 'cuda:N'"):
        mt.load(tmp_path / "x.npz", map_location="gpu")


# DataLoader batches onto the model's device: fit and evaluate.


def _record_input_devices(model) -> list:
    seen = []
    model.register_forward_pre_hook(lambda module, inputs: seen.append(inputs[0].device))
    return seen


def test_fit_moves_a_loaders_host_batches_to_the_models_device(cuda_device):
    inputs, targets = _data((6,), batches=5)
    histories = []
    for device in ("cpu", "cuda"):
        mt.manual_seed(0)
        model = _mlp().to(device)
        seen = _record_input_devices(model)
        loader = DataLoader(
            TensorDataset(inputs, targets), batch_size=8, shuffle=True, seed=3, pin_memory=True
        )
        assert loader.pin_memory is True
        history = fit(
            model, loader, nn.CrossEntropyLoss(), optim.Adam(model.parameters(), lr=1e-2),
            epochs=2, val_loader=DataLoader(TensorDataset(inputs, targets), batch_size=16),
            progress=False,
        )  # fmt: skip
        assert set(seen) == {mt.device(device)}  # every training and validation batch
        assert len(seen) == 2 * (5 + 3)
        histories.append(history)
        result = evaluate(model, [(mt.tensor(inputs), mt.tensor(targets))], nn.CrossEntropyLoss())
        assert result["loss"] == pytest.approx(history.epochs[-1]["val_loss"], rel=1e-5)
    cpu, device = histories
    np.testing.assert_allclose(
        [r["loss"] for r in device.steps], [r["loss"] for r in cpu.steps], rtol=1e-4
    )
    # one of the 48 samples may fall on the other side of a near tie between two classes
    np.testing.assert_allclose(device["val_accuracy"], cpu["val_accuracy"], atol=1 / 48 + 1e-9)


def test_fit_with_a_device_the_model_is_not_on_is_refused_before_training(cuda_device):
    model = _mlp().to("cuda")
    weight = model[0].weight.array.copy()
    loader = DataLoader(TensorDataset(*_data((6,))), batch_size=8)
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    message = r"fit: device is 'cpu', but the model's parameters are on cuda:0; move the model"
    with pytest.raises(DeviceError, match=message):
        fit(model, loader, nn.CrossEntropyLoss(), optimizer, progress=False, device="cpu")
    np.testing.assert_array_equal(_host(model[0].weight.array), _host(weight))
    # a model with no parameters: batches go where `device` says
    seen = _record_input_devices(relu := nn.ReLU())
    evaluate(relu, loader, metrics=(), device="cuda")
    assert set(seen) == {cuda_device} and relu is not None


def test_a_dataset_of_device_tensors_gives_device_batches(cuda_device):
    inputs, targets = _data((6,), batches=2)
    dataset = TensorDataset(mt.tensor(inputs, device="cuda"), mt.tensor(targets, device="cuda"))
    for shuffle in (False, True):
        batches = list(DataLoader(dataset, batch_size=5, shuffle=shuffle, seed=0))
        assert len(batches) == 4
        for x, y in batches:
            assert _is_device_array(x.array) and _is_device_array(y.array)
    first_x, first_y = next(iter(DataLoader(dataset, batch_size=5)))
    np.testing.assert_array_equal(_host(first_x.array), inputs[:5])
    np.testing.assert_array_equal(_host(first_y.array), targets[:5])


# The graph view of a device computation.


_NUMBER = re.compile(r"-?\d+(\.\d+)?(e[-+]\d+)?")


def _text(loss, model) -> tuple[str, list[float]]:
    """The text graph with show_values, as its words and its statistics (sequence numbers
    left out: they differ between runs)."""
    out = io.StringIO()
    viz.text_graph(loss, model=model, show_values=True, file=out)
    text = re.sub(r"#\d+", "#", out.getvalue())
    statistics = re.findall(r"(?:min|mean|max|norm) (\S+)", text)
    return _NUMBER.sub("N", text), [float(value) for value in statistics]


def test_the_graph_view_of_a_device_step_computes_its_statistics_on_the_device(
    cuda_device, monkeypatch
):
    cpu_model, device_model = _twins(_mlp)
    device_model.to("cuda")
    inputs, targets = _data((6,), batches=1)
    cpu_loss = nn.functional.cross_entropy(cpu_model(mt.tensor(inputs)), mt.tensor(targets))
    expected = _text(cpu_loss, cpu_model)
    x, y = mt.tensor(inputs, device="cuda"), mt.tensor(targets, device="cuda")
    device_loss = nn.functional.cross_entropy(device_model(x), y)
    copied = []
    to_device = backend.to_device

    def recording(array, target):
        if target == backend.CPU and backend.device_of(array) != backend.CPU:
            copied.append(array.size)
        return to_device(array, target)

    monkeypatch.setattr(backend, "to_device", recording)
    text, statistics = _text(device_loss, device_model)
    assert "min N" in text and "norm N" in text
    assert text == expected[0]
    np.testing.assert_allclose(statistics, expected[1], rtol=2e-2, atol=1e-6)
    assert copied and max(copied) <= 6  # six numbers per statistic, never a whole array
    graph = viz.draw_graph(device_loss, model=device_model, show_values=True)
    assert "norm" in graph.source
