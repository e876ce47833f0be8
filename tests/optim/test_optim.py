"""Optimizers: update rules side by side with PyTorch, parameter groups, skipped parameters,
state dicts, dtypes, argument errors, and training a small model end to end."""

import copy
import itertools

import numpy as np
import pytest

import minitrain
from minitrain import optim
from minitrain.errors import ArgumentError, DTypeError, ShapeError

SHAPES = [(3, 4), (5,), ()]


def _torch():
    return pytest.importorskip("torch")


def _initial_arrays(seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(dtype) for shape in SHAPES]


def _leaves(arrays):
    return [minitrain.tensor(a.copy(), requires_grad=True) for a in arrays]


def _gradients(params, step, seed=1):
    """A gradient per parameter: fresh noise plus a pull back towards 0 from the parameter's
    current value, so each step's gradient depends on the path taken so far."""
    rng = np.random.default_rng((seed, step))
    return [rng.standard_normal(p.shape) + 0.5 * np.asarray(p) for p in params]


def _run_minitrain(make, arrays, steps):
    params = _leaves(arrays)
    optimizer = make(params)
    for step in range(steps):
        for p, g in zip(params, _gradients([p.array for p in params], step), strict=True):
            p.grad = minitrain.Tensor(g.astype(p.dtype))
        optimizer.step()
    return params, optimizer


def _run_torch(make, arrays, steps):
    torch = _torch()
    params = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    optimizer = make(params)
    for step in range(steps):
        arrays_now = [p.detach().numpy() for p in params]
        for p, g in zip(params, _gradients(arrays_now, step), strict=True):
            p.grad = torch.tensor(g).to(p.dtype)
        optimizer.step()
    return params, optimizer


def _assert_same_params(ours, theirs, rtol=1e-12, atol=1e-13):
    for p, q in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(p.array, q.detach().numpy(), rtol=rtol, atol=atol)


def _compare_with_torch(name, options, steps=10):
    torch = _torch()
    ours, _ = _run_minitrain(
        lambda ps: getattr(optim, name)(ps, **options), _initial_arrays(), steps
    )
    theirs, _ = _run_torch(
        lambda ps: getattr(torch.optim, name)(ps, **options), _initial_arrays(), steps
    )
    _assert_same_params(ours, theirs)
    initial = _initial_arrays()
    assert not np.allclose(ours[0].array, initial[0])  # the comparison saw real updates


def _combinations(**choices):
    keys = list(choices)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*choices.values())]


SGD_OPTIONS = [
    options
    for options in _combinations(
        lr=[0.05],
        momentum=[0.0, 0.9],
        dampening=[0.0, 0.3],
        weight_decay=[0.0, 0.1],
        nesterov=[False, True],
        maximize=[False, True],
    )
    if not options["nesterov"] or (options["momentum"] > 0 and options["dampening"] == 0)
]


@pytest.mark.parametrize("options", SGD_OPTIONS, ids=str)
def test_sgd_matches_torch(options):
    _compare_with_torch("SGD", options)


@pytest.mark.parametrize(
    "options",
    _combinations(
        lr=[0.01],
        betas=[(0.9, 0.999), (0.5, 0.8)],
        eps=[1e-8, 1e-2],
        weight_decay=[0.0, 0.1],
        amsgrad=[False, True],
        maximize=[False, True],
    ),
    ids=str,
)
def test_adam_matches_torch(options):
    _compare_with_torch("Adam", options)


@pytest.mark.parametrize(
    "options",
    _combinations(weight_decay=[0.0, 1e-2, 0.3], amsgrad=[False, True], maximize=[False, True]),
    ids=str,
)
def test_adamw_matches_torch(options):
    _compare_with_torch("AdamW", {"lr": 0.02, **options})


def test_adamw_default_decay_and_adam_decoupled_flag_match_torch():
    assert optim.AdamW(_leaves(_initial_arrays())).defaults["weight_decay"] == 1e-2
    _compare_with_torch("AdamW", {})
    _compare_with_torch("Adam", {"weight_decay": 0.2, "decoupled_weight_decay": True})


