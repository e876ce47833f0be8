"""Samples of ops/reductions/statistics.py: median, and the order statistics composed."""

from __future__ import annotations

import numpy as np
from op_samples import Draw, Sample, distinct, draws, normal, values_sample
from reference import torch

from minitrain import ops


def _median_dim_samples() -> list[Sample]:
    cases = [  # (name, shape, dim, keepdim)
        ("odd_dim1", (3, 5), 1, False),
        ("even_dim0_keep", (4, 3), 0, True),
        ("3d_dim_minus1", (2, 3, 6), -1, False),
        ("zero_d", (), 0, False),
    ]
    return [
        values_sample(
            name,
            distinct(*shape),
            lambda x, d=dim, kept=keepdim: ops.median(x, d, kept),
            lambda x, d=dim, kept=keepdim: torch.median(x, d, kept),
        )
        for name, shape, dim, keepdim in cases
    ]


def _quantile_samples() -> list[Sample]:
    """Every interpolation, q a number or a 1-D tensor, along a dim or all; q (n - 1) kept off
    the integers except where the mode makes it one. A tensor q takes a gradient with linear
    (not at q = 0 or 1, where a finite difference would step out of [0, 1])."""

    def levels(*values):
        return Draw(lambda rng: np.array(values))

    cases = [  # (name, x shape, q, dim, keepdim, interpolation, q takes a gradient)
        ("linear_number_all", (3, 5), 0.3, None, False, "linear", False),
        ("linear_number_dim1_keep", (3, 5), 0.6, 1, True, "linear", False),
        ("linear_levels_dim0", (5, 3), levels(0.1, 0.55, 0.9), 0, False, "linear", True),
        ("linear_levels_all_keep", (2, 3, 4), levels(0.2, 0.7), None, True, "linear", True),
        ("linear_levels_dim1_keep", (2, 5, 3), levels(0.35, 0.8), 1, True, "linear", True),
        ("linear_ends", (2, 5), levels(0.0, 1.0), 1, False, "linear", False),
        ("lower", (3, 5), levels(0.3, 0.6), 1, False, "lower", False),
        ("higher", (3, 5), levels(0.3, 0.6), -1, False, "higher", False),
        ("midpoint", (3, 5), levels(0.3, 0.5), 1, False, "midpoint", False),
        ("nearest_half_to_even", (3, 5), levels(0.375, 0.625, 0.2), 1, False, "nearest", False),
        ("zero_d", (), 0.4, 0, False, "linear", False),
        ("zero_d_level", (3, 4), Draw(lambda rng: np.array(0.45)), 1, False, "linear", True),
    ]
    samples = []
    for name, shape, q, dim, keepdim, mode, q_grad in cases:
        tensor_q = isinstance(q, Draw)
        samples.append(
            Sample(
                name,
                draws(distinct(*shape), q) if tensor_q else draws(distinct(*shape)),
                lambda x, q=q, d=dim, kept=keepdim, m=mode: ops.quantile(
                    x, q, d, kept, interpolation=m
                ),
                lambda x, q=q, d=dim, kept=keepdim, m=mode: torch.quantile(
                    x, q, d, kept, interpolation=m
                ),
                grad=(0, 1) if q_grad else (0,),
            )
        )
    return samples


def _spread_mean_samples(op_name: str) -> list[Sample]:
    """std_mean / var_mean, the two results stacked."""
    cases = [  # (name, shape, dim, keepdim, correction)
        ("all", (3, 4), None, False, 1),
        ("dim1", (3, 4), 1, False, 1),
        ("dims_keep_correction0", (2, 3, 4), (0, 2), True, 0),
        ("dim0_correction2", (5, 3), 0, False, 2),
    ]
    return [
        Sample(
            name,
            draws(normal(*shape)),
            lambda x, d=dim, kept=keepdim, c=c: ops.stack(
                getattr(ops, op_name)(x, d, keepdim=kept, correction=c)
            ),
            lambda x, d=dim, kept=keepdim, c=c: torch.stack(
                getattr(torch, op_name)(x, d, keepdim=kept, correction=c)
            ),
        )
        for name, shape, dim, keepdim, c in cases
    ]


def _aminmax_samples() -> list[Sample]:
    cases = [  # (name, shape, dim, keepdim)
        ("all", (3, 4), None, False),
        ("dim1", (3, 4), 1, False),
        ("dim0_keep", (4, 3), 0, True),
        ("3d_dim_minus1", (2, 3, 4), -1, False),
        ("zero_d", (), None, False),
    ]
    return [
        Sample(
            name,
            draws(distinct(*shape)),
            lambda x, d=dim, kept=keepdim: ops.stack(ops.aminmax(x, dim=d, keepdim=kept)),
            lambda x, d=dim, kept=keepdim: torch.stack(torch.aminmax(x, dim=d, keepdim=kept)),
        )
        for name, shape, dim, keepdim in cases
    ]


# Values are distinct wherever an order picks an element (a tie is a kink:
# tests/ops/test_sorting_and_statistics.py pins those by hand).
SAMPLES: dict[str, list[Sample]] = {
    "median": [
        Sample(name, draws(values), ops.median, lambda x: torch.median(x))
        for name, values in [
            ("odd_count", distinct(3, 5)),
            ("even_count_lower_middle", distinct(2, 3)),
            ("3d", distinct(2, 3, 4)),
            ("vector_of_two", distinct(2)),
            ("zero_d", distinct()),
        ]
    ],
}


COMPOSED: dict[str, list[Sample]] = {
    "median_dim": _median_dim_samples(),
    "quantile": _quantile_samples(),
    "std_mean": _spread_mean_samples("std_mean"),
    "var_mean": _spread_mean_samples("var_mean"),
    "aminmax": _aminmax_samples(),
}
