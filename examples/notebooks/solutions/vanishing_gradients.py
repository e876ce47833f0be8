"""Solutions to the exercises of 06_vanishing_gradients."""

from __future__ import annotations

import math

import numpy as np

from minitrain import nn


def leaky_relu_init_std(fan_in, negative_slope):
    """For z symmetric around 0, the positive half holds E[z^2] / 2 and stays, the negative half
    holds E[z^2] / 2 and is multiplied by a, so its square by a^2: E[h^2] = (1 + a^2) / 2 *
    Var(z). Keeping Var(z) from layer to layer needs fan_in Var(W) (1 + a^2) / 2 = 1. The same
    as nn.init.calculate_gain("leaky_relu", a) / sqrt(fan_in)."""
    return math.sqrt(2.0 / ((1.0 + negative_slope**2) * fan_in))


def predictions():
    """Factor per block: the gain with no activation (1: neither; 1.5^23: explodes); gain /
    sqrt(2) for relu (0.71^23 = 4e-4: vanishes; 1: neither; 1.41^23 = 3e3: explodes); at most
    1/4 times the weights' scale for the sigmoid (vanishes); a residual connection with
    LayerNorm keeps the identity's factor 1 (neither)."""
    return {
        "linear, gain 1": "neither",
        "linear, gain 1.5": "explodes",
        "relu, gain 1": "vanishes",
        "relu, gain sqrt 2": "neither",
        "relu, gain 2": "explodes",
        "sigmoid, gain 1": "vanishes",
        "sigmoid, gain 1, residual + LayerNorm": "neither",
    }


def activation_grad_norms(model, x, y):
    """A forward hook on each activation module puts a tensor hook on its output; the tensor
    hooks fire during backward, from the output to the input, and each writes its norm into
    the slot of its layer, so the list comes out in forward order."""
    activations = [m for m in model if isinstance(m, (nn.Sigmoid, nn.Tanh, nn.ReLU))]
    norms = [None] * len(activations)

    def watch(index):
        def record(grad):
            norms[index] = float(np.linalg.norm(grad.numpy()))

        return lambda module, inputs, output: output.register_hook(record) and None

    handles = [m.register_forward_hook(watch(i)) for i, m in enumerate(activations)]
    try:
        nn.functional.mse_loss(model(x), y).backward()
    finally:
        for handle in handles:
            handle.remove()
    return norms


def clip_by_global_norm(grads, max_norm):
    """One scale for all the gradients keeps the step's direction: total = sqrt(sum of every
    squared element), and every gradient times min(1, max_norm / total)."""
    total = math.sqrt(sum(float(np.sum(np.square(g))) for g in grads))
    scale = min(1.0, max_norm / total) if total > 0 else 1.0
    return [g * scale for g in grads], total


class ResidualSigmoidBlock(nn.Module):
    """h + sigmoid(W h + b): the identity carries the gradient past the sigmoid, whose slope is
    at most 1/4."""

    def __init__(self, width):
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.act = nn.Sigmoid()

    def forward(self, h):
        return h + self.act(self.linear(h))


class ResidualSigmoidNet(nn.Module):
    def __init__(self, depth, width):
        super().__init__()
        self.blocks = nn.Sequential(*[ResidualSigmoidBlock(width) for _ in range(depth)])
        self.head = nn.Linear(width, 1)

    def forward(self, x):
        return self.head(self.blocks(x))


def deep_sigmoid_net(depth=30, width=16):
    return ResidualSigmoidNet(depth, width)
