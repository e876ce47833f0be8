"""Samples of ops/losses/class_loss.py: cross_entropy, every target kind."""

from __future__ import annotations

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
}
