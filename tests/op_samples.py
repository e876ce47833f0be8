"""The op sample table: for every registered op, sample inputs, the call and its PyTorch twin."""

from __future__ import annotations

import importlib
import operator
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import minitrain as mt
from minitrain import ops

try:
    import torch
except ImportError:  # the PyTorch comparison skips itself; the table still loads
    torch = None


@dataclass(frozen=True)
class Sample:
    """One way to call an op.

    `make(rng)` returns the inputs: floating arrays (become tensors), boolean or integer arrays
    (tensors without grad), and anything else (numbers, indices), passed to both calls as is.
    `call(*inputs)` runs minitrain, `ref(*inputs)` PyTorch on the same values. `grad` lists the
    inputs that require grad (None: every floating array). `check` holds gradcheck keywords
    (eps, atol, rtol, mode); `ref_rtol` / `ref_atol` the PyTorch tolerances; `float32=False`
    where the op does not keep float32 in float32 out (cast).
    """

    name: str
    make: Callable[[np.random.Generator], tuple]
    call: Callable[..., Any]
    ref: Callable[..., Any]
    grad: tuple[int, ...] | None = None
    check: dict = field(default_factory=dict)
    ref_rtol: float = 1e-10
    ref_atol: float = 1e-12
    float32: bool = True

    def differentiable(self, values) -> tuple[int, ...]:
        """Indices of the inputs that require grad."""
        if self.grad is not None:
            return self.grad
        return tuple(i for i, v in enumerate(values) if _is_float_array(v))


def _is_float_array(value) -> bool:
    return isinstance(value, np.ndarray) and value.dtype.kind == "f"


def rng_for(op_name: str, sample: Sample) -> np.random.Generator:
    """A generator seeded by the sample's id, so each sample draws the same inputs every run."""
    return np.random.default_rng(zlib.crc32(f"{op_name}-{sample.name}".encode()))


def minitrain_inputs(values, sample: Sample, dtype=None) -> list:
    """The sample's values as minitrain inputs; floating arrays cast to `dtype` when given."""
    grad = sample.differentiable(values)
    inputs = []
    for i, value in enumerate(values):
        if isinstance(value, np.ndarray):
            if dtype is not None and value.dtype.kind == "f":
                value = value.astype(dtype)
            inputs.append(mt.tensor(value, requires_grad=i in grad))
        else:
            inputs.append(value)
    return inputs


def torch_inputs(values, sample: Sample) -> list:
    """The sample's values as PyTorch inputs (floating arrays keep float64)."""
    grad = sample.differentiable(values)
    return [
        torch.tensor(v, requires_grad=i in grad) if isinstance(v, np.ndarray) else v
        for i, v in enumerate(values)
    ]


# --- input draws ----------------------------------------------------------------------------


class Draw:
    """An input drawn from the sample's generator."""

    def __init__(self, fn: Callable[[np.random.Generator], np.ndarray]):
        self.fn = fn

    def __call__(self, rng: np.random.Generator) -> np.ndarray:
        return self.fn(rng)


def draws(*specs) -> Callable[[np.random.Generator], tuple]:
    """A `make` function: each spec a Draw (evaluated in order) or a constant (kept as is)."""
    return lambda rng: tuple(s(rng) if isinstance(s, Draw) else s for s in specs)


def normal(*shape: int) -> Draw:
    return Draw(lambda rng: np.asarray(rng.standard_normal(shape), dtype=np.float64))


def positive(*shape: int, low: float = 0.5, high: float = 2.0) -> Draw:
    """Values in [low, high): safe for log, sqrt, division and real powers."""
    return Draw(lambda rng: np.asarray(rng.uniform(low, high, shape), dtype=np.float64))


def nonzero(*shape: int) -> Draw:
    """Values with |x| in [0.5, 2): away from abs's kink and from division by zero."""
    return Draw(
        lambda rng: np.asarray(
            rng.choice([-1.0, 1.0], shape) * rng.uniform(0.5, 2.0, shape), dtype=np.float64
        )
    )


def off_grid(*shape: int, step: float = 0.3) -> Draw:
    """Values near odd multiples of step/2: at least 0.3 * step from every multiple of `step`."""
    return Draw(
        lambda rng: np.asarray(
            (rng.integers(-4, 4, shape) + 0.5) * step + rng.uniform(-0.2, 0.2, shape) * step,
            dtype=np.float64,
        )
    )


def on_grid(*shape: int, step: float = 0.3) -> Draw:
    """Values near multiples of `step` (within 0.2 * step): never close to off_grid values."""
    return Draw(
        lambda rng: np.asarray(
            rng.integers(-4, 5, shape) * step + rng.uniform(-0.2, 0.2, shape) * step,
            dtype=np.float64,
        )
    )


