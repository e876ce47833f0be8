"""Every registered op, driven by the sample table: gradchecks, PyTorch agreement, dtypes, and
the hand-derived edge cases (ties, kinks, overflow, empty axes)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from op_samples import COMPOSED, SAMPLES, minitrain_inputs, rng_for, torch_inputs

import minitrain as mt
from minitrain import ops


def _cases(table):
    return [
        pytest.param(op_name, sample, id=f"{op_name}-{sample.name}")
        for op_name, samples in table.items()
        for sample in samples
    ]


# every sample: the registered ops' and the composed functions'
CASES = _cases(SAMPLES) + _cases(COMPOSED)
FLOAT32_CASES = [case for case in CASES if case.values[1].float32]

# Display names of the backward kernels of the ops the first version registered.
EXPECTED_GRAD_KERNELS = {
    "abs": "AbsGrad",
    "add": "AddGrad",
    "broadcast_to": "BroadcastToGrad",
    "cast": "CastGrad",
    "clip": "ClipGrad",
    "concat": "ConcatGrad",
    "div": "DivGrad",
    "exp": "ExpGrad",
    "flatten": "FlattenGrad",
    "getitem": "GetItemGrad",
    "linear": "LinearGrad",
    "log": "LogGrad",
    "logsumexp": "LogSumExpGrad",
    "matmul": "MatMulGrad",
    "max": "MaxGrad",
    "maximum": "MaximumGrad",
    "mean": "MeanGrad",
    "min": "MinGrad",
    "minimum": "MinimumGrad",
    "mul": "MulGrad",
    "neg": "NegGrad",
    "pad": "PadGrad",
    "permute": "PermuteGrad",
    "pow": "PowGrad",
    "reshape": "ReshapeGrad",
    "sqrt": "SqrtGrad",
    "stack": "StackGrad",
    "sub": "SubGrad",
    "sum": "SumGrad",
    "to_device": "ToDeviceGrad",
    "transpose": "TransposeGrad",
    "var": "VarGrad",
    "where": "WhereGrad",
}


def _leaf(values, dtype=np.float64):
    return mt.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


def _grads(out, inputs, upstream=None):
    """Gradients of out (seeded with ones unless given) with respect to inputs, as arrays."""
    seed = np.ones(out.shape, out.dtype) if upstream is None else upstream
    return [g.array for g in mt.grad(out, inputs, grad_outputs=mt.tensor(seed))]


# The table covers every registered op, and only those.
def test_every_registered_op_has_samples():
    registered = set(ops.registry())
    missing = sorted(registered - SAMPLES.keys())
    unknown = sorted(SAMPLES.keys() - registered)
    empty = sorted(name for name, samples in SAMPLES.items() if not samples)
    assert not missing, (
        f"ops without samples (add them to tests/samples/<family>/<module>.py): {missing}"
    )
    assert not unknown, f"SAMPLES names that are not registered ops: {unknown}"
    assert not empty, f"ops with an empty sample list: {empty}"


def test_composed_functions_are_not_registered_ops():
    assert not COMPOSED.keys() & ops.registry().keys()


def test_sample_names_are_unique_per_op():
    for op_name, samples in {**SAMPLES, **COMPOSED}.items():
        names = [s.name for s in samples]
        assert len(names) == len(set(names)), f"{op_name}: repeated sample names {names}"


@pytest.mark.parametrize("op_name, sample", CASES)
def test_sample_marks_floating_inputs_differentiable(op_name, sample):
    values = sample.make(rng_for(op_name, sample))
    grad = sample.differentiable(values)
    assert grad, "a sample needs at least one input that requires grad"
    for i in grad:
        assert isinstance(values[i], np.ndarray) and values[i].dtype == np.float64, (
            f"input {i} requires grad but is {type(values[i]).__name__} "
            f"{getattr(values[i], 'dtype', '')}"
        )


# Each sample's gradients against float64 finite differences.
@pytest.mark.parametrize("op_name, sample", CASES)
def test_gradcheck(op_name, sample):
    inputs = minitrain_inputs(sample.make(rng_for(op_name, sample)), sample)
    assert mt.gradcheck(sample.call, inputs, **sample.check)


# Each sample's values and gradients against PyTorch's.
@pytest.mark.parametrize("op_name, sample", CASES)
def test_matches_torch(op_name, sample):
    torch = pytest.importorskip("torch")
    rng = rng_for(op_name, sample)
    values = sample.make(rng)
    grad = sample.differentiable(values)
    ours_in = minitrain_inputs(values, sample)
    theirs_in = torch_inputs(values, sample)

    ours = sample.call(*ours_in)
    theirs = sample.ref(*theirs_in)
    tol = {"rtol": sample.ref_rtol, "atol": sample.ref_atol}
    assert ours.shape == tuple(theirs.shape)
    assert ours.dtype == theirs.detach().numpy().dtype
    np.testing.assert_allclose(ours.array, theirs.detach().numpy(), **tol)

    upstream = rng.standard_normal(ours.shape).astype(ours.dtype)
    ours.backward(upstream)
    expected = torch.autograd.grad(
        theirs, [theirs_in[i] for i in grad], torch.from_numpy(upstream), allow_unused=True
    )
    for i, want in zip(grad, expected, strict=True):
        got = ours_in[i].grad
        want = np.zeros(values[i].shape) if want is None else want.detach().numpy()
        assert got is not None, f"input {i}: minitrain gave no gradient"
        assert got.shape == values[i].shape and got.dtype == np.float64
        np.testing.assert_allclose(got.array, want, err_msg=f"gradient of input {i}", **tol)


# Dtypes kept (float32 in, float32 out) and the names of the backward nodes.
@pytest.mark.parametrize("op_name, sample", FLOAT32_CASES)
def test_float32_in_float32_out(op_name, sample):
    rng = rng_for(op_name, sample)
    values = sample.make(rng)
    inputs = minitrain_inputs(values, sample, dtype=np.float32)
    out = sample.call(*inputs)
    assert out.dtype == np.float32
    wrt = [inputs[i] for i in sample.differentiable(values)]
    upstream = rng.standard_normal(out.shape).astype(np.float32)
    for i, g in enumerate(_grads(out, wrt, upstream)):
        assert g.dtype == np.float32, f"gradient {i} is {g.dtype}"
        assert g.shape == wrt[i].shape


@pytest.mark.parametrize("op_name, expected", sorted(EXPECTED_GRAD_KERNELS.items()))
def test_grad_kernel_display_name(op_name, expected):
    assert ops.registry()[op_name].grad_kernel == expected
    sample = SAMPLES[op_name][0]
    out = sample.call(*minitrain_inputs(sample.make(rng_for(op_name, sample)), sample))
    assert out.grad_fn.name == expected


# Hand-derived edge cases: kinks and ties the sample table keeps away from.
@pytest.mark.parametrize("reduce", [ops.max, ops.min])
def test_extreme_ties_split_the_gradient_evenly(reduce):
    # max of [1, 3, 3] is 3, reached twice: each gets half; min of [3, 1, 1] likewise
    x = _leaf([1.0, 3.0, 3.0] if reduce is ops.max else [3.0, 1.0, 1.0])
    out = reduce(x)
    assert out.item() == (3.0 if reduce is ops.max else 1.0)
    (g,) = _grads(out, [x])
    np.testing.assert_allclose(g, [0.0, 0.5, 0.5])


def test_max_ties_along_an_axis():
    x = _leaf([[1.0, 5.0, 5.0], [4.0, 4.0, 4.0], [2.0, 0.0, 2.0]])
    out = ops.amax(x, dim=1)
    np.testing.assert_array_equal(out.array, [5.0, 4.0, 2.0])
    (g,) = _grads(out, [x], np.array([1.0, 3.0, 10.0]))
    # row 0: two maxima share 1; row 1: three share 3; row 2: two share 10
    np.testing.assert_allclose(g, [[0.0, 0.5, 0.5], [1.0, 1.0, 1.0], [5.0, 0.0, 5.0]])


def test_min_ties_along_axis_0_keepdims():
    x = _leaf([[1.0, 2.0], [1.0, 0.0], [3.0, 0.0]])
    out = ops.amin(x, dim=0, keepdim=True)
    np.testing.assert_array_equal(out.array, [[1.0, 0.0]])
    (g,) = _grads(out, [x], np.array([[2.0, 4.0]]))
    np.testing.assert_allclose(g, [[1.0, 0.0], [1.0, 2.0], [0.0, 2.0]])


@pytest.mark.parametrize("pick", [ops.maximum, ops.minimum])
def test_maximum_minimum_ties_give_half_to_each_side(pick):
    a = _leaf([1.0, 2.0, 3.0])
    b = _leaf([1.0, 0.0, 5.0])
    grad_a, grad_b = _grads(pick(a, b), [a, b])
    # element 0 ties; element 1 a is larger; element 2 b is larger
    wins_a = [0.5, 1.0, 0.0] if pick is ops.maximum else [0.5, 0.0, 1.0]
    np.testing.assert_allclose(grad_a, wins_a)
    np.testing.assert_allclose(grad_b, 1.0 - np.array(wins_a))


def test_maximum_tie_with_a_number():
    x = _leaf([-1.0, 0.0, 2.0])
    (g,) = _grads(ops.maximum(x, 0.0), [x])
    np.testing.assert_allclose(g, [0.0, 0.5, 1.0])


def test_abs_gradient_at_zero_is_zero():
    x = _leaf([-2.0, 0.0, 3.0])
    (g,) = _grads(ops.abs(x), [x])
    np.testing.assert_array_equal(g, [-1.0, 0.0, 1.0])


def test_getitem_repeated_indices_accumulate():
    x = _leaf([10.0, 20.0, 30.0])
    out = ops.getitem(x, np.array([0, 0, 2]))
    np.testing.assert_array_equal(out.array, [10.0, 10.0, 30.0])
    (g,) = _grads(out, [x])
    np.testing.assert_array_equal(g, [2.0, 0.0, 1.0])


def test_getitem_repeated_index_pairs_accumulate():
    x = _leaf(np.zeros((2, 3)))
    out = ops.getitem(x, ([0, 0, 1, 0], [1, 1, 2, 1]))
    (g,) = _grads(out, [x], np.array([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(g, [[0.0, 7.0, 0.0], [0.0, 0.0, 3.0]])


def test_getitem_bool_mask_gradient():
    x = _leaf([[1.0, 2.0], [3.0, 4.0]])
    out = ops.getitem(x, np.array([[True, False], [False, True]]))
    np.testing.assert_array_equal(out.array, [1.0, 4.0])
    (g,) = _grads(out, [x], np.array([5.0, 6.0]))
    np.testing.assert_array_equal(g, [[5.0, 0.0], [0.0, 6.0]])


MASK_INDICES = {
    "short_rows": lambda: np.array([True, False]),
    "short_columns": lambda: (slice(None), np.array([True, False])),
    "short_after_ellipsis": lambda: (Ellipsis, np.array([True, False])),
    "long_after_none": lambda: (None, np.array([True, False, True, False, True])),
    "2d_too_narrow": lambda: np.ones((4, 2), dtype=bool),
    "after_an_int": lambda: (0, np.array([True, False, True, True])),
    "tensor_mask": lambda: mt.tensor(np.array([True, False])),
}


@pytest.mark.parametrize("make_index", MASK_INDICES.values(), ids=MASK_INDICES.keys())
def test_getitem_bool_mask_of_the_wrong_shape_raises_like_numpy(make_index):
    index = make_index()
    values = np.arange(12.0).reshape(4, 3)
    numpy_index = index.array if isinstance(index, mt.Tensor) else index
    with pytest.raises(IndexError):
        values[numpy_index]
    with pytest.raises(IndexError, match=r"mask of shape \("):
        ops.getitem(_leaf(values), index)


@pytest.mark.parametrize(
    "index",
    [
        np.array([True, False, True, True]),
        (Ellipsis, np.array([True, False, True])),
        (None, np.array([False, True, True, False])),
        (1, np.array([True, False, True])),
        (np.array([0, 3]), np.array([True, False, True])),
        (slice(1, 3), Ellipsis, np.array([False, True, True])),
        np.ones((4, 3), dtype=bool),
        (True, np.array([True, False, True, True])),  # a Python bool indexes no dim
        (np.array([True, False, True, False]), True, np.array([True, False, True])),
    ],
    ids=[
        "rows",
        "after_ellipsis",
        "after_none",
        "after_int",
        "with_int_array",
        "slice",
        "2d",
        "after_python_bool",
        "around_python_bool",
    ],
)
def test_getitem_bool_masks_that_fit_index_like_numpy(index):
    values = np.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(ops.getitem(_leaf(values), index).array, values[index])


def test_pow_zero_to_the_zero_has_zero_gradient():
    a = _leaf([0.0, 0.0])
    b = _leaf([0.0, 0.0])
    out = ops.pow(a, b)
    np.testing.assert_array_equal(out.array, [1.0, 1.0])
    grad_a, grad_b = _grads(out, [a, b])
    # d/da a^b = b a^(b-1) is 0 * 0^-1 at a = b = 0: taken as 0, not nan
    np.testing.assert_array_equal(grad_a, [0.0, 0.0])
    np.testing.assert_array_equal(grad_b, [0.0, 0.0])


def test_pow_zero_to_a_number_zero():
    a = _leaf([0.0, 2.0])
    (g,) = _grads(ops.pow(a, 0), [a])
    np.testing.assert_array_equal(g, [0.0, 0.0])


def test_pow_exponent_gradient_at_zero_base_is_zero():
    # d/db a^b = a^b log a -> 0 as a -> 0+ for b > 0 (a^b vanishes faster than log a grows)
    a = _leaf([0.0, 0.0, 2.0])
    b = _leaf([2.0, 0.5, 3.0])
    grad_a, grad_b = _grads(ops.pow(a, b), [a, b])
    np.testing.assert_allclose(grad_b, [0.0, 0.0, 8.0 * math.log(2.0)])
    # d/da a^b = b a^(b-1): 0 at a = 0 for b = 2; 3 * 2^2 = 12 at a = 2, b = 3
    assert grad_a[0] == 0.0 and grad_a[2] == pytest.approx(12.0)


def test_pow_number_base_exponent_gradient():
    b = _leaf([0.0, 1.0, 2.0])
    (g,) = _grads(ops.pow(3.0, b), [b])
    np.testing.assert_allclose(g, math.log(3.0) * np.array([1.0, 3.0, 9.0]))


def test_clip_gradient_passes_at_the_bounds_inclusive():
    x = _leaf([-2.0, -1.0, 0.0, 1.0, 2.0])
    out = ops.clip(x, -1.0, 1.0)
    np.testing.assert_array_equal(out.array, [-1.0, -1.0, 0.0, 1.0, 1.0])
    (g,) = _grads(out, [x])
    np.testing.assert_array_equal(g, [0.0, 1.0, 1.0, 1.0, 0.0])


@pytest.mark.parametrize(
    "low, high, expected",
    [(0.0, None, [0.0, 1.0, 1.0]), (None, 0.0, [1.0, 1.0, 0.0])],
    ids=["min_only", "max_only"],
)
def test_clip_one_sided_gradient(low, high, expected):
    x = _leaf([-1.0, 0.0, 1.0])
    (g,) = _grads(ops.clip(x, low, high), [x])
    np.testing.assert_array_equal(g, expected)


def test_logsumexp_of_huge_values_is_finite():
    x = _leaf([1e4, 1e4])
    out = ops.logsumexp(x)
    # log(e^a + e^a) = a + log 2; the gradient is the softmax, 1/2 each
    assert out.item() == pytest.approx(1e4 + math.log(2.0), rel=1e-15)
    (g,) = _grads(out, [x])
    np.testing.assert_allclose(g, [0.5, 0.5])


def test_logsumexp_of_very_negative_values_is_finite():
    x = _leaf([-1e4, -1e4 + math.log(3.0)])
    out = ops.logsumexp(x)
    # e^-1e4 (1 + 3) -> -1e4 + log 4; softmax (1/4, 3/4)
    assert out.item() == pytest.approx(-1e4 + math.log(4.0), rel=1e-15)
    (g,) = _grads(out, [x])
    np.testing.assert_allclose(g, [0.25, 0.75])


def test_logsumexp_of_an_all_minus_inf_row_is_minus_inf():
    x = mt.tensor(np.array([[-np.inf, -np.inf], [0.0, 0.0]]))
    with np.errstate(all="raise"):
        out = ops.logsumexp(x, axis=1)
    assert out.array[0] == -np.inf
    assert out.array[1] == pytest.approx(math.log(2.0))


@pytest.mark.parametrize("name", ["var", "std"])
def test_var_and_std_without_degrees_of_freedom_give_nan_and_warn_as_torch(name):
    torch = pytest.importorskip("torch")
    cases = [
        ([3.0], {}),  # one element, correction 1: 0 / 0
        ([1.0, 2.0, 4.0], {"correction": 3}),  # positive / 0: inf
        ([1.0, 2.0, 4.0], {"correction": 5}),  # fewer elements than the correction: as 0
        ([[1.0], [2.0]], {"dim": 1}),
    ]
    for values, keywords in cases:
        x = _leaf(values)
        with pytest.warns(UserWarning, match=rf"{name}\(\): degrees of freedom is <= 0"):
            out = getattr(x, name)(**keywords)
        with pytest.warns(UserWarning, match="degrees of freedom"):
            expected = getattr(torch.tensor(values, dtype=torch.float64), name)(**keywords)
        np.testing.assert_array_equal(out.array, expected.numpy())
        out.sum().backward()  # nan and inf, no error
        assert not np.isfinite(x.grad.array).any()
    # with correction=0 one element is fine: its variance is 0
    assert ops.var(_leaf([3.0]), correction=0).item() == 0.0


def test_var_by_hand():
    x = _leaf([1.0, 2.0, 3.0, 6.0])
    out = ops.var(x)
    # mean 3, squared deviations 4 1 0 9 sum 14, over n - 1 = 3
    assert out.item() == pytest.approx(14.0 / 3.0)
    (g,) = _grads(out, [x])
    np.testing.assert_allclose(g, 2.0 * np.array([-2.0, -1.0, 0.0, 3.0]) / 3.0)


@pytest.mark.parametrize("axis", [1, None, (0, 1)], ids=["axis1", "all", "tuple"])
def test_mean_over_an_empty_axis_is_nan_as_torch(axis):
    torch = pytest.importorskip("torch")
    x = _leaf(np.zeros((2, 0)))
    out = ops.mean(x, axis=axis)
    expected = torch.zeros(2, 0, dtype=torch.float64).mean(dim=axis)
    assert out.shape == tuple(expected.shape) and np.isnan(out.array).all()
    out.sum().backward()
    assert x.grad.shape == (2, 0)


def test_mean_over_a_nonempty_axis_of_an_empty_tensor_is_fine():
    out = ops.mean(mt.tensor(np.zeros((2, 0))), axis=0)
    assert out.shape == (0,)


def test_sum_over_an_empty_axis_is_zero_with_an_empty_gradient():
    x = _leaf(np.zeros((2, 0, 3)))
    out = ops.sum(x, axis=1)
    np.testing.assert_array_equal(out.array, np.zeros((2, 3)))
    (g,) = _grads(out, [x])
    assert g.shape == (2, 0, 3)


def test_flatten_keeps_a_zero_size_dim_outside_the_merged_range():
    # -1 cannot be inferred next to a 0 dim: (0, -1) fits any size; flatten knows it is 3 * 4
    x = _leaf(np.zeros((0, 3, 4)))
    out = mt.nn.Flatten()(x)
    assert out.shape == (0, 12)
    assert ops.flatten(x, 0, 1).shape == (0, 4)
    (g,) = _grads(out, [x])
    assert g.shape == (0, 3, 4)
