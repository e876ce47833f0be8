"""gradcheck: passes correct gradients, localises wrong ones, works in float64."""

import numpy as np
import pytest

import minitrain
from minitrain.errors import ArgumentError, DTypeError, GradcheckError, MinitrainError
from minitrain.ops import Op


class _BadSquare(Op, register=False):
    """x ** 2 with a wrong backward: grad * x instead of 2 * grad * x."""

    name = "bad_square"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(x=x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.x


class _GoodSquare(_BadSquare, register=False):
    name = "good_square"

    @staticmethod
    def backward(ctx, grad):
        return 2 * grad * ctx.x


class _BadSecondInput(Op, register=False):
    """a * b whose gradient for b is off by one."""

    name = "bad_second_input"
    inputs = ("a", "b")
    saved = ("a", "b")

    @staticmethod
    def forward(ctx, a, b):
        ctx.save(a=a, b=b)
        return a * b

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.b, grad * ctx.a + 1.0


class _OneBadElement(Op, register=False):
    """2 * x whose gradient is wrong only for flat element 4."""

    name = "one_bad_element"
    inputs = ("x",)

    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, grad):
        g = 2 * grad
        g.flat[4] = 0.0
        return g


def _input(shape, seed=0, dtype=np.float64, requires_grad=True):
    data = np.random.default_rng(seed).uniform(0.5, 1.5, shape).astype(dtype)
    return minitrain.tensor(data, requires_grad=requires_grad)


@pytest.mark.parametrize("mode", ["auto", "full", "direction"])
def test_gradcheck_passes_correct_ops(mode):
    a, b = _input((3, 4), 0), _input((4,), 1)
    assert minitrain.gradcheck(lambda x, y: (x * y).exp().sum(dim=1), [a, b], mode=mode) is True
    assert minitrain.gradcheck(lambda x: (x @ x.T).mean(), [a], mode=mode) is True
    assert minitrain.gradcheck(_GoodSquare.apply, [a], mode=mode) is True


def test_gradcheck_with_several_outputs_and_constant_inputs():
    a, const = _input((2, 3), 2), _input((2, 3), 3, requires_grad=False)
    assert minitrain.gradcheck(lambda x, c: (x * c, (x / c).sum()), [a, const]) is True


def test_gradcheck_full_mode_names_input_and_element():
    x = _input((2, 3), 4)
    with pytest.raises(GradcheckError) as info:
        minitrain.gradcheck(_BadSquare.apply, [x], mode="full")
    message = str(info.value)
    assert "input 0" in message
    assert "element (" in message
    assert "analytic" in message and "numeric" in message


def test_gradcheck_full_mode_names_the_wrong_element():
    x = _input((2, 3), 5)
    with pytest.raises(GradcheckError) as info:
        minitrain.gradcheck(_OneBadElement.apply, [x], mode="full")
    # flat element 4 of a (2, 3) tensor is (1, 1)
    assert "input 0" in str(info.value)
    assert "(1, 1)" in str(info.value)


def test_gradcheck_names_the_second_input():
    a, b = _input((3,), 6), _input((3,), 7)
    with pytest.raises(GradcheckError, match="input 1"):
        minitrain.gradcheck(_BadSecondInput.apply, [a, b], mode="full")
    with pytest.raises(GradcheckError, match="input 1"):
        minitrain.gradcheck(_BadSecondInput.apply, [a, b], mode="direction")


def test_gradcheck_index_counts_inputs_not_requiring_grad():
    const, x = _input((3,), 8, requires_grad=False), _input((3,), 9)
    with pytest.raises(GradcheckError, match="input 1"):
        minitrain.gradcheck(lambda c, t: _BadSquare.apply(t) * c, [const, x])


def test_gradcheck_direction_mode_on_a_large_input():
    x = _input((40, 30), 10)  # 1200 elements: auto picks the direction check
    assert x.array.size > 1000
    assert minitrain.gradcheck(_GoodSquare.apply, [x]) is True
    with pytest.raises(GradcheckError) as info:
        minitrain.gradcheck(_BadSquare.apply, [x])
    assert "input 0" in str(info.value)
    assert "direction" in str(info.value)
    with pytest.raises(GradcheckError, match="input 0"):
        minitrain.gradcheck(_BadSquare.apply, [x], mode="direction")


def test_gradcheck_error_is_an_assertion_error():
    x = _input((2,), 11)
    with pytest.raises(AssertionError):
        minitrain.gradcheck(_BadSquare.apply, [x])
    with pytest.raises(MinitrainError):
        minitrain.gradcheck(_BadSquare.apply, [x])


def test_gradcheck_checks_float32_inputs_in_float64():
    x = _input((2, 3), 12, dtype=np.float32)
    seen = []

    def fn(t):
        seen.append(t.dtype)
        return (t * t).exp().sum()

    assert minitrain.gradcheck(fn, [x]) is True
    assert seen and all(dtype == np.float64 for dtype in seen)
    # the caller's tensor is left as it was
    assert x.dtype == np.float32 and x.grad is None


def test_gradcheck_float32_input_passes_thanks_to_float64_differences():
    # in float32, eps=1e-6 finite differences would be pure rounding noise
    x = _input((4,), 13, dtype=np.float32)
    assert minitrain.gradcheck(lambda t: (t.exp() * t).sum(), [x], mode="full") is True


def test_gradcheck_without_any_input_requiring_grad_raises():
    x = _input((3,), 14, requires_grad=False)
    with pytest.raises(GradcheckError):
        minitrain.gradcheck(lambda t: t * 2.0, [x])


