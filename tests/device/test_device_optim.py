"""Every optimizer and lr scheduler of minitrain.optim on a CUDA device (the strict stand-in for
CuPy, and a real GPU where one is at hand): the same steps from the same weights and gradients
as on the CPU, the state on the parameters' device, state dicts moving between the devices, and
the gradient clipping of nn.utils on device gradients. An optimizer or scheduler missing from
the tables, and not excluded with a reason, fails the coverage tests."""

from __future__ import annotations

import copy
import inspect
import math

import numpy as np
import pytest

import minitrain as mt
from minitrain import backend, nn, optim
from minitrain.optim import lr_scheduler

CPU = mt.device("cpu")

# (optimizer class, options): each class with its main options
OPTIMIZERS = {
    "SGD": (optim.SGD, {"lr": 0.1}),
    "SGD-momentum-dampening": (optim.SGD, {"lr": 0.1, "momentum": 0.9, "dampening": 0.2}),
    "SGD-nesterov-weight_decay": (
        optim.SGD, {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.1}
    ),
    "SGD-maximize": (optim.SGD, {"lr": 0.05, "momentum": 0.5, "maximize": True}),
    "Adam": (optim.Adam, {"lr": 0.01}),
    "Adam-weight_decay": (optim.Adam, {"lr": 0.01, "weight_decay": 0.1, "betas": (0.8, 0.9)}),
    "Adam-amsgrad-maximize": (
        optim.Adam, {"lr": 0.02, "amsgrad": True, "maximize": True, "eps": 1e-6}
    ),
    "Adam-decoupled_weight_decay": (
        optim.Adam, {"lr": 0.01, "weight_decay": 0.2, "decoupled_weight_decay": True}
    ),
    "AdamW": (optim.AdamW, {"lr": 0.01}),
    "AdamW-amsgrad-weight_decay": (
        optim.AdamW, {"lr": 0.01, "amsgrad": True, "weight_decay": 0.3}
    ),
    "AdamW-maximize": (optim.AdamW, {"lr": 0.01, "maximize": True}),
    "RMSprop": (optim.RMSprop, {"lr": 0.01}),
    "RMSprop-centered-momentum-weight_decay": (
        optim.RMSprop,
        {"lr": 0.01, "centered": True, "momentum": 0.9, "weight_decay": 0.05, "alpha": 0.9},
    ),
    "RMSprop-momentum-maximize": (
        optim.RMSprop, {"lr": 0.005, "momentum": 0.5, "maximize": True, "eps": 1e-4}
    ),
    "Adadelta-weight_decay": (optim.Adadelta, {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1}),
    "Adagrad-lr_decay-maximize": (
        optim.Adagrad, {"lr": 0.05, "lr_decay": 0.1, "initial_accumulator_value": 0.1,
                        "maximize": True}
    ),
    "Adamax-weight_decay": (optim.Adamax, {"lr": 0.01, "weight_decay": 0.1}),
    "NAdam-decoupled_weight_decay": (
        optim.NAdam, {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}
    ),
    "RAdam-maximize": (optim.RAdam, {"lr": 0.01, "betas": (0.9, 0.5), "maximize": True}),
    "ASGD-averaging": (optim.ASGD, {"lr": 0.05, "lambd": 0.1, "t0": 2, "weight_decay": 0.1}),
    "Rprop": (optim.Rprop, {"lr": 0.05, "etas": (0.4, 1.5), "step_sizes": (1e-3, 0.2)}),
}  # fmt: skip

