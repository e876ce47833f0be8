"""Samples of ops/normalization/layer.py: layer_norm, invertible too."""

from __future__ import annotations

from op_samples import Sample, draws, nonzero, normal
from reference import torch
from samples.normalization.rows import ROWS, rows_sample

from minitrain import ops


def _torch_layer_norm(*args, **kw):
    return torch.nn.functional.layer_norm(*args, **kw)


def _invertible(x, normalized_shape, *params, **kw):
    return ops.layer_norm(x, normalized_shape, *params, invertible=True, **kw)


SAMPLES: dict[str, list[Sample]] = {
    "layer_norm": [
        rows_sample(ops.layer_norm, _torch_layer_norm, name, shape, dims, params, **kw)
        for name, shape, dims, params, kw in ROWS
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
        rows_sample(_invertible, _torch_layer_norm, name, shape, dims, params, nonzero, **kw)
        for name, shape, dims, params, kw in ROWS
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
}
