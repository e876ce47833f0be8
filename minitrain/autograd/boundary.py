"""Where the engine meets Tensor. The engine works on Nodes and arrays and sits below
minitrain.tensor, which imports it (Tensor.backward and register_hook are the user's doorway in);
it sees Tensors only at its edges: the outputs and inputs `backward` and `grad` take, the
gradients `grad` returns, what a hook receives, the seeds of a create_graph walk, gradcheck's
inputs. So no module of the engine imports Tensor: minitrain.tensor hands the class over here
once it exists (as minitrain.viz hands the Tape its drawing), and the edges ask for it through
these functions."""

from __future__ import annotations

__all__ = ["TensorClass", "is_tensor", "new_tensor", "wrap"]


class TensorClass:
    """The Tensor class the engine checks for and wraps arrays in: `cls`, set once, by
    minitrain.tensor, when the class is defined (before any Tensor exists to reach the
    engine); nothing else writes it."""

    __slots__ = ()
    cls: type | None = None


def is_tensor(value) -> bool:
    """Whether `value` is a Tensor."""
    return isinstance(value, TensorClass.cls)


def wrap(array):
    """A leaf Tensor around `array`, without a copy (`Tensor.wrap`)."""
    return TensorClass.cls.wrap(array)


def new_tensor(data, requires_grad: bool = False):
    """`Tensor(data, requires_grad)`: the constructor, with its checks."""
    return TensorClass.cls(data, requires_grad=requires_grad)
