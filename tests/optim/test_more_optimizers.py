"""Adadelta, Adagrad, Adamax, NAdam, RAdam, ASGD and Rprop: trajectories side by side with
PyTorch, hand-computed first steps, parameter groups, state dicts, flags and argument errors."""

import math

import numpy as np
import pytest

import minitrain
from minitrain import optim

SHAPES = [(3, 4), (5,), ()]
NAMES = ["Adadelta", "Adagrad", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"]

# Each optimizer's option sets: defaults, weight decay, maximize, and its own options.
OPTIONS = {
    "Adadelta": [{}, {"lr": 0.5, "rho": 0.5, "weight_decay": 0.1}, {"maximize": True, "eps": 1e-3}],
    "Adagrad": [
        {},
        {"lr": 0.05, "lr_decay": 0.1, "initial_accumulator_value": 0.2, "weight_decay": 0.1},
        {"maximize": True, "eps": 1e-3},
    ],
    "Adamax": [{}, {"lr": 0.01, "betas": (0.5, 0.8), "weight_decay": 0.1}, {"maximize": True}],
    "NAdam": [
        {},
        {"lr": 0.01, "weight_decay": 0.1},
        {"weight_decay": 0.1, "decoupled_weight_decay": True, "momentum_decay": 0.1},
        {"maximize": True, "betas": (0.5, 0.8)},
    ],
    "RAdam": [
        {"lr": 0.01},  # rho_t passes 5 at step 6: both branches of the update run
        {"lr": 0.01, "betas": (0.9, 0.5), "weight_decay": 0.1},
        {"weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True},
    ],
    "ASGD": [
        {},
        {"lr": 0.05, "lambd": 0.1, "alpha": 0.5, "t0": 3, "weight_decay": 0.1},
        {"maximize": True, "t0": 0},
    ],
    "Rprop": [
        {},
        {"lr": 0.05, "etas": (0.3, 1.7), "step_sizes": (1e-3, 0.08)},
        {"maximize": True},
    ],
}
CASES = [(name, options) for name in NAMES for options in OPTIONS[name]]


def _torch():
    return pytest.importorskip("torch")


def _initial_arrays(dtype=np.float64):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(shape).astype(dtype) for shape in SHAPES]


def _gradients(arrays, step):
    """Noise plus a pull towards 0, so each gradient depends on the path taken so far."""
    rng = np.random.default_rng((1, step))
    return [rng.standard_normal(a.shape) + 0.5 * np.asarray(a) for a in arrays]


def _leaves(arrays):
    return [minitrain.tensor(a.copy(), requires_grad=True) for a in arrays]


def _run(optimizer, params, steps, first=0):
    for step in range(first, first + steps):
        for p, g in zip(params, _gradients([p.array for p in params], step), strict=True):
            p.grad = minitrain.Tensor(g.astype(p.dtype))
        optimizer.step()


def _run_torch(optimizer, params, steps):
    torch = _torch()
    for step in range(steps):
        arrays = [p.detach().numpy() for p in params]
        for p, g in zip(params, _gradients(arrays, step), strict=True):
            p.grad = torch.tensor(g).to(p.dtype)
        optimizer.step()


def _tolerances(dtype):
    # PyTorch keeps some scalars (NAdam's mu_product, ASGD's eta and mu) in float32: 1e-8 apart
    return {"rtol": 1e-7, "atol": 1e-8} if dtype == np.float64 else {"rtol": 1e-5, "atol": 1e-5}


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize(("name", "options"), CASES, ids=str)
def test_trajectory_matches_torch(name, options, dtype):
    torch = _torch()
    ours = _leaves(_initial_arrays(dtype))
    _run(getattr(optim, name)(ours, **options), ours, 10)
    theirs = [torch.tensor(a, requires_grad=True) for a in _initial_arrays(dtype)]
    _run_torch(getattr(torch.optim, name)(theirs, **options), theirs, 10)
    for p, q in zip(ours, theirs, strict=True):
        assert p.dtype == dtype
        np.testing.assert_allclose(p.array, q.detach().numpy(), **_tolerances(dtype))
    assert not np.allclose(ours[0].array, _initial_arrays(dtype)[0])


@pytest.mark.parametrize("name", NAMES)
def test_parameter_groups_match_torch(name):
    torch = _torch()
    second = {**OPTIONS[name][1], "maximize": True}
    arrays = _initial_arrays()

    def groups(params):
        return [{"params": params[:2]}, {"params": params[2:], **second}]

    ours = _leaves(arrays)
    optimizer = getattr(optim, name)(groups(ours), **OPTIONS[name][0])
    _run(optimizer, ours, 10)
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    _run_torch(getattr(torch.optim, name)(groups(theirs), **OPTIONS[name][0]), theirs, 10)
    for p, q in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(p.array, q.detach().numpy(), rtol=1e-7, atol=1e-8)
    assert optimizer.param_groups[1]["maximize"] and not optimizer.param_groups[0]["maximize"]


def _first_step(name, options, p0, g):
    """One step on a 1-element parameter, as a float."""
    param = minitrain.tensor(np.array([p0]), requires_grad=True)
    param.grad = minitrain.tensor(np.array([g]))
    getattr(optim, name)([param], **options).step()
    return float(param.array[0])


def test_hand_computed_first_steps():
    p, g, lr = 0.5, 2.0, 0.1
    # Adadelta: v = (1 - rho) g^2, delta = sqrt(eps) / sqrt(v + eps) * g
    v = 0.1 * g * g
    expected = p - lr * math.sqrt(1e-6) / math.sqrt(v + 1e-6) * g
    assert _first_step("Adadelta", {"lr": lr}, p, g) == pytest.approx(expected, rel=1e-12)
    # Adagrad with L2 decay: g' = g + wd p, s = init + g'^2
    g_decayed = g + 0.2 * p
    expected = p - lr * g_decayed / (math.sqrt(0.3 + g_decayed**2) + 1e-10)
    options = {"lr": lr, "weight_decay": 0.2, "initial_accumulator_value": 0.3}
    assert _first_step("Adagrad", options, p, g) == pytest.approx(expected, rel=1e-12)
    # Adamax: m = (1 - b1) g, u = |g| + eps, step lr / (1 - b1)
    expected = p - lr / 0.1 * (0.1 * g) / (abs(g) + 1e-8)
    assert _first_step("Adamax", {"lr": lr}, p, g) == pytest.approx(expected, rel=1e-12)
    # NAdam: mu_1, mu_2 from the schedule; d = |g| + eps after bias correction
    mu1 = 0.9 * (1 - 0.5 * 0.96**0.004)
    mu2 = 0.9 * (1 - 0.5 * 0.96**0.008)
    d = math.sqrt(0.001 * g * g / 0.001) + 1e-8
    expected = p - lr * (1 - mu1) / (1 - mu1) * g / d - lr * mu2 / (1 - mu1 * mu2) * 0.1 * g / d
    assert _first_step("NAdam", {"lr": lr}, p, g) == pytest.approx(expected, rel=1e-12)
    # NAdam, maximize: the same step uphill
    expected_up = p + (p - expected)
    assert _first_step("NAdam", {"lr": lr, "maximize": True}, p, g) == pytest.approx(
        expected_up, rel=1e-12
    )
    # RAdam: rho_1 = 1 < 5, so plain momentum SGD on the bias-corrected mean (= g)
    assert _first_step("RAdam", {"lr": lr}, p, g) == pytest.approx(p - lr * g, rel=1e-12)
    # RAdam with decoupled decay: the parameter shrinks first
    expected = p * (1 - lr * 0.5) - lr * g
    options = {"lr": lr, "weight_decay": 0.5, "decoupled_weight_decay": True}
    assert _first_step("RAdam", options, p, g) == pytest.approx(expected, rel=1e-12)
    # ASGD: p (1 - lambd eta) - eta g with eta = lr
    expected = p * (1 - 1e-4 * lr) - lr * g
    assert _first_step("ASGD", {"lr": lr}, p, g) == pytest.approx(expected, rel=1e-12)
    # Rprop: the first step moves by lr against the sign of the gradient
    assert _first_step("Rprop", {"lr": lr}, p, g) == pytest.approx(p - lr, rel=1e-12)


def test_rprop_grows_and_shrinks_its_steps():
    param = minitrain.tensor(np.array([0.0, 0.0]), requires_grad=True)
    optimizer = optim.Rprop([param], lr=0.1)
    for grad in ([1.0, 1.0], [1.0, -1.0], [1.0, 1.0]):
        param.grad = minitrain.tensor(np.array(grad))
        optimizer.step()
    # element 0: steps 0.1, 0.12, 0.144 downhill; element 1: 0.1 down, then the sign flip halves
    # the step and skips the move, then 0.05 down again (its prev was zeroed: factor 1)
    np.testing.assert_allclose(param.array, [-0.364, -0.15], rtol=1e-12)
    np.testing.assert_allclose(optimizer.state[param]["step_size"], [0.144, 0.05], rtol=1e-12)


def test_asgd_averages_after_t0():
    param = minitrain.tensor(np.array([1.0]), requires_grad=True)
    optimizer = optim.ASGD([param], lr=0.1, lambd=0.0, t0=2)
    seen = []
    for _ in range(5):
        param.grad = minitrain.tensor(np.array([1.0]))
        optimizer.step()
        seen.append(float(param.array[0]))
    state = optimizer.state[param]
    # mu = 1 / max(1, t - t0): the average copies the iterate until step 3, then averages
    # iterates 3, 4, 5 with weights from mu = 1, 1/2
    expected_ax = seen[2] + (seen[3] - seen[2]) * 1.0
    expected_ax = expected_ax + (seen[4] - expected_ax) * 0.5
    assert state["ax"][0] == pytest.approx(expected_ax, rel=1e-12)
    assert state["mu"] == pytest.approx(1 / 3) and state["step"] == 5


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_round_trip_continues_uninterrupted(name):
    options = OPTIONS[name][1]
    straight = _leaves(_initial_arrays())
    _run(getattr(optim, name)(straight, **options), straight, 10)

    first = _leaves(_initial_arrays())
    optimizer = getattr(optim, name)(first, **options)
    _run(optimizer, first, 5)
    saved = optimizer.state_dict()
    resumed = _leaves([p.array for p in first])  # the checkpointed parameters
    _run(optimizer, first, 1, first=5)  # later steps leave the saved copy alone
    fresh = getattr(optim, name)(resumed, **options)
    fresh.load_state_dict(saved)
    _run(fresh, resumed, 5, first=5)
    for p, q in zip(resumed, straight, strict=True):
        np.testing.assert_array_equal(p.array, q.array)


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_keys_match_torch(name):
    torch = _torch()
    ours = _leaves(_initial_arrays())
    optimizer = getattr(optim, name)(ours, **OPTIONS[name][1])
    _run(optimizer, ours, 2)
    theirs = [torch.tensor(a, requires_grad=True) for a in _initial_arrays()]
    reference = getattr(torch.optim, name)(theirs, **OPTIONS[name][1])
    _run_torch(reference, theirs, 2)
    ours_dict, theirs_dict = optimizer.state_dict(), reference.state_dict()
    assert ours_dict["state"].keys() == theirs_dict["state"].keys()
    for index, values in theirs_dict["state"].items():
        assert ours_dict["state"][index].keys() == values.keys()
    assert ours_dict["param_groups"][0].keys() == theirs_dict["param_groups"][0].keys()


@pytest.mark.parametrize("name", NAMES)
def test_flags_are_accepted_and_change_nothing(name):
    flags = {"foreach": True, "differentiable": True}
    if name != "Adagrad":
        flags["capturable"] = True
    plain, flagged = _leaves(_initial_arrays()), _leaves(_initial_arrays())
    _run(getattr(optim, name)(plain), plain, 4)
    optimizer = getattr(optim, name)(flagged, **flags)
    _run(optimizer, flagged, 4)
    assert all(optimizer.defaults[key] is True for key in flags)
    for p, q in zip(plain, flagged, strict=True):
        np.testing.assert_array_equal(p.array, q.array)


BAD_ARGUMENTS = [
    ("Adadelta", {"lr": -1.0}),
    ("Adadelta", {"rho": 1.5}),
    ("Adadelta", {"eps": -1.0}),
    ("Adagrad", {"lr": -0.1}),
    ("Adagrad", {"lr_decay": -0.1}),
    ("Adagrad", {"initial_accumulator_value": -1.0}),
    ("Adamax", {"betas": (1.0, 0.9)}),
    ("Adamax", {"weight_decay": -0.1}),
    ("NAdam", {"momentum_decay": -1.0}),
    ("NAdam", {"betas": (0.9, -0.1)}),
    ("RAdam", {"eps": -1e-8}),
    ("RAdam", {"lr": -1e-3}),
    ("ASGD", {"weight_decay": -0.5}),
    ("Rprop", {"etas": (1.5, 1.2)}),
    ("Rprop", {"lr": -0.01}),
]


@pytest.mark.parametrize(("name", "options"), BAD_ARGUMENTS, ids=str)
def test_bad_arguments_raise_value_errors_as_torch(name, options):
    with pytest.raises(ValueError, match=name):
        getattr(optim, name)(_leaves(_initial_arrays()), **options)
    torch = _torch()
    with pytest.raises(ValueError):
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **options)


def test_adagrad_flag_conflicts_raise_runtime_errors_as_torch():
    for flags in ({"fused": True, "foreach": True}, {"fused": True, "differentiable": True}):
        with pytest.raises(RuntimeError, match="Adagrad: fused"):
            optim.Adagrad(_leaves(_initial_arrays()), **flags)


def test_adagrad_makes_its_state_at_construction_as_torch():
    params = _leaves(_initial_arrays())
    optimizer = optim.Adagrad(params, initial_accumulator_value=0.5)
    state = optimizer.state_dict()["state"]
    assert sorted(state) == [0, 1, 2]
    np.testing.assert_array_equal(state[0]["sum"], np.full((3, 4), 0.5))
    assert state[0]["step"] == 0