def distinct(*shape: int, offset: float = 0.0) -> Draw:
    """Values at least 0.3 apart (no ties, for max/min), shuffled."""
    size = int(np.prod(shape, dtype=np.int64))
    return Draw(
        lambda rng: np.asarray(
            rng.permutation(size).reshape(shape) * 0.5 + rng.uniform(-0.1, 0.1, shape) + offset,
            dtype=np.float64,
        )
    )


def with_zeros(*shape: int, at: tuple[int, ...]) -> Draw:
    """Normal values with exact zeros at the flat positions `at` (prod's and norm's edge cases)."""

    def draw(rng):
        values = np.asarray(rng.standard_normal(shape), dtype=np.float64)
        values.flat[list(at)] = 0.0
        return values

    return Draw(draw)


def indices(high: int, *shape: int) -> Draw:
    """Integers in [0, high) (int64), repeats likely: gather's index."""
    return Draw(lambda rng: rng.integers(0, high, shape))


def mask(*shape: int) -> Draw:
    return Draw(lambda rng: rng.random(shape) < 0.5)


def labels(classes: int, *shape: int, ignore: int | None = None) -> Draw:
    """Class indices in [0, classes) (int64); with `ignore`, the first position holds it."""

    def draw(rng):
        values = rng.integers(0, classes, shape)
        if ignore is not None:
            values.flat[0] = ignore
        return values

    return Draw(draw)


def probabilities(*shape: int) -> Draw:
    """Class probabilities along axis 1: positive, summing to 1 at every position."""
    classes, positions = shape[1], shape[:1] + shape[2:]
    return Draw(lambda rng: np.moveaxis(rng.dirichlet(np.ones(classes), positions), -1, 1).copy())


def around(*points: float, shape: tuple[int, ...] = (2, 4), gap: float = 0.01) -> Draw:
    """Values a `gap` either side of each point (kinks, thresholds), the rest of `shape` filled
    with normal draws: close to the kink, far enough for central differences."""

    def draw(rng):
        values = np.asarray(rng.standard_normal(shape), dtype=np.float64)
        near = [p + side * gap for p in points for side in (-1.0, 1.0)]
        values.flat[: len(near)] = near
        return values

    return Draw(draw)


def uniform(low: float, high: float, *shape: int) -> Draw:
    return Draw(lambda rng: np.asarray(rng.uniform(low, high, shape), dtype=np.float64))


# --- PyTorch helpers ------------------------------------------------------------------------


def _dims(x, axis):
    """A minitrain axis as a PyTorch dim: None becomes every dim of x, spelled out."""
    return tuple(range(x.ndim)) if axis is None else axis


def _as_torch(*values):
    """Numbers as float64 0-d tensors, for PyTorch functions that take only tensors."""
    return [
        v if isinstance(v, torch.Tensor) else torch.tensor(v, dtype=torch.float64) for v in values
    ]


def torch_fn(name: str):
    """torch.nn.functional.<name>, looked up when called (the table loads without PyTorch)."""
    return lambda *args: getattr(torch.nn.functional, name)(*args)


def _torch_index(index):
    """A numpy index with integer or boolean arrays as PyTorch tensors."""
    items = index if isinstance(index, tuple) else (index,)
    converted = tuple(torch.from_numpy(i) if isinstance(i, np.ndarray) else i for i in items)
    return converted if isinstance(index, tuple) else converted[0]


def _torch_prod(x, axis, keepdims):
    """torch.prod takes one dim: several are reduced one at a time, the reduced dims kept, then
    squeezed unless keepdims."""
    dims = tuple(range(x.ndim)) if axis is None else (axis,) if isinstance(axis, int) else axis
    dims = tuple(d % x.ndim for d in dims) if x.ndim else ()
    for d in dims:
        x = torch.prod(x, d, keepdim=True)
    return x if keepdims or not dims else x.squeeze(dims)


def _torch_pad(pad_width):
    """numpy (before, after) pairs as PyTorch's flat list, last dim first."""
    return [n for before, after in reversed(pad_width) for n in (before, after)]


# --- sample families ------------------------------------------------------------------------


def _binary(call, ref, left=normal, right=normal, number=2.5) -> list[Sample]:
    """Same shapes, broadcasting, 0-d tensors and a Python number on either side."""
    return [
        Sample("same_shape", draws(left(3, 4), right(3, 4)), call, ref),
        Sample("broadcast_row", draws(left(3, 4), right(4)), call, ref),
        Sample("broadcast_outer", draws(left(3, 1), right(1, 4)), call, ref),
        Sample("broadcast_rank", draws(left(2, 3, 4), right(3, 1)), call, ref),
        Sample("zero_d_right", draws(left(3, 4), right()), call, ref),
        Sample("zero_d_both", draws(left(), right()), call, ref),
        Sample("number_right", draws(left(3, 4), number), call, ref),
        Sample("number_left", draws(number, right(2, 3)), call, ref),
    ]


