"""Integer and bool inputs of reductions and elementwise ops, against PyTorch: the same result
dtype and values where PyTorch computes, a DTypeError naming the op where PyTorch refuses."""

from __future__ import annotations

import re

import numpy as np
import pytest

import minitrain as mt
from minitrain import ops
from minitrain.errors import ArgumentError, DTypeError

INTEGERS = [np.uint8, np.int8, np.int16, np.int32, np.int64]
DTYPES = [np.bool_, *INTEGERS, np.float32]  # float32: floats, which every op takes, unchanged
NON_FLOAT = frozenset(np.dtype(d) for d in [np.bool_, *INTEGERS])
BOOL = frozenset({np.dtype(np.bool_)})
NONE = frozenset()

# name: (the op's name in errors, the call on a torch tensor and on a minitrain tensor alike,
# the dtypes PyTorch 2.13 refuses). The calls go through the Tensor methods, which call the
# functional forms (ops.mean, ...), where the rules live.
CASES = {
    "sum": ("sum", lambda t: t.sum(), NONE),
    "sum_dim": ("sum", lambda t: t.sum(1), NONE),
    "sum_keepdim": ("sum", lambda t: t.sum(0, keepdim=True), NONE),
    "prod": ("prod", lambda t: t.prod(), NONE),
    "prod_dim": ("prod", lambda t: t.prod(0), NONE),
    "cumsum": ("cumsum", lambda t: t.cumsum(1), NONE),
    "cumsum_0d": ("cumsum", lambda t: t[0, 2].cumsum(0), NONE),
    "mean": ("mean", lambda t: t.mean(), NON_FLOAT),
    "mean_dim": ("mean", lambda t: t.mean(0), NON_FLOAT),
    "var": ("var", lambda t: t.var(), NON_FLOAT),
    "var_dim": ("var", lambda t: t.var(1), NON_FLOAT),
    "std": ("std", lambda t: t.std(), NON_FLOAT),
    "std_dim": ("std", lambda t: t.std(0, keepdim=True), NON_FLOAT),
    "amax": ("max", lambda t: t.amax(1), NONE),
    "amin": ("min", lambda t: t.amin(), NONE),
    "max": ("max", lambda t: t.max(), NONE),
    "max_dim_values": ("max", lambda t: t.max(0)[0], NONE),
    "max_dim_indices": ("max", lambda t: t.max(1)[1], NONE),
    "min_dim_values": ("min", lambda t: t.min(1, keepdim=True)[0], NONE),
    "min_dim_indices": ("min", lambda t: t.min(0)[1], NONE),
    "min_0d_indices": ("min", lambda t: t[1, 0].min(0)[1], NONE),
    "argmax": ("argmax", lambda t: t.argmax(), BOOL),
    "argmax_dim": ("argmax", lambda t: t.argmax(1), BOOL),
    "argmin": ("argmin", lambda t: t.argmin(), BOOL),
    "argmin_dim": ("argmin", lambda t: t.argmin(0, keepdim=True), BOOL),
    "all": ("all", lambda t: t.all(), NONE),
    "all_dim": ("all", lambda t: t.all(1), NONE),
    "any": ("any", lambda t: t.any(), NONE),
    "any_dim": ("any", lambda t: t.any(0), NONE),
    "abs": ("abs", lambda t: t.abs(), BOOL),
    "abs_operator": ("abs", lambda t: abs(t), BOOL),
    "neg": ("neg", lambda t: -t, BOOL),
    "floor": ("floor", lambda t: t.floor(), BOOL),
    "ceil": ("ceil", lambda t: t.ceil(), BOOL),
    "trunc": ("trunc", lambda t: t.trunc(), BOOL),
    "round": ("round", lambda t: t.round(), BOOL),
    "round_decimals": ("round", lambda t: t.round(decimals=1), NON_FLOAT),
    "round_negative_decimals": ("round", lambda t: t.round(decimals=-1), NON_FLOAT),
    "sign": ("sign", lambda t: t.sign(), NONE),
    "relu": ("relu", lambda t: t.relu(), BOOL),
}


def _values(dtype):
    # unsigned dtypes wrap the negatives (254, ...): sums of them overflow uint8, not int64
    return np.array([[-2, 0, 1], [3, 7, 100]]).astype(dtype)


def _numpy_dtype(dtype) -> np.dtype:
    return np.dtype(str(dtype).removeprefix("torch."))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", sorted(CASES))
def test_integer_and_bool_input_as_torch(torch, name, dtype):
    op, call, refused = CASES[name]
    values = _values(dtype)
    try:
        expected = call(torch.from_numpy(values.copy()))
    except (RuntimeError, NotImplementedError):
        expected = None
    # the table says what PyTorch does, so that a change in it shows here
    assert (expected is None) == (np.dtype(dtype) in refused)
    x = mt.tensor(values.copy())
    if expected is None:
        with pytest.raises(DTypeError) as info:
            call(x)
        message = str(info.value)
        assert message.startswith(f"{op}: x must be ")
        assert f"got {np.dtype(dtype)} (cast it first: x." in message
        return
    out = call(x)
    assert out.dtype == _numpy_dtype(expected.dtype)
    assert out.shape == tuple(expected.shape)
    if out.dtype.kind == "f":
        np.testing.assert_allclose(out.array, expected.numpy(), rtol=1e-6)
    else:
        np.testing.assert_array_equal(out.array, expected.numpy())