@pytest.mark.parametrize(
    "options",
    _combinations(
        lr=[0.01],
        alpha=[0.99, 0.5],
        weight_decay=[0.0, 0.1],
        momentum=[0.0, 0.9],
        centered=[False, True],
        maximize=[False, True],
    ),
    ids=str,
)
def test_rmsprop_matches_torch(options):
    _compare_with_torch("RMSprop", options)


def test_defaults_match_torch():
    torch = _torch()
    for name in ["SGD", "Adam", "AdamW", "RMSprop"]:
        ours = getattr(optim, name)(_leaves(_initial_arrays())).defaults
        theirs = getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)]).defaults
        assert ours == {key: theirs[key] for key in ours}, name


# Parameter groups and skipped parameters.
@pytest.mark.parametrize(
    "name, options",
    [("SGD", {"lr": 0.01, "momentum": 0.9}), ("Adam", {"lr": 0.01}), ("RMSprop", {"lr": 0.01})],
)
def test_param_groups_with_their_own_options_match_torch(name, options):
    torch = _torch()

    def groups(params):
        first = {"params": params[:1], "lr": 0.1}
        if name != "Adam":
            first["momentum"] = 0.5
        return [first, {"params": params[1:], "weight_decay": 0.05}]

    ours, optimizer = _run_minitrain(
        lambda ps: getattr(optim, name)(groups(ps), **options), _initial_arrays(), 10
    )
    theirs, _ = _run_torch(
        lambda ps: getattr(torch.optim, name)(groups(ps), **options), _initial_arrays(), 10
    )
    _assert_same_params(ours, theirs)
    assert optimizer.param_groups[0]["lr"] == 0.1
    assert optimizer.param_groups[1]["lr"] == options["lr"]
    assert optimizer.param_groups[1]["weight_decay"] == 0.05


def test_add_param_group_takes_the_defaults_and_is_updated():
    first, second = _leaves(_initial_arrays()[:2])
    optimizer = optim.SGD([first], lr=0.1, momentum=0.9)
    optimizer.add_param_group({"params": second, "lr": 0.5})
    assert optimizer.param_groups[1]["momentum"] == 0.9
    assert optimizer.param_groups[1]["params"][0] is second
    before = second.array.copy()
    second.grad = minitrain.Tensor(np.ones(second.shape))
    optimizer.step()
    np.testing.assert_allclose(second.array, before - 0.5)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop"])
def test_parameters_without_grad_are_skipped(name):
    torch = _torch()
    options = {"lr": 0.1, "momentum": 0.9} if name in ("SGD", "RMSprop") else {"lr": 0.1}
    ours = _leaves(_initial_arrays())
    theirs = [torch.tensor(a, requires_grad=True) for a in _initial_arrays()]
    ours_opt = getattr(optim, name)(ours, **options)
    theirs_opt = getattr(torch.optim, name)(theirs, **options)
    frozen = ours[1].array.copy()
    for step in range(4):
        for i, g in enumerate(_gradients([p.array for p in ours], step)):
            if i != 1:
                ours[i].grad = minitrain.Tensor(g)
                theirs[i].grad = torch.tensor(g)
        ours_opt.step()
        theirs_opt.step()
    np.testing.assert_array_equal(ours[1].array, frozen)
    assert ours[1] not in ours_opt.state
    assert ours_opt.state[ours[0]].keys() == theirs_opt.state[theirs[0]].keys()
    _assert_same_params(ours, theirs)


# In place, dtypes and gradients.
@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop"])
def test_updates_are_in_place(name):
    params = _leaves(_initial_arrays())
    arrays = [p.array for p in params]
    options = {"momentum": 0.9} if name in ("SGD", "RMSprop") else {}
    optimizer = getattr(optim, name)(params, lr=0.1, **options)
    for step in range(3):
        for p, g in zip(params, _gradients(arrays, step), strict=True):
            p.grad = minitrain.Tensor(g)
        optimizer.step()
    assert all(p.array is a for p, a in zip(params, arrays, strict=True))
    assert not np.allclose(arrays[0], _initial_arrays()[0])