def test_gradcheck_leaves_grad_untouched():
    x = _input((3,), 15)
    minitrain.gradcheck(lambda t: (t * t).sum(), [x])
    assert x.grad is None
    np.testing.assert_array_equal(x.numpy(), _input((3,), 15).numpy())


class _NanAwayFromOne(Op, register=False):
    """x + 0 at x == 1 exactly, nan anywhere else; backward claims the gradient 1."""

    name = "nan_away_from_one"
    inputs = ("x",)

    @staticmethod
    def forward(ctx, x):
        return x + np.where(x == 1.0, 0.0, np.nan)

    @staticmethod
    def backward(ctx, grad):
        return grad


@pytest.mark.parametrize("mode", ["full", "direction"])
def test_gradcheck_fails_when_the_finite_difference_is_nan(mode):
    x = minitrain.tensor(np.ones(3), requires_grad=True)
    with pytest.raises(GradcheckError, match="analytic [-0-9.e]+, numeric nan"):
        minitrain.gradcheck(_NanAwayFromOne.apply, [x], mode=mode)


@pytest.mark.parametrize(
    "keyword, value, error",
    [
        ("eps", 0.0, "gradcheck: eps must be finite and > 0, got 0.0"),
        ("eps", float("nan"), "gradcheck: eps must be finite and > 0, got nan"),
        ("eps", -1e-6, "gradcheck: eps must be finite and > 0, got -1e-06"),
        ("atol", -1.0, "gradcheck: atol must be finite and >= 0, got -1.0"),
        ("rtol", float("inf"), "gradcheck: rtol must be finite and >= 0, got inf"),
        ("mode", "fast", "gradcheck: mode must be 'auto', 'full' or 'direction', got 'fast'"),
        ("directions", 0, "gradcheck: directions must be at least 1, got 0"),
    ],
)
def test_gradcheck_refuses_bad_settings_naming_them(keyword, value, error):
    x = _input((3,), 16)
    with pytest.raises(ArgumentError) as info:
        minitrain.gradcheck(_BadSquare.apply, [x], **{"mode": "direction", keyword: value})
    assert str(info.value) == error


def test_gradcheck_refuses_wrong_argument_types():
    x = _input((3,), 17)
    with pytest.raises(DTypeError, match="gradcheck: fn must be callable, got int"):
        minitrain.gradcheck(3, [x])
    with pytest.raises(DTypeError, match="gradcheck: eps must be a number, got str"):
        minitrain.gradcheck(_GoodSquare.apply, [x], eps="1e-6")
    with pytest.raises(DTypeError, match="gradcheck: directions must be an int, got float"):
        minitrain.gradcheck(_GoodSquare.apply, [x], directions=2.0)


def test_gradcheck_takes_one_tensor_as_the_inputs():
    x = _input((2, 3), 18)  # iterating it would give two (3,) rows as two inputs
    assert minitrain.gradcheck(lambda t: (t * t).sum(dim=1), x) is True
    with pytest.raises(GradcheckError, match=r"input 0 \(shape \(2, 3\)\)"):
        minitrain.gradcheck(_BadSquare.apply, x)


def test_gradcheck_names_the_output_and_its_element_when_fn_has_several():
    x = _input((2, 3), 19)
    with pytest.raises(GradcheckError) as info:
        minitrain.gradcheck(lambda t: (t.exp(), _OneBadElement.apply(t)), [x], mode="full")
    # 2 * x is wrong only at flat element 4: input element (1, 1), output 1 element (1, 1)
    message = str(info.value)
    assert "at element (1, 1) for output 1 element (1, 1):" in message
    assert "analytic 0, numeric 2" in message


def test_gradcheck_says_when_fn_computes_below_float64():
    x = _input((3,), 20)
    with pytest.raises(GradcheckError, match="output 0 is float32, not float64"):
        minitrain.gradcheck(lambda t: t.float().exp(), [x], mode="full")


def test_gradcheck_checks_a_non_contiguous_input_element_by_element():
    base = np.random.default_rng(21).uniform(0.5, 1.5, (4, 6))
    x = minitrain.Tensor(base[:, ::2], requires_grad=True)
    assert not x.array.flags.c_contiguous
    assert minitrain.gradcheck(lambda t: (t * t.exp()).sum(dim=0), [x]) is True
    with pytest.raises(GradcheckError, match=r"at element \(1, 1\) for output element \(1, 1\)"):
        minitrain.gradcheck(_OneBadElement.apply, [x], mode="full")


def test_gradcheck_leaves_inputs_alone_even_when_fn_raises_midway():
    x = _input((3,), 22)
    x.grad = minitrain.tensor(np.full(3, 7.0))
    values = x.numpy().copy()
    calls = []

    def fails_on_the_third_call(t):
        calls.append(1)
        if len(calls) == 3:  # inside the finite differences, while an element is moved
            raise RuntimeError("fn failed")
        return (t * t).sum()

    with pytest.raises(RuntimeError, match="fn failed"):
        minitrain.gradcheck(fails_on_the_third_call, [x])
    np.testing.assert_array_equal(x.numpy(), values)
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 7.0))


def test_gradcheck_agrees_with_torch_on_right_and_wrong_gradients():
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(23).uniform(0.5, 1.5, (2, 3))

    class TorchBadSquare(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.saved_tensors[0]

    t = torch.tensor(data, requires_grad=True)
    x = minitrain.tensor(data, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: (v * v.exp()).sum(1), (t,))
    assert minitrain.gradcheck(lambda v: (v * v.exp()).sum(dim=1), [x])
    assert not torch.autograd.gradcheck(TorchBadSquare.apply, (t,), raise_exception=False)
    with pytest.raises(GradcheckError):
        minitrain.gradcheck(_BadSquare.apply, [x])