def test_sum_of_unsigned_is_int64_with_the_carry_kept():
    # numpy sums uint8 to uint64: int64, PyTorch's, holds the same values
    x = mt.tensor(np.array([200, 100, 3], np.uint8))
    for out in (x.sum(), x.prod(), x.cumsum(0)):
        assert out.dtype == np.int64
    assert x.sum().item() == 303 and x.prod().item() == 60000
    np.testing.assert_array_equal(x.cumsum(0).array, [200, 300, 303])


@pytest.mark.parametrize(
    ("call", "op", "dtype"),
    [
        (lambda a: ops.mean(a), "mean", np.int64),
        (lambda a: ops.var(a, correction=0), "var", np.int32),
        (lambda a: ops.std(a), "std", np.bool_),
        (lambda a: ops.abs(a), "abs", np.bool_),
        (lambda a: ops.neg(a), "neg", np.bool_),
        (lambda a: ops.floor(a), "floor", np.bool_),
        (lambda a: ops.ceil(a), "ceil", np.bool_),
        (lambda a: ops.trunc(a), "trunc", np.bool_),
        (lambda a: ops.round(a), "round", np.bool_),
        (lambda a: ops.round(a, decimals=2), "round", np.int16),
        (lambda a: ops.argmax(a), "argmax", np.bool_),
        (lambda a: ops.argmin(a, 0), "argmin", np.bool_),
        (lambda a: ops.relu(a), "relu", np.bool_),
    ],
)
def test_functional_forms_refuse_arrays_too(call, op, dtype):
    array = np.array([1, 0, 1]).astype(dtype)
    with pytest.raises(DTypeError, match=rf"^{op}: x must be .*, got {np.dtype(dtype)} "):
        call(array)


def test_refusals_say_what_to_do():
    x = mt.tensor(np.array([1, 2, 3]))
    with pytest.raises(DTypeError) as info:
        x.mean()
    assert str(info.value) == "mean: x must be floating point, got int64 (cast it first: x.float())"
    assert x.float().mean().item() == 2.0  # and the cast it names works
    mask = mt.tensor(np.array([True, False]))
    with pytest.raises(DTypeError) as info:
        _ = -mask
    assert str(info.value) == (
        "neg: x must be numeric (not bool), got bool (cast it first: x.int())"
    )
    np.testing.assert_array_equal((-mask.int()).array, [-1, 0])
    with pytest.raises(DTypeError, match=re.escape("round: x must be floating point for")):
        x.round(decimals=1)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_gradients_unchanged(torch, dtype):
    values = np.array([[0.5, -1.5, 2.0], [3.0, 0.25, -4.0]]).astype(dtype)
    calls = [
        lambda t: t.sum(),
        lambda t: t.prod(1).sum(),
        lambda t: t.cumsum(1).sum(),
        lambda t: t.mean(0).sum(),
        lambda t: t.var(1).sum(),
        lambda t: t.std(0).sum(),
        lambda t: (-t).abs().sum(),
        lambda t: t.relu().sum(),
        lambda t: t.max(1)[0].sum(),
    ]
    for call in calls:
        x = mt.tensor(values.copy(), requires_grad=True)
        reference = torch.from_numpy(values.astype(np.float64)).requires_grad_(True)
        out = call(x)
        out.backward()
        call(reference).backward()
        assert out.dtype == np.dtype(dtype) and x.grad.dtype == np.dtype(dtype)
        tolerance = 1e-2 if dtype == np.float16 else 1e-5
        np.testing.assert_allclose(
            x.grad.array.astype(np.float64), reference.grad.numpy(), rtol=tolerance, atol=tolerance
        )


# masked_fill: a value x's dtype cannot hold is refused, as PyTorch refuses it

FILL_VALUES = [
    1000, -129, 127, -128, 255, -1, -255, -256, 70000, 2**63 - 1, -(2**63), 2**63,
    1.5, -1.5, -0.5, 127.9, 128.5, 65504, 65520, 1e39, float("inf"), float("-inf"), float("nan"),
    True, np.float32(3.5), np.int64(-3),
]  # fmt: skip


# each value as a number, and as a 0-d array and tensor where one holds it
FILL_FORMS = [
    (value, form)
    for value in FILL_VALUES
    for form in ("number", "0-d array", "0-d tensor")
    if form == "number" or not isinstance(value, int) or -(2**63) <= value < 2**63
]


@pytest.mark.parametrize("value, form", FILL_FORMS, ids=lambda v: repr(v))
@pytest.mark.parametrize(
    "dtype", [np.bool_, np.uint8, np.int8, np.int16, np.int64, np.float16, np.float32, np.float64]
)
def test_masked_fill_takes_the_values_pytorch_takes(torch, dtype, value, form):
    x = mt.tensor(np.arange(4).astype(dtype))
    given, torch_given = value, value
    if form != "number":
        given = np.array(value)
        torch_given = torch.from_numpy(given.copy()) if form == "0-d tensor" else value
        given = mt.tensor(given) if form == "0-d tensor" else given
    expected = torch.from_numpy(x.array.copy())
    try:
        want = expected.masked_fill(expected > 0, torch_given).numpy()
    except RuntimeError as error:
        assert "overflow" in str(error)
        with pytest.raises(ArgumentError, match=rf"^masked_fill: value .* {np.dtype(dtype)} "):
            x.masked_fill(x.array > 0, given)
        return
    got = x.masked_fill(x.array > 0, given).array
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
