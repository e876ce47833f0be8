"""Samples of ops/reductions/scans.py: cumprod, logcumsumexp; cummax, cummin composed."""

from __future__ import annotations

import numpy as np
from op_samples import Draw, Sample, distinct, draws, normal, with_zeros
from reference import torch

from minitrain import ops


def _scan(op_name: str, cases) -> list[Sample]:
    """One sample per (name, draw, dim): ops.<op_name>(x, dim) against torch.<op_name>."""
    return [
        Sample(
            name,
            draws(values),
            lambda x, d=dim: getattr(ops, op_name)(x, d),
            lambda x, d=dim: getattr(torch, op_name)(x, d),
        )
        for name, values, dim in cases
    ]


_SHAPES = [  # (name, shape, dim)
    ("3d_dim0", (2, 3, 4), 0),
    ("3d_dim1", (2, 3, 4), 1),
    ("3d_dim2", (2, 3, 4), 2),
    ("3d_dim_minus1", (2, 3, 4), -1),
    ("vector", (5,), 0),
    ("zero_d", (), 0),
    ("empty_dim", (3, 0), 1),
    ("empty_other_dim", (0, 3), 1),
]


def _shifted(offset: float, *shape: int) -> Draw:
    """Normal values around `offset`: exp of them over- or underflows unless shifted."""
    return Draw(lambda rng: offset + rng.standard_normal(shape))


def _running(op_name: str, cases) -> list[Sample]:
    """cummax / cummin values (the indices are checked by hand, with ties and NaN)."""
    return [
        Sample(
            name,
            draws(values),
            lambda x, d=dim: getattr(ops, op_name)(x, d).values,
            lambda x, d=dim: getattr(torch, op_name)(x, d).values,
        )
        for name, values, dim in cases
    ]


_RUNNING = [  # distinct values: the running extreme changes hands only between samples' points
    ("3d_dim0", distinct(3, 2, 4), 0),
    ("3d_dim1", distinct(2, 5, 3), 1),
    ("3d_dim_minus1", distinct(2, 3, 6), -1),
    ("vector", distinct(7), 0),
    ("zero_d", distinct(), 0),
    ("empty_dim", Draw(lambda rng: np.zeros((3, 0))), 1),
]


SAMPLES: dict[str, list[Sample]] = {
    # cumprod's backward treats a slice's first zero and what follows it apart from what comes
    # before: zeros first, last, alone, two in a row, and two apart
    "cumprod": _scan("cumprod", [(name, normal(*shape), dim) for name, shape, dim in _SHAPES])
    + _scan(
        "cumprod",
        [
            ("one_zero_per_row", with_zeros(3, 5, at=(2, 5, 14)), 1),
            ("zero_first_and_last", with_zeros(2, 5, at=(0, 9)), 1),
            ("two_zeros_apart", with_zeros(2, 6, at=(1, 4, 6, 11)), 1),
            ("two_zeros_in_a_row", with_zeros(2, 5, at=(2, 3)), 1),
            ("zeros_along_dim0", with_zeros(4, 3, at=(3, 4, 6, 11)), 0),
            ("zero_d_zero", with_zeros(at=(0,)), 0),
        ],
    ),
    "logcumsumexp": _scan(
        "logcumsumexp", [(name, normal(*shape), dim) for name, shape, dim in _SHAPES]
    )
    + _scan(
        "logcumsumexp",
        [
            ("large_values", _shifted(1e3, 3, 4), 1),
            ("very_negative_values", _shifted(-1e3, 3, 4), 0),
            ("spread_values", Draw(lambda rng: rng.uniform(-30.0, 30.0, (2, 6))), 1),
        ],
    ),
}


COMPOSED: dict[str, list[Sample]] = {
    "cummax": _running("cummax", _RUNNING),
    "cummin": _running("cummin", _RUNNING),
}
