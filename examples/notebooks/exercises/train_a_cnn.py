"""Checks of the exercises of 03_train_a_cnn: a convolution's output shape, top-k accuracy, a
warm-up and cosine learning-rate schedule, and the bug in a training loop."""

from __future__ import annotations

import math

import numpy as np

import minitrain as mt
from exercises import exercise
from minitrain import nn, optim

CONV_CASES = [  # input shape, out_channels, kernel_size, stride, padding, dilation
    ((64, 1, 8, 8), 16, 3, 1, 1, 1),  # the first conv of the notebook's model
    ((64, 16, 4, 4), 32, 3, 1, 1, 1),  # the second
    ((2, 3, 32, 32), 8, 5, 1, 0, 1),
    ((2, 3, 32, 32), 8, 3, 2, 1, 1),
    ((1, 3, 28, 28), 4, 4, 3, 0, 1),  # (28 - 4) / 3 + 1 = 9: exact
    ((1, 3, 29, 29), 4, 4, 3, 0, 1),  # the last window would stick out: floor
    ((2, 1, 10, 12), 2, (3, 5), (2, 1), (0, 2), 1),
    ((1, 2, 16, 16), 3, 3, 1, 0, 2),  # dilation 2: a 3x3 kernel spans 5x5
    ((1, 2, 9, 7), 3, (2, 3), 2, 1, (2, 1)),
]


def _pair(value) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else tuple(value)


@exercise
def check_conv_output_shape(conv_output_shape):
    for input_shape, out_channels, kernel_size, stride, padding, dilation in CONV_CASES:
        conv = nn.Conv2d(input_shape[1], out_channels, kernel_size, stride, padding, dilation)
        with mt.no_grad():
            actual = tuple(conv(mt.zeros(*input_shape)).shape)
        got = conv_output_shape(input_shape, out_channels, kernel_size, stride, padding, dilation)
        got = tuple(int(size) for size in got)
        setup = (
            f"input {input_shape}, out_channels {out_channels}, kernel_size {kernel_size}, "
            f"stride {stride}, padding {padding}, dilation {dilation}"
        )
        assert len(got) == 4, f"{setup}: return (N, C_out, H_out, W_out), got {got}"
        assert got[:2] == actual[:2], (
            f"{setup}: the batch size stays, the channels become out_channels: expected "
            f"{actual[:2]} in front, got {got[:2]}"
        )
        (kh, kw), (dh, dw) = _pair(kernel_size), _pair(dilation)
        span = (dh * (kh - 1) + 1, dw * (kw - 1) + 1)
        hint = f" (with dilation {dilation} the kernel spans {span})" if span != (kh, kw) else ""
        assert got == actual, f"{setup}: nn.Conv2d gives {actual}, you say {got}{hint}"


@exercise
def check_top_k_accuracy(top_k_accuracy):
    logits = mt.tensor([[0.1, 2.0, 0.3], [5.0, 1.0, 0.0], [0.2, 0.1, 0.7], [1.0, 3.0, 2.0]])
    labels = mt.tensor([1, 1, 1, 2])
    for k, expected in ((1, 0.25), (2, 0.75), (3, 1.0)):
        got = top_k_accuracy(logits, labels, k)
        assert isinstance(got, float), (
            f"return a Python float (float(...)), got {type(got).__name__}"
        )
        assert math.isclose(got, expected), (
            f"logits {logits.numpy().tolist()}, labels {labels.numpy().tolist()}, k={k}: "
            f"the label is among the k largest logits in {expected:.0%} of the rows; got {got}"
        )
    generator = np.random.default_rng(0)
    scores = generator.standard_normal((200, 10)).astype(np.float32)
    targets = generator.integers(0, 10, size=200)
    ranks = (scores > scores[np.arange(200), targets][:, None]).sum(axis=1)  # 0: the largest
    for k in (1, 3, 5):
        expected = float((ranks < k).mean())
        got = top_k_accuracy(mt.tensor(scores), mt.tensor(targets), k)
        assert math.isclose(got, expected), (
            f"200 random rows of 10 classes, k={k}: expected {expected}, got {got}"
        )


