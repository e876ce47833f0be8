"""Scans, sorting and statistics against PyTorch, by hand: their index outputs, ties, NaN,
dtypes and errors (the registry's tests run their samples, tests/samples/reductions/scans.py,
sorting.py and statistics.py, the composed ones included)."""

from __future__ import annotations

import numpy as np
import pytest
from reference import torch

import minitrain as mt
from minitrain.errors import ArgumentError, DimensionError, DTypeError, ShapeError


def _numpy(value):
    return value.detach().numpy() if isinstance(value, torch.Tensor) else np.asarray(value)


# Index outputs, ties and NaN, by hand against PyTorch.

TIES = np.array([[2.0, 1.0, 2.0, 1.0, 2.0, 0.0], [3.0, 3.0, -1.0, 3.0, -1.0, 3.0]])
NANS = np.array([[2.0, np.nan, 1.0, -np.inf, np.nan, 0.5], [1.0, 2.0, 3.0, 0.0, -1.0, 4.0]])


def _pair(values, grad=True):
    return mt.tensor(values, requires_grad=grad), torch.tensor(values, requires_grad=grad)


def _assert_pair(ours, theirs):
    """(values, indices) pairs: equal values (NaN where NaN), equal indices."""
    np.testing.assert_array_equal(ours[0].array, _numpy(theirs[0]))
    np.testing.assert_array_equal(ours[1].array, theirs[1].numpy())
    assert ours[1].dtype == np.int64 and not ours[1].requires_grad


@pytest.mark.parametrize("values", [TIES, NANS], ids=["ties", "nan"])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_sort_matches_torchs_stable_sort(values, descending, dim):
    x, tx = _pair(values)
    ours = x.sort(dim, descending, stable=True)
    theirs = tx.sort(dim=dim, descending=descending, stable=True)
    _assert_pair(ours, theirs)
    np.testing.assert_array_equal(
        mt.argsort(x, dim, descending).numpy(),
        torch.argsort(tx, dim=dim, descending=descending, stable=True),
    )
    # the gradient of each value goes to the element it came from
    upstream = np.arange(values.size, dtype=float).reshape(values.shape)
    ours.values.backward(upstream)
    theirs.values.backward(torch.tensor(upstream))
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_sort_without_stable_gives_the_stable_order():
    # PyTorch's unstable sort may order ties otherwise; the stable order is one it allows
    values = np.tile([2.0, 1.0, 2.0, 1.0, 0.0], 4)
    ours = mt.sort(mt.tensor(values))
    theirs = torch.sort(torch.tensor(values), stable=True)
    _assert_pair(ours, theirs)


def test_sort_keeps_integer_and_bool_dtypes():
    for values in (np.array([3, -1, 2], np.int32), np.array([True, False, True])):
        ours, theirs = mt.sort(mt.tensor(values)), torch.sort(torch.tensor(values), stable=True)
        _assert_pair(ours, theirs)
        assert ours.values.dtype == values.dtype


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [0, 2, 6])
def test_topk_indices_match_torch_on_distinct_values_and_nan(largest, k):
    values = np.array([[0.5, 3.0, -1.0, np.nan, 2.0, 1.5], [4.0, -2.0, 0.0, 1.0, 6.0, -3.0]])
    _assert_pair(mt.topk(mt.tensor(values), k, largest=largest), torch.topk(
        torch.tensor(values), k, largest=largest
    ))  # fmt: skip


