"""Samples of ops/reductions/reduction.py: every kind of dim, with and without keepdim."""

from __future__ import annotations

from op_samples import Draw, Sample, draws, nonzero, normal, with_zeros
from reference import torch

from minitrain import ops


def dims_of(x, axis):
    """A minitrain axis as a PyTorch dim: None becomes every dim of x, spelled out."""
    return tuple(range(x.ndim)) if axis is None else axis


def _torch_prod(x, axis, keepdims):
    """torch.prod takes one dim: several are reduced one at a time, the reduced dims kept, then
    squeezed unless keepdims."""
    dims = tuple(range(x.ndim)) if axis is None else (axis,) if isinstance(axis, int) else axis
    dims = tuple(d % x.ndim for d in dims) if x.ndim else ()
    for d in dims:
        x = torch.prod(x, d, keepdim=True)
    return x if keepdims or not dims else x.squeeze(dims)


REDUCTION_DIMS = [  # (shape, axis, keepdims)
    ((3, 4), None, False),
    ((3, 4), None, True),
    ((3, 4), 0, False),
    ((3, 4), -1, True),
    ((2, 3, 4), (0, 2), False),
    ((2, 3, 4), (-1, 0), True),
    ((2, 3, 4), 1, False),
    ((), None, False),
]


def _reduction_name(shape, axis, keepdims) -> str:
    """E.g. '2x3x4_axis-1_0_keep' or 'zero_d_axisNone'."""
    dims = "x".join(map(str, shape)) or "zero_d"
    axes = "_".join(map(str, axis)) if isinstance(axis, tuple) else str(axis)
    return f"{dims}_axis{axes}" + ("_keep" if keepdims else "")


def reduction_samples(call, ref, values=normal, axes=REDUCTION_DIMS) -> list[Sample]:
    """One sample per (shape, axis, keepdims); `call(x, axis, keepdims)`, `ref` likewise."""
    samples = []
    for shape, axis, keepdims in axes:
        samples.append(
            Sample(
                _reduction_name(shape, axis, keepdims),
                draws(values(*shape)),
                lambda x, a=axis, k=keepdims: call(x, a, k),
                lambda x, a=axis, k=keepdims: ref(x, a, k),
            )
        )
    return samples


def _spread_samples(op, torch_name: str) -> list[Sample]:
    """var / std: the reduction samples, then corrections 0 and 2 (PyTorch's `correction`)."""
    reductions = reduction_samples(
        lambda x, a, k: op(x, a, keepdim=k),
        lambda x, a, k: getattr(torch, torch_name)(x, a, keepdim=k, correction=1),
        axes=REDUCTION_DIMS[:-1],  # not 0-d: one value leaves no degrees of freedom
    )
    return reductions + [
        Sample(
            f"correction{c}_axis{axis}",
            draws(normal(3, 4)),
            lambda x, c=c, axis=axis: op(x, axis, correction=c),
            lambda x, c=c, axis=axis: getattr(torch, torch_name)(x, axis, correction=c),
        )
        for c, axis in [(0, None), (0, 1), (2, 1), (0, -2)]
    ]


