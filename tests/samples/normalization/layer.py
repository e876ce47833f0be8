"""Samples of ops/normalization/layer.py: layer_norm (invertible too) and rms_norm."""

from __future__ import annotations

from op_samples import Sample, draws, nonzero, normal
from reference import torch

from minitrain import ops


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
