"""Checks of the exercises of 06_vanishing_gradients: the gain of leaky relu, predictions of
which deep networks vanish or explode, per-layer gradient norms with hooks, clipping by the
global norm, and a deep sigmoid network that a gradient can cross."""

from __future__ import annotations

import math

import numpy as np

import minitrain as mt
from exercises import exercise
from minitrain import nn
from minitrain.autograd import graph_nodes


def _number(value, what: str) -> float:
    if isinstance(value, mt.Tensor):
        value = value.item()
    assert np.ndim(value) == 0, f"return {what} as one number, got {type(value).__name__}"
    return float(value)


@exercise
def check_leaky_relu_init_std(leaky_relu_init_std):
    for fan_in, slope in ((32, 0.0), (100, 0.01), (64, 0.2), (16, 1.0), (10, 0.5)):
        got = _number(leaky_relu_init_std(fan_in, slope), "the std")
        expected = math.sqrt(2 / ((1 + slope**2) * fan_in))
        where = f"for fan_in={fan_in}, negative_slope={slope}"
        if math.isclose(got, expected**2, rel_tol=1e-6) and not math.isclose(got, expected):
            raise AssertionError(f"{where} you returned the variance {got:.4g}: return its root")
        wrong_square = math.sqrt(2 / ((1 + slope) * fan_in))
        if 0 < slope < 1 and math.isclose(got, wrong_square, rel_tol=1e-6):
            raise AssertionError(
                f"{where}: on the negative side h = a z, so h^2 = a^2 z^2: the negative half "
                f"contributes a^2 E[z^2] / 2, not a E[z^2] / 2"
            )
        if math.isclose(got, expected / math.sqrt(2), rel_tol=1e-6):
            raise AssertionError(
                f"{where}: a factor sqrt(2) short. Each half of a symmetric z holds half of "
                f"E[z^2]: E[h^2] = (1 + a^2) / 2 * Var(z), and the 1/2 must be undone"
            )
        if slope and math.isclose(got, math.sqrt(2 / fan_in), rel_tol=1e-6):
            raise AssertionError(
                f"{where} you returned relu's std: with a > 0 the negative half is not zeroed"
            )
        assert math.isclose(got, expected, rel_tol=1e-6), (
            f"{where} the std that keeps the variance is {expected:.5g}, got {got:.5g}"
        )

    rng = np.random.default_rng(0)
    width, slope = 128, 0.2
    std = _number(leaky_relu_init_std(width, slope), "the std")
    h = rng.standard_normal((256, width))
    spreads = []
    for _ in range(30):
        z = h @ rng.normal(0.0, std, (width, width))
        h = np.where(z > 0, z, slope * z)
        spreads.append(h.std())
    drift = spreads[-1] / spreads[0]
    assert 0.5 < drift < 2, (
        f"30 leaky relu layers initialised with your std changed the activations' spread by a "
        f"factor {drift:.3g}; a variance-preserving std keeps it within a factor 2"
    )


# Exercise 2: the networks to predict, as the notebook's DeepMLP builds them.
_NETWORKS = {
    "linear, gain 1": {"activation": "linear", "gain": 1.0},
    "linear, gain 1.5": {"activation": "linear", "gain": 1.5},
    "relu, gain 1": {"activation": "relu", "gain": 1.0},
    "relu, gain sqrt 2": {"activation": "relu", "gain": math.sqrt(2)},
    "relu, gain 2": {"activation": "relu", "gain": 2.0},
    "sigmoid, gain 1": {"activation": "sigmoid", "gain": 1.0},
    "sigmoid, gain 1, residual + LayerNorm": {
        "activation": "sigmoid",
        "gain": 1.0,
        "residual": True,
        "norm": True,
    },
}
_ACTIVATIONS = {"linear": None, "relu": "relu", "sigmoid": "sigmoid"}