@pytest.mark.parametrize(
    "name, options",
    [
        ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
        ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.01}),
        ("AdamW", {"lr": 0.01}),
        ("RMSprop", {"lr": 0.01, "momentum": 0.9, "centered": True}),
    ],
)
def test_float32_params_stay_float32_and_match_torch(name, options):
    torch = _torch()
    arrays = _initial_arrays(dtype=np.float32)
    ours, optimizer = _run_minitrain(lambda ps: getattr(optim, name)(ps, **options), arrays, 10)
    theirs, _ = _run_torch(lambda ps: getattr(torch.optim, name)(ps, **options), arrays, 10)
    for p in ours:
        assert p.dtype == np.float32
        for value in optimizer.state[p].values():
            if isinstance(value, np.ndarray):
                assert value.dtype == np.float32
    _assert_same_params(ours, theirs, rtol=2e-5, atol=2e-6)


def test_works_with_tensor_subclasses_like_parameter():
    class Parameter(minitrain.Tensor):
        def __init__(self, data):
            super().__init__(data, requires_grad=True)

    weight = Parameter(np.ones((2, 2)))
    array = weight.array
    optimizer = optim.Adam([weight], lr=0.1)
    (weight * weight).sum().backward()
    optimizer.step()
    assert weight.array is array
    np.testing.assert_allclose(weight.array, np.full((2, 2), 0.9))
    assert optimizer.state_dict()["state"][0]["step"] == 1


def test_gradient_of_another_dtype_is_cast_and_of_another_shape_is_an_error():
    (param,) = _leaves([np.ones(3, dtype=np.float32)])
    optimizer = optim.SGD([param], lr=0.5)
    param.grad = minitrain.Tensor(np.ones(3, dtype=np.float64))
    optimizer.step()
    assert param.dtype == np.float32
    np.testing.assert_array_equal(param.array, np.full(3, 0.5, dtype=np.float32))
    param.grad = minitrain.Tensor(np.ones(4, dtype=np.float32))
    with pytest.raises(ShapeError, match=r"\(3,\).*\(4,\)"):
        optimizer.step()


def test_sgd_does_not_write_into_the_gradient():
    (param,) = _leaves([np.ones(3)])
    optimizer = optim.SGD([param], lr=0.1, momentum=0.9, weight_decay=0.1, maximize=True)
    grad = np.array([1.0, 2.0, 3.0])
    for _ in range(3):
        param.grad = minitrain.Tensor(grad)
        optimizer.step()
    np.testing.assert_array_equal(grad, [1.0, 2.0, 3.0])
    assert optimizer.state[param]["momentum_buffer"] is not grad


def test_zero_grad():
    params = _leaves(_initial_arrays())
    optimizer = optim.SGD(params, lr=0.1)
    for p in params:
        p.grad = minitrain.Tensor(np.ones(p.shape))
    kept = params[0].grad.array
    optimizer.zero_grad(set_to_none=False)
    assert params[0].grad.array is kept
    assert all(np.all(p.grad.array == 0) for p in params)
    optimizer.zero_grad()
    assert all(p.grad is None for p in params)


def test_step_runs_the_closure_with_grad_recording_and_returns_its_loss():
    (w,) = _leaves([np.array([3.0])])
    optimizer = optim.SGD([w], lr=0.25)

    def closure():
        optimizer.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    with minitrain.no_grad():
        loss = optimizer.step(closure)
    assert loss.item() == 9.0
    np.testing.assert_array_equal(w.array, [3.0 - 0.25 * 6.0])


# State dicts.
ROUND_TRIP = [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("Adam", {"lr": 0.01, "amsgrad": True}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True}),
]


def _step_with(params, optimizer, steps):
    for step in steps:
        for p, g in zip(params, _gradients([p.array for p in params], step), strict=True):
            p.grad = minitrain.Tensor(g)
        optimizer.step()


@pytest.mark.parametrize("name, options", ROUND_TRIP)
def test_state_dict_round_trip_continues_like_an_uninterrupted_run(name, options):
    def make(params):
        return getattr(optim, name)(
            [{"params": params[:2]}, {"params": params[2:], "lr": 0.003}], **options
        )

    whole = _leaves(_initial_arrays())
    _step_with(whole, make(whole), range(10))

    first = _leaves(_initial_arrays())
    first_optimizer = make(first)
    _step_with(first, first_optimizer, range(3))
    saved = first_optimizer.state_dict()
    _step_with(first, first_optimizer, range(3, 5))  # must not change what was saved

    resumed = _leaves(_initial_arrays())
    _step_with(resumed, make(resumed), range(3))  # the values `first` had when it was saved
    resumed_optimizer = make(resumed)
    resumed_optimizer.load_state_dict(saved)
    _step_with(resumed, resumed_optimizer, range(3, 10))

    for p, q in zip(resumed, whole, strict=True):
        np.testing.assert_array_equal(p.array, q.array)
    assert resumed_optimizer.param_groups[1]["lr"] == 0.003


