"""Samples of ops/reductions/sorting.py: sort, topk and kthvalue (composed), their values."""

from __future__ import annotations

from op_samples import Sample, distinct, values_sample
from reference import torch

from minitrain import ops


def _sort_samples() -> list[Sample]:
    cases = [  # (name, shape, dim, descending)
        ("matrix_last_dim", (3, 5), -1, False),
        ("matrix_dim0_descending", (4, 3), 0, True),
        ("3d_dim1", (2, 5, 3), 1, False),
        ("3d_dim2_descending", (2, 3, 4), 2, True),
        ("zero_d", (), 0, False),
        ("empty_dim", (3, 0), 1, True),
    ]
    return [
        values_sample(
            name,
            distinct(*shape),
            lambda x, d=dim, s=descending: ops.sort(x, d, s),
            lambda x, d=dim, s=descending: torch.sort(x, d, s),
        )
        for name, shape, dim, descending in cases
    ] + [
        values_sample(
            "stable_flag",
            distinct(3, 4),
            lambda x: ops.sort(x, descending=True, stable=True),
            lambda x: torch.sort(x, descending=True, stable=True),
        )
    ]


def _topk_samples() -> list[Sample]:
    cases = [  # (name, shape, k, dim, largest)
        ("largest_3_of_5", (4, 5), 3, -1, True),
        ("smallest_2_dim0", (5, 3), 2, 0, False),
        ("all_of_them", (2, 4), 4, 1, True),
        ("none_of_them", (2, 4), 0, 1, True),
        ("3d_dim1", (2, 6, 3), 2, 1, True),
        ("zero_d", (), 1, None, True),
    ]
    return [
        values_sample(
            name,
            distinct(*shape),
            lambda x, k=k, d=dim, big=largest: ops.topk(x, k, d, big),
            lambda x, k=k, d=dim, big=largest: torch.topk(
                x, k, -1 if d is None else d, largest=big
            ),
        )
        for name, shape, k, dim, largest in cases
    ]


def _kthvalue_samples() -> list[Sample]:
    cases = [  # (name, shape, k, dim, keepdim)
        ("second_of_5", (3, 5), 2, -1, False),
        ("last_dim0_keep", (4, 3), 4, 0, True),
        ("first", (2, 4), 1, 1, False),
        ("3d_dim1", (2, 5, 3), 3, 1, True),
        ("zero_d", (), 1, None, False),
    ]
    return [
        values_sample(
            name,
            distinct(*shape),
            lambda x, k=k, d=dim, kept=keepdim: ops.kthvalue(x, k, d, kept),
            lambda x, k=k, d=dim, kept=keepdim: torch.kthvalue(x, k, -1 if d is None else d, kept),
        )
        for name, shape, k, dim, keepdim in cases
    ]


# Values are distinct wherever an order picks an element (a tie is a kink:
# tests/ops/test_sorting_and_statistics.py pins those by hand).
COMPOSED: dict[str, list[Sample]] = {
    "sort": _sort_samples(),
    "topk": _topk_samples(),
    "kthvalue": _kthvalue_samples(),
}
