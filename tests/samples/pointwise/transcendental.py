"""Samples of ops/pointwise/transcendental.py: one-input functions on their domains."""

from __future__ import annotations

import numpy as np
from op_samples import Draw, Sample, normal, positive, unary_samples, uniform
from reference import torch

from minitrain import ops


def _within(low: float, high: float):
    """A `values` draw for unary_samples: uniform in [low, high)."""
    return lambda *shape: uniform(low, high, *shape)


def _erf_values(*shape: int) -> Draw:
    """Values in every branch of the erf kernels: |x| < 0.5 (its series), up to 4 and beyond."""
    return Draw(
        lambda rng: np.asarray(
            rng.choice([-1.0, 1.0], shape) * rng.choice([0.2, 1.0, 3.0, 4.5], shape)
            + rng.uniform(-0.15, 0.15, shape)
        )
    )


def _unary(name: str, values=normal) -> list[Sample]:
    return unary_samples(getattr(ops, name), lambda x, n=name: getattr(torch, n)(x), values=values)


SAMPLES: dict[str, list[Sample]] = {
    "log2": _unary("log2", positive),
    "log10": _unary("log10", positive),
    "exp2": _unary("exp2"),
    "expm1": _unary("expm1"),
    "log1p": _unary("log1p", _within(-0.6, 2.0)),
    "erf": _unary("erf", _erf_values),
    "erfc": _unary("erfc", _erf_values),
    "tan": _unary("tan", _within(-1.2, 1.2)),
    "asin": _unary("asin", _within(-0.9, 0.9)),
    "acos": _unary("acos", _within(-0.9, 0.9)),
    "atan": _unary("atan"),
    "sinh": _unary("sinh"),
    "cosh": _unary("cosh"),
    "asinh": _unary("asinh"),
    "acosh": _unary("acosh", _within(1.2, 3.0)),
    "atanh": _unary("atanh", _within(-0.9, 0.9)),
}