def test_state_dict_has_torchs_layout():
    torch = _torch()
    ours, ours_opt = _run_minitrain(
        lambda ps: optim.Adam([{"params": ps[:1]}, {"params": ps[1:]}], amsgrad=True),
        _initial_arrays(),
        2,
    )
    theirs, theirs_opt = _run_torch(
        lambda ps: torch.optim.Adam([{"params": ps[:1]}, {"params": ps[1:]}], amsgrad=True),
        _initial_arrays(),
        2,
    )
    mine, reference = ours_opt.state_dict(), theirs_opt.state_dict()
    assert mine.keys() == reference.keys()
    assert mine["state"].keys() == reference["state"].keys() == {0, 1, 2}
    for index, values in mine["state"].items():
        assert values.keys() == reference["state"][index].keys()
        assert values["step"] == reference["state"][index]["step"].item() == 2
        np.testing.assert_allclose(
            values["exp_avg_sq"], reference["state"][index]["exp_avg_sq"].numpy(), rtol=1e-12
        )
    for group, reference_group in zip(mine["param_groups"], reference["param_groups"], strict=True):
        assert group["params"] == reference_group["params"]
        assert group.items() <= reference_group.items()


def test_state_dict_is_a_copy_and_loading_copies_too():
    params = _leaves(_initial_arrays())
    optimizer = optim.SGD(params, lr=0.1, momentum=0.9)
    _step_with(params, optimizer, range(2))
    saved = optimizer.state_dict()
    kept = copy.deepcopy(saved)
    _step_with(params, optimizer, range(2, 4))
    np.testing.assert_array_equal(
        saved["state"][0]["momentum_buffer"], kept["state"][0]["momentum_buffer"]
    )
    optimizer.load_state_dict(saved)
    assert optimizer.state[params[0]]["momentum_buffer"] is not saved["state"][0]["momentum_buffer"]
    saved["param_groups"][0]["lr"] = 99.0
    _step_with(params, optimizer, range(4, 5))
    np.testing.assert_array_equal(
        saved["state"][0]["momentum_buffer"], kept["state"][0]["momentum_buffer"]
    )
    assert optimizer.param_groups[0]["lr"] == 0.1


def test_load_state_dict_casts_state_to_the_parameters_dtype():
    source = _leaves(_initial_arrays())
    optimizer = optim.Adam(source)
    _step_with(source, optimizer, range(2))
    target = _leaves(_initial_arrays(dtype=np.float32))
    restored = optim.Adam(target)
    restored.load_state_dict(optimizer.state_dict())
    for p in target:
        assert restored.state[p]["exp_avg"].dtype == np.float32
        assert restored.state[p]["step"] == 2


def _broken_state_dicts(saved):
    fewer_groups = {"state": saved["state"], "param_groups": saved["param_groups"][:1]}
    fewer_params = copy.deepcopy(saved)
    fewer_params["param_groups"][1]["params"] = fewer_params["param_groups"][1]["params"][:1]
    wrong_shape = copy.deepcopy(saved)
    wrong_shape["state"][2]["exp_avg"] = np.zeros(7)
    from_sgd = copy.deepcopy(saved)
    for group in from_sgd["param_groups"]:
        del group["betas"]
    unknown_param = copy.deepcopy(saved)
    unknown_param["state"][9] = unknown_param["state"][0]
    nan_lr = copy.deepcopy(saved)
    nan_lr["param_groups"][1]["lr"] = float("nan")
    bad_beta = copy.deepcopy(saved)
    bad_beta["param_groups"][0]["betas"] = (0.9, 1.5)
    string_lr = copy.deepcopy(saved)
    string_lr["param_groups"][0]["lr"] = "0.1"
    return [
        (fewer_groups, ValueError, "1 parameter groups, this optimizer has 2"),
        (fewer_params, ValueError, "group 1 has 1 parameters in the state dict and 2"),
        (wrong_shape, ShapeError, r"shape \(7,\).*shape \(\)"),
        (from_sgd, ValueError, "betas"),
        (unknown_param, ValueError, "parameter 9"),
        (nan_lr, ValueError, "lr must be >= -inf, got nan"),  # below 0 loads: schedulers
        (bad_beta, ValueError, r"betas\[1\] must be in \[0, 1\)"),
        (string_lr, TypeError, "lr must be a real number"),
        ({"state": {}}, ValueError, "param_groups"),
    ]


