"""Tensor behaviours PyTorch programs rely on: view(dtype), nonzero_static, multinomial,
from_numpy of ndarray subclasses, indexing with ranges, the printed form of floats, negative
sizes; each against PyTorch where it is installed, and against hand-derived values."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain.errors import ArgumentError, DTypeError, IndexTypeError, ShapeError

# view(dtype) -----------------------------------------------------------------------------------

VIEW_CASES = {
    "float_as_int": (lambda m: m.tensor([1.0, 2.0]).view(m.int32)),
    "float_as_bytes": (lambda m: m.tensor([[1.0, 2.0]]).view(m.uint8)),
    "float_as_half": (lambda m: m.tensor([1.0, 2.0]).view(m.float16)),
    "float_as_double": (lambda m: m.tensor([1.0, 2.0]).view(m.float64)),
    "zero_dim_same_size": (lambda m: m.tensor(1.0).view(m.int32)),
    "transposed_same_size": (lambda m: m.ones(4, 2).t().view(m.int32)),
    "sliced_rows_larger": (
        lambda m: m.arange(12, dtype=m.float32).reshape(3, 4)[::2].view(m.float64)
    ),
    "sliced_rows_smaller": (
        lambda m: m.arange(12, dtype=m.float32).reshape(3, 4)[::2].view(m.float16)
    ),
    "aligned_columns": (
        lambda m: m.arange(8, dtype=m.float32).reshape(2, 4)[:, 2:].view(m.float64)
    ),
    "bytes_as_bool": (lambda m: m.tensor([1, 0], dtype=m.uint8).view(m.bool)),
    "int64_as_float64": (lambda m: m.tensor([1, 2]).view(m.float64)),
}

VIEW_ERRORS = {
    "size_not_divisible": (lambda m: m.ones(3).view(m.float64)),
    "zero_dim_other_size": (lambda m: m.tensor(1.0).view(m.float16)),
    "last_stride_not_one": (lambda m: m.ones(4, 2).t().view(m.float16)),
    "offset_not_divisible": (lambda m: m.ones(2, 4)[:, 1:3].view(m.float64)),
}


@pytest.mark.parametrize("name", sorted(VIEW_CASES))
def test_view_dtype_matches_torch(torch, name):
    ours, theirs = VIEW_CASES[name](mt), VIEW_CASES[name](torch)
    assert ours.shape == tuple(theirs.shape)
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(ours.array, theirs.numpy())


@pytest.mark.parametrize("name", sorted(VIEW_ERRORS))
def test_view_dtype_refuses_what_torch_refuses(name):
    with pytest.raises(ShapeError) as raised:
        VIEW_ERRORS[name](mt)
    assert isinstance(raised.value, RuntimeError)  # PyTorch's class


@pytest.mark.parametrize("name", sorted(VIEW_ERRORS))
def test_view_dtype_errors_are_torchs_too(torch, name):
    with pytest.raises(RuntimeError):
        VIEW_ERRORS[name](torch)


def test_view_dtype_values_shares_memory_and_leaves_the_graph():
    values = mt.tensor([1.0, 2.0])
    bits = values.view(mt.int32)
    np.testing.assert_array_equal(bits.array, np.array([1.0, 2.0], np.float32).view(np.int32))
    bits[0] = int(np.array(3.0, np.float32).view(np.int32))
    assert values.tolist() == [3.0, 2.0]  # a write through the view reaches the tensor
    halves = mt.tensor([[1.0, 2.0]]).view(mt.float16)
    assert halves.shape == (1, 4)
    leaf = mt.ones(2, 2, requires_grad=True)
    assert not (leaf * 2).view(mt.float32).requires_grad  # PyTorch's too: outside the graph
    wide = mt.arange(8, dtype=mt.float32).reshape(2, 4).view(mt.float64)
    assert wide.shape == (2, 2)
    assert mt.ones(2, 3).view(6).shape == (6,)  # sizes still work
    with pytest.raises(DTypeError):
        mt.ones(2, 3).view(2.5, 1)


# nonzero_static ---------------------------------------------------------------------------------


def test_nonzero_static_pads_or_cuts_to_size():
    x = mt.tensor([[0, 1], [2, 0]])
    assert mt.nonzero_static(x, size=1).tolist() == [[0, 1]]
    assert mt.nonzero_static(x, size=3, fill_value=7).tolist() == [[0, 1], [1, 0], [7, 7]]
    assert x.nonzero_static(size=4).tolist() == [[0, 1], [1, 0], [-1, -1], [-1, -1]]
    assert x.nonzero_static(size=0).shape == (0, 2)
    assert mt.nonzero_static(mt.tensor(3.0), size=2).shape == (2, 0)
    assert mt.nonzero_static(x, size=2).dtype == np.int64
    with pytest.raises(ArgumentError):
        mt.nonzero_static(x, size=-1)
    with pytest.raises(DTypeError):
        mt.nonzero_static(x, size=2.0)
    with pytest.raises(TypeError):
        mt.nonzero_static(x, 2)  # size is keyword-only, as in PyTorch


@pytest.mark.parametrize("size, fill", [(0, -1), (2, -1), (5, 9), (9, -3)])
def test_nonzero_static_matches_torch(torch, size, fill):
    values = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, np.nan], [0.0, 0.0, 3.0]])
    ours = mt.nonzero_static(mt.tensor(values), size=size, fill_value=fill)
    theirs = torch.nonzero_static(torch.tensor(values), size=size, fill_value=fill)
    np.testing.assert_array_equal(ours.array, theirs.numpy())


# multinomial ------------------------------------------------------------------------------------

WEIGHTS = [0.1, 0.2, 0.0, 0.7]


def _chi_square(counts, weights) -> float:
    weights = np.asarray(weights, np.float64)
    expected = counts.sum() * weights / weights.sum()
    seen = expected > 0
    assert counts[~seen].sum() == 0  # a category of weight 0 is never drawn
    return float((((counts - expected) ** 2)[seen] / expected[seen]).sum())


def test_multinomial_with_replacement_follows_the_weights():
    draws = mt.multinomial(mt.tensor(WEIGHTS), 20000, True, generator=mt.Generator().manual_seed(0))
    assert draws.shape == (20000,) and draws.dtype == np.int64
    counts = np.bincount(draws.array, minlength=4)
    # 2 degrees of freedom: P(chi2 > 20) < 5e-5, so a correct sampler fails once in 20000 seeds
    assert _chi_square(counts, WEIGHTS) < 20.0


def test_multinomial_without_replacement_first_draws_follow_the_weights():
    generator = mt.Generator().manual_seed(1)
    rows = mt.tensor([WEIGHTS] * 20000)
    draws = mt.multinomial(rows, 2, generator=generator).array
    assert draws.shape == (20000, 2)
    assert (draws[:, 0] != draws[:, 1]).all()  # distinct within a row
    assert _chi_square(np.bincount(draws[:, 0], minlength=4), WEIGHTS) < 20.0
    # the second draw, given the first was 3 (weight 0.7): 0 and 1 in proportion 1:2
    second = draws[draws[:, 0] == 3, 1]
    assert _chi_square(np.bincount(second, minlength=4), [0.1, 0.2, 0.0, 0.0]) < 20.0


def test_multinomial_is_reproducible_with_a_generator():
    weights = mt.tensor([[1.0, 2.0, 3.0], [3.0, 0.0, 1.0]])
    first = weights.multinomial(2, generator=mt.Generator().manual_seed(7))
    again = weights.multinomial(2, generator=mt.Generator().manual_seed(7))
    np.testing.assert_array_equal(first.array, again.array)
    mt.manual_seed(3)
    seeded = mt.multinomial(weights, 5, replacement=True)
    mt.manual_seed(3)
    np.testing.assert_array_equal(seeded.array, mt.multinomial(weights, 5, replacement=True).array)


def test_multinomial_edge_cases_as_torch():
    # without replacement, past the nonzero weights the zero-weight categories are drawn
    assert sorted(mt.multinomial(mt.tensor([0.0, 1.0, 0.0]), 3).tolist()[1:]) == [0, 2]
    assert mt.multinomial(mt.tensor([0.0, 1.0, 0.0]), 3).tolist()[0] == 1
    assert mt.multinomial(mt.tensor([0.0, 1.0, 0.0]), 5, replacement=True).tolist() == [1] * 5
    assert mt.multinomial(mt.ones(0, 3), 1).shape == (0, 1)
    assert mt.multinomial(mt.tensor([1.0, 1.0], dtype=mt.float16), 1).shape == (1,)


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda: mt.multinomial(mt.tensor([-1.0, 1.0]), 1), ArgumentError),
        (lambda: mt.multinomial(mt.tensor([np.inf, 1.0]), 1), ArgumentError),
        (lambda: mt.multinomial(mt.tensor([np.nan, 1.0]), 1), ArgumentError),
        (lambda: mt.multinomial(mt.tensor([0.0, 0.0]), 1), ArgumentError),
        (lambda: mt.multinomial(mt.tensor([[0.0, 1.0], [0.0, 0.0]]), 1), ArgumentError),
        (lambda: mt.multinomial(mt.tensor([1.0, 1.0]), 3), ArgumentError),
        (lambda: mt.multinomial(mt.tensor([1.0, 1.0]), 0), ArgumentError),
        (lambda: mt.multinomial(mt.tensor([1, 1]), 1), DTypeError),
        (lambda: mt.multinomial(mt.ones(2, 2, 2), 1), ShapeError),
        (lambda: mt.multinomial(mt.tensor(1.0), 1), ShapeError),
        (lambda: mt.multinomial(mt.ones(2), 1.0), DTypeError),
        (lambda: mt.multinomial(mt.ones(2), 1, generator=np.random.default_rng()), DTypeError),
    ],
)
def test_multinomial_refuses_bad_weights_and_counts(call, error):
    with pytest.raises(error) as raised:
        call()
    assert isinstance(raised.value, (RuntimeError, TypeError))


def test_multinomial_shapes_and_dtypes_match_torch(torch):
    for weights, count, replacement in (([0.2, 0.8], 1, False), ([[1.0, 2.0, 3.0]] * 4, 3, False),
                                        ([[1.0, 0.0]] * 2, 6, True)):  # fmt: skip
        ours = mt.multinomial(mt.tensor(weights), count, replacement)
        theirs = torch.multinomial(torch.tensor(weights), count, replacement)
        assert ours.shape == tuple(theirs.shape) and str(theirs.dtype) == "torch.int64"
    np.testing.assert_array_equal(
        mt.multinomial(mt.tensor([[0.0, 1.0], [1.0, 0.0]]), 1).array,
        torch.multinomial(torch.tensor([[0.0, 1.0], [1.0, 0.0]]), 1).numpy(),
    )


# from_numpy of subclasses -----------------------------------------------------------------------


def test_from_numpy_takes_a_memmap_sharing_its_file(tmp_path):
    mapped = np.memmap(tmp_path / "values.dat", dtype=np.float32, mode="w+", shape=(3,))
    tensor = mt.from_numpy(mapped)
    tensor[0] = 5.0
    assert mapped[0] == 5.0 and type(tensor.array) is np.ndarray
    mapped[1] = 2.0
    assert tensor.tolist() == [5.0, 2.0, 0.0]


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # numpy's, on np.matrix
def test_from_numpy_takes_matrix_and_masked_arrays_as_plain_arrays():
    matrix = np.matrix([[1.0, 2.0]])
    tensor = mt.from_numpy(matrix)
    tensor[0, 0] = 9.0
    assert matrix[0, 0] == 9.0 and tensor.shape == (1, 2)
    assert (tensor * 2).sum().item() == 22.0  # a plain array: no matrix product semantics
    masked = np.ma.masked_array([1.0, 2.0], mask=[False, True])
    assert mt.from_numpy(masked).tolist() == [1.0, 2.0]  # the mask is dropped, as PyTorch
    with pytest.raises(DTypeError):
        mt.from_numpy([1.0, 2.0])


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_from_numpy_subclasses_match_torch(torch, tmp_path):
    mapped = np.memmap(tmp_path / "m.dat", dtype=np.float64, mode="w+", shape=(2, 2))
    mapped[:] = [[1.0, 2.0], [3.0, 4.0]]
    for array in (mapped, np.matrix([[1.0, 2.0]]), np.ma.masked_array([1.0, 2.0], [0, 1])):
        ours, theirs = mt.from_numpy(array), torch.from_numpy(array)
        assert ours.shape == tuple(theirs.shape)
        np.testing.assert_array_equal(ours.array, theirs.numpy())


# indexing with ranges ---------------------------------------------------------------------------

RANGE_INDEXES = {
    "range": range(1, 3),
    "empty_range": range(0),
    "range_step": range(2, -1, -2),
    "two_ranges": (range(2), range(1, 3)),
    "list_of_ranges": [range(2), range(2)],
    "list_with_slice": [slice(0, 2), 1],
    "list_with_none": [None, 0],
    "list_with_list": [[0, 1], [1, 2]],
    "slice_and_range": (slice(None), range(3)),
    "empty_list": [],
}


@pytest.mark.parametrize("name", sorted(RANGE_INDEXES))
def test_range_and_list_indexes_read_as_torch(name):
    values = np.arange(12).reshape(3, 4)
    index = RANGE_INDEXES[name]
    expected = {
        "range": values[1:3],
        "empty_range": values[:0],
        "range_step": values[[2, 0]],
        "two_ranges": values[[0, 1], [1, 2]],
        "list_of_ranges": values[[0, 1], [0, 1]],
        "list_with_slice": values[0:2, 1],
        "list_with_none": values[None, 0],
        "list_with_list": values[[0, 1], [1, 2]],
        "slice_and_range": values[:, 0:3],
        "empty_list": values[:0],
    }[name]
    np.testing.assert_array_equal(mt.tensor(values)[index].array, expected)


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch's on a list read as a tuple
@pytest.mark.parametrize("name", sorted(RANGE_INDEXES))
def test_range_and_list_indexes_match_torch(torch, name):
    values = np.arange(12).reshape(3, 4)
    index = RANGE_INDEXES[name]
    np.testing.assert_array_equal(mt.tensor(values)[index].array, torch.tensor(values)[index])


def test_a_range_index_writes_and_carries_the_gradient():
    x = mt.zeros(3, 4)
    x[range(2), [0, 1]] = 5.0
    assert x.tolist()[0][0] == 5.0 and x.tolist()[1][1] == 5.0 and x.sum().item() == 10.0
    leaf = mt.tensor(np.arange(4.0), requires_grad=True)
    leaf[range(1, 4, 2)].sum().backward()
    assert leaf.grad.tolist() == [0.0, 1.0, 0.0, 1.0]


def test_a_float_index_is_an_index_error_as_in_torch():
    with pytest.raises(IndexTypeError) as raised:
        mt.ones(3)[mt.tensor([1.0])]
    assert isinstance(raised.value, IndexError) and isinstance(raised.value, TypeError)
    with pytest.raises(IndexError):
        mt.ones(3)[1.5]


# the printed form -------------------------------------------------------------------------------

PRINTED = {
    3.5: "tensor(3.5000)",
    3.0: "tensor(3.)",
    0.1: "tensor(0.1000)",
    1e-5: "tensor(1.0000e-05)",
    1e10: "tensor(1.0000e+10)",
    -2.25: "tensor(-2.2500)",
    123456.0: "tensor(123456.)",
    float("nan"): "tensor(nan)",
    -0.0: "tensor(-0.)",
}


@pytest.mark.parametrize("value", sorted(PRINTED, key=str))
def test_a_zero_dim_float_prints_as_torch(value):
    assert repr(mt.tensor(value)) == PRINTED[value]
    assert str(mt.tensor(value)) == PRINTED[value]


def test_float_tensors_print_with_torchs_widths():
    assert repr(mt.tensor([1.5, 2.25])) == "tensor([1.5000, 2.2500])"
    assert repr(mt.tensor([0.1, 100.0])) == "tensor([  0.1000, 100.0000])"
    assert repr(mt.tensor([1e-5, 1.0])) == "tensor([1.0000e-05, 1.0000e+00])"
    assert repr(mt.tensor([1.0, float("nan"), -3.0])) == "tensor([ 1., nan, -3.])"
    assert repr(mt.tensor(2.5, requires_grad=True)) == "tensor(2.5000, requires_grad=True)"
    assert repr(mt.tensor(2.0, dtype=mt.float64)) == "tensor(2., dtype=float64)"
    assert repr(mt.tensor([[1, 20], [3, 4]])) == "tensor([[ 1, 20],\n        [ 3,  4]])"


@pytest.mark.parametrize("seed", range(4))
def test_float_tensors_print_as_torch(torch, seed):
    rng = np.random.default_rng(seed)
    scale = [1.0, 100.0, 1e-6, 1e9][seed]
    for shape in ((), (5,), (3, 4), (2, 3, 2), (1, 7), (2000,), (40, 40)):
        values = np.asarray(rng.standard_normal(shape) * scale, np.float32)
        assert repr(mt.from_numpy(values)) == repr(torch.from_numpy(values))


def test_a_summarised_tensor_formats_the_numbers_it_shows():
    # past 1000 elements only the first and last 3 of each dim are shown, and only they choose
    # the format (as PyTorch): a tiny value in the hidden middle does not turn on e-notation
    values = np.full(2000, 0.5, np.float32)
    values[1000] = 1e-7
    text = repr(mt.from_numpy(values))
    assert "0.5000" in text and "e-" not in text and "..." in text


# sizes ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.zeros(-1),
        lambda m: m.ones(2, -3),
        lambda m: m.empty(-2),
        lambda m: m.full((-1,), 2.0),
        lambda m: m.randn(3, -1),
        lambda m: m.rand(-1),
    ],
)
def test_a_negative_size_is_refused_as_torch(call):
    with pytest.raises(ArgumentError, match="negative") as raised:
        call(mt)
    assert isinstance(raised.value, RuntimeError)


def test_sizes_still_take_every_spelling():
    assert mt.zeros(2, 3).shape == (2, 3) and mt.ones((2,)).shape == (2,)
    assert mt.zeros([]).shape == () and mt.empty(0).shape == (0,)
    assert mt.full((2, 2), 3.0).shape == (2, 2) and mt.randn(np.int64(2)).shape == (2,)
    with pytest.raises(DTypeError):
        mt.zeros(2.5)


# numpy's spellings --------------------------------------------------------------------------------


def test_std_mean_and_var_mean_take_numpy_spellings():
    values = np.random.default_rng(3).standard_normal((2, 3, 4))
    std, mean = mt.std_mean(mt.tensor(values), axis=(1, 2))
    np.testing.assert_allclose(std.array, values.std(axis=(1, 2), ddof=1))
    np.testing.assert_allclose(mean.array, values.mean(axis=(1, 2)))
    var, mean = mt.var_mean(mt.tensor(values), axis=1, keepdims=True)
    assert var.shape == mean.shape == (2, 1, 4)
    np.testing.assert_allclose(var.array, values.var(axis=1, ddof=1, keepdims=True))
    with pytest.raises(DTypeError):
        mt.std_mean(mt.tensor(values), dim=1, axis=1)


def test_std_mean_with_axis_matches_torch(torch):
    values = np.random.default_rng(4).standard_normal((2, 3, 4))
    ours = mt.std_mean(mt.tensor(values), axis=(1, 2))
    theirs = torch.std_mean(torch.tensor(values), axis=(1, 2))
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine.array, reference.numpy(), rtol=1e-12)


# top-level activations --------------------------------------------------------------------------


def test_selu_celu_prelu_are_top_level_functions_as_in_torch():
    values = np.array([[-2.0, -0.5, 0.0, 1.5]])
    x = mt.tensor(values)
    np.testing.assert_allclose(mt.selu(x).array, mt.nn.functional.selu(x).array)
    np.testing.assert_allclose(
        mt.celu(x, 0.5).array, np.where(values > 0, values, 0.5 * np.expm1(values / 0.5))
    )
    weight = mt.tensor([0.25], dtype=mt.float64)
    np.testing.assert_allclose(
        mt.prelu(x, weight).array, np.where(values > 0, values, 0.25 * values)
    )


def test_top_level_activations_match_torch(torch):
    values = np.random.default_rng(5).standard_normal((2, 3))
    for name, args in (("selu", ()), ("celu", (0.7,)), ("prelu", ("weight",))):
        mine = [mt.tensor([0.3], dtype=mt.float64) if a == "weight" else a for a in args]
        theirs = [torch.tensor([0.3], dtype=torch.float64) if a == "weight" else a for a in args]
        ours = getattr(mt, name)(mt.tensor(values), *mine)
        reference = getattr(torch, name)(torch.tensor(values), *theirs)
        np.testing.assert_allclose(ours.array, reference.numpy(), rtol=1e-12)