SAMPLES: dict[str, list[Sample]] = {
    "sum": reduction_samples(ops.sum, lambda x, a, k: torch.sum(x, dims_of(x, a), keepdim=k))
    + [
        Sample(
            "empty_axis",
            draws(normal(2, 0, 3)),
            lambda x: ops.sum(x, dim=1),
            lambda x: torch.sum(x, 1),
        ),
        Sample(
            "empty_all",
            draws(normal(2, 0)),
            lambda x: ops.sum(x),
            lambda x: torch.sum(x),
        ),
        Sample(
            "empty_result",
            draws(normal(0, 3)),
            lambda x: ops.sum(x, dim=1, keepdim=True),
            lambda x: torch.sum(x, 1, keepdim=True),
        ),
    ],
    "mean": reduction_samples(ops.mean, lambda x, a, k: torch.mean(x, dims_of(x, a), keepdim=k)),
    # prod's gradient with zeros: one zero in a slice gets the product of the rest, the others
    # nothing; two or more zeros give the whole slice no gradient
    "prod": reduction_samples(ops.prod, _torch_prod)
    + [
        Sample(
            name,
            draws(with_zeros(*shape, at=at)),
            lambda x, a=axis, k=keepdims: ops.prod(x, a, k),
            lambda x, a=axis, k=keepdims: _torch_prod(x, a, k),
        )
        for name, shape, at, axis, keepdims in [
            ("one_zero", (2, 3), (4,), None, False),
            ("two_zeros", (2, 3), (1, 4), None, False),
            ("rows_with_0_1_2_3_zeros", (4, 3), (3, 6, 8, 9, 10, 11), 1, False),
            ("columns_with_1_2_zeros_keep", (3, 4), (0, 5, 9), 0, True),
            ("3d_two_axes_one_zero", (2, 3, 4), (5,), (0, 2), False),
            ("zero_d_zero", (), (0,), None, False),
            ("empty_axis", (2, 0), (), 1, False),
        ]
    ],
    "var": _spread_samples(ops.var, "var"),
    "std": _spread_samples(ops.std, "std"),
    "logsumexp": reduction_samples(
        ops.logsumexp, lambda x, a, k: torch.logsumexp(x, dims_of(x, a), keepdim=k)
    )
    + [
        Sample(
            "large_values",
            draws(Draw(lambda rng: 1e3 + rng.standard_normal((3, 4)))),
            lambda x: ops.logsumexp(x, dim=1),
            lambda x: torch.logsumexp(x, 1),
        ),
        Sample(
            "empty_axis",
            draws(normal(2, 0)),
            lambda x: ops.logsumexp(x, dim=1),
            lambda x: torch.logsumexp(x, 1),
        ),
    ],
    "cumsum": [
        Sample(
            name,
            draws(normal(*shape)),
            lambda x, a=axis: ops.cumsum(x, a),
            lambda x, a=axis: torch.cumsum(x, a),
        )
        for name, shape, axis in [
            ("3d_axis0", (2, 3, 4), 0),
            ("3d_axis1", (2, 3, 4), 1),
            ("3d_axis2", (2, 3, 4), 2),
            ("3d_axis_minus1", (2, 3, 4), -1),
            ("vector", (5,), 0),
            ("zero_d", (), 0),
            ("empty_axis", (3, 0), 1),
            ("empty_other_dim", (0, 3), 1),
        ]
    ],
    # p-norms for finite p; inf and -inf are abs then max / min (test_tensor_methods.py).
    # A slice of zeros has no derivative: 0 is taken, as the central differences give.
    "norm": [
        Sample(
            name,
            draws(values),
            lambda x, p=p, a=axis, k=keepdims: ops.norm(x, p, a, k),
            lambda x, p=p, a=axis, k=keepdims: torch.linalg.vector_norm(x, p, a, k),
            not_twice_differentiable=(
                "the gradient jumps at a slice of zeros" if "zero_row" in name else ""
            ),
        )
        for name, values, p, axis, keepdims in [
            ("p2_all", normal(3, 4), 2, None, False),
            ("p2_axis1", normal(3, 4), 2, 1, False),
            ("p2_axes_keep", normal(2, 3, 4), 2, (0, 2), True),
            ("p2_zero_row", with_zeros(3, 4, at=(4, 5, 6, 7, 8)), 2, 1, False),
            ("p2_zero_d", normal(), 2, None, False),
            ("p1_axis0", nonzero(3, 4), 1, 0, False),
            ("p1_zero_row", with_zeros(3, 4, at=(0, 1, 2, 3)), 1, -1, True),
            ("p3_axis_minus1", normal(3, 4), 3, -1, False),
            ("p1.5_zero_row", with_zeros(3, 4, at=(4, 5, 6, 7)), 1.5, 1, False),
            ("p0.5_all", nonzero(2, 3), 0.5, None, False),
            ("p0.5_zero_row", with_zeros(3, 4, at=(8, 9, 10, 11)), 0.5, 1, False),
            ("empty_axis", normal(2, 0), 2, 1, False),
        ]
    ],
}
