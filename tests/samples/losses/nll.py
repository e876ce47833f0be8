"""Samples of ops/losses/nll.py: nll_loss."""

from __future__ import annotations

from op_samples import Sample, draws, labels, normal, positive
from reference import torch

from minitrain import ops

SAMPLES: dict[str, list[Sample]] = {
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
}
