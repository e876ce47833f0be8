"""Sample table entries for the activations, merged into op_samples.SAMPLES.

Each near its kinks or thresholds and at large magnitudes, with its parameters; softmax and
log_softmax per opset."""

from __future__ import annotations

from op_samples import (
    Draw,
    Sample,
    around,
    draws,
    nonzero,
    normal,
    positive,
    torch_fn,
    unary_samples,
    uniform,
)
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
    # relu and leaky_relu draw nonzero values, away from the kink at 0.
    "relu": unary_samples(ops.relu, lambda x: torch.relu(x), values=nonzero),
    "leaky_relu": [
        Sample(
            name,
            draws(nonzero(*shape)),
            lambda x, a=alpha: ops.leaky_relu(x) if a is None else ops.leaky_relu(x, a),
            lambda x, a=alpha: torch.nn.functional.leaky_relu(x, 0.01 if a is None else a),
        )
        for name, shape, alpha in [
            ("default_alpha", (3, 4), None),
            ("alpha0.2_3d", (2, 3, 4), 0.2),
            ("alpha0_is_relu", (3, 4), 0.0),
            ("alpha1.5_zero_d", (), 1.5),
        ]
    ],
    "sigmoid": unary_samples(ops.sigmoid, lambda x: torch.sigmoid(x))
    + [
        Sample(
            "tails",
            draws(Draw(lambda rng: rng.uniform(-40.0, 40.0, (3, 5)))),
            ops.sigmoid,
            lambda x: torch.sigmoid(x),
        )
    ],
    "tanh": unary_samples(ops.tanh, lambda x: torch.tanh(x)),
    "quick_gelu": [
        Sample(
            name,
            draws(normal(*shape)),
            lambda x, a=alpha: ops.quick_gelu(x) if a is None else ops.quick_gelu(x, a),
            lambda x, a=alpha: x * torch.sigmoid((1.702 if a is None else a) * x),
        )
        for name, shape, alpha in [
            ("default_alpha", (3, 4), None),
            ("alpha1_silu_3d", (2, 3, 4), 1.0),
            ("negative_alpha", (3, 4), -0.8),
            ("zero_d", (), 1.702),
        ]
    ]
    + [Sample("silu", draws(normal(3, 4)), ops.silu, lambda x: torch.nn.functional.silu(x))],
    "gelu": [
        Sample(
            f"{approximate}_{name}",
            draws(values),
            lambda x, ap=approximate: ops.gelu(x, ap),
            lambda x, ap=approximate: torch.nn.functional.gelu(x, approximate=ap),
        )
        for approximate in ("none", "tanh")
        for name, values in [
            ("matrix", normal(3, 4)),
            ("3d", normal(2, 3, 4)),
            ("zero_d", normal()),
            ("wide", Draw(lambda rng: rng.uniform(-8.0, 8.0, (4, 5)))),
        ]
    ]
    + [Sample("default", draws(normal(3, 4)), ops.gelu, lambda x: torch.nn.functional.gelu(x))],
    # PyTorch's other activations: values a little either side of each kink or threshold (far
    # enough for central differences), plus normal draws and large magnitudes.
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
