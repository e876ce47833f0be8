"""Second derivatives of every registered op, driven by the sample table: gradgradcheck against
finite differences of the gradient in float64, PyTorch's double backward on the same values, and
the registry's promise that a derivative is written twice only beside a fused kernel."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest
from op_samples import COMPOSED, SAMPLES, minitrain_inputs, rng_for, torch_inputs

import minitrain as mt
from minitrain import ops
from minitrain.errors import GraphError
from minitrain.ops.core.op import Op


def _double_backward_op(op_name):
    """Whether create_graph differentiates through it: a registered op that does not say
    no_double_backward, or a function composed of ops (whose own the registry checks)."""
    op = ops.registry().get(op_name)
    return op is None or not op.no_double_backward


def _cases(table):
    return [
        pytest.param(op_name, sample, id=f"{op_name}-{sample.name}")
        for op_name, samples in table.items()
        for sample in samples
        if not sample.not_twice_differentiable  # (a kink of the gradient at the sample's point)
    ]


REGISTERED = _cases(SAMPLES)
CASES = REGISTERED + _cases(COMPOSED)  # the composed functions' samples too

# gradgradcheck compares the whole second-derivative matrix up to this many input elements
# (the sample's inputs and one gradient per output), random directions above it.
FULL_UP_TO = 48


def test_a_second_definition_stays_only_beside_a_fused_backward_a_bench_row_measures():
    # an op keeping a tensor_backward beside its backward names in fused_backward the
    # `make bench` row whose speed keeps its fused kernel (rows: benchmarks/README.md's table)
    table = (pathlib.Path(__file__).parents[2] / "benchmarks" / "README.md").read_text()
    rows = [name.lower() for name in re.findall(r"`([^`|]+)`", table)]
    kept = {name: op for name, op in ops.registry().items() if op.tensor_backward is not None}
    for name, op in kept.items():
        row = op.fused_backward.lower()
        assert any(r.startswith(row) for r in rows), f"{name}: no bench row {op.fused_backward!r}"


def _sizes(sample, inputs):
    outputs = sample.call(*inputs)
    outputs = outputs if isinstance(outputs, (tuple, list)) else [outputs]
    checked = sum(x.array.size for x in inputs if isinstance(x, mt.Tensor) and x.requires_grad)
    return checked + sum(o.array.size for o in outputs)


@pytest.mark.parametrize("op_name, sample", CASES)
def test_gradgradcheck(op_name, sample):
    inputs = minitrain_inputs(sample.make(rng_for(op_name, sample)), sample)
    if not _double_backward_op(op_name):
        with pytest.raises(GraphError, match=ops.registry()[op_name].grad_kernel):
            mt.gradgradcheck(sample.call, inputs)
        return
    keywords = {k: v for k, v in sample.check.items() if k != "mode"}
    keywords.update(sample.gradgrad_check)
    for key in ("ref_rtol", "ref_atol"):  # the PyTorch comparison's, below
        keywords.pop(key, None)
    mode = "full" if _sizes(sample, inputs) <= FULL_UP_TO else "direction"
    assert mt.gradgradcheck(sample.call, inputs, mode=keywords.pop("mode", mode), **keywords)


# (an op without a double backward is left out: test_gradgradcheck checks its error)
@pytest.mark.parametrize(
    "op_name, sample", [case for case in CASES if _double_backward_op(case.values[0])]
)
def test_second_derivatives_match_torch(op_name, sample):
    torch = pytest.importorskip("torch")
    rng = rng_for(op_name, sample)
    values = sample.make(rng)
    grad = sample.differentiable(values)
    ours_in = minitrain_inputs(values, sample)
    theirs_in = torch_inputs(values, sample)
    ours_wrt = [ours_in[i] for i in grad]
    theirs_wrt = [theirs_in[i] for i in grad]

    ours_out = sample.call(*ours_in)
    upstream = rng.standard_normal(ours_out.shape)
    across = [rng.standard_normal(values[i].shape) for i in grad]

    firsts = mt.grad(ours_out, ours_wrt, mt.tensor(upstream), create_graph=True, allow_unused=True)
    theirs_out = (sample.second_order_ref or sample.ref)(*theirs_in)
    their_firsts = torch.autograd.grad(
        theirs_out, theirs_wrt, torch.from_numpy(upstream), create_graph=True, allow_unused=True
    )
    tol = {
        "rtol": sample.gradgrad_check.get("ref_rtol", max(sample.ref_rtol, 1e-9)),
        "atol": sample.gradgrad_check.get("ref_atol", max(sample.ref_atol, 1e-10)),
    }
    for i, (g, want) in enumerate(zip(firsts, their_firsts, strict=True)):
        want = np.zeros(values[grad[i]].shape) if want is None else want.numpy(force=True)
        got = np.zeros(values[grad[i]].shape) if g is None else g.array
        np.testing.assert_allclose(got, want, err_msg=f"first derivative {i}", **tol)

    ours_total = [(g * mt.tensor(w)).sum() for g, w in zip(firsts, across, strict=True)]
    ours_total = [t for t in ours_total if t.requires_grad]
    their_total = [
        (g * torch.from_numpy(w)).sum()
        for g, w in zip(their_firsts, across, strict=True)
        if g is not None and g.requires_grad
    ]
    ours_second = (
        mt.grad(sum(ours_total[1:], ours_total[0]), ours_wrt, allow_unused=True)
        if ours_total
        else [None] * len(grad)
    )
    their_second = (
        torch.autograd.grad(sum(their_total), theirs_wrt, allow_unused=True)
        if their_total
        else [None] * len(grad)
    )
    for i, (g, want) in enumerate(zip(ours_second, their_second, strict=True)):
        want = np.zeros(values[grad[i]].shape) if want is None else want.numpy(force=True)
        got = np.zeros(values[grad[i]].shape) if g is None else g.array
        np.testing.assert_allclose(got, want, err_msg=f"second derivative, input {i}", **tol)


@pytest.mark.parametrize("p", [2, 1, 1.5, 0.5])
def test_norm_second_derivative_at_a_zero_slice_is_zero(p):
    # A slice of zeros is where the norm's gradient jumps (the samples marked
    # not_twice_differentiable): the first derivative takes 0 there, as PyTorch's does, and so
    # does the second (PyTorch's is nan); the other slices keep theirs, finite.
    x = mt.tensor(np.array([[0.0, 0.0, 0.0], [0.5, -1.0, 2.0]]), requires_grad=True)
    (g,) = mt.grad(ops.norm(x, p, axis=1).sum(), x, create_graph=True)
    (h,) = mt.grad((g * mt.tensor(np.ones((2, 3)))).sum(), x)
    np.testing.assert_array_equal(g.array[0], 0.0)
    np.testing.assert_array_equal(h.array[0], 0.0)
    assert np.isfinite(h.array[1]).all()
    assert (np.abs(h.array[1]).max() > 0) == (p != 1)  # the 1-norm is linear where no x is 0


def test_first_order_backward_never_runs_a_tensor_backward(monkeypatch):
    # create_graph=False keeps the array kernels: with every tensor_backward refused, the
    # gradients of every sample still come, and a create_graph backward does hit the refusal
    def refuse(cls, node, grad, needs=None):
        raise AssertionError(f"{cls.name}: tensor_backward ran")

    monkeypatch.setattr(Op, "run_tensor_backward", classmethod(refuse))
    for op_name, samples in SAMPLES.items():
        for sample in samples:
            values = sample.make(rng_for(op_name, sample))
            inputs = minitrain_inputs(values, sample)
            wrt = [inputs[i] for i in sample.differentiable(values)]
            out = sample.call(*inputs)
            mt.grad(out, wrt, mt.tensor(np.ones(out.shape)), allow_unused=True)
    x = mt.tensor(np.array([1.0, 2.0]), requires_grad=True)
    with pytest.raises(AssertionError, match="tensor_backward ran"):
        mt.grad((x * x).sum(), x, create_graph=True)


@pytest.mark.parametrize("op_name, sample", REGISTERED)
def test_a_saved_input_holds_that_inputs_values(op_name, sample):
    # tensor_backward reads each saved value named like an input (or mapped by saved_as) as
    # that input, in the graph: it must hold the input's values, not something made from them
    inputs = minitrain_inputs(sample.make(rng_for(op_name, sample)), sample)
    out = sample.call(*inputs)
    node = out.grad_fn
    while node is not None and node.op.name != op_name:  # a wrapper's reshape after the op
        node = next((p for p in node.parents if type(p) is type(node)), None)
    if node is None:
        return  # the op is not the one recorded last: nothing saved to compare
    for name, index in node.op.saved_inputs:
        value, parent = node.ctx.__dict__.get(name), node.parents[index]
        if hasattr(value, "shape") and isinstance(parent, mt.Tensor):
            assert value.shape == parent.shape, f"{name}: shape {value.shape}"
            np.testing.assert_array_equal(value, parent.array.astype(value.dtype), err_msg=name)