def test_load_state_dict_errors_leave_the_optimizer_untouched():
    params = _leaves(_initial_arrays())
    optimizer = optim.Adam([{"params": params[:1]}, {"params": params[1:], "lr": 0.1}])
    _step_with(params, optimizer, range(2))
    for broken, error, message in _broken_state_dicts(optimizer.state_dict()):
        before = optimizer.state_dict()
        groups, state = optimizer.param_groups, optimizer.state
        with pytest.raises(error, match=message):
            optimizer.load_state_dict(broken)
        assert optimizer.param_groups is groups and optimizer.state is state
        after = optimizer.state_dict()
        assert after["param_groups"] == before["param_groups"]
        for index, values in before["state"].items():
            for key, value in values.items():
                np.testing.assert_array_equal(after["state"][index][key], value)


def test_load_state_dict_refuses_a_0_d_state_array_for_a_larger_parameter():
    # A 0-d exp_avg used to pass the shape check; Adam's numba loop then wrote past its end
    params = _leaves(_initial_arrays())
    optimizer = optim.Adam(params)
    _step_with(params, optimizer, range(2))
    saved = optimizer.state_dict()
    saved["state"][0]["exp_avg"] = np.zeros(())
    state = optimizer.state
    with pytest.raises(ShapeError, match=r"'exp_avg' of parameter 0 has shape \(\)"):
        optimizer.load_state_dict(saved)
    assert optimizer.state is state and optimizer.state[params[0]]["exp_avg"].shape == (3, 4)


def test_adam_numba_loop_is_not_run_on_state_of_another_shape(monkeypatch):
    from minitrain.optim import adam

    fused = []
    monkeypatch.setattr(adam, "_adam_elements", lambda *args: fused.append(1))
    (param,) = _leaves(_initial_arrays()[:1])
    optimizer = optim.Adam([param])
    optimizer.state[param] = {"step": 1, "exp_avg": np.zeros(()), "exp_avg_sq": np.ones(())}
    param.grad = minitrain.Tensor(np.ones(param.shape))
    with minitrain.backend.use_numba(True), pytest.raises(ValueError):
        optimizer.step()
    assert not fused


def test_load_state_dict_casts_integer_state_arrays_to_the_parameters_dtype_like_torch():
    torch = _torch()
    ours, ours_opt = _run_minitrain(lambda ps: optim.Adam(ps, lr=0.1), _initial_arrays(), 2)
    theirs, theirs_opt = _run_torch(lambda ps: torch.optim.Adam(ps, lr=0.1), _initial_arrays(), 2)
    saved, torch_saved = ours_opt.state_dict(), theirs_opt.state_dict()
    for index, values in saved["state"].items():
        values["exp_avg"] = np.asarray(np.round(10 * values["exp_avg"]), dtype=np.int64)
        torch_saved["state"][index]["exp_avg"] = torch.tensor(values["exp_avg"])
    ours_opt.load_state_dict(saved)
    theirs_opt.load_state_dict(torch_saved)
    assert ours_opt.state[ours[0]]["exp_avg"].dtype == np.float64
    _step_with(ours, ours_opt, range(2, 4))
    for step in range(2, 4):
        arrays_now = [p.detach().numpy() for p in theirs]
        for p, g in zip(theirs, _gradients(arrays_now, step), strict=True):
            p.grad = torch.tensor(g)
        theirs_opt.step()
    _assert_same_params(ours, theirs)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop"])