def test_topk_ties_take_the_first_elements_and_route_the_gradient_there():
    # which of equal elements PyTorch's topk returns is unspecified (its kernel picks [2, 4]
    # here); the stable order takes the first ones
    x = mt.tensor([1.0, 3.0, 3.0, 2.0, 3.0], requires_grad=True)
    values, indices = x.topk(2)
    np.testing.assert_array_equal(indices.numpy(), [1, 2])
    values.backward(np.array([1.0, 10.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 10.0, 0.0, 0.0])


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("k", [1, 3, 6])
def test_kthvalue_indices_match_torch(k, keepdim):
    values = np.array([[0.5, 3.0, -1.0, np.nan, 2.0, 1.5], [4.0, -2.0, 0.0, 1.0, 6.0, -3.0]])
    _assert_pair(
        mt.kthvalue(mt.tensor(values), k, 1, keepdim),
        torch.kthvalue(torch.tensor(values), k, 1, keepdim),
    )


def test_kthvalue_among_ties_is_the_kth_in_the_stable_order():
    values, indices = mt.tensor([1.0, 3.0, 3.0, 2.0, 3.0]).kthvalue(4)
    assert values.item() == 3.0 and indices.item() == 2


@pytest.mark.parametrize("keepdim", [False, True])
def test_median_along_a_dim_matches_torch_with_ties_and_nan(keepdim):
    # ties: the index is the lower middle one's in the stable order (PyTorch's docs leave it
    # unspecified; its CPU kernel agrees here); NaN: the first NaN, as PyTorch
    values = np.array(
        [
            [1.0, 2.0, 2.0, 2.0, 3.0, 9.0],
            [2.0, 2.0, 1.0, 1.0, 5.0, 0.0],
            [1.0, np.nan, 2.0, np.nan, 0.0, 0.0],
            [7.0, 1.0, 5.0, 3.0, 4.0, 6.0],
        ]
    )
    x, tx = _pair(values)
    ours, theirs = x.median(1, keepdim), tx.median(1, keepdim)
    _assert_pair(ours, theirs)
    upstream = np.arange(1.0, 5.0).reshape(ours.values.shape)
    ours.values.backward(upstream)
    theirs.values.backward(torch.tensor(upstream))
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize(
    "values",
    [[1.0, 2.0, 2.0, 3.0, 2.0], [1.0, 2.0, 2.0, 3.0, 2.0, 5.0], [1.0, np.nan, 2.0, np.nan], []],
    ids=["odd_ties", "even_ties", "nan", "empty"],
)
def test_median_of_all_elements_splits_the_gradient_among_ties_as_torch(values):
    x, tx = _pair(np.array(values))
    ours, theirs = x.median(), tx.median()
    np.testing.assert_array_equal(ours.numpy(), theirs.detach().numpy())
    ours.backward()
    theirs.backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-15)


def test_median_of_integers_keeps_the_dtype():
    values = np.array([[5, 1, 4], [2, 8, 3]], np.int32)
    assert mt.median(mt.tensor(values)).numpy() == torch.median(torch.tensor(values)).numpy()
    _assert_pair(mt.median(mt.tensor(values), 0), torch.median(torch.tensor(values), 0))
    assert mt.median(mt.tensor(values)).dtype == np.int32


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("dim", [0, 1])
def test_running_extremes_take_the_last_tie_and_every_nan_as_torch(name, dim):
    values = np.array(
        [
            [1.0, 1.0, 1.0, 0.0, 2.0, 2.0, -1.0],
            [1.0, np.nan, 3.0, np.nan, 0.0, 5.0, 5.0],
            [0.0, 0.0, 5.0, 5.0, -2.0, -2.0, 1.0],
        ]
    )
    x, tx = _pair(values)
    ours, theirs = getattr(x, name)(dim), getattr(torch, name)(tx, dim)
    _assert_pair(ours, theirs)
    upstream = np.arange(values.size, dtype=float).reshape(values.shape)
    ours.values.backward(upstream)
    theirs.values.backward(torch.tensor(upstream))
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_running_extremes_of_integers_and_bools(name):
    for values in (np.array([1, 3, 2, 3, 0], np.int16), np.array([False, True, False, True])):
        ours, theirs = (
            getattr(mt, name)(mt.tensor(values), 0),
            getattr(torch, name)(torch.tensor(values), 0),
        )
        _assert_pair(ours, theirs)
        assert ours.values.dtype == values.dtype


def test_cumprod_integer_and_bool_input_give_int64_and_dtype_casts_first():
    for values in (np.array([1, 2, 3], np.int32), np.array([True, True, False])):
        ours, theirs = mt.cumprod(mt.tensor(values), 0), torch.cumprod(torch.tensor(values), 0)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert ours.dtype == np.int64 == theirs.numpy().dtype
    x = mt.tensor(np.array([1.0, 2.0, 3.0], np.float32))
    assert x.cumprod(0, dtype=np.float64).dtype == np.float64


