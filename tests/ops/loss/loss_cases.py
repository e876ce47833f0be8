"""What the loss tests share: the ways to call cross_entropy (Case), and gradients of a loss
seeded with a random upstream gradient."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

import minitrain as mt
from minitrain import ops

REDUCTIONS = ["none", "mean", "sum"]


def grads_of(out, inputs, upstream):
    """Gradients of out, seeded with upstream, with respect to inputs (arrays, None if unused)."""
    found = mt.grad(out, inputs, grad_outputs=mt.tensor(upstream), allow_unused=True)
    return [None if g is None else g.array for g in found]


def random_upstream(out, seed=1):
    """A standard normal upstream gradient of out's shape and dtype."""
    return np.random.default_rng(seed).standard_normal(out.shape).astype(out.dtype)


class Case(NamedTuple):
    """One way to call cross_entropy: logits shape, target kind and options."""

    name: str
    shape: tuple
    probabilities: bool = False
    weight: bool = False
    ignore_index: int | None = None  # None: the default -100, and no position ignored
    smoothing: float = 0.0

    def make(self, dtype=np.float64, seed=0, scale=1.0):
        """(logits, target, weight) arrays, and the keyword options."""
        rng = np.random.default_rng(seed)
        logits = (scale * rng.standard_normal(self.shape)).astype(dtype)
        classes = self.shape[1] if len(self.shape) > 1 else self.shape[0]
        positions = self.shape[:1] + self.shape[2:] if len(self.shape) > 1 else ()
        if self.probabilities:
            target = np.moveaxis(
                rng.dirichlet(np.ones(classes), positions), -1, 1 % len(self.shape)
            )
            target = target.astype(dtype)
        else:
            target = rng.integers(0, classes, positions)
            if self.ignore_index is not None and target.ndim:
                target.flat[0] = self.ignore_index
                target.flat[1] = (self.ignore_index + 1) % classes
        weight = rng.uniform(0.5, 2.0, classes).astype(dtype) if self.weight else None
        options = {"label_smoothing": self.smoothing}
        if self.ignore_index is not None:
            options["ignore_index"] = self.ignore_index
        return logits, target, weight, options


CASES = [
    Case("classes", (6, 5)),
    Case("classes_weight_ignored", (6, 5), weight=True, ignore_index=-100),
    Case(
        "classes_weight_ignored_smoothing", (6, 5), weight=True, ignore_index=-100, smoothing=0.25
    ),
    Case("classes_ignore_a_class_smoothing", (7, 4), ignore_index=3, smoothing=0.1),
    Case("rank3_classes", (3, 4, 5)),
    Case("rank4_classes_weight_ignored_smoothing", (2, 4, 3, 2), False, True, -100, 0.2),
    Case("probabilities", (5, 4), probabilities=True),
    Case("probabilities_weight_smoothing", (5, 4), probabilities=True, weight=True, smoothing=0.3),
    Case("rank4_probabilities_weight", (2, 3, 2, 2), probabilities=True, weight=True),
    Case("single_sample_weight_smoothing", (5,), weight=True, smoothing=0.2),
    Case("single_sample_probabilities", (5,), probabilities=True),
]


def case_params(cases):
    return [
        pytest.param(case, reduction, id=f"{case.name}-{reduction}")
        for case in cases
        for reduction in REDUCTIONS
    ]


def minitrain_xent(case, reduction, dtype=np.float64, seed=0, scale=1.0):
    """(loss, differentiable inputs) of minitrain's cross_entropy on the case's inputs."""
    logits, target, weight, options = case.make(dtype, seed, scale)
    x = mt.tensor(logits, requires_grad=True)
    t = mt.tensor(target, requires_grad=case.probabilities)
    w = None if weight is None else mt.tensor(weight)
    out = ops.cross_entropy(x, t, w, reduction=reduction, **options)
    return out, ([x, t] if case.probabilities else [x])