def _unary(call, ref, values=normal) -> list[Sample]:
    return [
        Sample("matrix", draws(values(3, 4)), call, ref),
        Sample("zero_d", draws(values()), call, ref),
        Sample("3d", draws(values(2, 1, 3)), call, ref),
    ]


_REDUCTION_AXES = [  # (shape, axis, keepdims)
    ((3, 4), None, False),
    ((3, 4), None, True),
    ((3, 4), 0, False),
    ((3, 4), -1, True),
    ((2, 3, 4), (0, 2), False),
    ((2, 3, 4), (-1, 0), True),
    ((2, 3, 4), 1, False),
    ((), None, False),
]


def _reduction(call, ref, values=normal, axes=_REDUCTION_AXES) -> list[Sample]:
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
    reductions = _reduction(
        op,
        lambda x, a, k: getattr(torch, torch_name)(x, a, keepdim=k, correction=1),
        axes=_REDUCTION_AXES[:-1],  # not 0-d: one value leaves no degrees of freedom
    )
    return reductions + [
        Sample(
            f"correction{c}_axis{axis}",
            draws(normal(3, 4)),
            lambda x, c=c, axis=axis: op(x, axis, False, correction=c),
            lambda x, c=c, axis=axis: getattr(torch, torch_name)(x, axis, correction=c),
        )
        for c, axis in [(0, None), (0, 1), (2, 1), (0, -2)]
    ]


def _reduction_name(shape, axis, keepdims) -> str:
    """E.g. '2x3x4_axis-1_0_keep' or 'zero_d_axisNone'."""
    dims = "x".join(map(str, shape)) or "zero_d"
    axes = "_".join(map(str, axis)) if isinstance(axis, tuple) else str(axis)
    return f"{dims}_axis{axes}" + ("_keep" if keepdims else "")


def _getitem(name, shape, index, ref=None) -> Sample:
    """x[index] on a normal x; PyTorch indexes with the same index unless `ref` is given."""
    return Sample(
        name,
        draws(normal(*shape)),
        lambda x: ops.getitem(x, index),
        ref or (lambda x: x[_torch_index(index)]),
    )


def _steps(step: float):
    """Values for a step function with its jumps at multiples of `step` (floor, ceil, trunc,
    sign's 0) or halfway between them (round): `off_grid` or `on_grid` at that step."""
    return lambda draw: lambda *shape: draw(*shape, step=step)


def _pad(name, shape, pad_width, value=0.0) -> Sample:
    return Sample(
        name,
        draws(normal(*shape)),
        lambda x: ops.pad(x, pad_width, value),
        lambda x: torch.nn.functional.pad(x, _torch_pad(pad_width), value=value),
    )


def _joined(name, shapes, call, ref) -> Sample:
    """concat / stack of len(shapes) normal tensors: `call(list_of_tensors)`."""
    return Sample(
        name,
        draws(*(normal(*s) for s in shapes)),
        lambda *xs: call(list(xs)),
        lambda *xs: ref(list(xs)),
    )


def _matmul(name, shape_a, shape_b) -> Sample:
    return Sample(
        name,
        draws(normal(*shape_a), normal(*shape_b)),
        ops.matmul,
        lambda a, b: torch.matmul(a, b),
    )


