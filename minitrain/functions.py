"""PyTorch's top-level tensor functions and dtype aliases (minitrain.exp, .sum, .max, .float).

`torch.exp(x)`, `torch.max(x, 1)`, `torch.sum(x, dim=0)`: the Tensor methods, called on their
first argument; `torch.float`, `torch.long`, ...: numpy's dtypes under PyTorch's names."""

from __future__ import annotations

import functools
import inspect

import numpy as np

from . import ops
from .errors import ArgumentError, DTypeError
from .ops.core.variants import declared
from .tensor import Tensor

__all__ = [
    "mul", "multiply", "true_divide", "neg", "negative", "meshgrid", "einsum",
    "cosine_similarity", "pairwise_distance", "pixel_shuffle", "pixel_unshuffle",
    "std_mean", "var_mean", "remainder", "floor_divide", "equal", "bitwise_and",
    "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
    "pow",
    "t", "squeeze", "unsqueeze",
    "split", "clone", "detach",
    "numel", "is_tensor", "from_numpy", "float", "double", "half", "long", "int", "short", "int8",
    "int16", "uint8", "bool",
]  # fmt: skip

# torch.float, torch.long, ... name dtypes, not functions
float = np.float32  # noqa: A001
double = np.float64
half = np.float16
long = np.int64
int = np.int32  # noqa: A001
short = np.int16
int8, int16, uint8 = np.int8, np.int16, np.uint8
bool = np.bool_  # noqa: A001


def _check_tensor(input, name: str, argument: str = "input") -> None:  # noqa: A002
    if not isinstance(input, Tensor):
        raise DTypeError(
            f"minitrain.{name}: {argument} must be a Tensor, got {type(input).__name__} "
            f"(minitrain.tensor(...) makes one)"
        )


def _of_tensor(method, name: str | None = None):
    """`method` (a Tensor method, or a function taking the tensor first) as a top-level
    function, its tensor checked as PyTorch's are and its first parameter named as PyTorch names
    it, `input`; `name`, where given, is the function's (an op's declared name or alias)."""

    @functools.wraps(method)
    def function(input, *args, **kwargs):  # noqa: A002 (PyTorch's name)
        _check_tensor(input, name or method.__name__)
        return method(input, *args, **kwargs)

    signature = inspect.signature(method)
    self, *rest = signature.parameters.values()
    function.__signature__ = signature.replace(parameters=[self.replace(name="input"), *rest])
    if name is not None:
        function.__name__ = function.__qualname__ = name
    return function


def is_tensor(obj) -> bool:
    """Whether `obj` is a minitrain Tensor (a Parameter is one)."""
    return isinstance(obj, Tensor)


def from_numpy(ndarray) -> Tensor:
    """A tensor sharing `ndarray`'s memory, as torch.from_numpy: a write to either shows in
    both. A subclass of ndarray (np.memmap, np.matrix, a masked array) is taken as the plain
    array of its memory, as PyTorch takes it: a memmap's writes reach its file, a masked
    array's mask is dropped."""
    if not isinstance(ndarray, np.ndarray):
        raise DTypeError(
            f"minitrain.from_numpy: expected a numpy array, got {type(ndarray).__name__}"
        )
    plain = ndarray if type(ndarray) is np.ndarray else ndarray.view(np.ndarray)
    return Tensor(plain)


# input may be a number where PyTorch's takes one: torch.remainder(7, x), torch.bitwise_and(1, x)
def remainder(input, other):  # noqa: A002
    """input % other, with other's sign (Python's %)."""
    return ops.remainder(input, other)


def floor_divide(input, other):  # noqa: A002
    """input // other, rounded down (Python's //); the gradient is zero."""
    return ops.floor_divide(input, other)


def bitwise_and(input, other):  # noqa: A002
    """`input & other`, elementwise, on integer or bool operands; either may be a number, as in
    `bitwise_and(1, x)`."""
    return ops.bitwise_and(input, other)


def bitwise_or(input, other):  # noqa: A002
    """`input | other`, elementwise, on integer or bool operands; either may be a number."""
    return ops.bitwise_or(input, other)


def bitwise_xor(input, other):  # noqa: A002
    """`input ^ other`, elementwise, on integer or bool operands; either may be a number."""
    return ops.bitwise_xor(input, other)


def bitwise_left_shift(input, other):  # noqa: A002
    """`input << other`, elementwise, on integers (bool counts as an integer); either may be a
    number. A shift by a negative count or by the dtype's width or more gives 0."""
    return ops.bitwise_left_shift(input, other)


