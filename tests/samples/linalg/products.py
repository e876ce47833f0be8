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


def _composed(name, shapes, call, ref) -> Sample:
    return Sample(name, draws(*(normal(*shape) for shape in shapes)), call, ref)


# PyTorch's products of fixed ranks and scaled sums, composed of matmul
COMPOSED: dict[str, list[Sample]] = {
    "mm": [_composed("mat_mat", [(3, 4), (4, 2)], ops.mm, lambda a, b: torch.mm(a, b))],
    "bmm": [_composed("batches", [(2, 3, 4), (2, 4, 5)], ops.bmm, lambda a, b: torch.bmm(a, b))],
    "mv": [_composed("mat_vec", [(3, 4), (4,)], ops.mv, lambda a, b: torch.mv(a, b))],
    "dot": [_composed("vec_vec", [(5,), (5,)], ops.dot, lambda a, b: torch.dot(a, b))],
    "outer": [_composed("vec_vec", [(3,), (4,)], ops.outer, lambda a, b: torch.outer(a, b))],
    "addmm": [
        _composed(
            "full_input", [(3, 2), (3, 4), (4, 2)], ops.addmm, lambda c, a, b: torch.addmm(c, a, b)
        ),
        _composed(
            "row_scaled",
            [(2,), (3, 4), (4, 2)],
            lambda c, a, b: ops.addmm(c, a, b, beta=0.5, alpha=-1.5),
            lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=-1.5),
        ),
    ],
    "addmv": [
        _composed(
            "scaled",
            [(3,), (3, 4), (4,)],
            lambda c, a, b: ops.addmv(c, a, b, beta=2.0, alpha=0.5),
            lambda c, a, b: torch.addmv(c, a, b, beta=2.0, alpha=0.5),
        ),
    ],
}
