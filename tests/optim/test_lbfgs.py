"""LBFGS: iterates side by side with PyTorch on the Rosenbrock function and a quadratic, with and
without the strong Wolfe line search; reaching the minimum, state dicts, argument errors."""

import numpy as np
import pytest

import minitrain
from minitrain import optim

START = np.array([-1.5, 2.0])
MATRIX = np.array([[3.0, 0.5, 0.0], [0.5, 2.0, 0.3], [0.0, 0.3, 1.0]])
TARGET = np.array([1.0, -2.0, 0.5])


def _torch():
    return pytest.importorskip("torch")


def _rosenbrock(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def _minimise(lib, function, start, steps, **options):
    """The parameter after each step of LBFGS from `start`, and the optimizer."""
    if lib is optim:
        x = minitrain.tensor(start.copy(), requires_grad=True)
    else:
        x = _torch().tensor(start.copy(), requires_grad=True)
    optimizer = lib.LBFGS([x], **options)

    def closure():
        optimizer.zero_grad()
        loss = function(x)
        loss.backward()
        return loss

    path = []
    for _ in range(steps):
        optimizer.step(closure)
        path.append(np.array(x.detach().numpy() if lib is not optim else x.array))
    return np.array(path), optimizer


def _quadratic_minitrain(x):
    diff = x - minitrain.tensor(TARGET)
    return 0.5 * (diff * (diff @ minitrain.tensor(MATRIX.T))).sum()


def _quadratic_torch(x):
    torch = _torch()
    diff = x - torch.tensor(TARGET)
    return 0.5 * (diff * (diff @ torch.tensor(MATRIX.T))).sum()


def test_strong_wolfe_on_rosenbrock_matches_torch_and_reaches_the_minimum():
    torch = _torch()
    options = {"lr": 1, "max_iter": 4, "line_search_fn": "strong_wolfe", "history_size": 5}
    ours, optimizer = _minimise(optim, _rosenbrock, START, 25, **options)
    theirs, reference = _minimise(torch.optim, _rosenbrock, START, 25, **options)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-8)
    # it stops within 1e-4 of (1, 1), where the loss changes by less than tolerance_change
    np.testing.assert_allclose(ours[-1], [1.0, 1.0], atol=1e-4)
    state, reference_state = optimizer.state_dict()["state"][0], reference.state_dict()["state"][0]
    assert state["func_evals"] == reference_state["func_evals"]
    assert state["n_iter"] == reference_state["n_iter"]
    assert state.keys() == reference_state.keys()


def test_fixed_steps_on_rosenbrock_match_torch_then_reach_the_minimum():
    torch = _torch()
    options = {"lr": 0.1, "max_iter": 20, "history_size": 10}
    ours, _ = _minimise(optim, _rosenbrock, START, 10, **options)
    theirs, _ = _minimise(torch.optim, _rosenbrock, START, 10, **options)
    # Rosenbrock's valley amplifies rounding differences of the losses' gradients (1e-16)
    # from iterate to iterate: the first four steps (80 iterations) still agree closely.
    np.testing.assert_allclose(ours[:4], theirs[:4], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ours[-1], [1.0, 1.0], atol=1e-3)
    np.testing.assert_allclose(theirs[-1], [1.0, 1.0], atol=1e-2)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_quadratic_with_short_history_matches_torch(line_search_fn):
    torch = _torch()
    options = {"lr": 1, "max_iter": 3, "history_size": 2, "line_search_fn": line_search_fn}
    start = np.array([4.0, 3.0, -2.0])
    ours, _ = _minimise(optim, _quadratic_minitrain, start, 8, **options)
    theirs, _ = _minimise(torch.optim, _quadratic_torch, start, 8, **options)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours[-1], TARGET, atol=1e-4)