def test_cumprod_gradient_at_zeros_by_hand():
    # x = [2, 0, 3, 0, 4]: before the first zero, sum of grad_j out_j / x_0 = 1 * 2 / 2; at it,
    # out_0 (2) times 2 + 3 * 3 (the later terms hold the second zero); after it, nothing
    x = mt.tensor([2.0, 0.0, 3.0, 0.0, 4.0], requires_grad=True)
    mt.cumprod(x, 0).backward(np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 22.0, 0.0, 0.0, 0.0])


def test_logcumsumexp_of_nan_and_infinities_matches_torch():
    values = np.array([[0.0, np.nan, 1.0], [-np.inf, 0.0, 1.0], [1.0, np.inf, 2.0]])
    ours, theirs = (
        mt.logcumsumexp(mt.tensor(values), 1),
        torch.logcumsumexp(torch.tensor(values), 1),
    )
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_logcumsumexp_gradient_with_zeros_in_the_upstream_gradient_is_finite():
    x, tx = _pair(np.array([[0.5, -1.0, 2.0, 0.0], [3.0, 1.0, -2.0, 0.5]]))
    upstream = np.array([[0.0, 1.0, 0.0, -2.0], [0.0, 0.0, 0.0, 0.0]])
    (g,) = mt.grad(mt.logcumsumexp(x, 1), x, mt.tensor(upstream), create_graph=True)
    (tg,) = torch.autograd.grad(
        torch.logcumsumexp(tx, 1), tx, torch.tensor(upstream), create_graph=True
    )
    np.testing.assert_allclose(g.numpy(), tg.detach().numpy(), rtol=1e-12, atol=1e-15)
    (h,) = mt.grad(g.sum(), x)
    assert np.isfinite(h.numpy()).all()
    np.testing.assert_array_equal(h.numpy()[1], 0.0)


@pytest.mark.parametrize(
    "interpolation", ["linear", "lower", "higher", "midpoint", "nearest"]
)  # fmt: skip
def test_quantile_of_a_slice_holding_nan_is_nan(interpolation):
    values = np.array([[1.0, np.nan, 3.0, 0.0], [4.0, 2.0, 1.0, 3.0]])
    q = np.array([0.2, 0.5])
    ours = mt.quantile(mt.tensor(values), mt.tensor(q), 1, interpolation=interpolation)
    theirs = torch.quantile(torch.tensor(values), torch.tensor(q), 1, interpolation=interpolation)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_quantile_with_ties_matches_torch():
    values = np.array([1.0, 2.0, 2.0, 2.0, 5.0, 5.0, 0.0])
    q = np.array([0.0, 0.1, 0.5, 0.75, 0.9, 1.0])
    for mode in ("linear", "lower", "higher", "midpoint", "nearest"):
        ours = mt.quantile(mt.tensor(values), mt.tensor(q), interpolation=mode)
        theirs = torch.quantile(torch.tensor(values), torch.tensor(q), interpolation=mode)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-15)


def test_aminmax_ties_and_nan_match_torch():
    for values in (np.array([1.0, 2.0, 1.0, 2.0, 0.0, 0.0]), np.array([[1.0, 2.0, 1.0]] * 2)):
        x, tx = _pair(values)
        ours, theirs = x.aminmax(), tx.aminmax()
        (3 * ours.min + 5 * ours.max).backward()
        (3 * theirs.min + 5 * theirs.max).backward()
        np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    x, tx = _pair(np.array([1.0, np.nan, 0.0]))
    ours, theirs = x.aminmax(), tx.aminmax()
    assert np.isnan(ours.min.item()) and np.isnan(ours.max.item())
    (ours.min + 2 * ours.max).backward()
    (theirs.min + 2 * theirs.max).backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())  # NaN, as amin / amax
    ints = mt.aminmax(mt.tensor(np.array([[3, 1], [2, 4]])), dim=0)
    np.testing.assert_array_equal(ints.min.numpy(), [2, 1])
    np.testing.assert_array_equal(ints.max.numpy(), [3, 4])


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), -1])
def test_count_nonzero_matches_torch(dim):
    values = np.array([[0.0, np.nan, 2.0], [0.0, -0.0, 1.0]])
    for array in (values, values != 0, np.array([[0, 3, 2], [0, 0, -1]], np.int32)):
        ours = mt.count_nonzero(mt.tensor(array), dim)
        theirs = torch.count_nonzero(torch.tensor(array), dim)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert ours.dtype == np.int64 and not ours.requires_grad


