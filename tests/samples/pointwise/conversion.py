"""Samples of ops/pointwise/conversion.py: casts and device moves (the comparisons are no
registered ops: they have no gradient)."""

from __future__ import annotations

import numpy as np
from op_samples import Sample, draws, normal
from reference import torch

import minitrain as mt
from minitrain import ops

SAMPLES: dict[str, list[Sample]] = {
    "cast": [
        Sample(
            "to_float32",
            draws(normal(3, 4)),
            lambda x: ops.cast(x, np.float32),
            lambda x: x.to(torch.float32),
            check={"eps": 1e-3, "atol": 1e-3},
            float32=False,
        ),
        Sample(
            "to_float64",
            draws(normal(3, 4)),
            lambda x: ops.cast(x, "float64"),
            lambda x: x.to(torch.float64),
            float32=False,
        ),
    ],
    "to_device": [
        Sample(
            "cpu", draws(normal(3, 4)), lambda x: ops.to_device(x, "cpu"), lambda x: x.to("cpu")
        ),
        Sample(
            "cpu_device_object_zero_d",
            draws(normal()),
            lambda x: ops.to_device(x, mt.device("cpu")),
            lambda x: x.to("cpu"),
        ),
    ],
}
