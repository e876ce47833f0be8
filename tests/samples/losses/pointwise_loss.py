"""Samples of ops/losses/pointwise_loss.py: the regression losses, the binary ones."""

from __future__ import annotations

import numpy as np
from op_samples import Draw, Sample, draws, normal, positive
from reference import torch

from minitrain import ops

SAMPLES: dict[str, list[Sample]] = {
    **{
        op_name: [
            Sample(
                name,
                draws(*specs),
                lambda a, b, op=op, kw=kw: op(a, b, **kw),
                lambda a, b, ref=ref, kw=kw: getattr(torch.nn.functional, ref)(a, b, **kw),
                grad=grad,
            )
            for name, specs, kw, grad in [
                ("mean", (normal(3, 4), normal(3, 4)), {}, None),
                ("sum", (normal(3, 4), normal(3, 4)), {"reduction": "sum"}, None),
                ("none_3d", (normal(2, 3, 4), normal(2, 3, 4)), {"reduction": "none"}, None),
                ("zero_d", (normal(), normal()), {}, None),
                ("frozen_target", (normal(5), normal(5)), {}, (0,)),
            ]
            + extra
        ]
        for op_name, op, ref, extra in [
            ("mse_loss", ops.mse_loss, "mse_loss", []),
            ("l1_loss", ops.l1_loss, "l1_loss", []),
            (
                "smooth_l1_loss",
                ops.smooth_l1_loss,
                "smooth_l1_loss",
                [
                    ("beta_half", (normal(3, 4), normal(3, 4)), {"beta": 0.5}, None),
                    ("beta_0_is_l1", (normal(3, 4), normal(3, 4)), {"beta": 0.0}, None),
                ],
            ),
            (
                "huber_loss",
                ops.huber_loss,
                "huber_loss",
                [
                    ("delta_half", (normal(3, 4), normal(3, 4)), {"delta": 0.5}, None),
                    ("delta_2_sum", (normal(3, 4), normal(3, 4)), {"delta": 2.0}, None),
                ],
            ),
        ]
    },
    "binary_cross_entropy_with_logits": [
        Sample(
            name,
            draws(*specs),
            lambda x, t, w=None, pw=None, kw=kw: ops.binary_cross_entropy_with_logits(
                x, t, w, pos_weight=pw, **kw
            ),
            lambda x, t, w=None, pw=None, kw=kw: (
                torch.nn.functional.binary_cross_entropy_with_logits(x, t, w, pos_weight=pw, **kw)
            ),
            grad=(0, 1),
        )
        for name, specs, kw in [
            ("mean", (normal(3, 4), positive(3, 4, low=0.0, high=1.0)), {}),
            (
                "sum_weight",
                (normal(3, 4), positive(3, 4, low=0.0, high=1.0), positive(3, 1)),
                {"reduction": "sum"},
            ),
            (
                "none_weight_pos_weight",
                (normal(2, 3, 4), positive(2, 3, 4, low=0.0, high=1.0), positive(4), positive(4)),
                {"reduction": "none"},
            ),
            (
                "large_logits",
                (Draw(lambda rng: 40.0 * rng.standard_normal((3, 4))), positive(3, 4, high=1.0)),
                {},
            ),
        ]
    ],
    "binary_cross_entropy": [
        Sample(
            name,
            draws(*specs),
            lambda x, t, w=None, kw=kw: ops.binary_cross_entropy(x, t, w, **kw),
            lambda x, t, w=None, kw=kw: torch.nn.functional.binary_cross_entropy(x, t, w, **kw),
            grad=(0, 1),
            # PyTorch's double backward adds 1e-12 to x and 1 - x: 2e-12 / 1e-3 = 2e-9 near 0
            gradgrad_check={"ref_rtol": 3e-9} if name == "near_0_and_1" else {},
        )
        for name, specs, kw in [
            ("mean", (positive(3, 4, low=0.05, high=0.95), positive(3, 4, low=0.0, high=1.0)), {}),
            (
                "sum_weight",
                (
                    positive(3, 4, low=0.05, high=0.95),
                    positive(3, 4, low=0.0, high=1.0),
                    positive(3, 1),
                ),
                {"reduction": "sum"},
            ),
            (
                "none_3d_weight_row",
                (
                    positive(2, 3, 4, low=0.05, high=0.95),
                    positive(2, 3, 4, low=0.0, high=1.0),
                    positive(4),
                ),
                {"reduction": "none"},
            ),
            (
                "near_0_and_1",
                (
                    Draw(lambda rng: np.array([1e-3, 2e-3, 0.998, 0.999])),
                    Draw(lambda rng: np.array([0.02, 0.97, 0.05, 0.99])),
                ),
                {},
            ),
            ("zero_d", (positive(low=0.1, high=0.9), positive(low=0.0, high=1.0)), {}),
        ]
    ],
}
