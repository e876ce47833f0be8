"""gradcheck: passes correct gradients, localises wrong ones, works in float64."""

import numpy as np
import pytest

import minitrain
from minitrain.errors import GradcheckError, MinitrainError
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
    assert x.data.size > 1000
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
