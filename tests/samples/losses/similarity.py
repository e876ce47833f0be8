"""Samples of ops/losses/similarity.py: similarities and normalize, composed ops."""

from __future__ import annotations

import numpy as np
from op_samples import Draw, Sample, draws, functional_sample, normal
from reference import torch

import minitrain as mt
from minitrain import ops
from minitrain.nn import functional

COMPOSED: dict[str, list[Sample]] = {
    "cosine_similarity": [
        functional_sample(
            "rows", (normal(4, 5), normal(4, 5)), "cosine_similarity", "cosine_similarity"
        ),
        functional_sample(
            "dim0_broadcast",
            (normal(3, 1, 4), normal(3, 2, 1)),
            "cosine_similarity",
            "cosine_similarity",
            dim=0,
        ),
        Sample(
            "top_level_last_dim",
            draws(normal(2, 3, 4), normal(2, 3, 4)),
            lambda a, b: mt.cosine_similarity(a, b, -1),
            lambda a, b: torch.cosine_similarity(a, b, -1),
        ),
    ],
    "pairwise_distance": [
        functional_sample(
            "p2", (normal(4, 5), normal(4, 5)), "pairwise_distance", "pairwise_distance"
        ),
        functional_sample(
            "p1_keepdim",
            (normal(3, 4), normal(3, 4)),
            "pairwise_distance",
            "pairwise_distance",
            p=1.0,
            keepdim=True,
        ),
        functional_sample(
            "p3_broadcast",
            (normal(3, 4), normal(4)),
            "pairwise_distance",
            "pairwise_distance",
            p=3.0,
        ),  # fmt: skip
        functional_sample(
            "p_inf",
            (normal(3, 4), normal(3, 4)),
            "pairwise_distance",
            "pairwise_distance",
            p=float("inf"),
        ),  # fmt: skip
        functional_sample(
            "p_negative",
            (normal(3, 4), normal(3, 4)),
            "pairwise_distance",
            "pairwise_distance",
            p=-1.5,
        ),  # fmt: skip
        Sample(
            "top_level_1d",
            draws(normal(5), normal(5)),
            lambda a, b: mt.pairwise_distance(a, b),
            lambda a, b: torch.pairwise_distance(a, b),
        ),
    ],
    "normalize": [
        Sample(
            "ops_p2_dim1",
            draws(normal(3, 4)),
            lambda x: ops.normalize(x),
            lambda x: torch.nn.functional.normalize(x),
        ),
        functional_sample("p2_dim1", (normal(3, 4),), "normalize", "normalize"),
        functional_sample("p1_dim0", (normal(3, 4, 2),), "normalize", "normalize", p=1.0, dim=0),
        functional_sample("p3_last", (normal(2, 5),), "normalize", "normalize", p=3.0, dim=-1),
        Sample(
            "zero_row_eps",  # a zero row: its norm is raised to eps, the gradient 1 / eps
            draws(Draw(lambda rng: np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 0.5]]))),
            lambda x: functional.normalize(x, eps=0.5),
            lambda x: torch.nn.functional.normalize(x, eps=0.5),
            not_twice_differentiable="the zero row's norm (PyTorch's second derivative: nan)",
        ),
    ],
}
