"""The layer-norm family's sample helpers, shared by the samples of ops/normalization/layer.py
and rms.py (whose ops run on ops/normalization/rows.py): a sample over rows, and the row cases."""

from __future__ import annotations

from op_samples import Sample, draws, normal


def rows_sample(call, ref, name, shape, dims, params, weight=normal, **kw) -> Sample:
    """A layer-norm family sample over the last `dims` dims of a normal x, with the first `params`
    of (weight, bias) drawn: `call(x, normalized_shape, *params, **kw)`, `ref` likewise."""
    normalized = shape[len(shape) - dims :]
    return Sample(
        name,
        draws(normal(*shape), *(weight(*normalized), normal(*normalized))[:params]),
        lambda x, *params: call(x, normalized, *params, **kw),
        lambda x, *params: ref(x, normalized, *params, **kw),
    )


# (name, x shape, normalized dims, parameters drawn, keywords)
ROWS = [
    ("last_dim", (4, 5), 1, 2, {}),
    ("last_two_dims", (2, 3, 4), 2, 2, {}),
    ("last_dim_no_affine", (3, 6), 1, 0, {}),
    ("last_two_dims_weight_only", (2, 3, 4), 2, 1, {}),
    ("eps_0.1", (3, 5), 1, 2, {"eps": 0.1}),
    # as PyTorch allows: layer norm's x_hat is 0, RMS norm's is x / sqrt(x^2 + eps)
    ("one_value_per_row", (4, 1), 1, 2, {}),
    ("one_value_per_row_of_two_dims", (3, 1, 1), 2, 2, {}),
]
