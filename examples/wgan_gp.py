"""A WGAN-GP (Gulrajani et al., 2017) learning a 2-D mixture of eight Gaussians.

python examples/wgan_gp.py [--steps 300]

A Wasserstein GAN trains a critic D to score real samples high and generated ones low, and a
generator G to raise the scores of its samples. The critic must be 1-Lipschitz (its gradient no
longer than 1 anywhere); WGAN-GP asks for that softly, with a gradient penalty on points x_hat
drawn on the segments between real and generated samples:

    critic loss    = mean D(G(z)) - mean D(x) + lambda * mean (||grad_x D(x_hat)||_2 - 1)^2
    generator loss = -mean D(G(z))

The penalty contains a gradient, so training the critic on it differentiates a derivative:
`mt.grad(D(x_hat).sum(), x_hat, create_graph=True)` returns grad_x D(x_hat) as a Tensor with
a graph, and the critic loss's backward goes through that graph into D's weights.

The settings are the paper's: Adam with lr 1e-4 and betas (0.5, 0.9), lambda = 10, five critic
updates per generator update. What the printout shows, over these first 300 steps: the penalty
drops from about 0.4 to a few hundredths as the critic becomes 1-Lipschitz along the
interpolates; the critic's estimate of the Wasserstein distance, mean D(x) - mean D(G(z)),
rises as the critic, from random weights, learns to tell the two distributions apart; and the
generator's samples move out onto the circle of modes. Spreading evenly over all eight modes
takes thousands of steps more, and GAN losses stay noisy all along.

`train` runs the loop from given models and pre-drawn numbers (`draw_batches`), so that a test
can run PyTorch on exactly the same weights, data, noise and interpolation coefficients.
"""

from __future__ import annotations

import argparse

import numpy as np

import minitrain as mt
from minitrain import Tensor, nn, optim

NOISE_DIM = 2


def mixture_of_gaussians(count: int, rng: np.random.Generator, std: float = 0.05) -> np.ndarray:
    """`count` points (count, 2) from eight Gaussians of std `std` on the circle of radius 2."""
    angles = 2 * np.pi * rng.integers(0, 8, count) / 8
    centres = 2 * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    return centres + std * rng.standard_normal((count, 2))


def make_critic(hidden: int = 64, dtype=np.float32) -> nn.Sequential:
    """D: R^2 -> R, an MLP with LeakyReLU (no normalisation layers: the penalty is per sample)."""
    return nn.Sequential(
        nn.Linear(2, hidden, dtype=dtype),
        nn.LeakyReLU(0.2),
        nn.Linear(hidden, hidden, dtype=dtype),
        nn.LeakyReLU(0.2),
        nn.Linear(hidden, 1, dtype=dtype),
    )


def make_generator(hidden: int = 64, dtype=np.float32) -> nn.Sequential:
    """G: R^NOISE_DIM -> R^2, an MLP with ReLU."""
    return nn.Sequential(
        nn.Linear(NOISE_DIM, hidden, dtype=dtype),
        nn.ReLU(),
        nn.Linear(hidden, hidden, dtype=dtype),
        nn.ReLU(),
        nn.Linear(hidden, 2, dtype=dtype),
    )


def draw_batches(
    steps: int, n_critic: int, batch_size: int, seed: int = 0, dtype=np.float32
) -> dict[str, np.ndarray]:
    """Every random number `steps` generator steps use, drawn up front: per critic iteration a
    real batch, generator noise and the interpolation coefficients alpha ~ U(0, 1); per
    generator step its noise."""
    rng = np.random.default_rng(seed)
    real = mixture_of_gaussians(steps * n_critic * batch_size, rng)
    batches = {
        "real": real.reshape(steps, n_critic, batch_size, 2),
        "critic_noise": rng.standard_normal((steps, n_critic, batch_size, NOISE_DIM)),
        "alpha": rng.uniform(size=(steps, n_critic, batch_size, 1)),
        "generator_noise": rng.standard_normal((steps, batch_size, NOISE_DIM)),
    }
    return {name: values.astype(dtype) for name, values in batches.items()}


