"""Samples of ops/normalization/batch.py: batch_norm, 0 to 3 spatial dims, both modes."""

from __future__ import annotations

from op_samples import Sample, draws, normal, positive
from reference import torch

from minitrain import ops


def _batch_norm(name, shape, params=2, **kw) -> Sample:
    """Training-mode batch norm of a normal x (N, C, *spatial) and the first `params` of
    (weight, bias)."""
    channels = shape[1]
    return Sample(
        name,
        draws(normal(*shape), *(normal(channels), normal(channels))[:params]),
        lambda x, *params: ops.batch_norm(x, *params, **kw),
        lambda x, *params: torch.nn.functional.batch_norm(
            x, None, None, *params, training=True, **kw
        ),
    )


def _running(name, shape, training: bool) -> Sample:
    """Batch norm with running statistics (constants): evaluation uses them, training updates
    them in place."""
    channels = shape[1]
    return Sample(
        name,
        draws(
            normal(*shape), normal(channels), normal(channels), normal(channels), positive(channels)
        ),
        lambda x, w, b, mean, var: ops.batch_norm(
            x, w, b, running_mean=mean, running_var=var, training=training
        ),
        lambda x, w, b, mean, var: torch.nn.functional.batch_norm(
            x, mean, var, w, b, training=training
        ),
        grad=(0, 1, 2),
    )


SAMPLES: dict[str, list[Sample]] = {
    "batch_norm": [
        _batch_norm("no_spatial", (6, 3)),
        _batch_norm("1_spatial", (4, 3, 5)),
        _batch_norm("2_spatial", (3, 2, 3, 4)),
        _batch_norm("3_spatial", (2, 2, 3, 2, 3)),
        _batch_norm("2_spatial_no_affine", (3, 2, 3, 4), params=0),
        _batch_norm("1_spatial_weight_only", (4, 3, 5), params=1),
        _batch_norm("no_spatial_eps_0.1", (5, 4), eps=0.1),
        _running("training_updates_running_stats", (4, 3, 5), training=True),
        _running("eval_uses_running_stats", (3, 2, 3, 4), training=False),
    ],
}
