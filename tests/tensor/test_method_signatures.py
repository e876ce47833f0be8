"""Tensor's methods against PyTorch's: every method in METHODS exists on minitrain.Tensor and
takes torch's parameters, by name and in order, as torch's docstring gives them (its first
line: 'add(other, *, alpha=1) -> Tensor'); where that docstring lags torch's own binding, the
names torch's binding takes are checked by calling torch with them. With the top-level
functions' table (test_functions.py), well over 200 of torch's names."""

from __future__ import annotations

import ast

import pytest
from parameter_names import parameter_names

import minitrain as mt

torch = pytest.importorskip("torch")

# torch.Tensor methods minitrain has, each checked below
METHODS = [
    "abs", "abs_", "acos", "acosh", "add", "add_", "all", "allclose", "amax", "amin", "aminmax",
    "any", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "argmax",
    "argmin", "argsort", "argwhere", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and",
    "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
    "bool", "broadcast_to", "ceil", "ceil_", "chunk", "clamp", "clamp_", "clip", "clip_", "clone",
    "contiguous", "copy_", "copysign", "cos", "cos_", "cosh", "count_nonzero", "cpu", "cuda",
    "cummax", "cummin", "cumprod", "cumsum", "cumsum_", "diag", "diag_embed", "diagonal", "dim",
    "div", "div_", "divide", "double", "equal", "erf", "erfc", "exp", "exp2", "exp_", "expand",
    "expand_as", "expm1", "fill_", "flatten", "flip", "float", "floor", "floor_", "floor_divide",
    "fmod", "gather", "half", "hypot", "index_add", "index_add_", "index_select", "int",
    "isclose", "isfinite", "isinf", "isnan", "isneginf", "isposinf", "item", "kthvalue", "lerp",
    "log", "log10", "log1p", "log2", "log_", "logaddexp", "logcumsumexp", "logical_and",
    "logical_not", "logical_or", "logical_xor", "logsumexp", "long", "masked_fill",
    "masked_fill_", "masked_scatter", "masked_scatter_", "masked_select", "matmul", "max",
    "maximum", "mean", "median", "min", "minimum", "moveaxis", "movedim", "mul", "mul_",
    "multiply", "narrow", "neg", "neg_", "negative", "nelement", "nonzero", "normal_", "numel",
    "numpy", "permute", "pow", "pow_", "prod", "quantile", "reciprocal", "reciprocal_",
    "remainder", "repeat", "repeat_interleave", "requires_grad_", "reshape", "reshape_as",
    "retain_grad", "roll", "rot90", "round", "round_", "rsqrt", "rsqrt_", "scatter", "scatter_",
    "scatter_add", "scatter_add_", "scatter_reduce", "scatter_reduce_", "sigmoid", "sigmoid_",
    "sign", "sign_", "sin", "sin_", "sinh", "size", "softmax", "sort", "sqrt", "sqrt_", "square",
    "square_", "squeeze", "std", "sub", "sub_", "subtract", "sum", "swapaxes", "swapdims", "t",
    "take_along_dim", "tan", "tanh", "tanh_", "tile", "tolist", "topk", "transpose", "tril",
    "tril_", "triu", "triu_", "true_divide", "trunc", "trunc_", "type_as", "unbind", "unflatten",
    "unfold", "unsqueeze", "var", "view", "view_as", "where", "zero_",

]  # fmt: skip

# torch's parameters that have no meaning here (tensor placement and memory options)
TORCH_ONLY = {"out", "memory_format", "layout", "pin_memory", "non_blocking", "copy", "generator"}


def _x():
    return torch.randn(3, 4)


def _y():
    return torch.rand(3, 4) + 1