# (scheduler class, options): every scheduler of optim.lr_scheduler
SCHEDULERS = {
    "LambdaLR": (lr_scheduler.LambdaLR, {"lr_lambda": lambda epoch: 0.9**epoch}),
    "StepLR": (lr_scheduler.StepLR, {"step_size": 2, "gamma": 0.5}),
    "MultiStepLR": (lr_scheduler.MultiStepLR, {"milestones": [1, 3, 3], "gamma": 0.5}),
    "ExponentialLR": (lr_scheduler.ExponentialLR, {"gamma": 0.8}),
    "LinearLR": (lr_scheduler.LinearLR, {"start_factor": 0.25, "total_iters": 3}),
    "CosineAnnealingLR": (lr_scheduler.CosineAnnealingLR, {"T_max": 3, "eta_min": 0.01}),
    "MultiplicativeLR": (lr_scheduler.MultiplicativeLR, {"lr_lambda": lambda epoch: 0.9}),
    "ConstantLR": (lr_scheduler.ConstantLR, {"factor": 0.5, "total_iters": 3}),
    "PolynomialLR": (lr_scheduler.PolynomialLR, {"total_iters": 4, "power": 2.0}),
    "CosineAnnealingWarmRestarts": (
        lr_scheduler.CosineAnnealingWarmRestarts,
        {"T_0": 2, "T_mult": 2, "eta_min": 0.01},
    ),
    "CyclicLR": (lr_scheduler.CyclicLR, {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 2}),
    "OneCycleLR": (lr_scheduler.OneCycleLR, {"max_lr": 0.1, "total_steps": 6}),
}

# Public classes with no entry in the tables, and why.
EXCLUDED = {
    "Optimizer": "the base class: it has no update rule (_update); every optimizer above steps "
    "through its step, state_dict and load_state_dict",
    "LRScheduler": "the base class: it has no schedule (get_lr); every scheduler above steps "
    "through its step",
    "LBFGS": "its step needs a closure: test_lbfgs_steps_on_the_device_as_on_the_cpu",
    "ReduceLROnPlateau": "its step needs a metric: test_reduce_lr_on_plateau_takes_a_device_metric",
    "SequentialLR": "it only steps the schedulers it holds, each covered above",
    "ChainedScheduler": "it only steps the schedulers it holds, each covered above",
}


def _public_subclasses(module, base) -> set[str]:
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and inspect.isclass(value)
        and issubclass(value, base)
        and value.__module__.startswith("minitrain.optim")
    }


def test_every_optimizer_and_scheduler_has_a_case_or_a_reason():
    optimizers = _public_subclasses(optim, optim.Optimizer) | {
        name for name in optim.__all__ if inspect.isclass(getattr(optim, name))
    }
    covered = {cls.__name__ for cls, _ in OPTIMIZERS.values()}
    missing = sorted(optimizers - covered - EXCLUDED.keys())
    assert not missing, f"optimizers with no device case nor a reason in EXCLUDED: {missing}"
    schedulers = _public_subclasses(lr_scheduler, lr_scheduler.LRScheduler)
    covered = {cls.__name__ for cls, _ in SCHEDULERS.values()}
    missing = sorted(schedulers - covered - EXCLUDED.keys())
    assert not missing, f"schedulers with no device case nor a reason in EXCLUDED: {missing}"
    assert "Optimizer" in optimizers and "LRScheduler" in schedulers


def _is_device_array(array) -> bool:
    return backend.cupy is not None and type(array) is backend.cupy.ndarray


def _host(array) -> np.ndarray:
    return backend.to_device(array, CPU)


class _Tiny(nn.Module):
    """Two linear layers and a 0-d scale: parameters of 2, 1 and 0 dims."""

    def __init__(self):
        super().__init__()
        self.first, self.second = nn.Linear(4, 3), nn.Linear(3, 2)
        self.scale = nn.Parameter(mt.tensor(0.7))

    def forward(self, x):
        return self.second(self.first(x).tanh()) * self.scale


def _twins():
    """The same float64 model on the CPU and (a deep copy) on the device."""
    mt.manual_seed(0)
    cpu_model = _Tiny().double()
    return cpu_model, copy.deepcopy(cpu_model).to("cuda")


def _groups(model, options: dict) -> list[dict]:
    """Two parameter groups: the linear layers with the options, the scale with half the lr."""
    linear = [p for name, p in model.named_parameters() if name != "scale"]
    return [{"params": linear}, {"params": [model.scale], "lr": options["lr"] / 2}]


def _set_gradients(cpu_model, device_model, step: int) -> None:
    """The same gradient on both: noise plus a pull towards 0 from the CPU parameter's current
    value, so each step's gradient depends on the path. At step 2 the first bias has none (the
    step skips it)."""
    rng = np.random.default_rng((7, step))
    pairs = zip(cpu_model.named_parameters(), device_model.parameters(), strict=True)
    for (name, cpu_param), device_param in pairs:
        if step == 2 and name == "first.bias":
            cpu_param.grad = device_param.grad = None
            continue
        grad = rng.standard_normal(cpu_param.shape) + 0.5 * cpu_param.array
        cpu_param.grad = mt.tensor(grad)
        device_param.grad = mt.tensor(grad, device="cuda")