# To cover a new op, add `"name": [Sample(...), ...]` below: its inputs, the minitrain call and
# the PyTorch reference (refs reach torch only when called, so the table loads without it).
# Keep inputs away from kinks (ties, clip bounds, |x| at 0, log/sqrt of x <= 0); a kink gets
# its own hand-derived test in test_ops.py. clip's bounds below sit on multiples of 0.25, which
# off_grid(step=0.25) values avoid.
SAMPLES: dict[str, list[Sample]] = {
    # --- elementwise ------------------------------------------------------------------------
    "add": _binary(ops.add, operator.add),
    "sub": _binary(ops.sub, operator.sub),
    "mul": _binary(ops.mul, operator.mul),
    "div": _binary(ops.div, operator.truediv, right=nonzero),
    "neg": _unary(ops.neg, operator.neg),
    "exp": _unary(ops.exp, lambda x: torch.exp(x)),
    "log": _unary(ops.log, lambda x: torch.log(x), values=positive),
    "sqrt": _unary(ops.sqrt, lambda x: torch.sqrt(x), values=positive),
    "abs": _unary(ops.abs, lambda x: torch.abs(x), values=nonzero),
    "sin": _unary(ops.sin, lambda x: torch.sin(x)),
    "cos": _unary(ops.cos, lambda x: torch.cos(x)),
    # step functions: values away from their jumps, where the finite differences are 0 too
    "sign": _unary(ops.sign, lambda x: torch.sign(x), values=nonzero),
    "floor": _unary(ops.floor, lambda x: torch.floor(x), values=_steps(1.0)(off_grid)),
    "ceil": _unary(ops.ceil, lambda x: torch.ceil(x), values=_steps(1.0)(off_grid)),
    "trunc": _unary(ops.trunc, lambda x: torch.trunc(x), values=_steps(1.0)(off_grid)),
    "round": _unary(ops.round, lambda x: torch.round(x), values=_steps(1.0)(on_grid))
    + [
        Sample(
            f"decimals{decimals}",
            draws(on_grid(3, 4, step=10.0**-decimals)),
            lambda x, d=decimals: ops.round(x, d),
            lambda x, d=decimals: torch.round(x, decimals=d),
        )
        for decimals in (1, 2, -1)
    ],
    "maximum": _binary(
        ops.maximum, lambda a, b: torch.maximum(*_as_torch(a, b)), off_grid, on_grid, 0.6
    ),
    "minimum": _binary(
        ops.minimum, lambda a, b: torch.minimum(*_as_torch(a, b)), off_grid, on_grid, 0.6
    ),
    "pow": [
        Sample(name, draws(*specs), ops.pow, lambda a, b: torch.pow(a, b))
        for name, specs in [
            ("tensor_tensor", (positive(3, 4), normal(3, 4))),
            ("broadcast", (positive(3, 1), normal(4))),
            ("zero_d_exponent", (positive(2, 3), normal())),
            ("number_exponent", (positive(2, 3), 2.5)),
            ("int_exponent_negative_base", (normal(2, 3), 3)),
            ("negative_exponent", (positive(4), -1.5)),
            ("number_base", (1.7, normal(2, 3))),
        ]
    ],
    "where": [
        Sample(
            "same_shape",
            draws(mask(3, 4), normal(3, 4), normal(3, 4)),
            ops.where,
            lambda c, a, b: torch.where(c, a, b),
        ),
        Sample(
            "broadcast",
            draws(mask(3, 1), normal(1, 4), normal(4)),
            ops.where,
            lambda c, a, b: torch.where(c, a, b),
        ),
        Sample(
            "broadcast_cond",
            draws(mask(2, 3, 4), normal(3, 1), normal(4)),
            ops.where,
            lambda c, a, b: torch.where(c, a, b),
        ),
        Sample(
            "number_b",
            draws(mask(3, 4), normal(3, 4), 0.0),
            ops.where,
            lambda c, a, b: torch.where(c, a, b),
        ),
        Sample(
            "zero_d_a",
            draws(mask(3, 4), normal(), normal(3, 4)),
            ops.where,
            lambda c, a, b: torch.where(c, a, b),
        ),
    ],
    "clip": [
        Sample(
            "both",
            draws(off_grid(4, 5, step=0.25)),
            lambda x: ops.clip(x, -0.5, 0.5),
            lambda x: torch.clamp(x, -0.5, 0.5),
        ),
        Sample(
            "min_only",
            draws(off_grid(4, 5, step=0.25)),
            lambda x: ops.clip(x, -0.25, None),
            lambda x: torch.clamp(x, min=-0.25),
        ),
        Sample(
            "max_only",
            draws(off_grid(4, 5, step=0.25)),
            lambda x: ops.clip(x, None, 0.25),
            lambda x: torch.clamp(x, max=0.25),
        ),
        Sample(
            "int_bounds",
            draws(off_grid(3, 4, step=0.25)),
            lambda x: ops.clip(x, -1, 0),
            lambda x: torch.clamp(x, -1, 0),
        ),
        Sample(
            "zero_d",
            draws(off_grid(step=0.25)),
            lambda x: ops.clip(x, -0.5, 0.5),
            lambda x: torch.clamp(x, -0.5, 0.5),
        ),
    ],
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
    # --- reductions -------------------------------------------------------------------------
    "sum": _reduction(ops.sum, lambda x, a, k: torch.sum(x, _dims(x, a), keepdim=k))
    + [
        Sample(
            "empty_axis",
            draws(normal(2, 0, 3)),
            lambda x: ops.sum(x, axis=1),
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
            lambda x: ops.sum(x, axis=1, keepdims=True),
            lambda x: torch.sum(x, 1, keepdim=True),
        ),
    ],
    "mean": _reduction(ops.mean, lambda x, a, k: torch.mean(x, _dims(x, a), keepdim=k)),
    # prod's gradient with zeros: one zero in a slice gets the product of the rest, the others
    # nothing; two or more zeros give the whole slice no gradient
    "prod": _reduction(ops.prod, _torch_prod)
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
    "max": _reduction(
        ops.max, lambda x, a, k: torch.amax(x, _dims(x, a), keepdim=k), values=distinct
    ),
    "min": _reduction(
        ops.min, lambda x, a, k: torch.amin(x, _dims(x, a), keepdim=k), values=distinct
    ),
    "var": _spread_samples(ops.var, "var"),
    "std": _spread_samples(ops.std, "std"),
    "logsumexp": _reduction(
        ops.logsumexp, lambda x, a, k: torch.logsumexp(x, _dims(x, a), keepdim=k)
    )
    + [
        Sample(
            "large_values",
            draws(Draw(lambda rng: 1e3 + rng.standard_normal((3, 4)))),
            lambda x: ops.logsumexp(x, axis=1),
            lambda x: torch.logsumexp(x, 1),
        ),
        Sample(
            "empty_axis",
            draws(normal(2, 0)),
            lambda x: ops.logsumexp(x, axis=1),
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
    # --- shape ------------------------------------------------------------------------------
    "reshape": [
        Sample(
            name,
            draws(normal(*old)),
            lambda x, new=new: ops.reshape(x, new),
            lambda x, new=new: torch.reshape(x, new if isinstance(new, tuple) else (new,)),
        )
        for name, old, new in [
            ("matrix", (2, 6), (3, 4)),
            ("infer", (2, 3, 4), (4, -1)),
            ("int_shape", (2, 3), 6),
            ("to_zero_d", (1,), ()),
            ("from_zero_d", (), (1, 1)),
            ("empty", (0, 3), (3, 0)),
            ("empty_infer", (2, 0), (-1, 4)),
        ]
    ],
    "flatten": [
        Sample(
            name,
            draws(normal(*shape)),
            lambda x, s=start, e=end: ops.flatten(x, s, e),
            lambda x, s=start, e=end: torch.flatten(x, s, e),
        )
        for name, shape, start, end in [
            ("all", (2, 3, 4), 0, -1),
            ("trailing", (2, 3, 4), 1, -1),
            ("leading", (2, 3, 4), 0, 1),
            ("negative_dims", (2, 3, 4, 2), -3, -2),
            ("one_dim", (2, 3), 1, 1),
            ("zero_d", (), 0, -1),
        ]
    ],
    "transpose": [
        Sample(
            f"dims{d0}_{d1}",
            draws(normal(*shape)),
            lambda x, d0=d0, d1=d1: ops.transpose(x, d0, d1),
            lambda x, d0=d0, d1=d1: torch.transpose(x, d0, d1),
        )
        for shape, d0, d1 in [((3, 4), 0, 1), ((2, 3, 4), 0, 2), ((2, 3, 4), -1, -2)]
    ],
    "permute": [
        Sample(
            "dims" + "_".join(map(str, dims)),
            draws(normal(*shape)),
            lambda x, dims=dims: ops.permute(x, dims),
            lambda x, dims=dims: torch.permute(x, dims),
        )
        for shape, dims in [((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (-1, 0, 1)), ((3, 4), (1, 0))]
    ],
    "broadcast_to": [
        Sample(
            name,
            draws(normal(*shape)),
            lambda x, new=new: ops.broadcast_to(x, new),
            lambda x, new=new: torch.broadcast_to(x, new),
        )
        for name, shape, new in [
            ("new_and_stretched_dims", (3, 1), (2, 3, 4)),
            ("leading", (4,), (3, 4)),
            ("zero_d", (), (2, 3)),
            ("same", (2, 3), (2, 3)),
        ]
    ],
    "getitem": [
        _getitem("slices", (4, 5), (slice(1, 3), slice(None, None, 2))),
        _getitem("int_and_slice", (4, 5), (-1, slice(1, None))),
        _getitem("scalar_element", (4, 5), (2, 3)),
        _getitem(
            "negative_steps",
            (4, 5),
            (slice(None, None, -1), slice(3, 0, -2)),
            ref=lambda x: torch.flip(x, [0])[:, [3, 1]],
        ),
        _getitem("negative_step_1d", (6,), slice(4, None, -2), ref=lambda x: x[[4, 2, 0]]),
        _getitem("none_ellipsis", (2, 3, 4), (None, Ellipsis, 1)),
        _getitem("ellipsis_step", (2, 3, 4), (Ellipsis, slice(None, None, 2))),
        _getitem("int_array_repeated", (4, 3), np.array([0, 0, 2, 3, 0])),
        _getitem("list_repeated", (4,), [1, 1, 0]),
        _getitem("int_arrays_2d_repeated", (3, 4), (np.array([0, 0, 2]), np.array([1, 1, 3]))),
        _getitem("slice_then_int_array", (3, 4), (slice(None), np.array([2, 0, 2]))),
        _getitem("bool_mask", (3, 4), np.arange(12).reshape(3, 4) % 3 == 0),
        _getitem("bool_mask_rows", (4, 3), np.array([True, False, True, True])),
        _getitem("slice_then_bool_mask", (2, 3), (slice(None), np.array([True, False, True]))),
        _getitem(
            "int_array_then_negative_step",
            (3, 4),
            ([0, 2, 0], slice(None, None, -1)),
            ref=lambda x: torch.flip(x, [1])[[0, 2, 0]],
        ),
        # PyTorch's rule where numpy's differs: an int beside an index array selects first,
        # so the array's dim stays in place ((3, 2) here; numpy's x[0, :, [0, 2]] is (2, 3))
        _getitem("int_slice_list", (2, 3, 4), (0, slice(None), [0, 2])),
        _getitem("int_array_int", (3, 4, 5), (1, np.array([0, 2, 2]), -1)),
        _getitem("mask_slice_int", (3, 4, 5), (np.array([True, False, True]), slice(None), 1)),
        _getitem("bool_int_list", (3, 4), (True, 1, [0, 2, 0])),
        _getitem("zero_d_index_slice_list", (2, 3, 4), (np.array(1), slice(None), [0, 2])),
        Sample(
            "tensor_index_repeated",
            draws(normal(4, 2)),
            lambda x: ops.getitem(x, mt.tensor(np.array([3, 1, 3]))),
            lambda x: x[torch.tensor([3, 1, 3])],
        ),
    ],
    # gather: repeated indices add their gradients; index may be smaller than x outside axis
    "gather": [
        Sample(
            name,
            draws(normal(*shape), index),
            lambda x, i, a=axis: ops.gather(x, a, i),
            lambda x, i, a=axis: torch.gather(x, a, i),
        )
        for name, shape, axis, index in [
            ("axis0", (3, 4), 0, indices(3, 5, 4)),
            ("axis1_repeated", (3, 4), 1, Draw(lambda rng: np.array([[0, 0, 3], [1, 1, 1]]))),
            ("axis_minus1_smaller", (3, 5), -1, indices(5, 2, 3)),
            ("3d_axis1", (2, 3, 4), 1, indices(3, 2, 6, 3)),
            ("vector", (5,), 0, Draw(lambda rng: np.array([4, 0, 4, 4]))),
            ("empty_index", (3, 4), 1, indices(4, 3, 0)),
        ]
    ],
    "concat": [
        _joined("axis0", [(2, 3), (4, 3)], ops.concat, lambda xs: torch.cat(xs, 0)),
        _joined(
            "axis_minus1_three",
            [(2, 3), (2, 1), (2, 2)],
            lambda xs: ops.concat(xs, -1),
            lambda xs: torch.cat(xs, -1),
        ),
        _joined(
            "axis_minus2_3d",
            [(2, 1, 3), (2, 2, 3)],
            lambda xs: ops.concat(xs, -2),
            lambda xs: torch.cat(xs, -2),
        ),
        _joined(
            "with_empty",
            [(2, 0), (2, 3)],
            lambda xs: ops.concat(xs, 1),
            lambda xs: torch.cat(xs, 1),
        ),
        _joined("single", [(3,)], ops.concat, lambda xs: torch.cat(xs, 0)),
    ],
    "stack": [
        _joined("axis0", [(2, 3), (2, 3)], ops.stack, lambda xs: torch.stack(xs, 0)),
        _joined(
            "axis_minus1_three",
            [(2, 3), (2, 3), (2, 3)],
            lambda xs: ops.stack(xs, -1),
            lambda xs: torch.stack(xs, -1),
        ),
        _joined(
            "axis1_vectors",
            [(4,), (4,)],
            lambda xs: ops.stack(xs, 1),
            lambda xs: torch.stack(xs, 1),
        ),
        _joined("zero_d", [(), (), ()], ops.stack, lambda xs: torch.stack(xs, 0)),
    ],
    "pad": [
        _pad("asymmetric_2d", (2, 3), ((1, 2), (0, 3))),
        _pad("value_3d", (2, 2, 3), ((0, 0), (2, 1), (1, 0)), value=1.5),
        _pad("asymmetric_1d", (4,), ((3, 1),), value=-2.0),
        _pad("none", (2, 3), ((0, 0), (0, 0))),
    ],
    # --- linear algebra ---------------------------------------------------------------------
    "matmul": [
        _matmul("mat_mat", (3, 4), (4, 2)),
        _matmul("vec_mat", (4,), (4, 2)),
        _matmul("mat_vec", (3, 4), (4,)),
        _matmul("vec_vec", (4,), (4,)),
        _matmul("batched", (2, 3, 4), (2, 4, 5)),
        _matmul("batched_broadcast", (2, 1, 3, 4), (3, 4, 2)),
        _matmul("batch_times_mat", (2, 3, 4), (4, 2)),
        _matmul("vec_batched", (4,), (2, 4, 3)),
        _matmul("batched_vec", (2, 3, 4), (4,)),
    ],
    "linear": [
        Sample(
            "bias",
            draws(normal(3, 4), normal(2, 4), normal(2)),
            ops.linear,
            lambda x, w, b: torch.nn.functional.linear(x, w, b),
        ),
        Sample(
            "no_bias",
            draws(normal(3, 4), normal(2, 4)),
            ops.linear,
            lambda x, w: torch.nn.functional.linear(x, w),
        ),
        Sample(
            "batched",
            draws(normal(2, 3, 4), normal(5, 4), normal(5)),
            ops.linear,
            lambda x, w, b: torch.nn.functional.linear(x, w, b),
        ),
        Sample(
            "vector_input",
            draws(normal(4), normal(3, 4), normal(3)),
            ops.linear,
            lambda x, w, b: torch.nn.functional.linear(x, w, b),
        ),
        Sample(
            "frozen_weight",
            draws(normal(3, 4), normal(2, 4), normal(2)),
            ops.linear,
            lambda x, w, b: torch.nn.functional.linear(x, w, b),
            grad=(0, 2),
        ),
    ],
    # --- losses -----------------------------------------------------------------------------
    # Class-index targets and the constant weights get no gradient: `grad` names the inputs that do.
    "cross_entropy": [
        Sample(
            name,
            draws(*specs),
            lambda x, t, *w, kw=kw: ops.cross_entropy(x, t, *w, **kw),
            lambda x, t, *w, kw=kw: torch.nn.functional.cross_entropy(x, t, *w, **kw),
            grad=grad,
        )
        for name, specs, kw, grad in [
            ("mean", (normal(4, 5), labels(5, 4)), {}, (0,)),
            ("sum_weight", (normal(4, 5), labels(5, 4), positive(5)), {"reduction": "sum"}, (0,)),
            (
                "none_ignore_index",
                (normal(5, 3), labels(3, 5, ignore=-100)),
                {"reduction": "none"},
                (0,),
            ),
            (
                "mean_weight_ignore_smoothing",
                (normal(5, 4), labels(4, 5, ignore=2), positive(4)),
                {"ignore_index": 2, "label_smoothing": 0.2},
                (0,),
            ),
            (
                "rank4_none_smoothing",
                (normal(2, 3, 2, 2), labels(3, 2, 2, 2, ignore=-100)),
                {"reduction": "none", "label_smoothing": 0.1},
                (0,),
            ),
            ("rank4_mean_weight", (normal(2, 3, 2, 2), labels(3, 2, 2, 2), positive(3)), {}, (0,)),
            ("probabilities", (normal(4, 5), probabilities(4, 5)), {}, (0, 1)),
            (
                "probabilities_none",
                (normal(3, 4), probabilities(3, 4)),
                {"reduction": "none"},
                (0, 1),
            ),
            (
                "probabilities_rank4_weight_smoothing_sum",
                (normal(2, 3, 2, 2), probabilities(2, 3, 2, 2), positive(3)),
                {"reduction": "sum", "label_smoothing": 0.3},
                (0, 1),
            ),
            ("single_sample", (normal(5), labels(5)), {"reduction": "none"}, (0,)),
            (
                "logits_1e4",
                (Draw(lambda rng: 1e4 + rng.standard_normal((3, 4))), labels(4, 3)),
                {},
                (0,),
            ),
        ]
    ],
    "nll_loss": [
        Sample(
            name,
            draws(*specs),
            lambda x, t, *w, kw=kw: ops.nll_loss(x, t, *w, **kw),
            lambda x, t, *w, kw=kw: torch.nn.functional.nll_loss(x, t, *w, **kw),
            grad=(0,),
        )
        for name, specs, kw in [
            ("mean", (normal(4, 5), labels(5, 4)), {}),
            (
                "sum_weight_ignore",
                (normal(5, 3), labels(3, 5, ignore=-100), positive(3)),
                {"reduction": "sum"},
            ),
            (
                "none_custom_ignore",
                (normal(4, 3), labels(3, 4, ignore=1)),
                {"reduction": "none", "ignore_index": 1},
            ),
            (
                "rank4_mean_weight",
                (normal(2, 3, 2, 2), labels(3, 2, 2, 2, ignore=-100), positive(3)),
                {},
            ),
            ("single_sample", (normal(4), labels(4)), {"reduction": "none"}),
        ]
    ],
    **{
        op_name: [
            Sample(
                name,
                draws(*specs),
                lambda a, b, op=op, kw=kw: op(a, b, **kw),
                lambda a, b, ref=ref, kw=kw: getattr(torch.nn.functional, ref)(a, b, **kw),
                grad=grad,
            )
            for name, specs, kw, grad in [
                ("mean", (normal(3, 4), normal(3, 4)), {}, None),
                ("sum", (normal(3, 4), normal(3, 4)), {"reduction": "sum"}, None),
                ("none_3d", (normal(2, 3, 4), normal(2, 3, 4)), {"reduction": "none"}, None),
                ("zero_d", (normal(), normal()), {}, None),
                ("frozen_target", (normal(5), normal(5)), {}, (0,)),
            ]
            + extra
        ]
        for op_name, op, ref, extra in [
            ("mse_loss", ops.mse_loss, "mse_loss", []),
            ("l1_loss", ops.l1_loss, "l1_loss", []),
            (
                "smooth_l1_loss",
                ops.smooth_l1_loss,
                "smooth_l1_loss",
                [
                    ("beta_half", (normal(3, 4), normal(3, 4)), {"beta": 0.5}, None),
                    ("beta_0_is_l1", (normal(3, 4), normal(3, 4)), {"beta": 0.0}, None),
                ],
            ),
            (
                "huber_loss",
                ops.huber_loss,
                "huber_loss",
                [
                    ("delta_half", (normal(3, 4), normal(3, 4)), {"delta": 0.5}, None),
                    ("delta_2_sum", (normal(3, 4), normal(3, 4)), {"delta": 2.0}, None),
                ],
            ),
        ]
    },
    "binary_cross_entropy_with_logits": [
        Sample(
            name,
            draws(*specs),
            lambda x, t, w=None, pw=None, kw=kw: ops.binary_cross_entropy_with_logits(
                x, t, w, pos_weight=pw, **kw
            ),
            lambda x, t, w=None, pw=None, kw=kw: (
                torch.nn.functional.binary_cross_entropy_with_logits(x, t, w, pos_weight=pw, **kw)
            ),
            grad=(0, 1),
        )
        for name, specs, kw in [
            ("mean", (normal(3, 4), positive(3, 4, low=0.0, high=1.0)), {}),
            (
                "sum_weight",
                (normal(3, 4), positive(3, 4, low=0.0, high=1.0), positive(3, 1)),
                {"reduction": "sum"},
            ),
            (
                "none_weight_pos_weight",
                (normal(2, 3, 4), positive(2, 3, 4, low=0.0, high=1.0), positive(4), positive(4)),
                {"reduction": "none"},
            ),
            (
                "large_logits",
                (Draw(lambda rng: 40.0 * rng.standard_normal((3, 4))), positive(3, 4, high=1.0)),
                {},
            ),
        ]
    ],
    "binary_cross_entropy": [
        Sample(
            name,
            draws(*specs),
            lambda x, t, w=None, kw=kw: ops.binary_cross_entropy(x, t, w, **kw),
            lambda x, t, w=None, kw=kw: torch.nn.functional.binary_cross_entropy(x, t, w, **kw),
            grad=(0, 1),
        )
        for name, specs, kw in [
            ("mean", (positive(3, 4, low=0.05, high=0.95), positive(3, 4, low=0.0, high=1.0)), {}),
            (
                "sum_weight",
                (
                    positive(3, 4, low=0.05, high=0.95),
                    positive(3, 4, low=0.0, high=1.0),
                    positive(3, 1),
                ),
                {"reduction": "sum"},
            ),
            (
                "none_3d_weight_row",
                (
                    positive(2, 3, 4, low=0.05, high=0.95),
                    positive(2, 3, 4, low=0.0, high=1.0),
                    positive(4),
                ),
                {"reduction": "none"},
            ),
            (
                "near_0_and_1",
                (
                    Draw(lambda rng: np.array([1e-3, 2e-3, 0.998, 0.999])),
                    Draw(lambda rng: np.array([0.02, 0.97, 0.05, 0.99])),
                ),
                {},
            ),
            ("zero_d", (positive(low=0.1, high=0.9), positive(low=0.0, high=1.0)), {}),
        ]
    ],
    # --- activations ------------------------------------------------------------------------
    # relu and leaky_relu draw nonzero values, away from the kink at 0.
    "relu": _unary(ops.relu, lambda x: torch.relu(x), values=nonzero),
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
    "sigmoid": _unary(ops.sigmoid, lambda x: torch.sigmoid(x))
    + [
        Sample(
            "tails",
            draws(Draw(lambda rng: rng.uniform(-40.0, 40.0, (3, 5)))),
            ops.sigmoid,
            lambda x: torch.sigmoid(x),
        )
    ],
    "tanh": _unary(ops.tanh, lambda x: torch.tanh(x)),
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
            Sample(name, draws(values), getattr(ops, op_name), torch_fn(op_name), ref_rtol=rtol)
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


def _dropout(p: float):
    """Dropout with a fixed seed, so every call (gradcheck calls many) draws the same mask; the
    PyTorch twin applies the mask numpy's generator gives for that seed (u >= p, kept)."""

    def call(x):
        mt.manual_seed(7)
        return ops.dropout(x, p)

    def ref(x):
        keep = np.random.default_rng(7).random(tuple(x.shape)) >= p
        return x * torch.from_numpy(keep) / (1.0 - p)

    return call, ref


SAMPLES["dropout"] = [
    Sample(name, draws(normal(*shape)), *_dropout(p))
    for name, shape, p in [("p0.3", (4, 5), 0.3), ("p0.9_3d", (2, 3, 4), 0.9), ("p0.5", (7,), 0.5)]
]


# Op families whose samples live in their own files add to the table; they import the helpers
# above from this module, which is why this import comes last.
for _family in ("samples_normalization", "samples_conv"):
    SAMPLES.update(importlib.import_module(_family).SAMPLES)
