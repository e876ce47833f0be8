"""PyTorch's top-level tensor functions and dtype aliases (minitrain.exp, .sum, .max, .float).

`torch.exp(x)`, `torch.max(x, 1)`, `torch.sum(x, dim=0)`: the Tensor methods, called on their
first argument; `torch.float`, `torch.long`, ...: numpy's dtypes under PyTorch's names."""

from __future__ import annotations

import functools
import inspect

import numpy as np

from . import ops
from .arguments import as_dtype
from .errors import ArgumentError, DTypeError
from .grad_mode import is_grad_enabled
from .tensor import Tensor

__all__ = [
    "abs", "exp", "log", "sqrt", "rsqrt", "square", "reciprocal", "sin", "cos", "sign", "floor",
    "ceil", "trunc", "round", "pow", "clamp", "clip", "clamp_min", "clamp_max", "masked_fill",
    "tril", "triu", "relu", "sigmoid", "tanh", "softmax", "log_softmax", "sum", "mean", "prod",
    "cumsum", "norm", "max", "min", "amax", "amin", "argmax", "argmin", "all", "any", "var", "std",
    "logsumexp", "reshape", "flatten", "transpose", "permute", "t", "squeeze", "unsqueeze",
    "broadcast_to", "tile", "flip", "split", "chunk", "unbind", "gather", "clone", "detach",
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


def _of_tensor(method):
    """`method` as a function of a Tensor first, named as PyTorch names it: `input`, where
    the method has `self` (its other parameters are PyTorch's already)."""

    @functools.wraps(method)
    def function(input, *args, **kwargs):  # noqa: A002 (PyTorch's name)
        _check_tensor(input, method.__name__)
        return method(input, *args, **kwargs)

    signature = inspect.signature(method)
    self, *rest = signature.parameters.values()
    function.__signature__ = signature.replace(parameters=[self.replace(name="input"), *rest])
    return function


def _cast_first(input, dtype, name: str, int64: bool = False) -> Tensor:  # noqa: A002
    """input, cast to dtype if given (recorded: the gradient flows back), as PyTorch casts
    before the op. Only to a floating dtype, or to int64 where `int64` is set (sum, prod and
    cumsum keep it; their results of other integer dtypes come out int64, where PyTorch keeps
    the dtype asked for). As in PyTorch, int64 is refused for an input that requires grad
    while gradients are recorded: it has none."""
    _check_tensor(input, name)
    if dtype is None:
        return input
    dtype = as_dtype(dtype, f"minitrain.{name}")
    if dtype.kind != "f" and not (int64 and dtype == np.int64):
        raise DTypeError(
            f"minitrain.{name}: dtype must be a floating dtype (np.float32, np.float64, ...)"
            f"{' or int64' if int64 else ''}, got {dtype}"
        )
    if dtype.kind != "f" and input.requires_grad and is_grad_enabled():
        raise DTypeError(
            f"minitrain.{name}: dtype {dtype} has no gradient, and input requires grad (as in "
            f"PyTorch); pass input.detach(), or compute under minitrain.no_grad()"
        )
    return input.to(dtype=dtype)


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def from_numpy(ndarray) -> Tensor:
    """A tensor sharing `ndarray`'s memory, as torch.from_numpy: a write to either shows in
    both."""
    if type(ndarray) is not np.ndarray:
        raise DTypeError(
            f"minitrain.from_numpy: expected a numpy array, got {type(ndarray).__name__}"
        )
    return Tensor(ndarray)


def max(input, dim=None, keepdim=False, *, other=None):  # noqa: A001, A002
    """The maximum of all elements; with an int `dim`, (values, indices) along it; with a
    second tensor, in dim's place or as `other`, the elementwise maximum (torch.max(a, b))."""
    other = _second_tensor(input, dim, keepdim, other, "max")
    if other is not None:
        return ops.maximum(input, other)
    return input.max(dim, keepdim)


def min(input, dim=None, keepdim=False, *, other=None):  # noqa: A001, A002
    """See `max`."""
    other = _second_tensor(input, dim, keepdim, other, "min")
    if other is not None:
        return ops.minimum(input, other)
    return input.min(dim, keepdim)


def _second_tensor(input, dim, keepdim, other, name: str):  # noqa: A002
    """max / min's second tensor, if any: torch.max(a, b) or torch.max(a, other=b)."""
    _check_tensor(input, name)
    if isinstance(dim, Tensor):
        if other is not None:
            raise ArgumentError(f"minitrain.{name}: other given twice, in dim's place and by name")
        dim, other = None, dim
    if other is not None and keepdim is not False:
        raise ArgumentError(f"minitrain.{name}: keepdim goes with a dim, not with a second tensor")
    if other is not None and dim is not None:
        raise ArgumentError(f"minitrain.{name}: give a dim or a second tensor (other), not both")
    return other


# math
abs = _of_tensor(Tensor.abs)  # noqa: A001
exp = _of_tensor(Tensor.exp)
log = _of_tensor(Tensor.log)
sqrt = _of_tensor(Tensor.sqrt)
rsqrt = _of_tensor(Tensor.rsqrt)
square = _of_tensor(Tensor.square)
reciprocal = _of_tensor(Tensor.reciprocal)
sin = _of_tensor(Tensor.sin)
cos = _of_tensor(Tensor.cos)
sign = _of_tensor(Tensor.sign)
floor = _of_tensor(Tensor.floor)
ceil = _of_tensor(Tensor.ceil)
trunc = _of_tensor(Tensor.trunc)
round = _of_tensor(Tensor.round)  # noqa: A001
clamp = _of_tensor(Tensor.clamp)
clip = _of_tensor(Tensor.clip)
clamp_min = _of_tensor(Tensor.clamp_min)
clamp_max = _of_tensor(Tensor.clamp_max)
masked_fill = _of_tensor(Tensor.masked_fill)
tril = _of_tensor(Tensor.tril)
triu = _of_tensor(Tensor.triu)


def pow(input, exponent):  # noqa: A001, A002
    """input ** exponent; either may be a number, as in torch.pow(2, x)."""
    return ops.pow(input, exponent)


# activations
relu = _of_tensor(Tensor.relu)
sigmoid = _of_tensor(Tensor.sigmoid)
tanh = _of_tensor(Tensor.tanh)


# dtype after dim: PyTorch's docs make it keyword-only, but torch.softmax(x, 1, torch.float64)
# runs there, so it does here
def softmax(input, dim=None, dtype=None, *, axis=None):  # noqa: A002
    """Softmax along dim (the last by default), of the input cast to dtype first if given."""
    return _cast_first(input, dtype, "softmax").softmax(dim, axis=axis)


def log_softmax(input, dim=None, dtype=None, *, axis=None):  # noqa: A002
    """Log-softmax along dim (the last by default), of the input cast to dtype first if given."""
    return _cast_first(input, dtype, "log_softmax").log_softmax(dim, axis=axis)


# reductions; dtype casts the input first, axis and keepdims are numpy's (and PyTorch's
# undocumented) spellings of dim and keepdim
def sum(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):  # noqa: A001, A002
    return _cast_first(input, dtype, "sum", int64=True).sum(
        dim, keepdim, axis=axis, keepdims=keepdims
    )


def mean(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):  # noqa: A002
    return _cast_first(input, dtype, "mean").mean(dim, keepdim, axis=axis, keepdims=keepdims)


def prod(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):  # noqa: A002
    return _cast_first(input, dtype, "prod", int64=True).prod(
        dim, keepdim, axis=axis, keepdims=keepdims
    )


def cumsum(input, dim=None, *, dtype=None, axis=None):  # noqa: A002
    """The running sum along one dim; the shape stays."""
    return _cast_first(input, dtype, "cumsum", int64=True).cumsum(dim, axis=axis)


norm = _of_tensor(Tensor.norm)
amax = _of_tensor(Tensor.amax)
amin = _of_tensor(Tensor.amin)
argmax = _of_tensor(Tensor.argmax)
argmin = _of_tensor(Tensor.argmin)
all = _of_tensor(Tensor.all)  # noqa: A001
any = _of_tensor(Tensor.any)  # noqa: A001
var = _of_tensor(Tensor.var)
std = _of_tensor(Tensor.std)
logsumexp = _of_tensor(Tensor.logsumexp)

# shapes: PyTorch's functions take the shape or dims as one sequence, where the Tensor methods
# also take them spread out (x.reshape(2, 3))
flatten = _of_tensor(Tensor.flatten)
transpose = _of_tensor(Tensor.transpose)
t = _of_tensor(Tensor.t)
squeeze = _of_tensor(Tensor.squeeze)
unsqueeze = _of_tensor(Tensor.unsqueeze)
chunk = _of_tensor(Tensor.chunk)
unbind = _of_tensor(Tensor.unbind)
gather = _of_tensor(Tensor.gather)


def reshape(input, shape):  # noqa: A002
    _check_tensor(input, "reshape")
    return input.reshape(shape)


def permute(input, dims):  # noqa: A002
    _check_tensor(input, "permute")
    return input.permute(dims)


def broadcast_to(input, size):  # noqa: A002
    _check_tensor(input, "broadcast_to")
    return input.broadcast_to(size)


def tile(input, dims):  # noqa: A002
    """Tiled dims[d] times along each dim d; fewer dims than input's repeat the last ones."""
    _check_tensor(input, "tile")
    return input.tile(dims)


def flip(input, dims):  # noqa: A002
    """The elements in reverse order along the given dims."""
    _check_tensor(input, "flip")
    return input.flip(dims)


def split(tensor, split_size_or_sections, dim=0):
    """Pieces of split_size_or_sections along dim (the last smaller), or of the sizes listed."""
    _check_tensor(tensor, "split", "tensor")
    return tensor.split(split_size_or_sections, dim)


# the tensor itself
clone = _of_tensor(Tensor.clone)
detach = _of_tensor(Tensor.detach)
numel = _of_tensor(Tensor.numel)