def _assert_same_parameters(device_model, cpu_model, rtol=1e-10) -> None:
    pairs = zip(device_model.named_parameters(), cpu_model.parameters(), strict=True)
    for (name, got), want in pairs:
        assert _is_device_array(got.array), f"parameter {name} is not on the device"
        assert got.dtype == want.dtype
        np.testing.assert_allclose(
            _host(got.array), want.array, rtol=rtol, atol=1e-14, err_msg=name
        )


def _assert_state(optimizer, reference, on_device: bool) -> None:
    """`optimizer`'s state holds what `reference`'s does, its arrays where they belong."""
    assert len(optimizer.state) == len(reference.state)
    params = [p for group in optimizer.param_groups for p in group["params"]]
    reference_params = [p for group in reference.param_groups for p in group["params"]]
    for param, reference_param in zip(params, reference_params, strict=True):
        state, want = optimizer.state[param], reference.state[reference_param]
        assert state.keys() == want.keys()
        for key, value in state.items():
            if not backend.is_array(value):
                assert value == want[key] and type(value) is type(want[key]), key
                continue
            if on_device:
                assert _is_device_array(value), f"state {key!r} is not on the device"
            else:
                assert type(value) is np.ndarray, f"state {key!r} is not on the CPU"
            assert value.dtype == param.dtype and value.shape == param.shape, key
            np.testing.assert_allclose(
                _host(value), _host(want[key]), rtol=1e-10, atol=1e-14, err_msg=key
            )


