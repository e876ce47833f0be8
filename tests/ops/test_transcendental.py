"""The transcendental and two-operand math ops (ops/transcendental.py, ops/binary_math.py)
beyond the sample table: PyTorch's dtype rules, the operators % and //, the edges the table
keeps away from (zeros, infinities, division by zero) and the errors for what PyTorch refuses."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
from reference import torch

import minitrain as mt
from minitrain import ops
from minitrain.errors import ArgumentError, DTypeError, ShapeError

UNARY = ["log2", "log10", "exp2", "expm1", "log1p", "erf", "erfc", "tan", "asin", "acos",
         "atan", "sinh", "cosh", "asinh", "acosh", "atanh"]  # fmt: skip


def _same(ours, theirs, rtol=1e-6):
    expected = theirs.detach().numpy()
    assert ours.dtype == expected.dtype and ours.shape == expected.shape
    np.testing.assert_allclose(ours.numpy(), expected, rtol=rtol, atol=rtol * 1e-3)


def _grads(out, inputs, seed=None):
    seed = np.ones(out.shape, out.dtype) if seed is None else seed
    return [g.numpy() for g in mt.grad(out, inputs, grad_outputs=mt.tensor(seed))]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int8, np.int32, np.int64])
def test_integer_and_bool_inputs_compute_in_float32(name, dtype):
    values = np.array([1, 0, 1, 2, 3]).astype(dtype)
    with np.errstate(divide="ignore", invalid="ignore"):  # log2(0), asin(2): torch's -inf, nan
        ours = getattr(mt, name)(mt.tensor(values))
    _same(ours, getattr(torch, name)(torch.tensor(values)))


@pytest.mark.parametrize("name", UNARY)
def test_float16_stays_float16(name):
    values = np.array([0.25, 0.5, 0.75], np.float16) + (1.5 if name == "acosh" else 0)
    _same(getattr(mt, name)(mt.tensor(values)), getattr(torch, name)(torch.tensor(values)), 2e-3)


@pytest.mark.parametrize("name", UNARY)
def test_methods_and_functions_are_the_ops(name):
    x = mt.tensor(np.array([0.2, 0.4]) + (1.5 if name == "acosh" else 0))
    expected = getattr(ops, name)(x).numpy()
    np.testing.assert_array_equal(getattr(x, name)().numpy(), expected)
    np.testing.assert_array_equal(getattr(mt, name)(input=x).numpy(), expected)


def test_numpy_spellings_are_the_same_functions():
    x = mt.tensor([0.25, -0.5])
    for alias, name in [("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"),
                        ("arcsinh", "asinh"), ("arctanh", "atanh")]:  # fmt: skip
        np.testing.assert_array_equal(getattr(mt, alias)(x).numpy(), getattr(mt, name)(x).numpy())
        np.testing.assert_array_equal(getattr(x, alias)().numpy(), getattr(x, name)().numpy())
    y = mt.tensor([1.5, 2.0])
    np.testing.assert_array_equal(mt.arccosh(y).numpy(), mt.acosh(y).numpy())
    np.testing.assert_array_equal(x.arctan2(y).numpy(), mt.atan2(x, y).numpy())


def test_erf_and_erfc_keep_their_relative_accuracy_in_float64():
    values = np.array([1e-300, -1e-12, 1e-5, 0.3, -0.49, 0.5, 0.7, 2.0, -3.5, 5.0, 6.5, 27.0,
                       -30.0, np.inf, -np.inf])  # fmt: skip
    erf = mt.erf(mt.tensor(values)).numpy()
    erfc = mt.erfc(mt.tensor(values)).numpy()
    np.testing.assert_allclose(erf, [math.erf(v) for v in values], rtol=4e-16, atol=0)
    np.testing.assert_allclose(erfc, [math.erfc(v) for v in values], rtol=1e-14, atol=0)
    assert np.isnan(mt.erf(mt.tensor([np.nan])).numpy()).all()


def test_erf_of_float32_matches_torch():
    values = np.linspace(-6, 6, 97, dtype=np.float32)
    _same(mt.erf(mt.tensor(values)), torch.erf(torch.tensor(values)))
    _same(mt.erfc(mt.tensor(values)), torch.erfc(torch.tensor(values)))


# dtypes of two operands

BINARY_DTYPES = [  # (input, other): arrays of these dtypes, or Python numbers
    (np.int64, np.int64),
    (np.int8, 3),
    (np.int32, 2.5),
    (np.int64, np.float32),
    (np.float32, np.float64),
    (np.uint8, np.int8),
    (np.bool_, np.bool_),
    (np.float16, 2),
]


def _operand(kind, seed):
    if not isinstance(kind, type):
        return kind, kind
    values = np.random.default_rng(seed).integers(1, 9, 4) * np.array([1, -1, 1, -1])
    if kind is np.bool_:
        values = values > 0
    elif np.dtype(kind).kind == "u":
        values = np.abs(values)
    values = values.astype(kind)
    return mt.tensor(values), torch.tensor(values)


@pytest.mark.parametrize("name", ["atan2", "copysign", "fmod", "remainder", "floor_divide"])
@pytest.mark.parametrize("first, second", BINARY_DTYPES)
def test_binary_dtypes_match_torch(name, first, second):
    (a, ta), (b, tb) = _operand(first, 0), _operand(second, 1)
    if name == "atan2" and not isinstance(tb, torch.Tensor):
        tb = torch.tensor(tb)  # torch's atan2 takes no number (minitrain's does, as a 0-d one)
    try:
        expected = getattr(torch, name)(ta, tb)
    except (TypeError, NotImplementedError, RuntimeError):
        with pytest.raises(DTypeError, match=f"{name}: takes numeric"):
            getattr(mt, name)(a, b)
        return
    _same(getattr(mt, name)(a, b), expected)


@pytest.mark.parametrize("name", ["hypot", "logaddexp"])
@pytest.mark.parametrize("first, second", [(np.int64, np.int64), (np.bool_, np.bool_)])
def test_hypot_and_logaddexp_refuse_integers_as_torch(name, first, second):
    (a, ta), (b, tb) = _operand(first, 0), _operand(second, 1)
    with pytest.raises(NotImplementedError, match="not implemented for"):
        getattr(torch, name)(ta, tb)
    with pytest.raises(DTypeError, match=rf"{name}: takes floating-point operands, got input "):
        getattr(mt, name)(a, b)


@pytest.mark.parametrize("name", ["atan2", "hypot", "logaddexp", "copysign", "fmod", "remainder"])
def test_a_float64_0d_tensor_promotes_an_integer_tensor_as_torch(name):
    ints, other = np.array([1, 2, 3]), np.array(2.5)
    if name in ("hypot", "logaddexp"):
        ints = ints.astype(np.float32)
    ours = getattr(mt, name)(mt.tensor(ints), mt.tensor(other))
    _same(ours, getattr(torch, name)(torch.tensor(ints), torch.tensor(other)), 1e-12)


def test_binary_ops_check_broadcasting():
    with pytest.raises(ShapeError, match=r"atan2: shapes do not broadcast: input \(3,\), other"):
        mt.atan2(mt.ones(3), mt.ones(4))


# % and //


@pytest.mark.parametrize("symbol", ["%", "//"])
@pytest.mark.parametrize(
    "first, second",
    [(np.array([5.5, -3.2, 7.0, -7.5]), np.array([2.0, 2.0, -3.0, -2.0])),
     (np.array([7, -7, 7, -7, 0]), np.array([2, 2, -2, -2, 3])),
     (np.array([7, -7, 9], np.int8), 4), (np.array([7.5, -7.5]), 2),
     (np.array([7, -7]), 2.5), (np.array([1.0, -1.0, 0.0, 5.0]), 0.0),
     (np.array([np.inf, 5.0, -5.0, 5.0]), np.array([2.0, np.inf, np.inf, -np.inf])),
     (np.array([1.0]), 0.1), (np.array([-2**63]), -1)],
)  # fmt: skip
def test_operators_match_python_and_torch(symbol, first, second):
    scope = {
        "a": mt.tensor(first),
        "b": mt.tensor(second) if isinstance(second, np.ndarray) else second,
        "ta": torch.tensor(first),
        "tb": torch.tensor(second) if isinstance(second, np.ndarray) else second,
    }
    _same(eval(f"a {symbol} b", scope), eval(f"ta {symbol} tb", scope), 1e-12)
    if not isinstance(second, np.ndarray):
        number = 7 if isinstance(second, int) else 7.5
        scope["n"] = number
        with np.errstate(divide="ignore", invalid="ignore"):
            _same(eval(f"n {symbol} a", scope), eval(f"n {symbol} ta", scope), 1e-12)


def test_functions_take_a_number_input_where_torch_does():
    x = mt.tensor([2.0, -3.0])
    _same(mt.remainder(7, x), torch.remainder(7, torch.tensor([2.0, -3.0])))
    _same(mt.floor_divide(7, x), torch.floor_divide(7, torch.tensor([2.0, -3.0])))


@pytest.mark.parametrize("name", ["fmod", "remainder", "floor_divide"])
def test_integer_division_by_zero_is_refused_as_torch(name):
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        getattr(torch, name)(torch.tensor([5, 3]), torch.tensor([1, 0]))
    with pytest.raises(ArgumentError, match=f"{name}: integer division by zero"):
        getattr(mt, name)(mt.tensor([5, 3]), mt.tensor([1, 0]))
    with pytest.raises(ArgumentError, match=f"{name}: integer division by zero"):
        getattr(mt, name)(mt.tensor([5, 3]), 0)


@pytest.mark.parametrize(
    "name, op", [("fmod", "Fmod"), ("remainder", "Remainder"), ("floor_divide", "RoundedDiv")]
)
def test_integer_division_by_zero_is_refused_before_the_op_runs(monkeypatch, name, op):
    from minitrain.ops.pointwise import binary_math, rounding

    op_class = getattr(binary_math, op, None) or getattr(rounding, op)
    runs = []
    forward = op_class.forward
    monkeypatch.setattr(op_class, "forward", staticmethod(lambda *a: runs.append(a) or forward(*a)))
    with pytest.raises(ArgumentError, match=rf"^{name}: integer division by zero"):
        getattr(mt, name)(mt.tensor([5, 3]), np.array([True, False]))
    assert runs == []
    getattr(mt, name)(mt.tensor([5, 3]), 2)  # the spy does see the op run
    assert len(runs) == 1


@pytest.mark.parametrize("name", ["fmod", "remainder", "floor_divide"])
def test_floating_division_by_zero_gives_torchs_values_without_a_warning(name):
    values = np.array([1.0, -1.0, 0.0])
    ours = getattr(mt, name)(mt.tensor(values), 0.0)  # warnings are errors in the tests
    _same(ours, getattr(torch, name)(torch.tensor(values), 0.0))


@pytest.mark.parametrize("name", ["fmod", "remainder", "floor_divide"])
def test_bool_operands_are_refused_as_torch(name):
    flags = np.array([True, False])
    with pytest.raises(NotImplementedError):
        getattr(torch, name)(torch.tensor(flags), torch.tensor(flags))
    with pytest.raises(DTypeError, match=rf"{name}: takes numeric \(not bool\) operands, got "
                       r"input bool, other bool"):  # fmt: skip
        getattr(mt, name)(mt.tensor(flags), mt.tensor(flags))
    _same(getattr(mt, name)(mt.tensor(flags), 2), getattr(torch, name)(torch.tensor(flags), 2))


# gradients at the edges


def test_fmod_and_remainder_gradients_match_torch():
    a, b = np.array([5.5, -3.2, 7.1, -7.4]), np.array([2.0, 1.5, -3.0, -2.5])
    for name in ("fmod", "remainder"):
        x, y = mt.tensor(a, requires_grad=True), mt.tensor(b, requires_grad=True)
        tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        expected = torch.autograd.grad(getattr(torch, name)(tx, ty).sum(), [tx, ty])
        for got, want in zip(_grads(getattr(mt, name)(x, y), [x, y]), expected, strict=True):
            np.testing.assert_array_equal(got, want.numpy())


def test_remainder_of_a_number_has_the_gradient_torch_lacks():
    """torch.remainder(7.0, y) has no derivative; minitrain's is that of a 0-d tensor's."""
    b = np.array([2.0, -3.0, 1.5])
    y, ty = mt.tensor(b, requires_grad=True), torch.tensor(b, requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for aten::remainder is not implemented"):
        (7.0 % ty).sum().backward()
    (7.0 % y).sum().backward()
    torch.remainder(torch.tensor(7.0, dtype=torch.float64), ty).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), ty.grad.numpy())


def test_floor_divide_records_a_zero_gradient():
    """PyTorch's floor_divide raises at backward; its div(rounding_mode='floor') gives zeros,
    and so does minitrain's floor_divide, as its floor."""
    x = mt.tensor([5.5, -3.2], requires_grad=True)
    tx = torch.tensor([5.5, -3.2], requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide"):
        torch.autograd.grad((tx // 2.0).sum(), [tx])
    out = x // 2.0
    assert out.requires_grad
    (grad,) = _grads(out, [x])
    expected = torch.autograd.grad(torch.div(tx, 2.0, rounding_mode="floor").sum(), [tx])[0]
    np.testing.assert_array_equal(grad, expected.numpy())
    np.testing.assert_array_equal(grad, [0.0, 0.0])


def test_copysign_gradient_at_zero_and_negative_zero_matches_torch():
    a = np.array([1.5, -2.0, 0.0, -0.0, 3.0])
    b = np.array([-1.0, -1.0, -1.0, 1.0, -0.0])
    x, y = mt.tensor(a, requires_grad=True), mt.tensor(b, requires_grad=True)
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    out, t_out = mt.copysign(x, y), torch.copysign(tx, ty)
    np.testing.assert_array_equal(np.signbit(out.numpy()), np.signbit(t_out.detach().numpy()))
    for got, want in zip(_grads(out, [x, y]), torch.autograd.grad(t_out.sum(), [tx, ty]),
                         strict=True):  # fmt: skip
        np.testing.assert_array_equal(got, want.numpy())


def test_atan2_gradient_at_the_origin_is_zero_as_torch():
    a, b = np.array([0.0, 3.0]), np.array([0.0, -4.0])
    x, y = mt.tensor(a, requires_grad=True), mt.tensor(b, requires_grad=True)
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    expected = torch.autograd.grad(torch.atan2(tx, ty).sum(), [tx, ty])
    for got, want in zip(_grads(mt.atan2(x, y), [x, y]), expected, strict=True):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-15)


def test_logaddexp_at_infinities_matches_torch():
    a = np.array([-np.inf, np.inf, -np.inf, 1.0, 800.0])
    b = np.array([-np.inf, np.inf, 2.0, np.inf, -800.0])
    x, y = mt.tensor(a, requires_grad=True), mt.tensor(b, requires_grad=True)
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    out, t_out = mt.logaddexp(x, y), torch.logaddexp(tx, ty)
    np.testing.assert_array_equal(out.numpy(), t_out.detach().numpy())
    for got, want in zip(_grads(out, [x, y]), torch.autograd.grad(t_out.sum(), [tx, ty]),
                         strict=True):  # fmt: skip
        np.testing.assert_array_equal(got, want.numpy())


def test_xlogy_at_zeros_nans_and_infinities_matches_torch():
    # 0 * log(0) is 0; a nan other stays nan; PyTorch's gradient of input is 0 where input is 0
    # and other <= 0, and where the upstream gradient is 0
    a = np.array([0.0, 0.0, 1.0, 2.0, 0.0, 3.0, 0.0, -1.0])
    b = np.array([0.0, np.nan, 0.0, 3.0, 2.0, 0.0, np.inf, np.inf])
    upstream = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0])
    x, y = mt.tensor(a, requires_grad=True), mt.tensor(b, requires_grad=True)
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        out, t_out = mt.xlogy(x, y), torch.xlogy(tx, ty)
        np.testing.assert_array_equal(out.numpy(), t_out.detach().numpy())
        got = mt.grad(out, [x, y], grad_outputs=mt.tensor(upstream))
    want = torch.autograd.grad(t_out, [tx, ty], grad_outputs=torch.tensor(upstream))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