# Where torch's docstring lags its binding: minitrain's names, and a call proving torch's binding
# takes them
BINDING = {
    **{
        name: ("other", lambda name=name: getattr(_x(), name)(other=_y()))
        for name in ("mul", "multiply", "true_divide", "floor_divide", "fmod", "remainder",
                     "logical_and", "logical_or", "logical_xor")
    },
    "mul_": ("other", lambda: _x().mul_(other=_y())),
    "matmul": ("other", lambda: _x().matmul(other=_y().T)),
    **{
        name: ("other, *, rounding_mode",
               lambda name=name: getattr(_x(), name)(other=_y(), rounding_mode="floor"))
        for name in ("div", "divide", "div_")
    },
    **{
        name: ("other",
               lambda name=name: getattr(torch.tensor([1, 2]), name)(other=torch.tensor([3, 1])))
        for name in ("bitwise_and", "bitwise_or", "bitwise_xor")
    },
    "where": ("condition, other", lambda: _x().where(condition=_x() > 0, other=_y())),
    "type_as": ("other", lambda: _x().type_as(other=_y())),
    "masked_scatter": ("mask, source", lambda: _x().masked_scatter(mask=_x() > 0, source=_y())),
    "narrow": ("dim, start, length", lambda: _x().narrow(dim=0, start=0, length=1)),
    "nonzero": ("*, as_tuple", lambda: _x().nonzero(as_tuple=True)),
    **{
        name: ("dim, descending, *, stable",
               lambda name=name: getattr(_x(), name)(dim=1, descending=True, stable=True))
        for name in ("argsort", "sort")
    },
    "softmax": ("dim, dtype", lambda: _x().softmax(dim=1, dtype=torch.float64)),
    "cumsum_": ("dim, *, dtype", lambda: _x().cumsum_(dim=0, dtype=torch.float32)),
    # var(dim, unbiased, keepdim) runs beside var(dim, *, correction, keepdim)
    **{
        name: ("dim, unbiased, keepdim, *, correction",
               lambda name=name: getattr(_x(), name)(1, True, True))
        for name in ("var", "std")
    },
    **{
        name: ("dim, index, src, *, value, reduce",
               lambda name=name: getattr(_x(), name)(
                   dim=0, index=torch.zeros(1, 4, dtype=torch.long), value=1.0))
        for name in ("scatter", "scatter_")
    },
    # dtype keyword-only in torch's binding (its docstrings list it after keepdim)
    **{
        name: ("dim, keepdim, *, dtype",
               lambda name=name: getattr(_x(), name)(dim=1, keepdim=True, dtype=torch.float64))
        for name in ("sum", "prod")
    },
    **{
        name: ("dim, *, dtype", lambda name=name: getattr(_x(), name)(dim=1, dtype=torch.float64))
        for name in ("cumsum", "cumprod")
    },
    **{
        name: ("*, decimals", lambda name=name: getattr(_x(), name)(decimals=2))
        for name in ("round", "round_")
    },
    # the method's docstring says shape, torch.broadcast_to's size: the binding takes size
    "broadcast_to": ("size", lambda: torch.randn(4).broadcast_to(size=(3, 4))),
    # dims given spread out or as dims=...
    **{
        name: ("*dims, **keywords", lambda name=name: getattr(_x(), name)(dims=(0,)))
        for name in ("flip", "tile")
    },
}  # fmt: skip


def _torch_names(name: str) -> str:
    head = getattr(torch.Tensor, name).__doc__.strip().splitlines()[0].split(" -> ")[0]
    arguments = ast.parse(f"def {head}: pass").body[0].args
    names = [a.arg for a in arguments.posonlyargs + arguments.args if a.arg not in TORCH_ONLY]
    if arguments.vararg:
        names.append("*" + arguments.vararg.arg)
    keywords = [a.arg for a in arguments.kwonlyargs if a.arg not in TORCH_ONLY]
    if keywords:
        names += (["*"] if not arguments.vararg else []) + keywords
    return ", ".join(names)


def _our_names(name: str) -> str:
    return parameter_names(getattr(mt.Tensor, name), method=True)


def test_the_table_is_long_and_every_name_is_torchs():
    assert len(METHODS) >= 200 and len(set(METHODS)) == len(METHODS)
    assert all(hasattr(torch.Tensor, name) for name in METHODS)


@pytest.mark.parametrize("name", METHODS)
def test_method_takes_torchs_parameters(name):
    assert callable(getattr(mt.Tensor, name, None)), f"minitrain.Tensor has no {name}"
    if name in BINDING:
        ours, call = BINDING[name]
        assert _our_names(name) == ours
        call()  # torch's binding takes these names
    else:
        assert _our_names(name) == _torch_names(name)