def _steps(cpu_pair, device_pair, first: int, count: int) -> None:
    """`count` steps of both (model, optimizer) pairs, compared after each."""
    (cpu_model, cpu_optimizer), (device_model, device_optimizer) = cpu_pair, device_pair
    for step in range(first, first + count):
        _set_gradients(cpu_model, device_model, step)
        grads = [None if p.grad is None else _host(p.grad.array) for p in device_model.parameters()]
        cpu_optimizer.step()
        device_optimizer.step()
        _assert_same_parameters(device_model, cpu_model)
        for param, grad in zip(device_model.parameters(), grads, strict=True):
            if grad is not None:  # the step read the gradient and left it as it was
                np.testing.assert_array_equal(_host(param.grad.array), grad)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_an_optimizer_steps_on_the_device_as_on_the_cpu(cuda_device, name):
    cls, options = OPTIMIZERS[name]
    cpu_model, device_model = _twins()
    cpu_optimizer = cls(_groups(cpu_model, options), **options)
    device_optimizer = cls(_groups(device_model, options), **options)
    for step in range(5):
        _steps((cpu_model, cpu_optimizer), (device_model, device_optimizer), step, 1)
        _assert_state(device_optimizer, cpu_optimizer, on_device=True)
    arrays = [v for state in device_optimizer.state.values() for v in state.values()]
    assert any(backend.is_array(v) for v in arrays) == (name != "SGD")  # plain SGD keeps none


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_a_state_dict_saved_on_one_device_loads_onto_the_other(cuda_device, name):
    cls, options = OPTIMIZERS[name]
    cpu_model, device_model = _twins()
    cpu_optimizer = cls(_groups(cpu_model, options), **options)
    device_optimizer = cls(_groups(device_model, options), **options)
    _steps((cpu_model, cpu_optimizer), (device_model, device_optimizer), 0, 3)

    saved = device_optimizer.state_dict()
    params = [p for group in device_optimizer.param_groups for p in group["params"]]
    for index, state in saved["state"].items():
        live = device_optimizer.state[params[index]]
        for key, value in state.items():
            if backend.is_array(value):
                assert _is_device_array(value), (index, key)
                assert value is not live[key]  # a copy, which later steps leave alone
    # device -> CPU: a fresh CPU model holding the device model's weights
    onto_cpu = copy.deepcopy(device_model).cpu()
    cpu_from_device = cls(_groups(onto_cpu, options), **options)
    cpu_from_device.load_state_dict(saved)
    _assert_state(cpu_from_device, device_optimizer, on_device=False)
    # CPU -> device
    onto_device = copy.deepcopy(cpu_model).to("cuda")
    device_from_cpu = cls(_groups(onto_device, options), **options)
    device_from_cpu.load_state_dict(cpu_optimizer.state_dict())
    _assert_state(device_from_cpu, cpu_optimizer, on_device=True)
    # each goes on as the optimizer it was saved from
    _steps((cpu_model, cpu_optimizer), (onto_device, device_from_cpu), 3, 2)
    _steps((onto_cpu, cpu_from_device), (device_model, device_optimizer), 3, 2)
    _assert_state(device_from_cpu, cpu_optimizer, on_device=True)


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_a_scheduler_steps_an_optimizer_on_the_device(cuda_device, name):
    cls, options = SCHEDULERS[name]
    cpu_model, device_model = _twins()
    settings = {"lr": 0.1, "momentum": 0.9}
    cpu_optimizer = optim.SGD(_groups(cpu_model, settings), **settings)
    device_optimizer = optim.SGD(_groups(device_model, settings), **settings)
    cpu_schedule, device_schedule = cls(cpu_optimizer, **options), cls(device_optimizer, **options)
    lrs = []
    for step in range(6):
        _steps((cpu_model, cpu_optimizer), (device_model, device_optimizer), step, 1)
        cpu_schedule.step()
        device_schedule.step()
        assert device_schedule.get_last_lr() == cpu_schedule.get_last_lr()
        assert all(type(lr) is float for lr in device_schedule.get_last_lr())
        lrs.append(device_schedule.get_last_lr()[0])
    assert len(set(lrs)) > 1, "the schedule should change the lr"
    _assert_state(device_optimizer, cpu_optimizer, on_device=True)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_steps_on_the_device_as_on_the_cpu(cuda_device, line_search_fn):
    cpu_model, device_model = _twins()
    inputs = np.random.default_rng(3).standard_normal((5, 4))

    def run(model, device):
        optimizer = optim.LBFGS(
            model.parameters(), lr=0.5, max_iter=4, history_size=3, line_search_fn=line_search_fn
        )
        x = mt.tensor(inputs, device=device)

        def closure():
            optimizer.zero_grad()
            loss = (model(x) ** 2).sum()
            loss.backward()
            return loss

        losses = [float(optimizer.step(closure)) for _ in range(3)]
        return optimizer, losses

    cpu_optimizer, cpu_losses = run(cpu_model, "cpu")
    device_optimizer, device_losses = run(device_model, "cuda")
    np.testing.assert_allclose(device_losses, cpu_losses, rtol=1e-10)
    assert device_losses[-1] < device_losses[0]
    _assert_same_parameters(device_model, cpu_model)
    state = next(iter(device_optimizer.state.values()))
    assert _is_device_array(state["d"]) and _is_device_array(state["old_dirs"][0])
    # its state dict moves to the CPU with the model
    onto_cpu = copy.deepcopy(device_model).cpu()
    reloaded = optim.LBFGS(onto_cpu.parameters(), max_iter=4, history_size=3)
    reloaded.load_state_dict(device_optimizer.state_dict())
    assert type(next(iter(reloaded.state.values()))["d"]) is np.ndarray


def test_reduce_lr_on_plateau_takes_a_device_metric(cuda_device):
    _, device_model = _twins()
    optimizer = optim.SGD(device_model.parameters(), lr=0.1)
    scheduler = lr_scheduler.ReduceLROnPlateau(optimizer, patience=0, factor=0.5)
    for metric in (1.0, 2.0):
        scheduler.step(mt.tensor(metric, device="cuda"))
    assert scheduler.get_last_lr() == [0.05]


def _gradient_twins(scale: float = 1.0):
    """Three device parameters and their CPU twins, with the same float64 gradients."""
    rng = np.random.default_rng(11)
    cpu_params, device_params = [], []
    for shape in [(3, 4), (5,), ()]:
        value, grad = rng.standard_normal(shape), scale * rng.standard_normal(shape)
        cpu_param, device_param = nn.Parameter(mt.tensor(value)), nn.Parameter(mt.tensor(value))
        device_param.array = backend.to_device(device_param.array, mt.device("cuda"))
        cpu_param.grad = mt.tensor(grad)
        device_param.grad = mt.tensor(grad, device="cuda")
        cpu_params.append(cpu_param)
        device_params.append(device_param)
    return cpu_params, device_params


