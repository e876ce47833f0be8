"""The engine validates ops: saved lists, the number, shape and dtype of gradients, `promoted`."""

import numpy as np
import pytest

import minitrain
from minitrain.errors import GraphError
from minitrain.ops import Op
from minitrain.ops.pointwise.arithmetic import Add


def leaf(values, dtype=np.float64):
    return minitrain.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


class _SavesNothing(Op, register=False):
    name = "saves_nothing"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class _SavesOtherName(Op, register=False):
    name = "saves_other_name"
    inputs = ("x",)
    saved = ("x",)

    @staticmethod
    def forward(ctx, x):
        ctx.save(y=x)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class _WrongGradShape(Op, register=False):
    name = "wrong_grad_shape"
    inputs = ("x",)

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad[:1]


class _Float64Grad(Op, register=False):
    name = "float64_grad"
    inputs = ("x",)

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return (grad * 2).astype(np.float64)


def test_op_that_declares_saved_but_saves_nothing_raises_when_recorded():
    x = leaf([1.0, 2.0])
    with minitrain.Tape() as tape:
        with pytest.raises(GraphError, match="saves_nothing"):
            _SavesNothing.apply(x)
    assert tape.nodes == []
    # not recorded: nothing needs saving, so it runs
    out = _SavesNothing.apply(minitrain.tensor([1.0, 2.0]))
    np.testing.assert_array_equal(out.numpy(), [2.0, 4.0])


def test_op_that_saves_another_name_raises_when_recorded():
    x = leaf([1.0, 2.0])
    with pytest.raises(GraphError, match="saves_other_name"):
        _SavesOtherName.apply(x)
    with minitrain.no_grad():
        out = _SavesOtherName.apply(x)
    np.testing.assert_array_equal(out.numpy(), [2.0, 4.0])


def test_backward_returning_wrong_shape_raises_naming_the_op():
    x = leaf([1.0, 2.0, 3.0])
    out = _WrongGradShape.apply(x)
    assert out.node.name == "_WrongGradShapeGrad"
    with pytest.raises(GraphError, match="_WrongGradShape"):
        out.sum().backward()
    assert x.grad is None


def test_backward_returning_another_dtype_is_cast_back():
    x = leaf([1.0, 2.0], dtype=np.float32)
    _Float64Grad.apply(x).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


@pytest.mark.parametrize("names", [("a", "c"), ("a",), ("a", "a"), ["a", "b"]])
def test_op_whose_promoted_is_not_a_pair_of_its_inputs_is_refused(names):
    with pytest.raises(GraphError, match="`promoted` must name two of its inputs"):

        class _BadPromotion(Op):  # add's rules, with a bad `promoted`
            name = "bad_promotion"
            inputs = ("a", "b")
            promoted = names
            forward = staticmethod(Add.forward)
            backward = staticmethod(Add.backward)

    assert "bad_promotion" not in minitrain.ops.registry()


class _TooFewGrads(Op, register=False):
    name = "too_few_grads"
    inputs = ("a", "b")

    @staticmethod
    def forward(ctx, a, b):
        return a * b

    @staticmethod
    def backward(ctx, grad):
        return (grad,)


def test_backward_returning_too_few_gradients_raises_naming_the_op():
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    with pytest.raises(GraphError, match=r"_TooFewGradsGrad: backward returned 1 gradients for 2"):
        _TooFewGrads.apply(a, b).sum().backward()
    assert a.grad is None and b.grad is None