# lerp


def test_lerp_is_exact_at_its_ends_and_computes_float16_in_float32():
    start, end = mt.tensor([0.1, -3.7]), mt.tensor([0.7, 1e-3])
    np.testing.assert_array_equal(mt.lerp(start, end, 1.0).numpy(), end.numpy())
    np.testing.assert_array_equal(mt.lerp(start, end, 0).numpy(), start.numpy())
    values = np.array([0.1, 1000.0, -3.3], np.float16), np.array([0.7, 1001.0, 2.9], np.float16)
    for weight in (0.3, 0.8, np.array([0.2, 0.6, 0.9], np.float16)):
        ours = mt.lerp(*(mt.tensor(v) for v in values), mt.tensor(weight) if
                       isinstance(weight, np.ndarray) else weight)  # fmt: skip
        theirs = torch.lerp(*(torch.tensor(v) for v in values), torch.tensor(weight) if
                            isinstance(weight, np.ndarray) else weight)  # fmt: skip
        _same(ours, theirs, 1e-12)


def test_lerp_takes_a_0d_weight_of_another_dtype_as_its_number():
    start, end = np.array([1.0, 2.0], np.float32), np.array([3.0, 5.0], np.float32)
    for weight in (np.array(0.25), np.array(1)):
        _same(mt.lerp(mt.tensor(start), mt.tensor(end), mt.tensor(weight)),
              torch.lerp(torch.tensor(start), torch.tensor(end), torch.tensor(weight)))  # fmt: skip
    weight = mt.tensor(np.array(0.25), requires_grad=True)
    mt.lerp(mt.tensor(start), mt.tensor(end), weight).sum().backward()
    assert weight.grad.dtype == np.float64 and weight.grad.item() == 5.0


