"""Samples of ops/activations/softmax_family.py: softmax, log_softmax along a dim; softmin."""

from __future__ import annotations

import numpy as np
from op_samples import Draw, Sample, draws, functional_sample, normal
from reference import torch

from minitrain import ops

SAMPLES: dict[str, list[Sample]] = {
    op_name: [
        Sample(
            name,
            draws(values),
            lambda x, op=op, args=args: op(x, *args),
            lambda x, ref=ref, args=args: ref(x, *(args or (-1,))),
        )
        for name, values, args in [
            ("default_dim", normal(3, 4), ()),
            ("dim0", normal(3, 4), (0,)),
            ("3d_dim1", normal(2, 3, 4), (1,)),
            ("4d_dim_minus3", normal(2, 3, 2, 3), (-3,)),
            ("vector", normal(5), (-1,)),
            ("zero_d", normal(), ()),
            ("empty_dim", normal(2, 0), (-1,)),
            ("logits_1e4", Draw(lambda rng: 1e4 + rng.standard_normal((3, 4))), (1,)),
        ]
    ]
    + [
        # dtype casts first, in the graph: float64 out of any floating input
        Sample(
            "dtype_float64",
            draws(normal(2, 3, 4)),
            lambda x, op=op: op(x, 1, np.float64),
            lambda x, ref=ref: ref(x, 1, dtype=torch.float64),
            float32=False,
        )
    ]
    for op_name, op, ref in [
        ("softmax", ops.softmax, lambda *args, **kw: torch.softmax(*args, **kw)),
        ("log_softmax", ops.log_softmax, lambda *args, **kw: torch.log_softmax(*args, **kw)),
    ]
}


# F.softmin, softmax of -input (minitrain/nn/functional/activations.py)
COMPOSED: dict[str, list[Sample]] = {
    "softmin": [
        functional_sample("dim1", (normal(3, 4),), "softmin", "softmin", dim=1),
        functional_sample("dim0_3d", (normal(3, 2, 4),), "softmin", "softmin", dim=0),
    ],
}
