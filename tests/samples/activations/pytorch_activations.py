"""Samples of ops/activations/pytorch_activations.py: near kinks and thresholds."""

from __future__ import annotations

from op_samples import Sample, around, draws, nonzero, normal, positive, torch_fn, uniform
from reference import torch

from minitrain import ops

# PyTorch's own op cannot serve as the reference for second derivatives: hardsigmoid has no
# double backward ("not implemented"), and mish's overflows to nan past x = 709 (mish(x) = x to
# float64 precision from x = 20 on, which the clamped form says without the overflow)
_SECOND_ORDER_REFS = {
    "hardsigmoid": lambda x: torch.nn.functional.relu6(x + 3) / 6,
    "mish": lambda x: torch.where(x > 20, x, torch.nn.functional.mish(x.clamp(max=20))),
}


SAMPLES: dict[str, list[Sample]] = {
    # values a little either side of each kink or threshold (far enough for central
    # differences), plus normal draws and large magnitudes
    "hardtanh": [
        Sample(
            name,
            draws(values),
            lambda x, limits=limits: ops.hardtanh(x, *limits),
            lambda x, limits=limits: torch.nn.functional.hardtanh(x, *limits),
        )
        for name, values, limits in [
            ("default", normal(3, 4), ()),
            ("near_kinks", around(-1.0, 1.0), ()),
            ("limits_-2_3_3d", around(-2.0, 3.0, shape=(2, 3, 2)), (-2.0, 3.0)),
            ("zero_d", normal(), (-0.5, 0.5)),
            ("wide", uniform(-100.0, 100.0, 3, 4), (-50.0, 50.0)),
        ]
    ]
    + [
        Sample(
            "relu6_near_kinks",
            draws(around(0.0, 6.0)),
            ops.relu6,
            lambda x: torch.nn.functional.relu6(x),
        )
    ],
    "elu": [
        Sample(name, draws(values), call, ref)
        for name, values, call, ref in [
            ("default", normal(3, 4), ops.elu, lambda x: torch.nn.functional.elu(x)),
            (
                "alpha0.5_near_0",
                around(0.0, shape=(2, 2)),
                lambda x: ops.elu(x, 0.5),
                lambda x: torch.nn.functional.elu(x, 0.5),
            ),
            (
                "negative_alpha",
                normal(2, 3, 2),
                lambda x: ops.elu(x, -1.5),
                lambda x: torch.nn.functional.elu(x, -1.5),
            ),
            (
                "wide",
                uniform(-700.0, 700.0, 3, 4),
                ops.elu,
                lambda x: torch.nn.functional.elu(x),
            ),
            ("selu", normal(3, 4), ops.selu, lambda x: torch.nn.functional.selu(x)),
            ("selu_wide", uniform(-60.0, 60.0, 2, 5), ops.selu, torch_fn("selu")),
            ("celu", around(0.0, shape=(2, 2)), ops.celu, lambda x: torch.nn.functional.celu(x)),
            (
                "celu_alpha2_zero_d",
                normal(),
                lambda x: ops.celu(x, 2.0),
                lambda x: torch.nn.functional.celu(x, 2.0),
            ),
        ]
    ],
    "softplus": [
        Sample(
            name,
            draws(values),
            lambda x, args=args: ops.softplus(x, *args),
            lambda x, args=args: torch.nn.functional.softplus(x, *args),
        )
        for name, values, args in [
            ("default", normal(3, 4), ()),
            ("near_threshold", around(20.0, shape=(2, 2)), ()),
            ("beta2_threshold10_near", around(5.0, shape=(2, 2)), (2.0, 10.0)),
            ("negative_beta", normal(2, 3, 2), (-1.5, 20.0)),
            ("wide", uniform(-800.0, 800.0, 3, 4), ()),
            ("zero_d", normal(), (0.5, 3.0)),
        ]
    ],
    **{
        op_name: [
            Sample(
                name,
                draws(values),
                getattr(ops, op_name),
                torch_fn(op_name),
                ref_rtol=rtol,
                second_order_ref=_SECOND_ORDER_REFS.get(op_name),
            )
            for name, values in [("matrix", normal(3, 4)), ("zero_d", normal())] + extra
        ]
        for op_name, extra, rtol in [
            ("mish", [("wide", uniform(-800.0, 800.0, 3, 4))], 1e-10),
            ("logsigmoid", [("wide", uniform(-800.0, 800.0, 3, 4))], 1e-10),
            ("hardswish", [("near_kinks", around(-3.0, 3.0, shape=(2, 3, 2)))], 1e-10),
            ("softsign", [("near_0", around(0.0, shape=(2, 2)))], 1e-10),
            # PyTorch's float64 hardsigmoid gradient is 1/6 rounded to float32 (3e-8 off)
            ("hardsigmoid", [("near_kinks", around(-3.0, 3.0, shape=(2, 3, 2)))], 1e-7),
        ]
    },
    "prelu": [
        Sample(name, draws(nonzero(*shape), positive(*weight)), ops.prelu, torch_fn("prelu"))
        for name, shape, weight in [
            ("per_channel", (2, 3, 4), (3,)),
            ("shared", (2, 3, 4), (1,)),
            ("per_channel_2d", (4, 3), (3,)),
            ("shared_0d_weight", (2, 2, 3, 2), ()),
            ("vector_input", (5,), (1,)),
            ("zero_d_input", (), (1,)),
        ]
    ],
}


# tanhshrink and glu, composed of registered ops
COMPOSED: dict[str, list[Sample]] = {
    "tanhshrink": [
        Sample(name, draws(values), ops.tanhshrink, torch_fn("tanhshrink"))
        for name, values in [("matrix", normal(3, 4)), ("zero_d", normal())]
    ],
    "glu": [
        Sample(
            name,
            draws(values),
            lambda x, args=args: ops.glu(x, *args),
            lambda x, args=args: torch.nn.functional.glu(x, *args),
        )
        for name, values, args in [
            ("last_dim", normal(3, 4), ()),
            ("dim0", normal(4, 3), (0,)),
            ("3d_dim1", normal(2, 6, 3), (1,)),
        ]
    ],
}
