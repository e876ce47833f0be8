"""Solutions to the exercises of 03_train_a_cnn."""

from __future__ import annotations

import math


def conv_output_shape(
    input_shape, out_channels: int, kernel_size, stride=1, padding=0, dilation=1
) -> tuple[int, int, int, int]:
    """(N, C_out, H_out, W_out) of nn.Conv2d on an input (N, C_in, H, W). Per spatial dim: a
    kernel of k taps, dilation d, spans d (k - 1) + 1 positions; on the padded length
    L + 2 p its first position can be 0, s, 2 s, ... up to L + 2 p - span, so there are
    floor((L + 2 p - span) / s) + 1 windows."""

    def pair(value):
        return (value, value) if isinstance(value, int) else tuple(value)

    batch, _, *sizes = input_shape
    out = []
    for size, k, s, p, d in zip(
        sizes, pair(kernel_size), pair(stride), pair(padding), pair(dilation), strict=True
    ):
        span = d * (k - 1) + 1
        out.append((size + 2 * p - span) // s + 1)
    return (batch, out_channels, *out)


def top_k_accuracy(logits, labels, k: int = 1) -> float:
    """The fraction of rows whose label is among the k largest logits."""
    top = logits.numpy().argsort(axis=1)[:, -k:]  # the k largest, per row
    hits = (top == labels.numpy()[:, None]).any(axis=1)
    return float(hits.mean())


def warmup_cosine(step: int, warmup_steps: int, total_steps: int) -> float:
    """The factor of the peak learning rate at `step`: a linear warm-up to 1 over
    `warmup_steps`, then half a cosine down to 0 at `total_steps`, and 0 after."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    if step >= total_steps:
        return 0.0
    progress = (step - warmup_steps) / (total_steps - warmup_steps)
    return 0.5 * (1 + math.cos(math.pi * progress))


def train_steps(model, batches, loss_fn, optimizer) -> list[float]:
    """One optimizer step per batch; the losses. The bug was a missing zero_grad: backward adds
    to .grad, so without it every step used the sum of all the gradients so far."""
    model.train()
    losses = []
    for inputs, targets in batches:
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
