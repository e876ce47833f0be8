"""The two higher-order-gradient examples against PyTorch: Newton's method on Rosenbrock
(examples/newton.py) and a WGAN-GP's training trajectory and gradient penalty
(examples/wgan_gp.py)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn

_EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "examples")
sys.path.insert(0, _EXAMPLES)
try:
    import newton
    import wgan_gp
finally:
    sys.path.remove(_EXAMPLES)

_START = np.array([-1.2, 1.0])


def test_newton_hessian_rows_are_rosenbrocks_second_derivatives():
    x = mt.tensor(_START)
    g, hessian = newton.gradient_and_hessian(newton.rosenbrock, x)
    # f = (1 - a)^2 + 100 (b - a^2)^2: df/da = -2(1 - a) - 400 a (b - a^2), df/db = 200 (b - a^2);
    # d2f/da2 = 2 - 400 (b - 3 a^2), d2f/dadb = -400 a, d2f/db2 = 200
    a, b = _START
    np.testing.assert_allclose(g, [-2 * (1 - a) - 400 * a * (b - a**2), 200 * (b - a**2)])
    expected = [[2 - 400 * (b - 3 * a**2), -400 * a], [-400 * a, 200.0]]
    np.testing.assert_allclose(hessian, expected, rtol=1e-14)
    np.testing.assert_allclose(
        mt.autograd.functional.hessian(newton.rosenbrock, x).numpy(), expected, rtol=1e-14
    )


def test_newton_converges_quadratically_on_rosenbrock():
    trajectory = newton.newton(newton.rosenbrock, _START, steps=7)
    assert trajectory[-1]["grad_norm"] < 1e-10
    np.testing.assert_allclose(trajectory[-1]["x"], [1.0, 1.0], rtol=0, atol=1e-12)
    errors = [np.linalg.norm(record["x"] - 1.0) for record in trajectory]
    # The last steps square the error (up to a constant below 1): 5.6e-2, 9.6e-6, 1.9e-11.
    for k in (4, 5):
        assert 0 < errors[k + 1] < errors[k] ** 2


def test_newton_iterates_match_pytorch():
    torch = pytest.importorskip("torch")

    def rosenbrock(x):
        return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2

    x = torch.tensor(_START, dtype=torch.float64)
    theirs = []
    for _ in range(7):
        theirs.append(x.numpy().copy())
        x = x.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(rosenbrock(x), x, create_graph=True)
        hessian = torch.stack([torch.autograd.grad(g[i], x, retain_graph=True)[0] for i in (0, 1)])
        x = x.detach() - torch.linalg.solve(hessian, g.detach())
    ours = [record["x"] for record in newton.newton(newton.rosenbrock, _START, steps=6)]
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)


def _torch_twin(torch, model: nn.Sequential, dtype):
    """A torch.nn.Sequential of the same layers as `model`, with a copy of its weights."""
    layers = []
    for layer in model:
        if isinstance(layer, nn.Linear):
            twin = torch.nn.Linear(layer.in_features, layer.out_features, dtype=dtype)
            with torch.no_grad():
                twin.weight.copy_(torch.from_numpy(layer.weight.numpy().copy()))
                twin.bias.copy_(torch.from_numpy(layer.bias.numpy().copy()))
        elif isinstance(layer, nn.LeakyReLU):
            twin = torch.nn.LeakyReLU(layer.negative_slope)
        else:
            twin = {nn.ReLU: torch.nn.ReLU, nn.Tanh: torch.nn.Tanh}[type(layer)]()
        layers.append(twin)
    return torch.nn.Sequential(*layers)


def _torch_gradient_penalty(torch, critic, real, fake, alpha):
    x_hat = (alpha * real + (1 - alpha) * fake).detach().requires_grad_(True)
    (slopes,) = torch.autograd.grad(critic(x_hat).sum(), x_hat, create_graph=True)
    return ((slopes.norm(dim=1) - 1) ** 2).mean()


def _torch_train(torch, critic, generator, batches, lr, betas, penalty_weight):
    """wgan_gp.train, line for line, in PyTorch."""
    critic_optimizer = torch.optim.Adam(critic.parameters(), lr=lr, betas=betas)
    generator_optimizer = torch.optim.Adam(generator.parameters(), lr=lr, betas=betas)
    steps, n_critic = batches["real"].shape[:2]
    losses = {"critic": np.zeros((steps, n_critic)), "penalty": np.zeros((steps, n_critic))}
    losses["generator"] = np.zeros(steps)
    for step in range(steps):
        for i in range(n_critic):
            real = torch.from_numpy(batches["real"][step, i])
            fake = generator(torch.from_numpy(batches["critic_noise"][step, i])).detach()
            alpha = torch.from_numpy(batches["alpha"][step, i])
            penalty = _torch_gradient_penalty(torch, critic, real, fake, alpha)
            loss = critic(fake).mean() - critic(real).mean() + penalty_weight * penalty
            critic_optimizer.zero_grad()
            loss.backward()
            critic_optimizer.step()
            losses["critic"][step, i], losses["penalty"][step, i] = loss.item(), penalty.item()
        loss = -critic(generator(torch.from_numpy(batches["generator_noise"][step]))).mean()
        generator_optimizer.zero_grad()
        loss.backward()
        generator_optimizer.step()
        losses["generator"][step] = loss.item()
    return losses


# float32, as a real run, drifts past 1e-4 relative in 20 steps, but only where a critic loss
# passes near zero: the loss D(fake) - D(real) + 10 penalty sums terms of order 1 to as little
# as 8e-4, so their float32 rounding, amplified by 100 Adam updates (the critic's first layer
# ends 1.7e-5 away from PyTorch's, its second 6e-7, the generator's 6e-8), is an absolute error
# of at most 2.1e-6: 1.06e-4 relative on a loss of 0.0135 (step 16), 1e-7 to 3e-6 on the
# penalties and generator losses. float64 agrees to 3e-14 everywhere (the formulas are the same),
# so it is checked to 1e-10 relative, and float32 to 1e-4 relative or 1e-5 absolute.
@pytest.mark.parametrize(
    "dtype, tolerance",
    [("float64", {"rtol": 1e-10}), ("float32", {"rtol": 1e-4, "atol": 1e-5})],
    ids=["float64", "float32"],
)
def test_wgan_gp_trajectory_matches_pytorch_for_20_steps(dtype, tolerance):
    torch = pytest.importorskip("torch")
    mt.manual_seed(0)
    critic = wgan_gp.make_critic(hidden=32, dtype=dtype)
    generator = wgan_gp.make_generator(hidden=32, dtype=dtype)
    their_critic = _torch_twin(torch, critic, getattr(torch, dtype))
    their_generator = _torch_twin(torch, generator, getattr(torch, dtype))
    batches = wgan_gp.draw_batches(steps=20, n_critic=5, batch_size=64, seed=0, dtype=dtype)
    # lr 1e-3 rather than the paper's 1e-4: the weights move further in 20 steps, a harder test
    settings = {"lr": 1e-3, "betas": (0.5, 0.9), "penalty_weight": 10.0}
    ours = wgan_gp.train(critic, generator, batches, **settings)
    theirs = _torch_train(torch, their_critic, their_generator, batches, **settings)
    for name in ("critic", "penalty", "generator"):
        np.testing.assert_allclose(ours[name], theirs[name], **tolerance, err_msg=name)
    assert np.all(ours["penalty"] > 0)
    assert ours["penalty"][-1].mean() < 0.2 * ours["penalty"][0, 0]  # the critic learned


@pytest.mark.parametrize("activation", [nn.LeakyReLU(0.2), nn.Tanh()], ids=["leaky_relu", "tanh"])
def test_gradient_penalty_gradient_with_respect_to_critic_weights_matches_pytorch(activation):
    """The part that needs create_graph: d penalty / d weights goes through grad_x D. With a
    LeakyReLU critic the activation's second derivative is zero and the penalty's gradient comes
    through the weights on the path of grad_x D (the first layer's bias gets none); with Tanh,
    its second derivative adds to every weight's gradient, the first bias's included."""
    torch = pytest.importorskip("torch")
    mt.manual_seed(1)
    critic = nn.Sequential(
        nn.Linear(2, 16, dtype=np.float64),
        activation,
        nn.Linear(16, 16, dtype=np.float64),
        activation,
        nn.Linear(16, 1, dtype=np.float64),
    )
    their_critic = _torch_twin(torch, critic, torch.float64)
    batches = wgan_gp.draw_batches(steps=1, n_critic=1, batch_size=32, seed=3, dtype=np.float64)
    real, alpha = batches["real"][0, 0], batches["alpha"][0, 0]
    fake = 0.5 * batches["critic_noise"][0, 0]  # stands for a generator's output

    penalty = wgan_gp.gradient_penalty(critic, mt.tensor(real), mt.tensor(fake), mt.tensor(alpha))
    penalty.backward()
    reference = _torch_gradient_penalty(
        torch, their_critic, *(torch.from_numpy(a) for a in (real, fake, alpha))
    )
    reference.backward()

    np.testing.assert_allclose(penalty.item(), reference.item(), rtol=1e-12)
    for (name, p), q in zip(critic.named_parameters(), their_critic.parameters(), strict=True):
        expected = np.zeros(q.shape) if q.grad is None else q.grad.numpy()
        ours = np.zeros(p.shape) if p.grad is None else p.grad.numpy()
        np.testing.assert_allclose(ours, expected, rtol=1e-10, atol=1e-14, err_msg=name)
    never_zero = ["0.weight", "2.weight", "4.weight"]
    if isinstance(activation, nn.Tanh):
        never_zero += ["0.bias", "2.bias"]
    for name, p in critic.named_parameters():
        if name in never_zero:
            assert p.grad is not None and np.abs(p.grad.numpy()).min() > 0, name
        elif name == "4.bias":  # D's last bias shifts D, not its gradient
            assert p.grad is None or not p.grad.numpy().any(), name