@exercise
def check_warmup_cosine(warmup_cosine):
    warmup, total = 10, 110
    factors = [warmup_cosine(step, warmup, total) for step in range(total + 5)]
    for step, factor in enumerate(factors):
        assert isinstance(factor, (int, float)) and 0.0 <= factor <= 1.0 + 1e-12, (
            f"step {step}: a factor of the peak learning rate, between 0 and 1; got {factor!r}"
        )
    assert math.isclose(factors[0], 1 / warmup), (
        f"step 0 of a {warmup}-step warm-up: (0 + 1) / {warmup} = {1 / warmup}, got {factors[0]}"
    )
    assert math.isclose(factors[warmup - 1], 1.0), (
        f"the last warm-up step ({warmup - 1}) reaches the peak, 1.0; got {factors[warmup - 1]}"
    )
    rising = factors[:warmup]
    assert all(b > a for a, b in zip(rising, rising[1:], strict=False)), (
        f"the warm-up rises linearly: {rising}"
    )
    assert math.isclose(factors[warmup], 1.0), (
        f"the cosine starts at the peak: step {warmup} gives 1.0, got {factors[warmup]}"
    )
    middle = warmup + (total - warmup) // 2
    assert math.isclose(factors[middle], 0.5, abs_tol=1e-9), (
        f"halfway through the cosine (step {middle}) the factor is 0.5, got {factors[middle]}"
    )
    quarter = warmup + (total - warmup) // 4
    expected = 0.5 * (1 + math.cos(math.pi / 4))
    assert math.isclose(factors[quarter], expected), (
        f"a quarter of the way (step {quarter}): 0.5 (1 + cos(pi/4)) = {expected:.4f}, got "
        f"{factors[quarter]}"
    )
    assert all(math.isclose(f, 0.0, abs_tol=1e-12) for f in factors[total:]), (
        f"from step total_steps = {total} on, the factor is 0; got {factors[total:]}"
    )
    falling = factors[warmup:total]
    assert all(b <= a for a, b in zip(falling, falling[1:], strict=False)), (
        "after the warm-up the factor never rises"
    )


def _setup(seed: int = 0):
    """A small classifier, its SGD optimizer and four batches, the same for the same seed."""
    mt.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    generator = np.random.default_rng(seed)
    batches = [
        (
            mt.tensor(generator.standard_normal((16, 4)).astype(np.float32)),
            mt.tensor(generator.integers(0, 3, size=16)),
        )
        for _ in range(4)
    ]
    return model, optim.SGD(model.parameters(), lr=0.5), batches


def _reference(accumulate: bool):
    model, optimizer, batches = _setup()
    losses = []
    for inputs, targets in batches:
        if not accumulate:
            optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, [p.numpy().copy() for p in model.parameters()]


@exercise
def check_train_steps(train_steps):
    model, optimizer, batches = _setup()
    start = [p.numpy().copy() for p in model.parameters()]
    losses = train_steps(model, batches, nn.CrossEntropyLoss(), optimizer)
    params = [p.numpy() for p in model.parameters()]
    assert not all(np.array_equal(a, b) for a, b in zip(params, start, strict=True)), (
        "the parameters did not change: does optimizer.step() run after loss.backward(), and "
        "are the gradients cleared before backward rather than between backward and step?"
    )
    expected_losses, expected = _reference(accumulate=False)
    _, accumulated = _reference(accumulate=True)
    if all(np.allclose(a, b) for a, b in zip(params, accumulated, strict=True)):
        raise AssertionError(
            "this is the loop with the bug: backward adds to .grad, so step k used the sum of "
            "the gradients of steps 1 to k. Clear them every step (optimizer.zero_grad())"
        )
    assert len(losses) == len(batches), f"return one loss per batch, got {len(losses)}"
    for step, (got, want) in enumerate(zip(losses, expected_losses, strict=True)):
        assert math.isclose(float(got), want, rel_tol=1e-5), (
            f"batch {step}: loss {float(got):.6f}, expected {want:.6f}"
        )
    for (name, _), got, want in zip(model.named_parameters(), params, expected, strict=True):
        assert np.allclose(got, want, atol=1e-6), (
            f"after {len(batches)} steps {name} differs from a correct loop's by "
            f"{np.abs(got - want).max():.2e}"
        )
