"""PyTorch's top-level tensor functions (`torch.exp(x)`, `torch.max(x, 1)`, `torch.sum(x, dim=0)`):
the Tensor methods, called on their first argument, and PyTorch's dtype aliases."""

from __future__ import annotations

import functools

import numpy as np

from . import ops
from .errors import ArgumentError, DTypeError
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


def _check_tensor(input, name: str) -> None:  # noqa: A002 (PyTorch's name)
    if not isinstance(input, Tensor):
        raise DTypeError(
            f"minitrain.{name}: input must be a Tensor, got {type(input).__name__} "
            f"(minitrain.tensor(...) makes one)"
        )


def _of_tensor(method):
    """`method` as a function of a Tensor first, named as PyTorch names it."""

    @functools.wraps(method)
    def function(input, *args, **kwargs):  # noqa: A002 (PyTorch's name)
        _check_tensor(input, method.__name__)
        return method(input, *args, **kwargs)

    return function


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def from_numpy(array) -> Tensor:
    """A tensor sharing `array`'s memory, as torch.from_numpy: a write to either shows in both."""
    if type(array) is not np.ndarray:
        raise DTypeError(
            f"minitrain.from_numpy: expected a numpy array, got {type(array).__name__}"
        )
    return Tensor(array)


def max(input, dim=None, keepdim=False):  # noqa: A001, A002
    """The maximum of all elements; with an int `dim`, (values, indices) along it; with a
    Tensor second argument, the elementwise maximum (torch.max(a, b))."""
    if isinstance(dim, Tensor):
        _check_tensor(input, "max")
        if keepdim is not False:
            raise ArgumentError("minitrain.max: keepdim goes with a dim, not with a second tensor")
        return ops.maximum(input, dim)
    return _max(input, dim, keepdim)


def min(input, dim=None, keepdim=False):  # noqa: A001, A002
    """See `max`."""
    if isinstance(dim, Tensor):
        _check_tensor(input, "min")
        if keepdim is not False:
            raise ArgumentError("minitrain.min: keepdim goes with a dim, not with a second tensor")
        return ops.minimum(input, dim)
    return _min(input, dim, keepdim)


_max, _min = _of_tensor(Tensor.max), _of_tensor(Tensor.min)


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
pow = ops.pow  # noqa: A001 (either side may be a number, as in torch.pow(2, x))
clamp = _of_tensor(Tensor.clamp)
clip = _of_tensor(Tensor.clip)
clamp_min = _of_tensor(Tensor.clamp_min)
clamp_max = _of_tensor(Tensor.clamp_max)
masked_fill = _of_tensor(Tensor.masked_fill)
tril = _of_tensor(Tensor.tril)
triu = _of_tensor(Tensor.triu)

# activations
relu = _of_tensor(Tensor.relu)
sigmoid = _of_tensor(Tensor.sigmoid)
tanh = _of_tensor(Tensor.tanh)
softmax = _of_tensor(Tensor.softmax)
log_softmax = _of_tensor(Tensor.log_softmax)

# reductions
sum = _of_tensor(Tensor.sum)  # noqa: A001
mean = _of_tensor(Tensor.mean)
prod = _of_tensor(Tensor.prod)
cumsum = _of_tensor(Tensor.cumsum)
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

# shapes
reshape = _of_tensor(Tensor.reshape)
flatten = _of_tensor(Tensor.flatten)
transpose = _of_tensor(Tensor.transpose)
permute = _of_tensor(Tensor.permute)
t = _of_tensor(Tensor.t)
squeeze = _of_tensor(Tensor.squeeze)
unsqueeze = _of_tensor(Tensor.unsqueeze)
broadcast_to = _of_tensor(Tensor.broadcast_to)
tile = _of_tensor(Tensor.tile)
flip = _of_tensor(Tensor.flip)
split = _of_tensor(Tensor.split)
chunk = _of_tensor(Tensor.chunk)
unbind = _of_tensor(Tensor.unbind)
gather = _of_tensor(Tensor.gather)

# the tensor itself
clone = _of_tensor(Tensor.clone)
detach = _of_tensor(Tensor.detach)
numel = _of_tensor(Tensor.numel)
