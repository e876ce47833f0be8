"""Samples of ops/activations/activation.py: near their kinks, at large magnitudes."""

from __future__ import annotations

from op_samples import Draw, Sample, draws, nonzero, normal, unary_samples
from reference import torch

from minitrain import ops

SAMPLES: dict[str, list[Sample]] = {
    # relu and leaky_relu draw nonzero values, away from the kink at 0.
    "relu": unary_samples(ops.relu, lambda x: torch.relu(x), values=nonzero),
    "leaky_relu": [
        Sample(
            name,
            draws(nonzero(*shape)),
            lambda x, a=alpha: ops.leaky_relu(x) if a is None else ops.leaky_relu(x, a),
            lambda x, a=alpha: torch.nn.functional.leaky_relu(x, 0.01 if a is None else a),
        )
        for name, shape, alpha in [
            ("default_alpha", (3, 4), None),
            ("alpha0.2_3d", (2, 3, 4), 0.2),
            ("alpha0_is_relu", (3, 4), 0.0),
            ("alpha1.5_zero_d", (), 1.5),
        ]
    ],
    "sigmoid": unary_samples(ops.sigmoid, lambda x: torch.sigmoid(x))
    + [
        Sample(
            "tails",
            draws(Draw(lambda rng: rng.uniform(-40.0, 40.0, (3, 5)))),
            ops.sigmoid,
            lambda x: torch.sigmoid(x),
        )
    ],
    "tanh": unary_samples(ops.tanh, lambda x: torch.tanh(x)),
    "quick_gelu": [
        Sample(
            name,
            draws(normal(*shape)),
            lambda x, a=alpha: ops.quick_gelu(x) if a is None else ops.quick_gelu(x, a),
            lambda x, a=alpha: x * torch.sigmoid((1.702 if a is None else a) * x),
        )
        for name, shape, alpha in [
            ("default_alpha", (3, 4), None),
            ("alpha1_silu_3d", (2, 3, 4), 1.0),
            ("negative_alpha", (3, 4), -0.8),
            ("zero_d", (), 1.702),
        ]
    ]
    + [Sample("silu", draws(normal(3, 4)), ops.silu, lambda x: torch.nn.functional.silu(x))],
    "gelu": [
        Sample(
            f"{approximate}_{name}",
            draws(values),
            lambda x, ap=approximate: ops.gelu(x, ap),
            lambda x, ap=approximate: torch.nn.functional.gelu(x, approximate=ap),
        )
        for approximate in ("none", "tanh")
        for name, values in [
            ("matrix", normal(3, 4)),
            ("3d", normal(2, 3, 4)),
            ("zero_d", normal()),
            ("wide", Draw(lambda rng: rng.uniform(-8.0, 8.0, (4, 5)))),
        ]
    ]
    + [Sample("default", draws(normal(3, 4)), ops.gelu, lambda x: torch.nn.functional.gelu(x))],
}
