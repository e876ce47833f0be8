"""Samples of ops/linalg/contraction.py: einsum, its equations against torch.einsum."""

from __future__ import annotations

from op_samples import Sample, draws, normal
from reference import torch

from minitrain import ops


def _einsum(name, equation, *shapes) -> Sample:
    """einsum(equation) of normal operands of `shapes`, against torch.einsum."""
    return Sample(
        name,
        draws(*(normal(*shape) for shape in shapes)),
        lambda *xs: ops.einsum(equation, *xs),
        lambda *xs: torch.einsum(equation, *xs),
    )


SAMPLES: dict[str, list[Sample]] = {
    "einsum": [
        _einsum("matmul", "ij,jk->ik", (2, 3), (3, 4)),
        _einsum("batched_matmul", "bij,bjk->bik", (2, 2, 3), (2, 3, 4)),
        _einsum("outer", "i,j->ij", (3,), (4,)),
        _einsum("trace", "ii->", (3, 3)),
        _einsum("diagonal", "ii->i", (3, 3)),
        _einsum("transpose", "ij->ji", (2, 3)),
        _einsum("bilinear", "bn,anm,bm->ba", (2, 3), (4, 3, 2), (2, 2)),
        _einsum("ellipsis_broadcast", "...ij,...jk", (2, 1, 2, 3), (3, 3, 2)),
        _einsum("sum", "ij->", (2, 3)),
        _einsum("implicit_matmul", "ij,jk", (2, 3), (3, 2)),
        _einsum("attention_scores", "bhqd,bhkd->bhqk", (2, 2, 3, 4), (2, 2, 2, 4)),
        _einsum("dot", "i,i->", (4,), (4,)),
        _einsum("elementwise", "ij,ij->ij", (2, 3), (2, 3)),
        _einsum("size_one_broadcasts", "i,i->i", (1,), (3,)),
        _einsum("repeated_beside_another", "iij,jk->ik", (3, 3, 2), (2, 4)),
        _einsum("label_summed_alone", "ij,k->ik", (2, 3), (4,)),
        _einsum("ellipsis_summed", "i...->i", (2, 3, 2)),
        _einsum("ellipsis_in_the_middle", "i...j,j...k->...ik", (2, 3, 2), (2, 3, 4)),
        _einsum("chain_of_four", "ab,bc,cd,de->ae", (2, 3), (3, 2), (2, 4), (4, 2)),
        _einsum("transposed_contraction", "ijk,jil->kl", (2, 3, 2), (3, 2, 4)),
        _einsum("two_traces", "ii,jj->ij", (2, 2), (3, 3)),
        _einsum("diagonal_of_three_dims", "iji->j", (2, 3, 2)),
        Sample(
            "sublists",
            draws(normal(2, 3), normal(3, 4)),
            lambda a, b: ops.einsum(a, [0, 1], b, [1, 2], [0, 2]),
            lambda a, b: torch.einsum(a, [0, 1], b, [1, 2], [0, 2]),
        ),
        Sample(
            "operands_as_a_list",
            draws(normal(2, 3), normal(3)),
            lambda a, b: ops.einsum("ij,j->i", [a, b]),
            lambda a, b: torch.einsum("ij,j->i", [a, b]),
        ),
    ],
}