def test_load_state_dict_restores_option_values_as_saved_like_torch(name):
    # A scheduler may leave an lr below 0 (LinearLR decaying to 0 ends at -1.5e-18, chained
    # schedulers go further, see test_lr_scheduler.py): loading restores it as saved, as torch
    # does, while the constructor still rejects a negative lr from the user.
    torch = _torch()
    params = _leaves(_initial_arrays())
    optimizer = getattr(optim, name)(params, lr=0.1)
    _step_with(params, optimizer, range(2))
    optimizer.param_groups[0]["lr"] = -1.5e-18
    saved = optimizer.state_dict()
    restored = getattr(optim, name)(params, lr=0.1)
    restored.load_state_dict(saved)
    assert restored.param_groups[0]["lr"] == -1.5e-18
    assert restored.state_dict()["param_groups"] == saved["param_groups"]
    assert restored.state_dict()["state"].keys() == saved["state"].keys()

    torch_params = [torch.ones(2, requires_grad=True)]
    torch_optimizer = getattr(torch.optim, name)(torch_params, lr=0.1)
    torch_optimizer.param_groups[0]["lr"] = -1.5e-18
    torch_restored = getattr(torch.optim, name)(torch_params, lr=0.1)
    torch_restored.load_state_dict(torch_optimizer.state_dict())
    assert torch_restored.param_groups[0]["lr"] == -1.5e-18

    with pytest.raises(ValueError, match=f"{name}: lr must be >= 0, got -1.5e-18"):
        getattr(optim, name)(params, lr=-1.5e-18)


def test_named_parameters_are_kept_in_groups_and_state_dict():
    w, b = _leaves(_initial_arrays()[:2])
    optimizer = optim.SGD([("weight", w), ("bias", b)], lr=0.1)
    assert optimizer.param_groups[0]["param_names"] == ["weight", "bias"]
    assert optimizer.param_groups[0]["params"][0] is w
    assert optimizer.state_dict()["param_groups"][0]["param_names"] == ["weight", "bias"]
    with pytest.raises(ValueError, match="every parameter a name or none"):
        optim.SGD([("weight", w), b], lr=0.1)
    with pytest.raises(ValueError, match="every parameter group has names"):
        optimizer.add_param_group({"params": _leaves([np.ones(2)])})


# Argument errors.
def test_parameter_errors():
    w = minitrain.tensor(np.ones(3), requires_grad=True)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    generator = (p for p in [w])
    optim.SGD(generator, lr=0.1)
    with pytest.raises(ValueError, match="already consumed"):
        optim.SGD(generator, lr=0.1)
    with pytest.raises(TypeError, match="wrap it in a list"):
        optim.SGD(w, lr=0.1)
    with pytest.raises(TypeError, match=r"params\[1\] is a ndarray"):
        optim.SGD([w, np.ones(3)], lr=0.1)
    with pytest.raises(ValueError, match="not a leaf"):
        optim.SGD([w * 2], lr=0.1)
    with pytest.raises(ValueError, match="twice in the same group"):
        optim.SGD([w, w], lr=0.1)
    with pytest.raises(TypeError, match="not a set"):
        optim.SGD({w}, lr=0.1)
    with pytest.raises(ValueError, match="needs a 'params' entry"):
        optim.SGD([{"lr": 0.1}])
    optimizer = optim.SGD([w], lr=0.1)
    with pytest.raises(ValueError, match="another parameter group"):
        optimizer.add_param_group({"params": [w]})
    assert len(optimizer.param_groups) == 1


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda ps: optim.SGD(ps, lr=-0.1), ValueError, "lr must be >= 0, got -0.1"),
        (lambda ps: optim.SGD(ps, lr=float("nan")), ValueError, "lr must be >= 0"),
        (lambda ps: optim.SGD(ps, lr="0.1"), DTypeError, "lr must be a real number"),
        (lambda ps: optim.SGD(ps, momentum=-0.5), ValueError, "momentum must be >= 0"),
        (lambda ps: optim.SGD(ps, weight_decay=-1), ValueError, "weight_decay"),
        (lambda ps: optim.SGD(ps, nesterov=True), ValueError, "nesterov=True needs momentum"),
        (
            lambda ps: optim.SGD(ps, momentum=0.9, dampening=0.1, nesterov=True),
            ValueError,
            "dampening = 0",
        ),
        (
            lambda ps: optim.SGD([{"params": ps, "lr": -1.0}], lr=0.1),
            ValueError,
            "lr must be >= 0",
        ),
        (
            lambda ps: optim.Adam(ps, betas=(1.0, 0.999)),
            ValueError,
            r"betas\[0\] must be in \[0, 1\), got 1.0",
        ),
        (lambda ps: optim.Adam(ps, betas=(0.9, -0.1)), ValueError, r"betas\[1\]"),
        (lambda ps: optim.Adam(ps, betas=0.9), ValueError, "a pair"),
        (lambda ps: optim.Adam(ps, eps=-1e-8), ValueError, "eps"),
        (lambda ps: optim.AdamW(ps, weight_decay=-0.01), ValueError, "AdamW: weight_decay"),
        (lambda ps: optim.RMSprop(ps, alpha=-0.9), ValueError, "alpha"),
        (lambda ps: optim.RMSprop(ps, momentum=-0.9), ValueError, "momentum"),
        (lambda ps: optim.RMSprop(ps, lr=-1), ValueError, "RMSprop: lr"),
    ],
)
def test_option_errors(make, error, message):
    with pytest.raises(error, match=message):
        make(_leaves(_initial_arrays()))


