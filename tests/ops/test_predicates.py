"""The tests, logic and bitwise functions (ops/predicates.py) against PyTorch: values, dtypes,
broadcasting, the operators & | ^ ~ << >>, and the errors for what PyTorch refuses."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
from reference import torch

import minitrain as mt
from minitrain import ops
from minitrain.errors import ArgumentError, DeviceError, DTypeError, ShapeError

SPECIAL = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 1e-300])


def _same(ours, theirs):
    """A minitrain tensor and a torch tensor agree in dtype, shape and values (nan equal)."""
    assert isinstance(ours, mt.Tensor) and not ours.requires_grad
    expected = theirs.numpy()
    assert ours.dtype == expected.dtype and ours.shape == expected.shape
    np.testing.assert_array_equal(ours.numpy(), expected)


def _arrays():
    """One array of each dtype family, as numpy arrays."""
    return {
        "float64": SPECIAL,
        "float32": SPECIAL.astype(np.float32),
        "float16": SPECIAL.astype(np.float16),
        "int64": np.array([0, -3, 7, 2**40, -(2**40), 1, 0, 5]),
        "int32": np.array([0, -3, 7, 12, -12, 1, 0, 5], dtype=np.int32),
        "uint8": np.array([0, 3, 7, 250, 12, 1, 0, 5], dtype=np.uint8),
        "bool": np.array([True, False, True, True, False, False, True, False]),
    }


@pytest.mark.parametrize("name", ["isnan", "isinf", "isposinf", "isneginf", "isfinite"])
@pytest.mark.parametrize("dtype", list(_arrays()))
def test_floating_classes_match_torch(name, dtype):
    values = _arrays()[dtype]
    x = mt.tensor(values)
    _same(getattr(mt, name)(x), getattr(torch, name)(torch.tensor(values)))
    _same(getattr(x, name)(), getattr(torch, name)(torch.tensor(values)))
    _same(
        getattr(ops, name)(values.reshape(2, 4)),
        getattr(torch, name)(torch.tensor(values)).reshape(2, 4),
    )


def test_floating_classes_take_no_gradient():
    x = mt.tensor(SPECIAL, requires_grad=True)
    for name in ("isnan", "isinf", "isposinf", "isneginf", "isfinite"):
        result = getattr(mt, name)(x)
        assert result.dtype == np.bool_ and not result.requires_grad and result.grad_fn is None


def test_a_0d_input_gives_a_0d_result():
    assert mt.isnan(mt.tensor(float("nan"))).shape == ()
    assert bool(ops.isposinf(math.inf)) and not bool(ops.isneginf(math.inf))


# isclose, allclose, equal


ISCLOSE_CASES = [  # (input, other, keywords)
    ([1.0, 1.0 + 1e-6, 1.1, 0.0, 1e-9], [1.0, 1.0, 1.0, 1e-8, 0.0], {}),
    ([1.0, 1.0 + 1e-6, 1.1], [1.0, 1.0, 1.0], {"rtol": 0.2}),
    ([1.0, 1.5, 0.0], [1.2, 1.0, 0.4], {"atol": 0.3, "rtol": 0}),
    ([1.0, 1.0 + 1e-12], [1.0, 1.0], {"atol": 0, "rtol": 0}),
    ([np.nan, np.inf, np.inf, -np.inf, 1.0, np.nan],
     [np.nan, np.inf, -np.inf, -np.inf, np.inf, 1.0], {}),
    ([np.nan, np.inf, 1.0, np.nan], [np.nan, np.inf, np.inf, 1.0], {"equal_nan": True}),
    ([1.0, 2.0], [np.inf, 2.0], {"atol": np.inf}),
]  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("first, second, keywords", ISCLOSE_CASES)
def test_isclose_matches_torch(dtype, first, second, keywords):
    a, b = np.array(first, dtype), np.array(second, dtype)
    _same(mt.isclose(mt.tensor(a), mt.tensor(b), **keywords),
          torch.isclose(torch.tensor(a), torch.tensor(b), **keywords))  # fmt: skip
    _same(mt.tensor(a).isclose(mt.tensor(b), **keywords),
          torch.tensor(a).isclose(torch.tensor(b), **keywords))  # fmt: skip
    assert mt.allclose(mt.tensor(a), mt.tensor(b), **keywords) is torch.allclose(
        torch.tensor(a), torch.tensor(b), **keywords
    )


@pytest.mark.parametrize(
    "dtype, first, second, keywords",
    [
        (np.int64, [10, 11, 2**62, 16777217], [10, 10, -(2**62), 16777216],
         {"rtol": 0.1, "atol": 0.5}),
        (np.int64, [10, 11, 12], [10, 10, 10], {"atol": 1.5, "rtol": 0}),
        (np.uint8, [3, 250, 0], [5, 252, 255], {"atol": 3}),  # no wrap-around
        (np.int32, [1, 2], [1, 3], {"atol": 0, "rtol": 0}),
        (np.bool_, [True, False, True], [True, True, False], {}),
    ],
)  # fmt: skip
def test_isclose_of_integers_and_bools_matches_torch(dtype, first, second, keywords):
    a, b = np.array(first, dtype), np.array(second, dtype)
    _same(mt.isclose(mt.tensor(a), mt.tensor(b), **keywords),
          torch.isclose(torch.tensor(a), torch.tensor(b), **keywords))  # fmt: skip


def test_isclose_broadcasts_and_allclose_is_a_python_bool():
    a, b = np.ones((3, 1)), np.ones(4) + 1e-9
    _same(mt.isclose(mt.tensor(a), mt.tensor(b)), torch.isclose(torch.tensor(a), torch.tensor(b)))
    result = mt.allclose(mt.tensor(a), mt.tensor(b))
    assert result is True and mt.tensor(a).allclose(mt.tensor(b * 2)) is False


def test_isclose_takes_a_number_other():
    x = mt.tensor([1.0, 1.5, 2.0])
    np.testing.assert_array_equal(ops.isclose(x, 1.5).numpy(), [False, True, False])


def test_isclose_refuses_what_torch_refuses():
    a, b = mt.tensor(np.ones(3, np.float32)), mt.tensor(np.ones(3))
    with pytest.raises(RuntimeError, match="Float did not match Double"):
        torch.isclose(torch.ones(3), torch.ones(3, dtype=torch.float64))
    with pytest.raises(DTypeError, match=r"isclose: input and other must have one dtype, got "
                       r"float32 and float64"):  # fmt: skip
        mt.isclose(a, b)
    with pytest.raises(DTypeError, match="allclose|isclose"):
        mt.allclose(a, b)
    for keywords, name in (({"rtol": -1.0}, "rtol"), ({"atol": -0.1}, "atol"),
                           ({"atol": math.nan}, "atol")):  # fmt: skip
        with pytest.raises(RuntimeError, match=f"{name} must be greater than or equal to zero"):
            torch.isclose(torch.ones(2), torch.ones(2), **keywords)
        with pytest.raises(ArgumentError, match=f"isclose: {name} must be >= 0, got"):
            mt.isclose(b, b, **keywords)
    with pytest.raises(DTypeError, match="isclose: rtol must be a number, got str"):
        mt.isclose(b, b, rtol="0.1")
    with pytest.raises(ShapeError, match=r"isclose: shapes do not broadcast: input \(3,\) and "
                       r"other \(4,\)"):  # fmt: skip
        mt.isclose(b, mt.tensor(np.ones(4)))


EQUAL_CASES = [
    (np.array([1.0, 2.0]), np.array([1.0, 2.0])),
    (np.array([1.0, 2.0]), np.array([1.0, 2.5])),
    (np.ones((3, 1)), np.ones(3)),  # shapes differ: False, no broadcasting
    (np.ones((3, 1)), np.ones(1)),
    (np.ones(3), np.ones(3, dtype=np.int64)),  # dtypes may differ
    (np.array([np.nan]), np.array([np.nan])),
    (np.array([0.0]), np.array([-0.0])),
    (np.zeros((0, 2)), np.zeros((0, 2))),
    (np.array([True, False]), np.array([1, 0])),
]


@pytest.mark.parametrize("first, second", EQUAL_CASES)
def test_equal_is_one_bool_as_torch(first, second):
    expected = torch.equal(torch.tensor(first), torch.tensor(second))
    assert mt.equal(mt.tensor(first), mt.tensor(second)) is expected
    assert mt.tensor(first).equal(mt.tensor(second)) is expected
    assert ops.array_equal(first, second) is expected


def test_equal_refuses_a_number_as_torch():
    with pytest.raises(TypeError, match="must be Tensor, not float"):
        torch.equal(torch.ones(2), 1.0)
    with pytest.raises(DTypeError, match="equal: input and other must be tensors, got "
                       r"float64 \(2,\) and float"):  # fmt: skip
        mt.equal(mt.tensor(np.ones(2)), 1.0)
    with pytest.raises(DTypeError, match=r"minitrain\.equal: input must be a Tensor"):
        mt.equal(np.ones(2), mt.tensor(np.ones(2)))


# logic


LOGIC_OPERANDS = [
    (np.array([0.0, -0.0, np.nan, 2.0]), np.array([1, 0, 3, 0])),
    (np.array([True, False, True, False]), np.array([0.5, 0.0, 0.0, -1.0], np.float32)),
    (np.array([[0], [2]], np.uint8), np.array([0, 1, 0, 5], np.int8)),
]


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
@pytest.mark.parametrize("first, second", LOGIC_OPERANDS)
def test_logic_matches_torch(name, first, second):
    ta, tb = torch.tensor(first), torch.tensor(second)
    _same(getattr(mt, name)(mt.tensor(first), mt.tensor(second)), getattr(torch, name)(ta, tb))
    _same(getattr(mt.tensor(first), name)(mt.tensor(second)), getattr(ta, name)(tb))
    _same(getattr(ops, name)(first, second), getattr(torch, name)(ta, tb))


@pytest.mark.parametrize("values", [operands[0] for operands in LOGIC_OPERANDS])
def test_logical_not_matches_torch(values):
    _same(mt.logical_not(mt.tensor(values)), torch.logical_not(torch.tensor(values)))
    _same(mt.tensor(values).logical_not(), torch.tensor(values).logical_not())


def test_logic_takes_no_gradient_and_checks_shapes():
    x = mt.tensor([0.0, 1.0, 2.0], requires_grad=True)
    assert not mt.logical_and(x, x).requires_grad and not mt.logical_not(x).requires_grad
    with pytest.raises(ShapeError, match=r"logical_or: shapes do not broadcast: input \(3,\) "
                       r"and other \(2,\)"):  # fmt: skip
        mt.logical_or(x, mt.tensor([1.0, 2.0]))
    with pytest.raises(DTypeError, match="logical_and: other must be a Tensor, an array or a "
                       "number, got str"):  # fmt: skip
        mt.logical_and(x, "yes")


# bitwise


INTEGER_DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64]


def _integer_values(dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype is np.bool_:
        return rng.random(6) < 0.5
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -100), min(info.max, 100), 6, endpoint=True).astype(dtype)


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor"])
@pytest.mark.parametrize("first_dtype", INTEGER_DTYPES)
@pytest.mark.parametrize("second_dtype", INTEGER_DTYPES)
def test_bitwise_logic_promotes_as_torch(name, first_dtype, second_dtype):
    a, b = _integer_values(first_dtype, 0), _integer_values(second_dtype, 1)
    ta, tb = torch.tensor(a), torch.tensor(b)
    _same(getattr(mt, name)(mt.tensor(a), mt.tensor(b)), getattr(torch, name)(ta, tb))
    _same(getattr(mt.tensor(a), name)(mt.tensor(b)), getattr(ta, name)(tb))


@pytest.mark.parametrize("symbol", ["&", "|", "^", "<<", ">>"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32, np.int64])
@pytest.mark.parametrize("number", [3, -1, 300, 0])
def test_operators_with_a_python_int_on_either_side_match_torch(symbol, dtype, number):
    values = _integer_values(dtype, 2)
    if dtype == np.uint8 and number < 0 and symbol in ("<<", ">>"):
        return  # a negative count in uint8 is 255 in torch too: covered by the shifts' test
    ours, theirs = mt.tensor(values), torch.tensor(values)
    scope = {"ours": ours, "theirs": theirs, "n": number}
    _same(eval(f"ours {symbol} n", scope), eval(f"theirs {symbol} n", scope))
    if symbol not in ("<<", ">>"):
        _same(eval(f"n {symbol} ours", scope), eval(f"n {symbol} theirs", scope))


@pytest.mark.parametrize("symbol", ["&", "|", "^"])
def test_bool_operators_stay_bool_unless_an_int_joins(symbol):
    a, b = np.array([True, False, True, False]), np.array([True, True, False, False])
    scope = {"a": mt.tensor(a), "b": mt.tensor(b), "ta": torch.tensor(a), "tb": torch.tensor(b)}
    for ours, theirs in [("a {} b", "ta {} tb"), ("a {} True", "ta {} True"),
                         ("a {} 1", "ta {} 1"), ("False {} a", "False {} ta")]:  # fmt: skip
        _same(eval(ours.format(symbol), scope), eval(theirs.format(symbol), scope))


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int8, np.int64])
def test_invert_and_bitwise_not_match_torch(dtype):
    values = _integer_values(dtype, 3)
    _same(~mt.tensor(values), ~torch.tensor(values))
    _same(mt.bitwise_not(mt.tensor(values)), torch.bitwise_not(torch.tensor(values)))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32, np.int64])
def test_shifts_past_the_width_and_by_negative_counts_match_torch(dtype):
    width = np.iinfo(dtype).bits
    values = np.array([5, 1, 3, 100, 7, 0, 9], dtype=dtype)
    if dtype != np.uint8:
        values[[1, 4]] = [-3, -128]
    counts = np.array([0, width - 1, width, width + 5, 1, 2, 3], dtype=dtype)
    if dtype != np.uint8:
        counts[[4, 5]] = [-1, -(width + 1)]
    for name in ("bitwise_left_shift", "bitwise_right_shift"):
        ours = getattr(mt, name)(mt.tensor(values), mt.tensor(counts))
        _same(ours, getattr(torch, name)(torch.tensor(values), torch.tensor(counts)))
    _same(mt.tensor(values) << mt.tensor(counts), torch.tensor(values) << torch.tensor(counts))
    _same(mt.tensor(values) >> mt.tensor(counts), torch.tensor(values) >> torch.tensor(counts))


def test_shifts_promote_a_bool_operand_with_an_int_and_take_a_number_first():
    flags = np.array([True, False, True])
    _same(mt.tensor(flags) << 1, torch.tensor(flags) << 1)
    _same(2 << mt.tensor([1, 2]), 2 << torch.tensor([1, 2]))
    _same(16 >> mt.tensor([1, 2]), 16 >> torch.tensor([1, 2]))
    _same(mt.bitwise_left_shift(2, mt.tensor([1, 2])),
          torch.bitwise_left_shift(2, torch.tensor([1, 2])))  # fmt: skip
    _same(mt.bitwise_and(6, mt.tensor([3, 4])), torch.bitwise_and(6, torch.tensor([3, 4])))


def test_bitwise_broadcasts():
    a, b = np.arange(6).reshape(3, 2), np.array([1, 3])
    _same(mt.tensor(a) & mt.tensor(b), torch.tensor(a) & torch.tensor(b))
    with pytest.raises(ShapeError, match=r"bitwise_xor: shapes do not broadcast: input \(3, 2\) "
                       r"and other \(3,\)"):  # fmt: skip
        mt.tensor(a) ^ mt.tensor([1, 2, 3])


REFUSED = [  # (minitrain call, torch call, minitrain's message)
    (lambda x, i, b: x & 1, lambda x, i, b: x & 1,
     r"bitwise_and: takes integer or bool operands, got input float32 \(3,\) and other int"),
    (lambda x, i, b: i | 1.5, lambda x, i, b: i | 1.5,
     r"bitwise_or: takes integer or bool operands, got input int64 \(3,\) and other float"),
    (lambda x, i, b: 2.5 ^ i, lambda x, i, b: 2.5 ^ i, "bitwise_xor: takes integer or bool"),
    (lambda x, i, b: ~x, lambda x, i, b: ~x,
     r"bitwise_not: takes an integer or bool input, got float32 \(3,\)"),
    (lambda x, i, b: b << b, lambda x, i, b: b << b,
     r"bitwise_left_shift: takes integer operands, got input bool \(3,\) and other bool"),
    (lambda x, i, b: b >> b, lambda x, i, b: b >> b, "bitwise_right_shift: takes integer"),
    (lambda x, i, b: x << 1, lambda x, i, b: x << 1, "bitwise_left_shift: takes integer"),
    (lambda x, i, b: i >> 1.5, lambda x, i, b: i >> 1.5, "bitwise_right_shift: takes integer"),
]  # fmt: skip


@pytest.mark.parametrize("ours, theirs, message", REFUSED)
def test_bitwise_refuses_what_torch_refuses(ours, theirs, message):
    values = (np.array([1.5, 2.0, 3.0], np.float32), np.array([1, 2, 3]), np.array([True] * 3))
    with pytest.raises((TypeError, NotImplementedError, RuntimeError)):
        theirs(*(torch.tensor(v) for v in values))
    with pytest.raises(DTypeError, match=message):
        ours(*(mt.tensor(v) for v in values))


def test_bitwise_results_take_no_gradient_and_leave_inputs_alone():
    a = mt.tensor(np.array([1, 2, 3], np.int8))
    before = a.numpy().copy()
    result = a & 1000  # 1000 wraps to int8 as in torch: -24
    np.testing.assert_array_equal(result.numpy(), (torch.tensor(before) & 1000).numpy())
    np.testing.assert_array_equal(a.numpy(), before)
    assert result.dtype == np.int8 and not result.requires_grad


# the functions' parameters are PyTorch's


FUNCTIONS = {  # name -> torch's documented parameters, those minitrain takes (not `out`)
    **dict.fromkeys(["isnan", "isinf", "isposinf", "isneginf", "isfinite", "logical_not",
                     "bitwise_not"], "input"),
    **dict.fromkeys(["logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
                     "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "equal"],
                    "input, other"),
    "isclose": "input, other, rtol, atol, equal_nan",
    "allclose": "input, other, rtol, atol, equal_nan",
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_parameters_are_torchs(name):
    ours = ", ".join(inspect.signature(getattr(mt, name)).parameters)
    assert ours == FUNCTIONS[name]
    documented = getattr(torch, name).__doc__.strip().splitlines()[0]
    for parameter in FUNCTIONS[name].split(", "):
        assert parameter in documented, f"torch.{name}: {documented}"
    method = ", ".join(list(inspect.signature(getattr(mt.Tensor, name)).parameters)[1:])
    assert method == FUNCTIONS[name].removeprefix("input").removeprefix(", ")


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor", "equal"])
def test_a_logical_op_refuses_operands_on_two_devices(cuda_device, name):
    """A CPU array beside a GPU one was compared, or (equal, on a real GPU) met CuPy's own
    TypeError naming neither (found by the bad-input fuzzer)."""
    function = getattr(mt, name)
    on_gpu = mt.tensor([True, False], device="cuda")
    with pytest.raises(DeviceError, match=f"{name}: .*cpu.*cuda|{name}: .*cuda.*cpu"):
        function(on_gpu, mt.tensor([True, True]))
    both = function(on_gpu, mt.tensor([True, True], device="cuda"))
    assert both is False if name == "equal" else both.device == cuda_device
