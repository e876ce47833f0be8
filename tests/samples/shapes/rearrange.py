"""Samples of ops/shapes/rearrange.py: its functions, composed of the shape and indexing ops."""

from __future__ import annotations

import numpy as np
from op_samples import Draw, Sample, draws, normal
from reference import torch

from minitrain import ops


def _sample(name, x, call, ref, *others) -> Sample:
    """A sample of one normal input of shape x (and any constant inputs after it)."""
    return Sample(name, draws(normal(*x), *others), call, ref)


COMPOSED: dict[str, list[Sample]] = {
    "roll": [
        _sample("flat", (2, 3), lambda x: ops.roll(x, 2), lambda x: torch.roll(x, 2)),
        _sample(
            "two_dims",
            (2, 3, 4),
            lambda x: ops.roll(x, (1, -5), (0, 2)),
            lambda x: torch.roll(x, (1, -5), (0, 2)),
        ),
        _sample(
            "one_dim_twice",
            (5, 2),
            lambda x: ops.roll(x, (1, 2), (0, 0)),
            lambda x: torch.roll(x, (1, 2), (0, 0)),
        ),
        _sample("zero_d", (), lambda x: ops.roll(x, 3), lambda x: torch.roll(x, 3)),
        _sample("empty_dim", (0, 3), lambda x: ops.roll(x, 1, 1), lambda x: torch.roll(x, 1, 1)),
    ],
    "unfold": [
        _sample(
            "overlapping",
            (2, 6),
            lambda x: ops.unfold(x, 1, 3, 1),
            lambda x: x.unfold(1, 3, 1),
        ),
        _sample(
            "apart_first_dim",
            (7, 2, 3),
            lambda x: ops.unfold(x, 0, 2, 3),
            lambda x: x.unfold(0, 2, 3),
        ),
        _sample(
            "middle_dim_step_2",
            (2, 5, 3),
            lambda x: ops.unfold(x, -2, 3, 2),
            lambda x: x.unfold(-2, 3, 2),
        ),
        _sample("zero_d", (), lambda x: ops.unfold(x, 0, 1, 1), lambda x: x.unfold(0, 1, 1)),
    ],
    "diagonal": [
        _sample("main", (3, 4), ops.diagonal, torch.diagonal),
        _sample(
            "offset_dims",
            (2, 3, 4),
            lambda x: ops.diagonal(x, 1, 0, 2),
            lambda x: torch.diagonal(x, 1, 0, 2),
        ),
        _sample(
            "below_swapped_dims",
            (2, 3, 4),
            lambda x: ops.diagonal(x, -1, 2, 1),
            lambda x: torch.diagonal(x, -1, 2, 1),
        ),
        _sample(
            "past_the_corner",
            (2, 3),
            lambda x: ops.diagonal(x, 5),
            lambda x: torch.diagonal(x, 5),
        ),
    ],
    "diag": [
        _sample("vector", (3,), ops.diag, torch.diag),
        _sample("vector_above", (3,), lambda x: ops.diag(x, 2), lambda x: torch.diag(x, 2)),
        _sample("matrix_below", (3, 4), lambda x: ops.diag(x, -1), lambda x: torch.diag(x, -1)),
    ],
    "diag_embed": [
        _sample("last_dims", (2, 3), ops.diag_embed, torch.diag_embed),
        _sample(
            "offset_dims",
            (2, 3),
            lambda x: ops.diag_embed(x, 1, 0, 2),
            lambda x: torch.diag_embed(x, 1, 0, 2),
        ),
        _sample(
            "below_swapped_dims",
            (2, 3),
            lambda x: ops.diag_embed(x, -2, -1, 0),
            lambda x: torch.diag_embed(x, -2, -1, 0),
        ),
    ],
    "unflatten": [
        _sample(
            "inferred",
            (2, 6),
            lambda x: ops.unflatten(x, -1, (3, -1)),
            lambda x: x.unflatten(-1, (3, -1)),
        ),
        _sample(
            "first_dim",
            (6, 2),
            lambda x: ops.unflatten(x, 0, (1, 2, 3)),
            lambda x: x.unflatten(0, (1, 2, 3)),
        ),
    ],
    "repeat_interleave": [
        _sample(
            "int_along_dim",
            (2, 3),
            lambda x: ops.repeat_interleave(x, 2, 1),
            lambda x: torch.repeat_interleave(x, 2, 1),
        ),
        _sample(
            "int_flat",
            (2, 3),
            lambda x: ops.repeat_interleave(x, 3),
            lambda x: torch.repeat_interleave(x, 3),
        ),
        _sample(
            "counts",
            (3, 2),
            lambda x, counts: ops.repeat_interleave(x, counts, 0),
            lambda x, counts: torch.repeat_interleave(x, counts, 0),
            Draw(lambda rng: np.array([2, 0, 3])),
        ),
        _sample(
            "one_count_tensor",
            (2, 3),
            lambda x, counts: ops.repeat_interleave(x, counts, -1),
            lambda x, counts: torch.repeat_interleave(x, counts, -1),
            Draw(lambda rng: np.array([2])),
        ),
    ],
    "movedim": [
        _sample(
            "one",
            (2, 3, 4),
            lambda x: ops.movedim(x, 0, -1),
            lambda x: torch.movedim(x, 0, -1),
        ),
        _sample(
            "two",
            (2, 3, 4, 1),
            lambda x: ops.movedim(x, (0, 1), (3, 0)),
            lambda x: torch.movedim(x, (0, 1), (3, 0)),
        ),
    ],
    "moveaxis": [
        _sample(
            "two",
            (2, 3, 4),
            lambda x: ops.moveaxis(x, (2, 0), (0, 1)),
            lambda x: torch.moveaxis(x, (2, 0), (0, 1)),
        ),
    ],
    "narrow": [
        _sample("middle", (3, 5), lambda x: ops.narrow(x, 1, 1, 3), lambda x: x.narrow(1, 1, 3)),
        _sample(
            "negative_start",
            (4, 2),
            lambda x: ops.narrow(x, 0, -3, 2),
            lambda x: x.narrow(0, -3, 2),
        ),
    ],
    "swapaxes": [
        _sample(
            "outer",
            (2, 3, 4),
            lambda x: ops.swapaxes(x, 0, -1),
            lambda x: torch.swapaxes(x, 0, -1),
        ),
    ],
    "swapdims": [
        _sample(
            "inner",
            (2, 3, 4),
            lambda x: ops.swapdims(x, 1, 2),
            lambda x: torch.swapdims(x, 1, 2),
        ),
    ],
    "rot90": [
        _sample(
            f"k{k}_dims{a}{b}",
            shape,
            lambda x, k=k, a=a, b=b: ops.rot90(x, k, (a, b)),
            lambda x, k=k, a=a, b=b: torch.rot90(x, k, (a, b)),
        )
        for shape, k, a, b in [
            ((2, 3), 1, 0, 1),
            ((2, 3), 2, 0, 1),
            ((2, 3), 3, 0, 1),
            ((2, 3, 4), -1, 2, 0),
            ((2, 3), 4, 0, 1),
        ]
    ],
}