@pytest.mark.parametrize(
    "args, keywords",
    [((1, False), {}), ((1, True, True), {}), ((), {"unbiased": False}), ((0,), {"correction": 0}),
     ((1,), {"keepdim": True}), ((), {})],
)  # fmt: skip
def test_std_mean_and_var_mean_take_torchs_arguments(args, keywords):
    values = np.random.default_rng(0).standard_normal((3, 5))
    for name in ("std_mean", "var_mean"):
        ours = getattr(mt, name)(mt.tensor(values), *args, **keywords)
        theirs = getattr(torch, name)(torch.tensor(values), *args, **keywords)
        for got, want in zip(ours, theirs, strict=True):
            assert got.shape == tuple(want.shape)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_results_are_named_as_torchs():
    x = mt.tensor([[3.0, 1.0, 2.0]])
    assert x.sort().indices.shape == (1, 3) and x.topk(1).values.shape == (1, 1)
    assert x.cummax(1).indices.shape == (1, 3) and x.median(1).values.shape == (1,)
    assert x.aminmax().min.item() == 1.0 and x.aminmax().max.item() == 3.0


# Errors: a minitrain error naming the op and what it got, before anything is recorded.

X = np.arange(6.0).reshape(2, 3)
ERRORS = {
    "sort_dim": (lambda x: mt.sort(x, 2), DimensionError, "sort"),
    "argsort_dim": (lambda x: mt.argsort(x, -3), DimensionError, "argsort"),
    "topk_k_too_large": (lambda x: mt.topk(x, 4), ArgumentError, r"topk: k=4 is out of range"),
    "topk_k_negative": (lambda x: mt.topk(x, -1), ArgumentError, r"topk: k=-1"),
    "topk_k_float": (lambda x: mt.topk(x, 1.0), DTypeError, "topk: k must be an int"),
    "topk_bool": (lambda x: mt.topk(x > 1, 1), DTypeError, "topk: input must be numeric"),
    "kthvalue_zero": (lambda x: mt.kthvalue(x, 0), ArgumentError, "kthvalue: k=0"),
    "kthvalue_too_large": (lambda x: mt.kthvalue(x, 3, 0), ArgumentError, "kthvalue: k=3"),
    "median_bool": (lambda x: mt.median(x > 1), DTypeError, "median: input must be numeric"),
    "median_keepdim": (lambda x: mt.median(x, keepdim=True), ArgumentError, "median: keepdim"),
    "median_dims": (lambda x: mt.median(x, (0, 1)), DTypeError, "median: takes one int dim"),
    "median_empty_dim": (
        lambda x: mt.median(mt.zeros(2, 0), 1),
        ShapeError,
        "median: reducing over an empty dim",
    ),
    "quantile_q_range": (lambda x: mt.quantile(x, 1.5), ArgumentError, r"q must be in \[0, 1\]"),
    "quantile_q_levels_range": (
        lambda x: mt.quantile(x, mt.tensor([0.5, -0.1], dtype=np.float64)),
        ArgumentError,
        r"quantile: q must be in \[0, 1\]",
    ),
    "quantile_q_dtype": (
        lambda x: mt.quantile(x, mt.tensor([0.5], dtype=np.float32)),
        DTypeError,
        "quantile: q must have the input's dtype float64, got float32",
    ),
    "quantile_q_2d": (
        lambda x: mt.quantile(x, mt.tensor([[0.5]], dtype=np.float64)),
        ShapeError,
        "quantile: q must be a number or a 1-D tensor",
    ),
    "quantile_q_list": (lambda x: mt.quantile(x, [0.5]), DTypeError, "quantile: q must be"),
    "quantile_integers": (
        lambda x: mt.quantile(mt.tensor([1, 2]), 0.5),
        DTypeError,
        "quantile: x must be floating point",
    ),
    "quantile_empty": (
        lambda x: mt.quantile(mt.zeros(0), 0.5),
        ShapeError,
        "quantile: input must not be empty",
    ),
    "quantile_mode": (
        lambda x: mt.quantile(x, 0.5, interpolation="cubic"),
        ArgumentError,
        "quantile: interpolation must be one of linear, lower, higher, midpoint, nearest",
    ),
    "cumprod_dim": (lambda x: mt.cumprod(x, 2), DimensionError, "cumprod"),
    "cumprod_dtype": (lambda x: mt.cumprod(x, 0, dtype=np.int32), DTypeError, "cumprod: dtype"),
    "cummax_dim": (lambda x: mt.cummax(x, -3), DimensionError, "cummax"),
    "logcumsumexp_integers": (
        lambda x: mt.logcumsumexp(mt.tensor([1, 2]), 0),
        DTypeError,
        "logcumsumexp: input must be floating point, got int64",
    ),
    "aminmax_dims": (
        lambda x: mt.aminmax(x, dim=(0, 1)),
        DTypeError,
        "aminmax: dim must be an int or None",
    ),
    "aminmax_empty": (
        lambda x: mt.aminmax(mt.zeros(2, 0), dim=1),
        ShapeError,
        "aminmax: reducing over an empty dim",
    ),
    "std_mean_integers": (
        lambda x: mt.std_mean(mt.tensor([1, 2, 3])),
        DTypeError,
        "std_mean: x must be floating point",
    ),
    "var_mean_unbiased_twice": (
        lambda x: mt.var_mean(x, 0, True, correction=0),
        ArgumentError,
        "var_mean: give unbiased or correction",
    ),
    "count_nonzero_repeated_dim": (
        lambda x: mt.count_nonzero(x, (0, 0)),
        ShapeError,
        "count_nonzero: dim",
    ),
}