def test_first_iteration_is_a_scaled_gradient_step():
    """Hand-computed: the first direction is -g, the first step size min(1, 1/sum|g|) * lr."""
    x = minitrain.tensor(np.array([3.0, -1.0]), requires_grad=True)
    optimizer = optim.LBFGS([x], lr=0.5, max_iter=1)

    def closure():
        optimizer.zero_grad()
        loss = (x * x).sum()
        loss.backward()
        return loss

    loss = optimizer.step(closure)
    grad = np.array([6.0, -2.0])
    expected = np.array([3.0, -1.0]) - 0.5 * min(1.0, 1.0 / np.abs(grad).sum()) * grad
    np.testing.assert_allclose(x.array, expected, rtol=1e-15)
    assert float(loss) == 10.0  # the loss before the step is returned
    assert optimizer.state[x]["func_evals"] == 1 and optimizer.state[x]["n_iter"] == 1


def test_stops_at_once_where_the_gradient_is_zero():
    x = minitrain.tensor(TARGET.copy(), requires_grad=True)
    optimizer = optim.LBFGS([x])
    calls = []

    def closure():
        calls.append(1)
        optimizer.zero_grad()
        loss = _quadratic_minitrain(x)
        loss.backward()
        return loss

    optimizer.step(closure)
    np.testing.assert_array_equal(x.array, TARGET)
    assert len(calls) == 1


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_state_dict_round_trip_continues_uninterrupted(line_search_fn):
    options = {"max_iter": 2, "history_size": 3, "line_search_fn": line_search_fn, "lr": 0.5}
    straight, _ = _minimise(optim, _rosenbrock, START, 6, **options)

    x = minitrain.tensor(START.copy(), requires_grad=True)
    optimizer = optim.LBFGS([x], **options)

    def closure_for(param, opt):
        def closure():
            opt.zero_grad()
            loss = _rosenbrock(param)
            loss.backward()
            return loss

        return closure

    for _ in range(3):
        optimizer.step(closure_for(x, optimizer))
    saved = optimizer.state_dict()
    assert {"d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad"} <= set(
        saved["state"][0]
    )
    resumed = minitrain.tensor(x.array.copy(), requires_grad=True)
    fresh = optim.LBFGS([resumed], **options)
    fresh.load_state_dict(saved)
    optimizer.step(closure_for(x, optimizer))  # the saved copy is left alone
    path = []
    for _ in range(3):
        fresh.step(closure_for(resumed, fresh))
        path.append(resumed.array.copy())
    np.testing.assert_array_equal(np.array(path), straight[3:])


def test_two_parameters_are_one_flat_vector():
    torch = _torch()
    a0, b0 = np.array([[0.5, -1.0]]), np.array(2.0)

    def run(lib, make):
        a, b = make(a0), make(b0)
        optimizer = lib.LBFGS([a, b], line_search_fn="strong_wolfe")

        def closure():
            optimizer.zero_grad()
            loss = ((a - 1) ** 2).sum() * 3 + (b + a.sum()) ** 2
            loss.backward()
            return loss

        optimizer.step(closure)
        return a, b

    ours = run(optim, lambda v: minitrain.tensor(v.copy(), requires_grad=True))
    theirs = run(torch.optim, lambda v: torch.tensor(v.copy(), requires_grad=True))
    for p, q in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(p.array, q.detach().numpy(), rtol=1e-9, atol=1e-12)


def test_bad_arguments_raise_clear_errors():
    x = minitrain.tensor(START.copy(), requires_grad=True)
    with pytest.raises(ValueError, match="LBFGS: lr"):
        optim.LBFGS([x], lr=-1.0)
    with pytest.raises(ValueError, match="line_search_fn"):
        optim.LBFGS([x], line_search_fn="armijo")
    with pytest.raises(ValueError, match="one parameter group"):
        optim.LBFGS([{"params": [x]}, {"params": [minitrain.tensor([1.0], requires_grad=True)]}])
    with pytest.raises(ValueError, match="max_iter"):
        optim.LBFGS([x], max_iter=0)
    optimizer = optim.LBFGS([x])
    with pytest.raises(TypeError, match="closure is required"):
        optimizer.step(None)
    with pytest.raises(TypeError):
        optimizer.step()
    np.testing.assert_array_equal(x.array, START)
