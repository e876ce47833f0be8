"""Samples of ops/pointwise/arithmetic.py: broadcasting, 0-d tensors, Python numbers, kinks."""

from __future__ import annotations

import operator

from op_samples import Sample, draws, nonzero, normal, off_grid, on_grid, positive, unary_samples
from reference import torch

from minitrain import ops


def _binary(call, ref, left=normal, right=normal, number=2.5) -> list[Sample]:
    """Same shapes, broadcasting, 0-d tensors and a Python number on either side."""
    return [
        Sample("same_shape", draws(left(3, 4), right(3, 4)), call, ref),
        Sample("broadcast_row", draws(left(3, 4), right(4)), call, ref),
        Sample("broadcast_outer", draws(left(3, 1), right(1, 4)), call, ref),
        Sample("broadcast_rank", draws(left(2, 3, 4), right(3, 1)), call, ref),
        Sample("zero_d_right", draws(left(3, 4), right()), call, ref),
        Sample("zero_d_both", draws(left(), right()), call, ref),
        Sample("number_right", draws(left(3, 4), number), call, ref),
        Sample("number_left", draws(number, right(2, 3)), call, ref),
    ]


def _as_torch(*values):
    """Numbers as float64 0-d tensors, for PyTorch functions that take only tensors."""
    return [
        v if isinstance(v, torch.Tensor) else torch.tensor(v, dtype=torch.float64) for v in values
    ]


# Keep inputs away from kinks (ties, clip bounds, |x| at 0, log/sqrt of x <= 0); a kink gets
# its own hand-derived test in tests/ops/test_ops.py. clip's bounds below sit on multiples of
# 0.25, which off_grid(step=0.25) values avoid.
SAMPLES: dict[str, list[Sample]] = {
    "add": _binary(ops.add, operator.add),
    "sub": _binary(ops.sub, operator.sub),
    "mul": _binary(ops.mul, operator.mul),
    "div": _binary(ops.div, operator.truediv, right=nonzero),
    "neg": unary_samples(ops.neg, operator.neg),
    "exp": unary_samples(ops.exp, lambda x: torch.exp(x)),
    "log": unary_samples(ops.log, lambda x: torch.log(x), values=positive),
    "sqrt": unary_samples(ops.sqrt, lambda x: torch.sqrt(x), values=positive),
    "abs": unary_samples(ops.abs, lambda x: torch.abs(x), values=nonzero),
    "sin": unary_samples(ops.sin, lambda x: torch.sin(x)),
    "cos": unary_samples(ops.cos, lambda x: torch.cos(x)),
    "maximum": _binary(
        ops.maximum, lambda a, b: torch.maximum(*_as_torch(a, b)), off_grid, on_grid, 0.6
    ),
    "minimum": _binary(
        ops.minimum, lambda a, b: torch.minimum(*_as_torch(a, b)), off_grid, on_grid, 0.6
    ),
    "pow": [
        Sample(name, draws(*specs), ops.pow, lambda a, b: torch.pow(a, b))
        for name, specs in [
            ("tensor_tensor", (positive(3, 4), normal(3, 4))),
            ("broadcast", (positive(3, 1), normal(4))),
            ("zero_d_exponent", (positive(2, 3), normal())),
            ("number_exponent", (positive(2, 3), 2.5)),
            ("int_exponent_negative_base", (normal(2, 3), 3)),
            ("negative_exponent", (positive(4), -1.5)),
            ("number_base", (1.7, normal(2, 3))),
        ]
    ],
    "clip": [
        Sample(
            "both",
            draws(off_grid(4, 5, step=0.25)),
            lambda x: ops.clip(x, -0.5, 0.5),
            lambda x: torch.clamp(x, -0.5, 0.5),
        ),
        Sample(
            "min_only",
            draws(off_grid(4, 5, step=0.25)),
            lambda x: ops.clip(x, -0.25, None),
            lambda x: torch.clamp(x, min=-0.25),
        ),
        Sample(
            "max_only",
            draws(off_grid(4, 5, step=0.25)),
            lambda x: ops.clip(x, None, 0.25),
            lambda x: torch.clamp(x, max=0.25),
        ),
        Sample(
            "int_bounds",
            draws(off_grid(3, 4, step=0.25)),
            lambda x: ops.clip(x, -1, 0),
            lambda x: torch.clamp(x, -1, 0),
        ),
        Sample(
            "zero_d",
            draws(off_grid(step=0.25)),
            lambda x: ops.clip(x, -0.5, 0.5),
            lambda x: torch.clamp(x, -0.5, 0.5),
        ),
    ],
}