def _assert_same_gradients(device_params, cpu_params) -> None:
    for got, want in zip(device_params, cpu_params, strict=True):
        assert _is_device_array(got.grad.array)
        np.testing.assert_allclose(_host(got.grad.array), want.grad.array, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.5, math.inf, -math.inf, 0.0])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_on_device_gradients(cuda_device, norm_type, max_norm):
    cpu_params, device_params = _gradient_twins()
    want = nn.utils.clip_grad_norm_(cpu_params, max_norm, norm_type)
    got = nn.utils.clip_grad_norm_(device_params, max_norm, norm_type)
    assert got.device == cuda_device and _is_device_array(got.array)  # as PyTorch's, on the device
    assert got.dtype == want.dtype and got.shape == ()
    np.testing.assert_allclose(_host(got.array), want.array, rtol=1e-12)
    _assert_same_gradients(device_params, cpu_params)


def test_clip_grad_norm_of_a_nonfinite_device_gradient(cuda_device):
    _, device_params = _gradient_twins()
    device_params[1].grad.array[2] = math.nan
    before = [_host(p.grad.array) for p in device_params]
    with pytest.raises(RuntimeError, match="total norm of order 2.0 of the gradients is nan"):
        nn.utils.clip_grad_norm_(device_params, 1.0, error_if_nonfinite=True)
    for param, grad in zip(device_params, before, strict=True):
        np.testing.assert_array_equal(_host(param.grad.array), grad)  # nothing changed
    total = nn.utils.clip_grad_norm_(device_params, 1.0)
    assert math.isnan(float(_host(total.array)))
    assert all(np.isnan(_host(p.grad.array)).all() for p in device_params)


def test_clip_grad_norm_refuses_gradients_on_two_devices(cuda_device):
    cpu_params, device_params = _gradient_twins()
    before = _host(device_params[0].grad.array)
    message = r"clip_grad_norm_: the gradients are on cpu and cuda:0"
    with pytest.raises(mt.errors.DeviceError, match=message):
        nn.utils.clip_grad_norm_([device_params[0], cpu_params[1]], 1e-3)
    np.testing.assert_array_equal(_host(device_params[0].grad.array), before)


def test_clip_grad_value_on_device_gradients(cuda_device):
    cpu_params, device_params = _gradient_twins(scale=2.0)
    assert nn.utils.clip_grad_value_(cpu_params, 0.8) is None
    assert nn.utils.clip_grad_value_(device_params, 0.8) is None
    _assert_same_gradients(device_params, cpu_params)
    assert max(float(abs(_host(p.grad.array)).max()) for p in device_params) == 0.8


def test_parameter_vectors_on_the_device(cuda_device):
    cpu_params, device_params = _gradient_twins()
    vector = nn.utils.parameters_to_vector(device_params)
    assert _is_device_array(vector.array) and vector.shape == (18,)
    np.testing.assert_array_equal(
        _host(vector.array), nn.utils.parameters_to_vector(cpu_params).array
    )
    nn.utils.vector_to_parameters(vector * 2, device_params)
    for got, want in zip(device_params, cpu_params, strict=True):
        assert _is_device_array(got.array)
        np.testing.assert_array_equal(_host(got.array), 2 * want.array)


def test_parameter_vectors_cross_devices_explicitly(cuda_device):
    cpu_params, device_params = _gradient_twins()
    values = np.arange(18.0)
    nn.utils.vector_to_parameters(values, device_params)  # host values onto the device
    nn.utils.vector_to_parameters(mt.tensor(values, device="cuda"), cpu_params)  # and back
    for got, want in zip(device_params, cpu_params, strict=True):
        assert _is_device_array(got.array) and type(want.array) is np.ndarray
        np.testing.assert_array_equal(_host(got.array), want.array)
    np.testing.assert_array_equal(_host(nn.utils.parameters_to_vector(device_params).array), values)
    with pytest.raises(mt.errors.DeviceError, match="parameters_to_vector: .* cpu and cuda:0"):
        nn.utils.parameters_to_vector([cpu_params[0], device_params[1]])
