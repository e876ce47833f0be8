"""Whole models trained end to end: a small CNN step by step against PyTorch from the same
weights and batches, and the digits example reaching its accuracy and reproducing it from its
checkpoint."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn, optim


def _cnn(framework):
    layers = framework.nn
    return layers.Sequential(
        layers.Conv2d(1, 4, 3, padding=1),
        layers.BatchNorm2d(4),
        layers.ReLU(),
        layers.MaxPool2d(2),
        layers.Conv2d(4, 8, 3, stride=1, padding=1, bias=False),
        layers.BatchNorm2d(8),
        layers.GELU(),
        layers.AvgPool2d(2),
        layers.Flatten(),
        layers.LayerNorm(32),
        layers.Linear(32, 5),
    )


def test_small_cnn_trains_like_pytorch_for_20_sgd_steps():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    theirs = _cnn(torch)
    mt.manual_seed(0)
    ours = _cnn(mt)
    with torch.no_grad():
        for (name, p), (_, q) in zip(
            ours.named_parameters(), theirs.named_parameters(), strict=True
        ):
            assert p.shape == tuple(q.shape), name
            p.array[...] = q.numpy()
    ours_opt = optim.SGD(ours.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    theirs_opt = torch.optim.SGD(theirs.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    rng = np.random.default_rng(0)
    batches = [
        (rng.standard_normal((16, 1, 8, 8), dtype=np.float32), rng.integers(0, 5, 16))
        for _ in range(4)
    ]
    our_losses, their_losses = [], []
    for step in range(20):
        images, labels = batches[step % 4]
        ours_opt.zero_grad()
        loss = nn.functional.cross_entropy(ours(mt.Tensor(images)), labels)
        loss.backward()
        ours_opt.step()
        theirs_opt.zero_grad()
        reference = torch.nn.functional.cross_entropy(
            theirs(torch.from_numpy(images)), torch.from_numpy(labels)
        )
        reference.backward()
        theirs_opt.step()
        our_losses.append(loss.item())
        their_losses.append(reference.item())
    np.testing.assert_allclose(our_losses, their_losses, rtol=1e-4)
    assert np.mean(our_losses[-4:]) < 0.8 * np.mean(our_losses[:4])  # it learned its 4 batches
    for (name, p), (_, q) in zip(ours.named_buffers(), theirs.named_buffers(), strict=True):
        np.testing.assert_allclose(p.array, q.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)


def test_digits_cnn_example_reaches_97_percent_and_its_checkpoint_reproduces_it(tmp_path):
    pytest.importorskip("sklearn")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    examples = os.path.join(root, "examples")
    sys.path.insert(0, examples)
    try:
        import train_digits
    finally:
        sys.path.remove(examples)
    accuracy = train_digits.main(out=str(tmp_path / "digits"))
    assert accuracy >= 0.97
    assert (tmp_path / "digits" / "curves.png").stat().st_size > 0
    state = mt.load(tmp_path / "digits" / "checkpoint.npz")
    assert set(state) == {"model", "optimizer"}
    assert state["model"]["0.weight"].shape == (16, 1, 3, 3)
