"""Samples of ops/linalg/products.py: matmul of vectors, matrices, batches; linear."""

from __future__ import annotations

from op_samples import Sample, draws, normal
from reference import torch

from minitrain import ops


def _matmul(name, shape_a, shape_b) -> Sample:
    return Sample(
        name,
        draws(normal(*shape_a), normal(*shape_b)),
        ops.matmul,
        lambda a, b: torch.matmul(a, b),
    )


SAMPLES: dict[str, list[Sample]] = {
    "matmul": [
        _matmul("mat_mat", (3, 4), (4, 2)),
        _matmul("vec_mat", (4,), (4, 2)),
        _matmul("mat_vec", (3, 4), (4,)),
        _matmul("vec_vec", (4,), (4,)),
        _matmul("batched", (2, 3, 4), (2, 4, 5)),
        _matmul("batched_broadcast", (2, 1, 3, 4), (3, 4, 2)),
        _matmul("batch_times_mat", (2, 3, 4), (4, 2)),
        _matmul("vec_batched", (4,), (2, 4, 3)),
        _matmul("batched_vec", (2, 3, 4), (4,)),
    ],
    "linear": [
        Sample(
            "bias",
            draws(normal(3, 4), normal(2, 4), normal(2)),
            ops.linear,
            lambda x, w, b: torch.nn.functional.linear(x, w, b),
        ),
        Sample(
            "no_bias",
            draws(normal(3, 4), normal(2, 4)),
            ops.linear,
            lambda x, w: torch.nn.functional.linear(x, w),
        ),
        Sample(
            "batched",
            draws(normal(2, 3, 4), normal(5, 4), normal(5)),
            ops.linear,
            lambda x, w, b: torch.nn.functional.linear(x, w, b),
        ),
        Sample(
            "vector_input",
            draws(normal(4), normal(3, 4), normal(3)),
            ops.linear,
            lambda x, w, b: torch.nn.functional.linear(x, w, b),
        ),
        Sample(
            "frozen_weight",
            draws(normal(3, 4), normal(2, 4), normal(2)),
            ops.linear,
            lambda x, w, b: torch.nn.functional.linear(x, w, b),
            grad=(0, 2),
        ),
    ],
}