def _gradient_ratio(activation, gain, residual=False, norm=False, depth=24, width=32) -> float:
    """g_1 / g_depth for the notebook's DeepMLP: blocks h -> act(norm(W h + b)) (+ h), weights
    N(0, gain^2 / width), biases 0, a linear head, the mean squared error on a random batch."""
    mt.manual_seed(0)
    rng = np.random.default_rng(0)
    h = mt.tensor(rng.standard_normal((32, width)).astype(np.float32))
    target = mt.tensor(rng.standard_normal((32, 1)).astype(np.float32))
    hidden = []
    for _ in range(depth):
        linear = nn.Linear(width, width)
        nn.init.xavier_normal_(linear.weight, gain=gain)
        nn.init.zeros_(linear.bias)
        z = linear(h)
        if norm:
            z = nn.LayerNorm(width)(z)
        if _ACTIVATIONS[activation]:
            z = getattr(z, _ACTIVATIONS[activation])()
        h = h + z if residual else z
        h.retain_grad()
        hidden.append(h)
    nn.functional.mse_loss(nn.Linear(width, 1)(h), target).backward()
    return float(np.linalg.norm(hidden[0].grad.numpy()) / np.linalg.norm(hidden[-1].grad.numpy()))


@exercise
def check_predictions(predictions):
    said = predictions()
    assert isinstance(said, dict), f"return a dict name -> prediction, got {type(said).__name__}"
    missing = [name for name in _NETWORKS if name not in said]
    assert not missing, f"no prediction for {missing}"
    choices = ("vanishes", "explodes", "neither")
    odd = {name: value for name, value in said.items() if value not in choices}
    assert not odd, f"predict one of {choices}; got {odd}"
    wrong = []
    for name, network in _NETWORKS.items():
        ratio = _gradient_ratio(**network)
        truth = "vanishes" if ratio < 1e-2 else "explodes" if ratio > 1e2 else "neither"
        if said[name] != truth:
            per_block = ratio ** (1 / 23)
            wrong.append(
                f"{name}: you said {said[name]}, measured g_1 / g_24 = {ratio:.1e} ({truth}; "
                f"about x{per_block:.2f} per block)"
            )
    assert not wrong, f"{len(wrong)} of {len(_NETWORKS)} wrong:\n  " + "\n  ".join(wrong)


def _reference_norms(model, x, y) -> list[float]:
    """The gradient norms at the outputs of model's activation modules, by running its layers
    one at a time and keeping each activation's output gradient."""
    outputs, h = [], x
    for layer in model:
        h = layer(h)
        if isinstance(layer, (nn.Sigmoid, nn.Tanh, nn.ReLU)):
            h.retain_grad()
            outputs.append(h)
    nn.functional.mse_loss(h, y).backward()
    model.zero_grad()
    return [float(np.linalg.norm(out.grad.numpy())) for out in outputs]


@exercise
def check_activation_grad_norms(activation_grad_norms):
    mt.manual_seed(3)
    rng = np.random.default_rng(3)
    model = nn.Sequential(
        nn.Linear(6, 8),
        nn.Tanh(),
        nn.Linear(8, 8),
        nn.Sigmoid(),
        nn.Linear(8, 8),
        nn.ReLU(),
        nn.Linear(8, 8),
        nn.Sigmoid(),
        nn.Linear(8, 1),
    )
    x = mt.tensor(rng.standard_normal((5, 6)).astype(np.float32))
    y = mt.tensor(rng.standard_normal((5, 1)).astype(np.float32))
    expected = _reference_norms(model, x, y)
    got = activation_grad_norms(model, x, y)
    assert isinstance(got, (list, tuple)), f"return a list of floats, got {type(got).__name__}"
    got = [_number(value, "each norm") for value in got]
    assert len(got) == len(expected), (
        f"the model has {len(expected)} activation modules (Tanh, Sigmoid, ReLU, Sigmoid): "
        f"return one norm each, got {len(got)}"
    )
    if np.allclose(got, expected[::-1], rtol=1e-4) and not np.allclose(got, expected, rtol=1e-4):
        raise AssertionError(
            "your norms are in backward order: the tensor hooks fire from the output to the "
            "input. Put them in forward order (the first activation's first)"
        )
    assert np.allclose(got, expected, rtol=1e-4), (
        f"expected {np.round(expected, 5).tolist()}, got {np.round(got, 5).tolist()}"
    )
    again = [_number(value, "each norm") for value in activation_grad_norms(model, x, y)]
    assert np.allclose(again, expected, rtol=1e-4), (
        f"a second call returned {np.round(again, 5).tolist()}: start every call from a "
        f"fresh list, and remove the hooks before returning"
    )


