"""The op sample table: for every registered op, sample inputs, the call and its PyTorch twin.

This module holds the machinery (Sample, the input draws, helpers shared by several sample files)
and assembles the table from the sample files, samples/<family>/<module>.py beside it: one per
module of minitrain/ops/<family>/ that defines ops, holding the samples of that module's ops."""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from reference import torch

import minitrain as mt
from minitrain.nn import functional


@dataclass(frozen=True)
class Sample:
    """One way to call an op.

    `make(rng)` returns the inputs: floating arrays (become tensors), boolean or integer arrays
    (tensors without grad), and anything else (numbers, indices), passed to both calls as is.
    `call(*inputs)` runs minitrain, `ref(*inputs)` PyTorch on the same values. `grad` lists the
    inputs that require grad (None: every floating array). `check` holds gradcheck keywords
    (eps, atol, rtol, mode); `ref_rtol` / `ref_atol` the PyTorch tolerances; `float32=False`
    where the op does not keep float32 in float32 out (cast).

    Second derivatives (tests/ops/test_second_order.py): gradgradcheck takes `check`'s keywords
    (mode aside) updated by `gradgrad_check`, whose `ref_rtol` / `ref_atol` are the tolerances of
    the PyTorch comparison; `second_order_ref` replaces `ref` there where PyTorch's own op has no
    usable double backward; `not_twice_differentiable` says why the gradient has a kink at the
    sample's point (a zero row of a norm), which leaves the sample out of those tests (a
    hand-written test pins the value chosen there).
    """

    name: str
    make: Callable[[np.random.Generator], tuple]
    call: Callable[..., Any]
    ref: Callable[..., Any]
    grad: tuple[int, ...] | None = None
    check: dict = field(default_factory=dict)
    gradgrad_check: dict = field(default_factory=dict)
    not_twice_differentiable: str = ""
    second_order_ref: Callable[..., Any] | None = None
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


def torch_fn(name: str):
    """torch.nn.functional.<name>, looked up when called (the table loads without PyTorch)."""
    return lambda *args: getattr(torch.nn.functional, name)(*args)


def unary_samples(call, ref, values=normal) -> list[Sample]:
    """A matrix, a 0-d and a 3-D input drawn by `values`: the samples of a one-input op."""
    return [
        Sample("matrix", draws(values(3, 4)), call, ref),
        Sample("zero_d", draws(values()), call, ref),
        Sample("3d", draws(values(2, 1, 3)), call, ref),
    ]


def values_sample(name: str, values: Draw, call, ref) -> Sample:
    """A sample of an op returning (values, indices): the values (indices are checked by hand)."""
    return Sample(name, draws(values), lambda x: call(x).values, lambda x: ref(x).values)


def functional_sample(name: str, specs, ours: str, theirs: str, grad=None, **kw) -> Sample:
    """minitrain.nn.functional.<ours> and torch.nn.functional.<theirs> with the same arguments."""
    return Sample(
        name,
        draws(*specs),
        lambda *a: getattr(functional, ours)(*a, **kw),
        lambda *a: getattr(torch.nn.functional, theirs)(*a, **kw),
        grad=grad,
    )


def onnx_to_torch_pad(onnx_pads) -> list[int]:
    """ONNX pads [b0, b1, ..., e0, e1, ...] as torch.nn.functional.pad's list, last dim first."""
    dims = len(onnx_pads) // 2
    return [n for d in reversed(range(dims)) for n in (onnx_pads[d], onnx_pads[dims + d])]


def onnx_to_padding(onnx_pads):
    """ONNX pads [b0, b1, ..., e0, e1, ...] as the conv and pool ops' (PyTorch's) padding: one
    int per spatial dim where every dim's begin and end agree, else one (begin, end) pair per
    spatial dim (beyond PyTorch)."""
    dims = len(onnx_pads) // 2
    begins, ends = tuple(onnx_pads[:dims]), tuple(onnx_pads[dims:])
    return begins if begins == ends else tuple(zip(begins, ends, strict=True))


# To cover a new op, add `"name": [Sample(...), ...]` to SAMPLES in
# samples/<family>/<module>.py, the file named after the ops module that defines the op (a function
# composed of registered ops: to COMPOSED there): its inputs, the minitrain call and the PyTorch
# reference (refs reach torch only when called, so the table loads without it). Those files import
# the machinery above from this module, which is why the table is assembled last, from every file
# under samples/ in sorted path order.
SAMPLES: dict[str, list[Sample]] = {}
# the functions composed of registered ops (sort, roll, cosine_similarity ...), which a sample
# file lists in its COMPOSED: the registry tests run them too, but for the registry's own checks
COMPOSED: dict[str, list[Sample]] = {}
_HERE = Path(__file__).parent
for _path in sorted(_HERE.joinpath("samples").rglob("[!_]*.py")):  # samples.<family>.<module>
    _module = importlib.import_module(".".join(_path.relative_to(_HERE).with_suffix("").parts))
    _entries, _composed = getattr(_module, "SAMPLES", {}), getattr(_module, "COMPOSED", {})
    _twice = (SAMPLES.keys() | COMPOSED.keys()) & (_entries.keys() | _composed.keys())
    assert not _twice, f"functions sampled twice: {_twice}"
    SAMPLES.update(_entries)
    COMPOSED.update(_composed)
