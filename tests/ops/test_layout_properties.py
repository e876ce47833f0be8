"""A property every registered op keeps, over its whole sample table (tests/op_samples.py): its
floating inputs given as views of other layouts (a negatively strided view, a strided slice of a
larger buffer, Fortran order, a transposed view) give the result and the gradients the
contiguous inputs give, and the inputs are never written. Hypothesis draws which layout each
input takes; how many draws per sample is a tenth of the profile's (tests/conftest.py: "ci"
by default, "fuzz" for `make fuzz`), at least 4."""

from __future__ import annotations

import numpy as np
import pytest
from op_samples import COMPOSED, SAMPLES, minitrain_inputs, rng_for

import minitrain as mt

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning:minitrain")


def _reversed(array):
    """A view with every stride negative, of the same values."""
    return np.flip(np.flip(array).copy())


def _strided(array):
    """Every other element of a buffer twice as long in the last dim."""
    buffer = np.full(array.shape[:-1] + (2 * array.shape[-1],), np.nan, array.dtype)
    buffer[..., ::2] = array
    return buffer[..., ::2]


def _transposed(array):
    """A transposed view of a C-ordered copy of the transpose."""
    return np.ascontiguousarray(array.T).T


LAYOUTS = {
    "contiguous": lambda array: array,
    "reversed": _reversed,
    "strided": _strided,
    "fortran": np.asfortranarray,
    "transposed": _transposed,
}


def _layouts_for(value) -> list[str]:
    if not (isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.size):
        return ["contiguous"]
    if value.ndim == 0:
        return ["contiguous"]
    return list(LAYOUTS) if value.ndim > 1 else ["contiguous", "reversed", "strided"]


def _inputs(values, sample, layouts):
    """The sample's inputs, each floating array given in its layout, sharing that memory."""
    inputs = minitrain_inputs(values, sample)
    grad = sample.differentiable(values)
    for i, (value, layout) in enumerate(zip(values, layouts, strict=True)):
        if layout != "contiguous":
            view = LAYOUTS[layout](value.copy())  # its own memory: an op may write an input
            inputs[i] = mt.from_numpy(view).requires_grad_(i in grad)
    return inputs


def _first_float(result):
    outputs = result if isinstance(result, (tuple, list)) else (result,)
    return next(o for o in outputs if isinstance(o, mt.Tensor) and o.dtype.kind == "f")


def _run(sample, inputs, upstream_seed: int):
    """(outputs as arrays, the gradients of the floating inputs that require grad, the input
    tensors' values after the call: those an op updates, a batch norm's running statistics)."""
    mt.manual_seed(0)  # a sample that draws draws the same numbers in either layout
    result = sample.call(*inputs)
    outputs = result if isinstance(result, (tuple, list)) else (result,)
    arrays = [o.detach().numpy().copy() for o in outputs if isinstance(o, mt.Tensor)]
    out = _first_float(result)
    leaves = [t for t in inputs if isinstance(t, mt.Tensor) and t.requires_grad]
    grads = []
    if out.requires_grad and leaves:
        upstream = np.random.default_rng(upstream_seed).standard_normal(out.shape)
        found = mt.autograd.grad(
            out, leaves, mt.tensor(upstream, dtype=out.dtype), allow_unused=True
        )
        grads = [None if g is None else g.numpy().copy() for g in found]
    return arrays, grads, [t.detach().numpy().copy() for t in inputs if isinstance(t, mt.Tensor)]


def _same(ours, theirs, what: str) -> None:
    if ours is None or theirs is None:
        assert ours is None and theirs is None, what
        return
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype, what
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14, err_msg=what)


# ops whose samples update an input, by contract
UPDATES_INPUTS = {"batch_norm": "the running statistics, in training"}


def _has_other_layouts(op_name: str, sample) -> bool:
    values = sample.make(rng_for(op_name, sample))
    return any(_layouts_for(v) != ["contiguous"] for v in values)


# every sample with a floating input of at least one dim (to_device's moves it anyway)
CASES = [
    pytest.param(op_name, sample, id=f"{op_name}-{sample.name}")
    for table in (SAMPLES, COMPOSED)
    for op_name, samples in table.items()
    for sample in samples
    if op_name != "to_device" and _has_other_layouts(op_name, sample)
]


@pytest.mark.parametrize("op_name, sample", CASES)
def test_any_layout_of_the_inputs_gives_the_contiguous_result(op_name, sample):
    values = sample.make(rng_for(op_name, sample))
    choices = [_layouts_for(v) for v in values]
    expected = _run(sample, minitrain_inputs(values, sample), upstream_seed=1)
    originals = [v for v in values if isinstance(v, np.ndarray)]
    for i, (after, before) in enumerate(zip(expected[2], originals, strict=True)):
        if op_name not in UPDATES_INPUTS:
            np.testing.assert_array_equal(after, before, err_msg=f"input {i} was written")
    draws = max(4, settings().max_examples // 10)

    @settings(max_examples=draws, deadline=None)
    @given(st.tuples(*(st.sampled_from(c) for c in choices)))
    def check(layouts):
        outputs, grads, inputs_after = _run(sample, _inputs(values, sample, layouts), 1)
        name = f"{op_name}-{sample.name} {layouts}"
        for i, (ours, theirs) in enumerate(zip(outputs, expected[0], strict=True)):
            _same(ours, theirs, f"{name}: output {i}")
        for i, (ours, theirs) in enumerate(zip(grads, expected[1], strict=True)):
            _same(ours, theirs, f"{name}: gradient {i}")
        # inputs read only stay as they were; those the op updates, as the contiguous ones
        for i, (ours, theirs) in enumerate(zip(inputs_after, expected[2], strict=True)):
            _same(ours, theirs, f"{name}: input {i} after the call")

    check()