def test_repr_lists_each_groups_options():
    params = _leaves(_initial_arrays())
    text = repr(optim.SGD([{"params": params[:1]}, {"params": params[1:], "lr": 0.5}], lr=0.1))
    assert text.startswith("SGD (") and "Parameter Group 1" in text and "lr: 0.5" in text


# End to end: optimizers training a small model.
@pytest.mark.parametrize(
    "make",
    [
        lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9),
        lambda ps: optim.Adam(ps, lr=0.05),
        lambda ps: optim.AdamW(ps, lr=0.05, weight_decay=1e-4),
        lambda ps: optim.RMSprop(ps, lr=0.01),
    ],
    ids=["SGD", "Adam", "AdamW", "RMSprop"],
)
def test_training_least_squares_with_autograd_reaches_the_solution(make):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3))
    y = x @ np.array([1.5, -2.0, 0.5]) + 0.7 + 0.01 * rng.standard_normal(64)
    solution, *_ = np.linalg.lstsq(np.c_[x, np.ones(64)], y, rcond=None)
    weight = minitrain.tensor(np.zeros(3), requires_grad=True)
    bias = minitrain.tensor(np.zeros(1), requires_grad=True)
    optimizer = make([weight, bias])
    inputs, targets = minitrain.tensor(x), minitrain.tensor(y)

    def loss_now():
        return ((inputs @ weight + bias - targets) ** 2).mean()

    initial = loss_now().item()
    for _ in range(300):
        optimizer.zero_grad()
        loss = loss_now()
        loss.backward()
        optimizer.step()
    assert loss_now().item() < 1e-3 * initial
    np.testing.assert_allclose(np.r_[weight.array, bias.array], solution, atol=2e-2)


def test_frozen_parameters_are_accepted_and_left_alone_as_in_pytorch():
    frozen = minitrain.tensor(np.ones(3))
    trained = minitrain.tensor(np.ones(3), requires_grad=True)
    optimizer = optim.SGD([frozen, trained], lr=0.5)
    (trained * 2.0).sum().backward()
    optimizer.step()
    np.testing.assert_array_equal(frozen.array, np.ones(3))
    np.testing.assert_array_equal(trained.array, np.zeros(3))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "options",
    [
        {"lr": 0.01},
        {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True},
        {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True},
    ],
    ids=["plain", "l2_amsgrad", "decoupled_maximize"],
)
def test_adam_numba_update_matches_numpy_bit_for_bit(monkeypatch, options, dtype):
    from minitrain.optim import adam

    fused = []
    kernel = adam._adam_elements
    monkeypatch.setattr(adam, "_adam_elements", lambda *args: fused.append(1) or kernel(*args))
    runs = {}
    for use_numba in (True, False):
        params = _leaves(_initial_arrays(dtype=dtype))
        optimizer = optim.Adam(params, **options)
        with minitrain.backend.use_numba(use_numba):
            for step in range(4):
                for p, g in zip(params, _gradients([p.array for p in params], step), strict=True):
                    p.grad = minitrain.tensor(g.astype(dtype))
                optimizer.step()
        runs[use_numba] = [p.array for p in params] + [
            state[key] for state in optimizer.state.values() for key in sorted(state)
        ]
    assert len(fused) == 4 * len(SHAPES)  # every step of every parameter by the numba loop
    for got, want in zip(runs[True], runs[False], strict=True):
        np.testing.assert_array_equal(got, want)
    assert not np.array_equal(runs[True][0], _initial_arrays(dtype=dtype)[0])  # it did move


