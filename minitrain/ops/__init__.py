"""Every op as a function, and the registry that lists them with their backward kernels."""

from .elementwise import (
    abs,
    add,
    cast,
    clip,
    div,
    equal,
    exp,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    maximum,
    minimum,
    mul,
    neg,
    not_equal,
    pow,
    sqrt,
    sub,
    to_device,
    where,
)
from .linalg import linear, matmul
from .reduction import argmax, argmin, logsumexp, max, mean, min, sum, var
from .registry import Ctx, Op, registry
from .shape import (
    broadcast_to,
    concat,
    flatten,
    getitem,
    pad,
    permute,
    reshape,
    stack,
    transpose,
)

__all__ = [
    "Ctx", "Op", "registry",
    "add", "sub", "mul", "div", "neg", "pow", "exp", "log", "sqrt", "abs", "maximum", "minimum",
    "where", "clip", "cast", "to_device",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "sum", "mean", "max", "min", "var", "logsumexp", "argmax", "argmin",
    "reshape", "flatten", "transpose", "permute", "broadcast_to", "getitem", "concat", "stack",
    "pad",
    "matmul", "linear",
]  # fmt: skip