def bitwise_right_shift(input, other):  # noqa: A002
    """`input >> other`, elementwise, on integers, filling in the sign; either may be a number.
    A shift by a negative count or by the dtype's width or more gives 0, or -1 where `input`
    is negative."""
    return ops.bitwise_right_shift(input, other)


# tests, logic and bits: bool or integer results, outside the graph
equal = _of_tensor(Tensor.equal)


def pow(input, exponent):  # noqa: A001, A002
    """input ** exponent; either may be a number, as in torch.pow(2, x)."""
    return ops.pow(input, exponent)


# arithmetic by name (alpha, rounding_mode and the other spellings as PyTorch's)
mul = multiply = _of_tensor(Tensor.mul)


def true_divide(dividend, divisor):
    """dividend / divisor (div without rounding; PyTorch's names)."""
    _check_tensor(dividend, "true_divide", "dividend")
    return dividend.true_divide(divisor)


neg = negative = _of_tensor(Tensor.neg)


def meshgrid(*tensors, indexing: str = "ij") -> tuple:
    """Coordinate grids of 1-D tensors (ops.meshgrid): indexing 'ij' (PyTorch's default) or
    'xy'."""
    return ops.meshgrid(*tensors, indexing=indexing)


# statistics
def std_mean(  # noqa: A002
    input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None
):
    """(std, mean) over dim (all elements by default; numpy's axis and keepdims spellings
    too); correction or unbiased as Tensor.std."""
    _check_tensor(input, "std_mean")
    return ops.std_mean(
        input, dim, unbiased, keepdim, correction=correction, axis=axis, keepdims=keepdims
    )


def var_mean(  # noqa: A002
    input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None
):
    """(var, mean) over dim (all elements by default; numpy's axis and keepdims spellings
    too); correction or unbiased as Tensor.var."""
    _check_tensor(input, "var_mean")
    return ops.var_mean(
        input, dim, unbiased, keepdim, correction=correction, axis=axis, keepdims=keepdims
    )


# shapes: PyTorch's functions take the shape or dims as one sequence, where the Tensor methods
# also take them spread out (x.reshape(2, 3))
t = _of_tensor(Tensor.t)
squeeze = _of_tensor(Tensor.squeeze)
unsqueeze = _of_tensor(Tensor.unsqueeze)

# selection and scatter by index


def split(tensor, split_size_or_sections, dim=0):
    """Pieces of split_size_or_sections along dim (the last smaller), or of the sizes listed."""
    _check_tensor(tensor, "split", "tensor")
    return tensor.split(split_size_or_sections, dim)


# einsum (ops/linalg/contraction.py)


def einsum(*args):
    """Einstein summation: einsum(equation, *operands), or the sublist form (see ops.einsum)."""
    return ops.einsum(*args)


# comparing vectors, rearranging images (ops/losses/similarity.py, ops/resampling/shuffle.py)
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """The cosine of the angle between `x1` and `x2` along `dim`, each norm raised to at least
    `eps`; `x1` and `x2` broadcast, their common dtype floating. `dim` is dropped from the
    output."""
    _check_tensor(x1, "cosine_similarity", "x1")
    _check_tensor(x2, "cosine_similarity", "x2")
    return ops.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The `p`-norm of `x1 - x2 + eps` along the last dim, `x1` and `x2` broadcast; `keepdim`
    keeps that dim with size 1."""
    _check_tensor(x1, "pairwise_distance", "x1")
    _check_tensor(x2, "pairwise_distance", "x2")
    return ops.pairwise_distance(x1, x2, p, eps, keepdim)


def pixel_shuffle(input, upscale_factor):  # noqa: A002
    """`(*, C * r**2, H, W)` rearranged to `(*, C, H * r, W * r)`, with `r = upscale_factor`."""
    _check_tensor(input, "pixel_shuffle")
    return ops.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):  # noqa: A002
    """`(*, C, H * r, W * r)` rearranged to `(*, C * r**2, H, W)`, with `r = downscale_factor`:
    the inverse of `pixel_shuffle`."""
    _check_tensor(input, "pixel_unshuffle")
    return ops.pixel_unshuffle(input, downscale_factor)


# the tensor itself
clone = _of_tensor(Tensor.clone)
detach = _of_tensor(Tensor.detach)
numel = _of_tensor(Tensor.numel)


def _bind_declared_functions() -> None:
    """The top-level functions the ops declare, bound here under each of their names."""
    names = globals()
    for variant in declared():
        for name in variant.functions:
            if name in names:
                raise ArgumentError(
                    f"minitrain.{name} is both defined in functions.py and declared"
                )
            names[name] = _of_tensor(variant.function, name)
            __all__.append(name)


_bind_declared_functions()