def gradient_penalty(critic, real: Tensor, fake: Tensor, alpha: Tensor) -> Tensor:
    """mean over the batch of (||grad D(x_hat)||_2 - 1)^2, x_hat = alpha real + (1 - alpha) fake.

    D(x_hat).sum() has, as its gradient with respect to x_hat, each sample's own gradient in its
    row (sample i's score depends on row i only). create_graph=True records that backward pass,
    so the penalty stays a function of the critic's weights, and can be trained."""
    x_hat = (alpha * real + (1 - alpha) * fake).detach()
    x_hat.requires_grad = True
    (slopes,) = mt.grad(critic(x_hat).sum(), x_hat, create_graph=True)
    return ((slopes.norm(dim=1) - 1) ** 2).mean()


def train(
    critic,
    generator,
    batches: dict[str, np.ndarray],
    lr: float = 1e-4,
    betas: tuple[float, float] = (0.5, 0.9),
    penalty_weight: float = 10.0,
) -> dict[str, np.ndarray]:
    """Train critic and generator in place on `batches` (from draw_batches): per step, n_critic
    critic updates, then one generator update, each by Adam. Returns the losses, each taken
    before its update: "critic" and its "penalty" (the gradient penalty, before the weight),
    both (steps, n_critic), and "generator" (steps,)."""
    critic_optimizer = optim.Adam(critic.parameters(), lr=lr, betas=betas)
    generator_optimizer = optim.Adam(generator.parameters(), lr=lr, betas=betas)
    steps, n_critic = batches["real"].shape[:2]
    losses = {"critic": np.zeros((steps, n_critic)), "penalty": np.zeros((steps, n_critic))}
    losses["generator"] = np.zeros(steps)
    for step in range(steps):
        for i in range(n_critic):
            real = mt.tensor(batches["real"][step, i])
            fake = generator(mt.tensor(batches["critic_noise"][step, i])).detach()
            alpha = mt.tensor(batches["alpha"][step, i])
            penalty = gradient_penalty(critic, real, fake, alpha)
            loss = critic(fake).mean() - critic(real).mean() + penalty_weight * penalty
            critic_optimizer.zero_grad()
            loss.backward()
            critic_optimizer.step()
            losses["critic"][step, i], losses["penalty"][step, i] = loss.item(), penalty.item()

        loss = -critic(generator(mt.tensor(batches["generator_noise"][step]))).mean()
        generator_optimizer.zero_grad()
        loss.backward()  # also fills the critic's .grad, which its next zero_grad clears
        generator_optimizer.step()
        losses["generator"][step] = loss.item()
    return losses


def distance_to_modes(generator, count: int = 1000, seed: int = 1) -> float:
    """The mean distance from `count` generated samples to the nearest of the eight centres."""
    noise = np.random.default_rng(seed).standard_normal((count, NOISE_DIM), np.float32)
    with mt.no_grad():
        samples = generator(mt.tensor(noise)).numpy()
    angles = 2 * np.pi * np.arange(8) / 8
    centres = 2 * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    return float(np.linalg.norm(samples[:, None] - centres, axis=2).min(axis=1).mean())


def main(steps: int = 300, n_critic: int = 5, batch_size: int = 128, seed: int = 0) -> dict:
    mt.manual_seed(seed)
    critic, generator = make_critic(), make_generator()
    before = distance_to_modes(generator)
    batches = draw_batches(steps, n_critic, batch_size, seed)
    losses = train(critic, generator, batches)
    # The critic loss without its penalty is -(mean D(real) - mean D(fake)): the critic's
    # estimate of the Wasserstein distance between the data and the generator's samples.
    wasserstein = 10.0 * losses["penalty"] - losses["critic"]
    print("steps      distance estimate  gradient penalty  generator loss   (window means)")
    window = max(steps // 10, 1)
    for start in range(0, steps, window):
        span = slice(start, start + window)
        print(
            f"{start:4d}-{min(start + window, steps) - 1:<4d} {wasserstein[span].mean():17.4f} "
            f"{losses['penalty'][span].mean():17.4f} {losses['generator'][span].mean():15.4f}"
        )
    after = distance_to_modes(generator)
    print(f"mean distance of generated samples to the nearest mode: {before:.2f} -> {after:.2f}")
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    arguments = parser.parse_args()
    main(arguments.steps, seed=arguments.seed)