def test_zero_grad_in_place_leaves_a_create_graph_grads_graph_alone():
    # a .grad with a graph (create_graph) may be saved by that graph: zeroing it in place
    # would change what a later backward reads; it gets zeros of its own instead, as PyTorch's
    # detach_() then zero_() leaves the graph's values unchanged
    (w,) = _leaves([np.array([1.0, -2.0])])
    (w * w * w).sum().backward(create_graph=True)
    graph_grad = w.grad
    np.testing.assert_array_equal(graph_grad.array, [3.0, 12.0])
    penalty = (graph_grad * graph_grad).sum()  # saves graph_grad
    optim.SGD([w], lr=0.1).zero_grad(set_to_none=False)
    assert w.grad is not graph_grad and not w.grad.requires_grad
    np.testing.assert_array_equal(w.grad.array, [0.0, 0.0])
    np.testing.assert_array_equal(graph_grad.array, [3.0, 12.0])
    (second,) = minitrain.grad(penalty, w)  # d/dw sum((3 w^2)^2) = 36 w^3
    np.testing.assert_allclose(second.array, 36 * np.array([1.0, -8.0]))


def test_zero_grad_in_place_counts_its_write():
    (w,) = _leaves([np.array([1.0, 2.0])])
    w.grad = minitrain.Tensor(np.ones(2))
    before = w.grad._version
    optim.SGD([w], lr=0.1).zero_grad(set_to_none=False)
    assert w.grad._version == before + 1


@pytest.mark.parametrize("flag", ["amsgrad", "maximize"])
def test_adam_refuses_a_flag_that_is_not_a_bool_before_any_step(flag):
    # an amsgrad of {'a': 1} was taken, and the step then failed in a numba kernel
    param = minitrain.ones(3, requires_grad=True)
    with pytest.raises(DTypeError, match=f"Adam: {flag} must be a bool, got {{'a': 1}}"):
        optim.Adam([param], **{flag: {"a": 1}})


@pytest.mark.parametrize("value", [0, 1, np.int64(1)])
def test_optimizers_take_the_ints_0_and_1_for_a_flag_as_pytorchs_do(value, torch):
    param = minitrain.ones(3, requires_grad=True)
    ours = optim.Adam([param], amsgrad=value, maximize=value)
    theirs = torch.optim.Adam([torch.ones(3, requires_grad=True)], amsgrad=value, maximize=value)
    assert ours.param_groups[0]["amsgrad"] == theirs.param_groups[0]["amsgrad"]
    optim.SGD([param], lr=0.1, momentum=0.9, nesterov=value)


def test_asgd_refuses_options_that_are_not_numbers_before_changing_a_parameter():
    # an alpha of object() was taken, and the step raised a TypeError after writing the param
    param = minitrain.ones(3, requires_grad=True)
    with pytest.raises(DTypeError, match="ASGD: alpha must be a real number, got object"):
        optim.ASGD([param], alpha=object())
    with pytest.raises(ArgumentError, match="ASGD: lambd must be >= -inf, got nan"):
        optim.ASGD([param], lambd=float("nan"))


def test_asgd_with_a_huge_alpha_steps_with_eta_zero_rather_than_overflowing():
    # (1 + lambd * lr * step) ** alpha raised Python's OverflowError in the step
    param = minitrain.tensor(np.ones(3), requires_grad=True)
    param.grad = minitrain.tensor(np.ones(3))
    optimizer = optim.ASGD([param], lr=0.1, alpha=2**62)
    optimizer.step()
    optimizer.step()
    assert optimizer.state[param]["eta"] == 0.0
    np.testing.assert_allclose(param.array, 1 - 0.1 * 1.0001 * 1)  # only the first step moved it