@pytest.mark.parametrize("call, error, message", ERRORS.values(), ids=ERRORS.keys())
def test_bad_arguments_raise_a_minitrain_error_naming_the_op(call, error, message):
    x = mt.tensor(X, requires_grad=True)
    with pytest.raises(error, match=message):
        call(x)
    assert x.grad is None and x.node is None


def test_topk_by_partition_picks_what_the_full_stable_order_does():
    # topk and kthvalue pick a small k by partition, not a full sort: the same indices, ties
    # first-first and NaN the largest, over many shapes, dims and dtypes
    from minitrain.ops.reductions.sorting import first_in_order, stable_order, take_along

    rng = np.random.default_rng(1)
    for _ in range(300):
        shape = tuple(int(v) for v in rng.integers(1, 30, size=rng.integers(1, 4)))
        x = rng.integers(0, 5, shape).astype(rng.choice([np.float64, np.float32, np.int64]))
        if x.dtype.kind == "f":
            x[rng.random(shape) < 0.15] = np.nan
        dim = int(rng.integers(0, len(shape)))
        k = int(rng.integers(0, shape[dim] + 1))
        for descending in (True, False):
            want = take_along(stable_order(x, dim, descending), dim, 0, k)
            np.testing.assert_array_equal(first_in_order(x, dim, k, descending), want)


@pytest.mark.parametrize("name", ["var", "std"])
def test_float32_var_and_std_of_huge_values_stay_finite_as_pytorch(name, torch):
    """The squared deviations are summed in float64 (PyTorch's CPU accumulation), and std takes
    its root before the cast: in float32 they overflowed to inf near 2e19."""
    values = np.array([[2.6087637e19, 0.0, 0.0, 2.1300465e19]], np.float32)
    x = mt.tensor(values, requires_grad=True)
    t = torch.tensor(values, requires_grad=True)
    ours, theirs = getattr(mt, name)(x, dim=1), getattr(torch, name)(t, dim=1)
    assert ours.dtype == mt.float32 and np.isfinite(ours.numpy()).all()
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6)
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5)
