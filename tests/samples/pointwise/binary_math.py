"""Samples of ops/pointwise/binary_math.py: the two-operand math ops, away from their jumps."""

from __future__ import annotations

import numpy as np
from op_samples import Sample, draws, nonzero, normal, positive, uniform
from reference import torch

from minitrain import ops


def _as_torch(*values):
    """Numbers as float64 0-d tensors, for PyTorch functions that take only tensors."""
    return [
        v if isinstance(v, torch.Tensor) else torch.tensor(v, dtype=torch.float64) for v in values
    ]


def _binary(call, ref, left=normal, right=normal, number=1.5) -> list[Sample]:
    """Same shapes, broadcasting, 0-d tensors and a Python number on the right."""
    return [
        Sample("same_shape", draws(left(3, 4), right(3, 4)), call, ref),
        Sample("broadcast_row", draws(left(3, 4), right(4)), call, ref),
        Sample("broadcast_outer", draws(left(3, 1), right(1, 4)), call, ref),
        Sample("zero_d_right", draws(left(2, 3), right()), call, ref),
        Sample("zero_d_both", draws(left(), right()), call, ref),
        Sample("number_right", draws(left(3, 4), number), call, ref),
    ]


def _quotients(input_shape, other_shape):
    """(input, other), either a number where its shape is None, with input / other at least 0.2
    from every whole number (fmod, remainder and floor_divide jump there) and |other| or |input|
    in [0.5, 2): the operand of the broadcast shape is drawn from the other."""

    def make(rng):
        shapes = [s for s in (input_shape, other_shape) if s is not None]
        shape = np.broadcast_shapes(*shapes)
        quotient = np.asarray(rng.integers(-3, 3, shape) + rng.uniform(0.2, 0.8, shape))
        if other_shape is None or input_shape == shape:  # input = quotient * other
            other = 1.5 if other_shape is None else _magnitudes(rng, other_shape)
            return quotient * other, other
        given = 2.7 if input_shape is None else _magnitudes(rng, input_shape)
        return given, given / quotient  # other = input / quotient

    return make


def _magnitudes(rng, shape):
    return np.asarray(rng.choice([-1.0, 1.0], shape) * rng.uniform(0.5, 2.0, shape))


def _division(call, ref) -> list[Sample]:
    return [
        Sample(name, _quotients(input_shape, other_shape), call, ref)
        for name, input_shape, other_shape in [
            ("same_shape", (3, 4), (3, 4)),
            ("broadcast_other", (3, 4), (4,)),
            ("broadcast_input", (4,), (3, 4)),
            ("zero_d_other", (2, 3), ()),
            ("zero_d_both", (), ()),
            ("number_other", (3, 4), None),
            ("number_input", None, (2, 3)),
        ]
    ]


SAMPLES: dict[str, list[Sample]] = {
    "atan2": _binary(ops.atan2, lambda a, b: torch.atan2(*_as_torch(a, b))),
    "hypot": _binary(ops.hypot, lambda a, b: torch.hypot(*_as_torch(a, b))),
    "logaddexp": _binary(ops.logaddexp, lambda a, b: torch.logaddexp(*_as_torch(a, b)))
    + [
        Sample(
            "far_apart",
            draws(uniform(20.0, 40.0, 3, 4), uniform(-40.0, -20.0, 3, 4)),
            ops.logaddexp,
            lambda a, b: torch.logaddexp(a, b),
        )
    ],
    # other positive (log); input away from 0, where PyTorch's gradient is 0, not log(other)
    "xlogy": _binary(ops.xlogy, lambda a, b: torch.xlogy(*_as_torch(a, b)), nonzero, positive, 1.5),
    # |input| away from 0, where its gradient jumps; other's sign only matters
    "copysign": _binary(ops.copysign, lambda a, b: torch.copysign(a, b), nonzero, nonzero, -1.5),
    "lerp": [
        Sample(
            name,
            draws(*specs),
            lambda a, b, w: ops.lerp(a, b, w),
            lambda a, b, w: torch.lerp(a, b, w),
        )
        for name, specs in [
            ("tensor_weight", (normal(3, 4), normal(3, 4), uniform(-0.5, 1.5, 3, 4))),
            ("broadcast", (normal(3, 1), normal(4), uniform(0.0, 1.0, 2, 1, 1))),
            ("zero_d_weight", (normal(2, 3), normal(2, 3), uniform(0.0, 1.0))),
            ("number_weight_small", (normal(3, 4), normal(4), 0.3)),
            ("number_weight_large", (normal(3, 4), normal(3, 4), 0.8)),
            ("zero_d", (normal(), normal(), uniform(0.0, 1.0))),
        ]
    ],
    "fmod": _division(ops.fmod, lambda a, b: torch.fmod(*_as_torch(a), b)),
    # torch.remainder(number, x) has no derivative: the number as a 0-d tensor has
    "remainder": _division(ops.remainder, lambda a, b: torch.remainder(*_as_torch(a, b))),
}


COMPOSED: dict[str, list[Sample]] = {
    # floor_divide is rounded_div's 'floor'; PyTorch's floor_divide has no derivative, its
    # div(rounding_mode='floor') computes the same quotient with the zero gradient it has here
    "floor_divide": _division(
        ops.floor_divide, lambda a, b: torch.div(*_as_torch(a, b), rounding_mode="floor")
    ),
}
