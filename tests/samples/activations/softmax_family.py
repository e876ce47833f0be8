"""Samples of ops/activations/softmax_family.py: softmax, log_softmax per opset; softmin."""

from __future__ import annotations

from op_samples import Draw, Sample, draws, functional_sample, normal
from reference import torch

from minitrain import ops

SAMPLES: dict[str, list[Sample]] = {
    # softmax and log_softmax: opset >= 13 is torch's dim; opset < 13 flattens x to 2-D at the
    # axis, which PyTorch spells flatten(axis), softmax over the last dim, reshape back.
    **{
        op_name: [
            Sample(
                name,
                draws(values),
                lambda x, op=op, axis=axis, opset=opset: op(x, axis, opset),
                (lambda x, ref=ref, dim=dim: ref(x, dim))
                if opset >= 13
                else (lambda x, ref=ref, dim=dim: ref(x.flatten(dim), -1).reshape(x.shape)),
            )
            for name, values, axis, opset, dim in [
                ("default_axis", normal(3, 4), None, 13, -1),
                ("axis0", normal(3, 4), 0, 13, 0),
                ("3d_axis1", normal(2, 3, 4), 1, 13, 1),
                ("4d_axis_minus3", normal(2, 3, 2, 3), -3, 13, -3),
                ("vector", normal(5), -1, 13, -1),
                ("zero_d", normal(), None, 13, -1),
                ("empty_axis", normal(2, 0), -1, 13, -1),
                ("logits_1e4", Draw(lambda rng: 1e4 + rng.standard_normal((3, 4))), 1, 13, 1),
                ("opset11_default_axis", normal(2, 3, 4), None, 11, 1),
                ("opset11_axis0", normal(2, 3, 4), 0, 11, 0),
                ("opset1_4d_axis_minus2", normal(2, 3, 2, 3), -2, 1, -2),
            ]
        ]
        for op_name, op, ref in [
            ("softmax", ops.softmax, lambda *args: torch.softmax(*args)),
            ("log_softmax", ops.log_softmax, lambda *args: torch.log_softmax(*args)),
        ]
    },
}


# F.softmin, softmax of -input (minitrain/nn/functional/activations.py)
COMPOSED: dict[str, list[Sample]] = {
    "softmin": [
        functional_sample("dim1", (normal(3, 4),), "softmin", "softmin", dim=1),
        functional_sample("dim0_3d", (normal(3, 2, 4),), "softmin", "softmin", dim=0),
    ],
}