LERP_REFUSED = [  # (start, end, weight, torch's message, minitrain's)
    (np.array([1, 2]), np.array([3, 4]), 0.5, "not implemented for 'Long'",
     "lerp: input must be floating point, got int64"),
    (np.ones(2, np.float32), np.ones(2), 0.5, "expected dtype float for `end`",
     "lerp: end must have input's dtype float32, got float64"),
    (np.ones(2, np.float32), np.array(3.0), 0.5, "expected dtype float for `end`",
     "lerp: end must have input's dtype float32, got float64"),
    (np.ones(2, np.float32), np.ones(2, np.float32), np.array([0.5]),
     "expected dtype float for `weight`", "lerp: weight must have input's dtype float32"),
    (np.ones(2, np.float32), np.ones(2, np.float32), np.array([1, 0]),
     "expected dtype float for `weight`", "lerp: weight must have input's dtype float32"),
]  # fmt: skip


@pytest.mark.parametrize("start, end, weight, theirs, ours", LERP_REFUSED)
def test_lerp_refuses_what_torch_refuses(start, end, weight, theirs, ours):
    def as_torch(v):
        return torch.tensor(v) if isinstance(v, np.ndarray) else v

    def as_ours(v):
        return mt.tensor(v) if isinstance(v, np.ndarray) else v

    with pytest.raises((RuntimeError, NotImplementedError), match=theirs):
        torch.lerp(as_torch(start), as_torch(end), as_torch(weight))
    with pytest.raises(DTypeError, match=ours):
        mt.lerp(as_ours(start), as_ours(end), as_ours(weight))


def test_lerp_refuses_a_weight_that_is_no_number():
    with pytest.raises(DTypeError, match="lerp: weight must be a Tensor or a number, got 'x'"):
        mt.lerp(mt.ones(2), mt.ones(2), "x")


# PyTorch's parameter names

PARAMETERS = {  # name -> torch's documented parameters, those minitrain takes (not `out`)
    **dict.fromkeys(UNARY, "input"),
    **dict.fromkeys(["atan2", "hypot", "logaddexp", "copysign", "fmod", "remainder",
                     "floor_divide"], "input, other"),
    "lerp": "input, end, weight",
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(PARAMETERS))
def test_parameters_are_torchs(name):
    assert ", ".join(inspect.signature(getattr(mt, name)).parameters) == PARAMETERS[name]
    documented = getattr(torch, name).__doc__.strip().splitlines()[0]
    for parameter in PARAMETERS[name].split(", "):
        assert parameter in documented, f"torch.{name}: {documented}"
    method = list(inspect.signature(getattr(mt.Tensor, name)).parameters)[1:]
    assert ", ".join(["input", *method]) == PARAMETERS[name]