@exercise
def check_clip_by_global_norm(clip_by_global_norm):
    rng = np.random.default_rng(4)
    shapes = ((3, 4), (5,), (2, 2, 2))
    for scale, max_norm in ((1.0, 0.5), (10.0, 1.0), (0.1, 5.0)):
        grads = [scale * rng.standard_normal(shape) for shape in shapes]
        kept = [g.copy() for g in grads]
        result = clip_by_global_norm(grads, max_norm)
        assert isinstance(result, tuple) and len(result) == 2, (
            "return two values, (clipped, total_norm)"
        )
        clipped, total = result
        clipped = [np.asarray(g.numpy() if isinstance(g, mt.Tensor) else g) for g in clipped]
        total = _number(total, "the total norm")
        assert all(np.array_equal(g, k) for g, k in zip(grads, kept, strict=True)), (
            "the input arrays changed: return new arrays and leave the inputs as they were"
        )
        params = [mt.tensor(np.zeros(shape), requires_grad=True) for shape in shapes]
        for param, g in zip(params, grads, strict=True):
            param.grad = mt.tensor(g.copy())
        expected_total = nn.utils.clip_grad_norm_(params, max_norm).item()
        expected = [param.grad.numpy() for param in params]
        assert math.isclose(total, expected_total, rel_tol=1e-9), (
            f"the total norm sqrt(sum of every squared element) is {expected_total:.6g}, got "
            f"{total:.6g}"
        )
        each_alone = [g * min(1.0, max_norm / np.linalg.norm(g)) for g in grads]
        same = all(np.allclose(g, e) for g, e in zip(clipped, each_alone, strict=True))
        if same and not all(np.allclose(g, e) for g, e in zip(expected, each_alone, strict=True)):
            raise AssertionError(
                "you clipped each gradient on its own: that shrinks the large ones more than "
                "the small ones and turns the step. Scale all of them by one max_norm / total"
            )
        if total < max_norm and not np.allclose(clipped[0], grads[0]):
            raise AssertionError(
                f"the total norm {total:.3g} is below max_norm {max_norm}: leave the gradients "
                f"as they are (clipping never scales up)"
            )
        for index, (g, e) in enumerate(zip(clipped, expected, strict=True)):
            assert g.shape == e.shape and np.allclose(g, e, rtol=1e-5), (
                f"gradient {index} after clipping to {max_norm} (total {expected_total:.4g}) "
                f"should be {np.round(e.ravel()[:4], 5).tolist()}..., got "
                f"{np.round(g.ravel()[:4], 5).tolist()}..."
            )


@exercise
def check_deep_sigmoid_net(deep_sigmoid_net):
    depth, width = 30, 16
    mt.manual_seed(5)
    model = deep_sigmoid_net(depth, width)
    assert isinstance(model, nn.Module), f"return an nn.Module, got {type(model).__name__}"
    linears = [
        module
        for module in model.modules()
        if isinstance(module, nn.Linear) and module.weight.shape == (width, width)
    ]
    sigmoids = [module for module in model.modules() if isinstance(module, nn.Sigmoid)]
    assert len(linears) >= depth, (
        f"the model must hold at least {depth} nn.Linear({width}, {width}) layers, it has "
        f"{len(linears)}"
    )
    assert sigmoids, "the model must use nn.Sigmoid modules for its activations"
    rng = np.random.default_rng(5)
    x = mt.tensor(rng.standard_normal((8, width)).astype(np.float32))
    y = mt.tensor(rng.standard_normal((8, 1)).astype(np.float32))
    out = model(x)
    assert tuple(out.shape) == (8, 1), f"a batch (8, {width}) must map to (8, 1), got {out.shape}"
    loss = nn.functional.mse_loss(out, y)
    ran = [node.op.name for node in graph_nodes([loss])]
    assert ran.count("sigmoid") >= depth and ran.count("linear") >= depth, (
        f"the forward ran {ran.count('linear')} linear layers and {ran.count('sigmoid')} "
        f"sigmoids; it must run at least {depth} of each"
    )
    model.zero_grad()
    loss.backward()
    first, last = (np.linalg.norm(layer.weight.grad.numpy()) for layer in (linears[0], linears[-1]))
    ratio = first / last
    assert 1e-2 < ratio < 1e2, (
        f"the first linear layer's weight gradient is {ratio:.1e} times the last one's: the "
        f"gradient {'vanishes' if ratio < 1 else 'explodes'} across the network"
    )
