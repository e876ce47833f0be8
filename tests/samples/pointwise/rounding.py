"""Samples of ops/pointwise/rounding.py: the step functions, away from their jumps."""

from __future__ import annotations

import numpy as np
from op_samples import Draw, Sample, draws, nonzero, off_grid, on_grid, unary_samples
from reference import torch

from minitrain import ops


def _steps(step: float):
    """Values for a step function with its jumps at multiples of `step` (floor, ceil, trunc,
    sign's 0) or halfway between them (round): `off_grid` or `on_grid` at that step."""
    return lambda draw: lambda *shape: draw(*shape, step=step)


SAMPLES: dict[str, list[Sample]] = {
    # step functions: values away from their jumps, where the finite differences are 0 too
    "sign": unary_samples(ops.sign, lambda x: torch.sign(x), values=nonzero),
    "floor": unary_samples(ops.floor, lambda x: torch.floor(x), values=_steps(1.0)(off_grid)),
    "ceil": unary_samples(ops.ceil, lambda x: torch.ceil(x), values=_steps(1.0)(off_grid)),
    "trunc": unary_samples(ops.trunc, lambda x: torch.trunc(x), values=_steps(1.0)(off_grid)),
    # a divided by 1 (or 2, broadcast) lands between whole numbers, away from the jumps
    "rounded_div": [
        Sample(
            f"{mode}_{name}",
            draws(_steps(1.0)(off_grid)(3, 4), divisor),
            lambda a, b, m=mode: ops.rounded_div(a, b, m),
            lambda a, b, m=mode: torch.div(a, b, rounding_mode=m),
        )
        for mode in ("floor", "trunc")
        for name, divisor in (
            ("by_ones", Draw(lambda rng: np.ones((3, 4)))),
            ("by_twos_row", Draw(lambda rng: np.full((4,), 2.0))),
        )
    ],
    "round": unary_samples(ops.round, lambda x: torch.round(x), values=_steps(1.0)(on_grid))
    + [
        Sample(
            f"decimals{decimals}",
            draws(on_grid(3, 4, step=10.0**-decimals)),
            lambda x, d=decimals: ops.round(x, decimals=d),
            lambda x, d=decimals: torch.round(x, decimals=d),
        )
        for decimals in (1, 2, -1)
    ],
}
