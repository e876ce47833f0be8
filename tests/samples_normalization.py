"""Sample table entries for the normalization ops (merged into op_samples.SAMPLES): batch norm with
0 to 3 spatial dims (training, and evaluation with running statistics), the layer norm family over
the last one and the last two dims, with and without their parameters."""

from __future__ import annotations

from op_samples import Sample, draws, nonzero, normal, positive
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


def _rows(call, ref, name, shape, dims, params, weight=normal, **kw) -> Sample:
    """A layer-norm family sample over the last `dims` dims of a normal x, with the first `params`
    of (weight, bias) drawn: `call(x, normalized_shape, *params, **kw)`, `ref` likewise."""
    normalized = shape[len(shape) - dims :]
    return Sample(
        name,
        draws(normal(*shape), *(weight(*normalized), normal(*normalized))[:params]),
        lambda x, *params: call(x, normalized, *params, **kw),
        lambda x, *params: ref(x, normalized, *params, **kw),
    )


def _torch_layer_norm(*args, **kw):
    return torch.nn.functional.layer_norm(*args, **kw)


def _torch_rms_norm(*args, **kw):
    return torch.nn.functional.rms_norm(*args, **kw)


def _invertible(x, normalized_shape, *params, **kw):
    return ops.layer_norm(x, normalized_shape, *params, invertible=True, **kw)


# (name, x shape, normalized dims, parameters drawn, keywords)
_ROWS = [
    ("last_dim", (4, 5), 1, 2, {}),
    ("last_two_dims", (2, 3, 4), 2, 2, {}),
    ("last_dim_no_affine", (3, 6), 1, 0, {}),
    ("last_two_dims_weight_only", (2, 3, 4), 2, 1, {}),
    ("eps_0.1", (3, 5), 1, 2, {"eps": 0.1}),
    # as PyTorch allows: layer norm's x_hat is 0, RMS norm's is x / sqrt(x^2 + eps)
    ("one_value_per_row", (4, 1), 1, 2, {}),
    ("one_value_per_row_of_two_dims", (3, 1, 1), 2, 2, {}),
]

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
    "layer_norm": [
        _rows(ops.layer_norm, _torch_layer_norm, name, shape, dims, params, **kw)
        for name, shape, dims, params, kw in _ROWS
    ]
    + [
        Sample(
            "axis_1_of_3d",
            draws(normal(2, 3, 4), normal(3, 4), normal(3, 4)),
            lambda x, w, b: ops.layer_norm(x, None, w, b, axis=1),
            lambda x, w, b: torch.nn.functional.layer_norm(x, (3, 4), w, b),
        )
    ],
    # x_hat is rebuilt as (Y - bias) / weight: weights away from 0
    "invertible_layer_norm": [
        _rows(_invertible, _torch_layer_norm, name, shape, dims, params, nonzero, **kw)
        for name, shape, dims, params, kw in _ROWS
    ]
    + [
        Sample(
            "bias_only",
            draws(normal(3, 4), normal(4)),
            lambda x, b: ops.layer_norm(x, (4,), None, b, invertible=True),
            # weight ones, not None: PyTorch's double backward of layer_norm with a bias but no
            # weight fails ("Expected a proper Tensor but got None") once bias's gradient is
            # differentiated
            lambda x, b: torch.nn.functional.layer_norm(x, (4,), torch.ones_like(b), b),
        )
    ],
    "rms_norm": [
        _rows(ops.rms_norm, _torch_rms_norm, name, shape, dims, min(params, 1), **kw)
        for name, shape, dims, params, kw in _ROWS
        if "weight_only" not in name
    ]
    + [
        Sample(
            "axis_1_of_3d",
            draws(normal(2, 3, 4), normal(3, 4)),
            lambda x, w: ops.rms_norm(x, None, w, axis=1),
            lambda x, w: torch.nn.functional.rms_norm(x, (3, 4), w),
        )
    ],
}
