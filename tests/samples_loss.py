"""Sample table entries for the losses, merged into op_samples.SAMPLES.

Cross entropy and NLL with weights, ignore_index, label smoothing and probability targets; the
regression losses; the binary cross entropies with weights."""

from __future__ import annotations

import numpy as np
from op_samples import Draw, Sample, draws, labels, normal, positive, probabilities
from reference import torch

from minitrain import ops

SAMPLES: dict[str, list[Sample]] = {
    # Class-index targets and constant weights get no gradient: `grad` names the inputs that do.
    "cross_entropy": [
        Sample(
            name,
            draws(*specs),
            lambda x, t, *w, kw=kw: ops.cross_entropy(x, t, *w, **kw),
            lambda x, t, *w, kw=kw: torch.nn.functional.cross_entropy(x, t, *w, **kw),
            grad=grad,
        )
        for name, specs, kw, grad in [
            ("mean", (normal(4, 5), labels(5, 4)), {}, (0,)),
            ("sum_weight", (normal(4, 5), labels(5, 4), positive(5)), {"reduction": "sum"}, (0,)),
            (
                "none_ignore_index",
                (normal(5, 3), labels(3, 5, ignore=-100)),
                {"reduction": "none"},
                (0,),
            ),
            (
                "mean_weight_ignore_smoothing",
                (normal(5, 4), labels(4, 5, ignore=2), positive(4)),
                {"ignore_index": 2, "label_smoothing": 0.2},
                (0,),
            ),
            (
                "rank4_none_smoothing",
                (normal(2, 3, 2, 2), labels(3, 2, 2, 2, ignore=-100)),
                {"reduction": "none", "label_smoothing": 0.1},
                (0,),
            ),
            ("rank4_mean_weight", (normal(2, 3, 2, 2), labels(3, 2, 2, 2), positive(3)), {}, (0,)),
            ("probabilities", (normal(4, 5), probabilities(4, 5)), {}, (0, 1)),
            (
                "probabilities_none",
                (normal(3, 4), probabilities(3, 4)),
                {"reduction": "none"},
                (0, 1),
            ),
            (
                "probabilities_rank4_weight_smoothing_sum",
                (normal(2, 3, 2, 2), probabilities(2, 3, 2, 2), positive(3)),
                {"reduction": "sum", "label_smoothing": 0.3},
                (0, 1),
            ),
            ("single_sample", (normal(5), labels(5)), {"reduction": "none"}, (0,)),
            (
                "logits_1e4",
                (Draw(lambda rng: 1e4 + rng.standard_normal((3, 4))), labels(4, 3)),
                {},
                (0,),
            ),
        ]
    ],
    "nll_loss": [
        Sample(
            name,
            draws(*specs),
            lambda x, t, *w, kw=kw: ops.nll_loss(x, t, *w, **kw),
            lambda x, t, *w, kw=kw: torch.nn.functional.nll_loss(x, t, *w, **kw),
            grad=(0,),
        )
        for name, specs, kw in [
            ("mean", (normal(4, 5), labels(5, 4)), {}),
            (
                "sum_weight_ignore",
                (normal(5, 3), labels(3, 5, ignore=-100), positive(3)),
                {"reduction": "sum"},
            ),
            (
                "none_custom_ignore",
                (normal(4, 3), labels(3, 4, ignore=1)),
                {"reduction": "none", "ignore_index": 1},
            ),
            (
                "rank4_mean_weight",
                (normal(2, 3, 2, 2), labels(3, 2, 2, 2, ignore=-100), positive(3)),
                {},
            ),
            ("single_sample", (normal(4), labels(4)), {"reduction": "none"}),
        ]
    ],
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
